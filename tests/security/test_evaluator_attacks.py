"""Attacks on the program-evolution evaluators (issue 14, items 2 and 3), each asserting that it fails.

Every test is the attack that succeeded against the evaluator that prepared one sandbox per
episode (harness files and bin-packing instances in the writable work dir, the harness and the
candidate in one process):

* a candidate overwrites the harness (and plants modules Python imports first, and leaves a
  daemon that keeps doing it) so that later, innocent candidates score what it wants;
* a candidate leaves files (work dir, /tmp, /dev/shm, /dev/mqueue, System V IPC) and a daemon
  that the next candidate can see;
* the forged score of an innocent program enters the evaluation cache and a fresh episode
  reuses it;
* a bin-packing candidate reads the instances, packs them offline (first-fit decreasing) and
  reports that packing instead of answering one item at a time;
* a circle-packing candidate reports a score of its own;
* a bin-packing candidate signals, reads or writes the harness process.

Docker cases need an engine (CI has one; ``RSIGYM_REQUIRE_DOCKER=1`` turns a skip into a
failure). The local provider runs the cases its guarantees cover (see the evaluator
paragraph of docs/families/evolution.md): it has one identity and no private /tmp, so the /tmp, /dev/shm, IPC and
harness-process cases are docker-only, and the local attacker touches only its own work dir.
"""

from __future__ import annotations

import math
import os
import secrets
from typing import Iterator

import numpy as np
import pytest

from rsigym.envs.evolution import EVOLUTION_LIMITS, SandboxEvaluator, make_task
from rsigym.envs.evolution.harness import RESULT_MARK
from rsigym.sandbox import LocalSandbox, Sandbox

SEED_SCORE = 0.9797642169962064  # circle packing's seed program
GRID_SCORE = 2.4 + 0.1 * math.sqrt(2)  # the forged packing: 25 circles of radius 0.1 and one in a gap
TINY_BINPACK = {"instances": 5, "partial_instances": 2, "items": 200}


def _docker_or_skip() -> None:
    from rsigym.sandbox.factory import resolve_provider

    used, reason = resolve_provider("auto")
    if used != "docker":
        if os.environ.get("RSIGYM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"RSIGYM_REQUIRE_DOCKER=1 but docker is unusable: {reason}")
        pytest.skip(f"docker is unusable: {reason}")


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "local"])
def sandbox(request) -> Iterator[Sandbox]:
    """A fresh sandbox of each provider (a pooled container for docker), closed after the test."""
    if request.param == "docker":
        _docker_or_skip()
        from rsigym.sandbox import open_sandbox

        box: Sandbox = open_sandbox("docker", EVOLUTION_LIMITS)
    else:
        box = LocalSandbox(EVOLUTION_LIMITS)
    try:
        yield box
    finally:
        box.close()


@pytest.fixture
def docker_sandbox() -> Iterator[Sandbox]:
    _docker_or_skip()
    from rsigym.sandbox import open_sandbox

    box = open_sandbox("docker", EVOLUTION_LIMITS)
    try:
        yield box
    finally:
        box.close()


def _roots(sandbox: Sandbox) -> list[str]:
    """Where an attacker looks for files to tamper with: on docker every writable place it may
    find; on the local provider only its own work dir (it must not touch the host's files)."""
    if sandbox.provider == "docker":
        return [".", "/work", "/harness", "/tmp", "/dev/shm", "/dev/mqueue"]
    return ["."]


# A module that, run or imported, prints a forged circle-packing result and ends the process.
FORGER = f'''
import json, math, os
c = [[0.1 + 0.2 * i, 0.1 + 0.2 * j] for i in range(5) for j in range(5)] + [[0.2, 0.2]]
r = [0.1] * 25 + [0.1 * math.sqrt(2) - 0.1]
os.write(1, ("{RESULT_MARK}" + json.dumps({{"centres": c, "radii": r}}) + "\\n").encode())
os._exit(0)
'''


