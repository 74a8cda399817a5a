"""The cheaper search runs change no result: the memo, the in-process listing of a local sandbox, workers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import rsigym.envs.workflow.aec_workspace as aec_workspace
import rsigym.envs.workflow.mass_policies  # noqa: F401
import rsigym.envs.workflow.policies  # noqa: F401
from rsigym.envs.workflow.aec_workspace import Workspace
from rsigym.envs.workflow.spec import SpecError, seed_spec, validate_spec
from rsigym.sandbox import open_sandbox

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

TINY = dict(runs=2, replications=1, budget=2, test_per_family=1, salt_base="speed-test")

# Leaves what the listing must treat carefully: a file over the size cap, a link, a directory, a
# deleted input, non-UTF-8 bytes.
_PROGRAM = """
import os
open('small.txt', 'w').write('x' * 10)
open('big.txt', 'w').write('y' * 70000)
open('bytes.bin', 'wb').write(bytes([0xff, 0xfe, 0x41]))
os.symlink('small.txt', 'link.txt')
os.mkdir('sub'); open('sub/inner.txt', 'w').write('z')
os.remove('gone.txt')
print('done')
"""


@pytest.fixture(scope="module")
def box():
    with open_sandbox("local") as sandbox:
        yield sandbox


def _run_program(box, host_side: bool, monkeypatch) -> tuple[str, dict[str, str], str, dict[str, str]]:
    monkeypatch.setattr(aec_workspace, "HOST_SIDE_LOCAL", host_side)
    space = Workspace(box)
    space.reset({"p.py": _PROGRAM, "gone.txt": "bye"})
    first = space.run_python("p.py")
    files = dict(space.files)
    # a memo hit moved the mirror on: the next run must start from a cleared work dir
    space._stale = True
    space.files = {"q.py": "import os\nprint(sorted(os.listdir('.')))\n"}
    second = space.run_python("q.py")
    return first, files, second, dict(space.files)


def test_the_in_process_listing_of_a_local_sandbox_equals_the_sandboxed_one(box, monkeypatch):
    sandboxed = _run_program(box, False, monkeypatch)
    in_process = _run_program(box, True, monkeypatch)
    assert in_process == sandboxed
    first, files, second, _ = in_process
    assert "big.txt" not in files and "link.txt" not in files and "gone.txt" not in files
    assert files["small.txt"] == "x" * 10 and "not copied back" in first and "big.txt" in first
    assert "['q.py']" in second  # the clear left nothing behind, not even the subdirectory


def test_a_listing_that_fails_in_process_falls_back_to_the_sandbox(box, monkeypatch):
    def broken(*_args):
        raise RuntimeError("boom")

    sandboxed = _run_program(box, False, monkeypatch)
    monkeypatch.setitem(aec_workspace._HOST_COLLECT, "collect", broken)
    assert _run_program(box, True, monkeypatch) == sandboxed


def test_the_validator_cache_accepts_and_refuses_as_before():
    spec = seed_spec()
    assert validate_spec(spec) is spec and validate_spec(spec) is spec
    role = next(iter(spec["roles"]))
    bad = {**spec, "roles": {**spec["roles"], role: {**spec["roles"][role], "returns": {"type": "no-such-type"}}}}
    for _ in range(2):  # a refused schema is never cached as valid
        with pytest.raises(SpecError, match="no JSON Schema"):
            validate_spec(bad)


@pytest.mark.slow
def test_a_run_with_the_memo_equals_the_run_without_it(box):
    import workflow_search_runs as runs

    args = runs.Args(**TINY)
    arms = list(runs.CONTROL_ARMS) + ["random search"]
    with_memo, memo = runs.one_run(args, 0, 1, arms, box)
    without, empty = runs.one_run(args, 0, 1, arms, box, use_memo=False)
    assert with_memo == without
    assert memo.run_hits + memo.program_hits > 0 and empty.run_hits + empty.run_misses == 0


@pytest.mark.slow
def test_runs_side_by_side_in_workers_equal_the_runs_in_this_process(box):
    import workflow_search_runs as runs

    arms = list(runs.CONTROL_ARMS)
    here = runs.run_all(runs.Args(**TINY), 0, arms, box)
    apart = runs.run_all(runs.Args(**TINY, workers=2), 0, arms, box)
    assert [r for r, _ in apart] == [r for r, _ in here]
    assert [m for _, m in apart] == [m for _, m in here]


@pytest.mark.slow
def test_the_speed_benchmark_times_both_ways_on_the_same_runs_and_checks_they_agree(tmp_path):
    import workflow_search_speed as speed

    result = speed.main(2, 0, 1, str(tmp_path / "s.json"), budget=1, test_per_family=1)
    assert set(result["table"]) == {"before", "after"} and result["identical_results"]
    assert all(len(row["per_run_s"]) == 2 for row in result["table"].values())
    assert result["table"]["before"]["ratio"] == 1.0 and result["memo_keys"] > 0
    assert "| before |" in speed.render(result)
    # the "before" path is restored afterwards
    assert aec_workspace.HOST_SIDE_LOCAL is True


def test_the_speed_table_renders_the_numbers_it_is_given():
    import workflow_search_speed as speed

    result = {"args": {"runs": 20, "arms": ["seed", "coin", "oracle"], "budget": 8, "sandbox": "local", "sample": 4},
              "table": {"after": {"median_s_per_run": 10.0, "replication_s": 200.0, "ratio": 2.0},
                        "before": {"median_s_per_run": 20.0, "replication_s": 400.0, "ratio": 1.0}},
              "memo_keys": 50, "memo_keys_in_several_runs": 0}
    text = speed.render(result)
    assert "| after | 10.0 | 200 | 2.00x |" in text and "0 of 50" in text
    assert text.index("| before |") < text.index("| after |")
