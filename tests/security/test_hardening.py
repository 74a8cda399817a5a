"""Each hardening setting of the container, guarded by a test that fails when that one setting
is removed (``benchmarks/sandbox_mutation_check.py`` removes them one at a time and prints which
tests fail). Before, removing ``cap_drop=["ALL"]`` left every docker test green.

PID 1's uid is guarded by ``test_pid1_takeover``, the reset by ``test_reset``, the kill at the
end of each exec by ``test_background_processes``.
"""

from __future__ import annotations

import pytest

from .conftest import LIMITS

pytestmark = pytest.mark.docker

CAPS = "import re; s = open('/proc/%s/status').read(); print(' '.join(re.findall(r'(Cap\\w+|NoNewPrivs):\\s+(\\S+)', s)[i][1] for i in range(6)))"
COUNT_FORKS = r"""
import os, sys, time
started = 0
for _ in range(int(sys.argv[1])):
    try:
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        started += 1
    except OSError:
        break
print(started)
"""


def test_no_interface_but_loopback_and_no_route_out(own_sandbox):
    interfaces = own_sandbox.exec(["python3", "-c", "import os; print(' '.join(sorted(os.listdir('/sys/class/net'))))"])
    assert interfaces.stdout.split() == ["lo"], interfaces
    probe = "import socket\nsocket.create_connection(('192.0.2.1', 9), timeout=3)"  # TEST-NET-1, never routed
    assert "Network is unreachable" in own_sandbox.exec(["python3", "-c", probe], timeout=10).stderr


@pytest.mark.parametrize("as_user", ["user", "harness"])
def test_root_filesystem_is_read_only_even_where_its_modes_allow_writing(own_sandbox, as_user):
    # /var/tmp is 1777 in the image: only the read-only mount stops a write there.
    result = own_sandbox.exec(["sh", "-c", "touch /var/tmp/x"], as_user=as_user)
    assert result.exit_code != 0 and "Read-only file system" in result.stderr, result


@pytest.mark.parametrize("target", ["self", "1"])
@pytest.mark.parametrize("as_user", ["user", "harness"])
def test_no_capability_in_any_set_and_no_new_privileges(own_sandbox, as_user, target):
    result = own_sandbox.exec(["python3", "-c", CAPS % target], as_user=as_user)
    inh, prm, eff, bnd, amb, nnp = result.stdout.split()
    assert {inh, prm, eff, bnd, amb} == {"0000000000000000"}, result.stdout  # cap_drop=["ALL"]
    assert nnp == "1"  # no-new-privileges: setuid binaries cannot raise anything


def test_capability_needing_actions_fail(own_sandbox):
    attack = (
        "import os, socket\nopen('f', 'w').close()\n"
        "for name, act in (('chown', lambda: os.chown('f', 0, 0)), ('mknod', lambda: os.mknod('dev', 0o600 | 0o20000, os.makedev(1, 3))),\n"
        "                  ('raw_socket', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))):\n"
        "    try:\n        act(); print(name, 'allowed')\n    except OSError as e:\n        print(name, 'refused')"
    )
    for as_user in ("user", "harness"):
        out = own_sandbox.exec(["python3", "-c", attack], as_user=as_user).stdout
        assert out.split() == ["chown", "refused", "mknod", "refused", "raw_socket", "refused"], out


def test_process_count_stops_at_the_pids_limit(own_sandbox):
    # A bounded attack: at most limit + 16 forks, so a missing limit costs the host nothing.
    result = own_sandbox.exec(["python3", "-c", COUNT_FORKS, str(LIMITS.pids + 16)], timeout=60)
    assert result.ok, result
    assert int(result.stdout) < LIMITS.pids


def test_memory_is_capped_without_swap(own_sandbox):
    limit = own_sandbox.exec(["cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]).stdout.strip()
    assert int(limit) == LIMITS.memory_mb * 2**20
    hog = own_sandbox.exec(["python3", "-c", f"x = b'x' * ({2 * LIMITS.memory_mb} * 2**20)"], timeout=60)
    assert hog.exit_code == 137 and hog.oom_killed, hog


def test_commands_run_unprivileged_as_their_identity(own_sandbox):
    assert own_sandbox.exec(["id", "-u"]).stdout.strip() == "65534"
    assert own_sandbox.exec(["id", "-u"], as_user="harness").stdout.strip() == "65533"
    # Root-owned parts of the image stay closed even where the mount would allow writing.
    assert own_sandbox.exec(["sh", "-c", "echo x > /dev/rsigym"]).exit_code != 0


FRESH_ATTACK = r"""
import os, sys
other, wrapper = sys.argv[1], sys.argv[2]
attempts = {
    "write the other identity's dir": lambda: open(os.path.join(other, "planted"), "w").close(),
    "read the wrapper": lambda: open(wrapper, "rb").read(1),
    "overwrite the wrapper": lambda: open(wrapper, "wb").close(),
    "chmod the wrapper": lambda: os.chmod(wrapper, 0o755),
    "add a file next to the wrapper": lambda: open(os.path.join(os.path.dirname(wrapper), "sh2"), "w").close(),
}
for name, act in attempts.items():
    try:
        act()
        print(name, "allowed")
    except OSError:
        print(name, "refused")
"""


@pytest.mark.parametrize("as_user", ["user", "harness"])
def test_a_fresh_container_is_closed_before_its_first_reset(own_sandbox, as_user):
    # No setup exec closes a new container's dirs or installs the wrapper: the image's modes do
    # (``image.RECIPE``). The attack runs on a container that has never been reset.
    from rsigym.sandbox.container_scripts import HARNESS_DIR, WRAPPER

    other = HARNESS_DIR if as_user == "user" else LIMITS.work_dir
    result = own_sandbox.exec(["python3", "-c", FRESH_ATTACK, other, WRAPPER], as_user=as_user)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 5 and all(line.endswith(" refused") for line in lines), result
    # and INIT's verification, which checks the two dirs' owners and modes, passes as it is
    code, found, _ = own_sandbox._verify()
    assert code == 0, found
    ran = own_sandbox.exec(["true"], as_user=as_user)  # the wrapper runs for both identities
    assert ran.exit_code == 0, ran
