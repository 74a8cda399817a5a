"""Attack 8: ``read_file`` on a FIFO blocked forever (local) or 120 s then failed with an empty
error (docker); it was reachable from a DataSelection CSV submit.

Now both providers refuse anything but a regular file inside the work dir, at once and with a
message saying why, and a read has a timeout.
"""

from __future__ import annotations


import pytest

from rsigym.errors import SandboxError

# Each plants one hostile "file" in the work dir from inside the sandbox, as a program would.
PLANTS = {
    "fifo": ["mkfifo", "answer.csv"],
    "directory": ["mkdir", "answer.csv"],
    "symlink_to_host_file": ["ln", "-s", "/etc/passwd", "answer.csv"],
    "symlink_to_device": ["ln", "-s", "/dev/zero", "answer.csv"],
    "symlink_to_fifo": ["sh", "-c", "mkfifo pipe && ln -s pipe answer.csv"],
    "dangling_symlink": ["ln", "-s", "missing", "answer.csv"],
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_read_file_refuses_what_is_not_a_regular_file_at_once(any_sandbox, plant):
    assert any_sandbox.exec(PLANTS[plant]).ok
    with pytest.raises(SandboxError, match=r"refused|outside|no such file|not a regular file") as caught:
        any_sandbox.read_file("answer.csv", timeout=20)
    # Refused by a check, not ended by the timeout (whose message is "did not finish within").
    assert "did not finish" not in str(caught.value), "refused only by the timeout"
    assert "answer.csv" in str(caught.value)


def test_read_file_refuses_a_path_through_a_symlinked_dir_leading_out(any_sandbox):
    assert any_sandbox.exec(["ln", "-s", "/etc", "conf"]).ok
    with pytest.raises(SandboxError, match="outside"):
        any_sandbox.read_file("conf/passwd")


def test_read_file_follows_a_symlink_that_stays_in_the_work_dir(any_sandbox):
    assert any_sandbox.exec(["sh", "-c", "mkdir -p d && echo data > d/real && ln -s d/real link"]).ok
    assert any_sandbox.read_file("link") == b"data\n"


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_read_file_timeout_must_be_finite_and_positive(any_sandbox, timeout):
    any_sandbox.write_files({"a.txt": "x"})
    with pytest.raises(ValueError, match="timeout"):
        any_sandbox.read_file("a.txt", timeout=timeout)