def harness_attacker(roots: list[str]) -> str:
    """Overwrites every .py file it finds, plants the forger where Python imports first, and
    leaves a daemon that keeps doing it for a minute."""
    return f'''
import os, site, sys, time
FORGER = {FORGER!r}
ROOTS = {roots!r}

def plant():
    for root in ROOTS:
        for dirpath, _, files in os.walk(root):
            for name in files:
                if name.endswith(".py"):
                    try:
                        with open(os.path.join(dirpath, name), "w") as fh:
                            fh.write(FORGER)
                    except OSError:
                        pass
    user_site = site.getusersitepackages() if os.path.expanduser("~").startswith(os.getcwd()) else None
    for folder in [os.getcwd()] + ([user_site] if user_site else []):
        for name in ("sitecustomize.py", "usercustomize.py", "numpy.py", "json.py"):
            try:
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, name), "w") as fh:
                    fh.write(FORGER)
            except OSError:
                pass

plant()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        end = time.time() + 60
        while time.time() < end:
            plant()
            time.sleep(0.02)
    os._exit(0)
os.wait()

def pack():
    raise RuntimeError("the attacker does not pack")
'''


def test_a_candidate_cannot_forge_the_scores_of_later_candidates(sandbox):
    task = make_task("circle_packing_26")
    evaluator = SandboxEvaluator(task, sandbox, timeout_s=20.0)
    assert evaluator.evaluate(task.seed_program, "full").score == pytest.approx(SEED_SCORE)
    assert not evaluator.evaluate(harness_attacker(_roots(sandbox)), "full").ok
    for _ in range(3):  # a daemon, had it survived, plants again every 20 ms
        result = evaluator.evaluate(task.seed_program, "full")
        assert result.score == pytest.approx(SEED_SCORE), result
        assert result.score != pytest.approx(GRID_SCORE)


def _leak_places(sandbox: Sandbox) -> list[str]:
    places = [".", "~"]
    if sandbox.provider == "docker":
        places += ["/tmp", "/dev/shm", "/dev/mqueue"]
    return places


def leaver(token: str, places: list[str], sysv: bool) -> str:
    """Leaves a file in each place, a System V shared-memory segment and a daemon, then packs."""
    return f'''
import os
TOKEN = {token!r}
for place in {places!r}:
    try:
        with open(os.path.join(os.path.expanduser(place), TOKEN), "w") as fh:
            fh.write("left behind")
    except OSError:
        pass
os.makedirs(TOKEN + "-dir/inner", exist_ok=True)  # a directory locked against its removal
open(TOKEN + "-dir/inner/x", "w").write("x")
os.chmod(TOKEN + "-dir", 0)
if {sysv!r}:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget({int(token[-6:], 16)}, 4096, 0o1000 | 0o666)  # IPC_CREAT
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execv("/bin/sh", ["sh", "-c", "sleep 60; : " + TOKEN])
    os._exit(0)
os.wait()
'''


def prober(token: str, places: list[str], sysv: bool, seed_program: str) -> str:
    """The seed program, failing with what it saw of an earlier candidate."""
    return f'''
import os
TOKEN = {token!r}
_seen = []
for place in {places!r}:
    if os.path.exists(os.path.join(os.path.expanduser(place), TOKEN)):
        _seen.append("file in " + place)
if os.path.lexists(TOKEN + "-dir"):
    _seen.append("locked directory in the work dir")
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fh:
                if TOKEN.encode() in fh.read():
                    _seen.append("process " + pid)
        except OSError:
            pass
if {sysv!r}:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget({int(token[-6:], 16)}, 0, 0) != -1:
        _seen.append("System V segment")
''' + seed_program + '''
_seed_pack = pack

def pack():
    if _seen:
        raise RuntimeError("saw the previous candidate: " + ", ".join(_seen))
    return _seed_pack()
'''


