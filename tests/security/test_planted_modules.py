"""A module planted in the work dir ran inside the pool's reset (found by the evaluator attacks).

The reset's programs ran as ``python3 -c`` from the work dir with ``HOME`` there, so Python
imported the user's ``usercustomize.py`` (user site-packages under ``$HOME``) and modules in the
cwd: a planted module that exits 0 skipped the wipe (the next lease got the previous user's
files) and ran as INIT, PID 1's uid, inside the verification. Now the sandbox's own Python
programs run isolated (``python3 -I``) from ``/``.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker

# Exits 0 at once: the program that imports it reports success without doing anything.
SKIP = "import os\nos._exit(0)\n"
PLANTED = {name: SKIP for name in ("json.py", "ctypes.py", "sitecustomize.py", "stat.py",
                                   ".local/lib/python3.11/site-packages/usercustomize.py")}


def test_modules_planted_in_the_work_dir_do_not_run_in_the_reset(pool):
    first = pool.acquire()
    container = first.container_id
    first.write_files(PLANTED)
    first.close()  # the reset
    second = pool.acquire()
    assert second.container_id == container  # the same container, reset (a failed reset discards it)
    listing = second.exec(["sh", "-c", "find /work /tmp /dev/shm -mindepth 1"])
    second.close()
    assert listing.exit_code == 0 and listing.stdout == "", listing.stdout