def test_nothing_of_one_candidate_is_visible_to_the_next(sandbox):
    task = make_task("circle_packing_26")
    evaluator = SandboxEvaluator(task, sandbox, timeout_s=20.0)
    token = "rsigym-leak-" + secrets.token_hex(6)
    places, sysv = _leak_places(sandbox), sandbox.provider == "docker"
    left = evaluator.evaluate(leaver(token, places, sysv) + task.seed_program, "full")
    assert left.score == pytest.approx(SEED_SCORE), left  # the leaver itself is a working program
    seen = evaluator.evaluate(prober(token, places, sysv, task.seed_program), "full")
    assert seen.score == pytest.approx(SEED_SCORE), seen.reason


@pytest.mark.docker
def test_a_forged_result_never_enters_the_cache(docker_sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("RSIGYM_CACHE", str(tmp_path / "cache"))
    task = make_task("circle_packing_26")
    innocent = task.library["hex"]
    with LocalSandbox(EVOLUTION_LIMITS) as reference:
        honest = SandboxEvaluator(task, reference).evaluate(innocent, "full").score
    assert honest is not None and honest != pytest.approx(GRID_SCORE)
    episode = SandboxEvaluator(task, docker_sandbox, timeout_s=20.0, cache=True)
    episode.evaluate(harness_attacker(_roots(docker_sandbox)), "full")
    assert episode.evaluate(innocent, "full").score == pytest.approx(honest)
    from rsigym.sandbox import open_sandbox

    with open_sandbox("docker", EVOLUTION_LIMITS) as fresh:  # a fresh episode reads the cache
        again = SandboxEvaluator(task, fresh, timeout_s=20.0, cache=True)
        assert again.evaluate(innocent, "full").score == pytest.approx(honest)
        assert again.cache_hits == 1


def _first_fit_decreasing(items: np.ndarray, capacity: float) -> np.ndarray:
    order = np.argsort(-items, kind="stable")
    loads: list[float] = []
    assign = np.zeros(len(items), dtype=np.int32)
    for k in order:
        for b, load in enumerate(loads):
            if load + items[k] <= capacity:
                loads[b] += items[k]
                assign[k] = b
                break
        else:
            loads.append(float(items[k]))
            assign[k] = len(loads) - 1
    return assign


def offline_packer(roots: list[str], instances: int, inject_processes: bool) -> str:
    """Finds the instances wherever it can, packs them offline (first-fit decreasing) and reports
    that packing every way it can; its priority() is honest first fit."""
    return f'''
import base64, json, os, sys
import numpy as np
MARK = {RESULT_MARK!r}

def _ffd(items, capacity):
    order = np.argsort(-items, kind="stable")
    loads, assign = [], np.zeros(len(items), dtype=np.int32)
    for k in order:
        for b in range(len(loads)):
            if loads[b] + items[k] <= capacity:
                loads[b] += items[k]
                assign[k] = b
                break
        else:
            loads.append(float(items[k]))
            assign[k] = len(loads) - 1
    return assign

def _find():
    for root in {roots!r}:
        for dirpath, _, files in os.walk(root):
            for name in files:
                if name.endswith(".npz"):
                    try:
                        return np.load(os.path.join(dirpath, name))
                    except Exception:
                        pass
    return None

_data = _find()
if _data is not None:
    capacity = float(_data["capacity"])
    args = [a for a in sys.argv[1:] if a.isdigit()]
    first, last = (int(args[0]), int(args[1])) if len(args) >= 2 else (0, {instances})
    payload = {{"first": first, "assignments": [
        base64.b64encode(_ffd(_data["items_%d" % i], capacity).tobytes()).decode() for i in range(first, last)]}}
    line = (MARK + json.dumps(payload) + "\\n").encode()
    import __main__
    if callable(getattr(__main__, "emit", None)):
        __main__.emit(payload)
        os._exit(0)
    os.write(1, line)
    for fd in os.listdir("/proc/self/fd"):
        try:
            os.write(int(fd), line)
        except OSError:
            pass
    if {inject_processes!r}:
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    with open("/proc/%s/fd/1" % pid, "wb") as fh:
                        fh.write(line)
                except OSError:
                    pass

def priority(item, bins):
    return -np.arange(len(bins), dtype=float)
'''


def test_an_offline_bin_packing_cannot_be_reported(sandbox):
    task = make_task("bin_packing_online", **TINY_BINPACK)
    evaluator = SandboxEvaluator(task, sandbox, timeout_s=30.0)
    honest = evaluator.evaluate(task.seed_program, "full")  # first fit, as the attacker's priority()
    assert honest.ok, honest
    # the attack would pay: first-fit decreasing beats online first fit on these instances
    binpack = task  # the BinPackingTask behind the protocol
    ffd_bins = [int(_first_fit_decreasing(x, float(binpack.capacity)).max()) + 1 for x in binpack._items]
    ffd_score = -float(np.mean([100.0 * (b - lb) / lb for b, lb in zip(ffd_bins, binpack.lower_bounds)]))
    assert ffd_score > honest.score + 0.5
    attack = offline_packer(_roots(sandbox), TINY_BINPACK["instances"], sandbox.provider == "docker")
    for kind in ("full", "partial"):
        result = evaluator.evaluate(attack, kind)
        reference = honest if kind == "full" else evaluator.evaluate(task.seed_program, "partial")
        assert not result.ok or result.score == pytest.approx(reference.score), (kind, result)


def test_a_circle_packing_score_is_recomputed_never_taken_from_the_candidate(sandbox):
    task = make_task("circle_packing_26")
    evaluator = SandboxEvaluator(task, sandbox, timeout_s=20.0)
    claim = '''
import json, math, os
import __main__
c = [[0.1 + 0.2 * i, 0.1 + 0.2 * j] for i in range(5) for j in range(5)] + [[0.2, 0.2]]
r = [0.1] * 25 + [0.1 * math.sqrt(2) - 0.1]
RADII = RADII_EXPR
payload = {"centres": c, "radii": RADII, "score": 9.0, "sum": 9.0}
if callable(getattr(__main__, "emit", None)):
    __main__.emit(payload)
os.write(1, ("MARK" + json.dumps(payload) + "\\n").encode())
os._exit(0)
'''.replace("MARK", RESULT_MARK)
    valid = evaluator.evaluate(claim.replace("RADII_EXPR", "r"), "full")
    assert valid.score == pytest.approx(GRID_SCORE, abs=1e-12), valid
    overlapping = evaluator.evaluate(claim.replace("RADII_EXPR", "r[:-1] + [0.1]"), "full")
    assert overlapping.score is None and "overlap" in overlapping.reason


@pytest.mark.docker
def test_a_bin_packing_candidate_cannot_signal_read_or_write_the_harness(docker_sandbox):
    task = make_task("bin_packing_online", **TINY_BINPACK)
    evaluator = SandboxEvaluator(task, docker_sandbox, timeout_s=30.0)
    honest = evaluator.evaluate(task.seed_program, "full")
    attack = '''
import os, signal
_done = []
for pid in os.listdir("/proc"):
    # Itself and its parent (the sandbox's exec server, which runs it: killing that fails only this
    # candidate's own evaluation, tests/security/test_exec_server.py) are not what this attack is after.
    if not pid.isdigit() or int(pid) in (os.getpid(), os.getppid()):
        continue
    for attempt in ("mem", "fd/0", "fd/1", "environ"):
        try:
            with open("/proc/%s/%s" % (pid, attempt), "rb" if attempt != "fd/1" else "wb") as fh:
                fh.read(16) if attempt != "fd/1" else fh.write(b"x")
            _done.append(attempt + " of " + pid)
        except OSError:
            pass
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(int(pid), sig)
            _done.append("signal %d to %s" % (sig, pid))
        except OSError:
            pass
''' + task.seed_program
    result = evaluator.evaluate(attack, "full")
    assert result.score == pytest.approx(honest.score), result  # the harness ran undisturbed

