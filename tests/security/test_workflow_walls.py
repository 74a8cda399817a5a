"""Attacks on the workflow env's walls (issue 27, item 3), on both sandbox providers.

* A planted ``json.py`` in the work dir was imported by the listing that copies the workspace
  back (``python3 -S -c`` keeps the cwd on ``sys.path``): the env raised, and the run recorded
  the agent's own doing as ``infra_error``.
* Many large files overflowed the listing's output: the same crash.
* The answer key was a function of the public task id (crc32 seed): an analyst program could
  rebuild it inside the sandbox with numpy alone and score full marks without analysing.
"""

from __future__ import annotations

import json

import pytest

import rsigym.envs.workflow as wf

# Writes results.json without importing json (the planted module would break the program itself).
WRITE_RESULTS = "open('results.json', 'w').write('{\"changepoint_index\": 100, \"method\": \"m\"}')\n"
# A module that breaks whoever imports it as json: prints garbage and exits 0.
PLANTED_JSON = "import sys\nsys.stdout.write('not json at all')\nsys.exit(0)\n"
MANY_LARGE = ("for i in range(300):\n    open(f'big{i:03d}.txt', 'w').write('x' * 60000)\n" + WRITE_RESULTS)
# The attack: rebuild the changepoint generator from the task id (crc32 seed, as on the old main).
REBUILD_KEY = """
import json, re, zlib
import numpy as np
task_id = re.search(r'# Task (\\S+)', open('task.md').read()).group(1)
rng = np.random.default_rng(zlib.crc32(task_id.encode()))
tau = int(rng.integers(60, 180))
json.dump({'changepoint_index': tau, 'method': 'rebuilt from the task id'}, open('results.json', 'w'))
"""


def _run_program(sandbox, files: dict[str, str], task_id: str = "changepoint-101"):
    """Play one analyst call: write ``files``, run analysis.py, return; the env's messages and end state."""
    env = wf.raw_env(sandbox=sandbox, task_id=task_id)
    env.reset(seed=0)
    messages = []
    try:
        env.step({"op": "delegate", "role": "analyst", "instruction": "go"})
        for path, content in files.items():
            env.step({"op": "write_file", "path": path, "content": content})
        env.step({"op": "run_python", "path": "analysis.py"})
        messages.append(env.observe("analyst")["message"])
        info = dict(env.infos["analyst"])
        env.step({"op": "return", "result": {"status": "done", "files": []}})
        env.step({"op": "finish", "summary": "done"})
        return messages, info, env.snapshot(), dict(env.workspace.files)
    finally:
        env.close()


def test_a_planted_json_module_is_not_imported_by_the_workspace_listing(any_sandbox):
    messages, info, snap, files = _run_program(any_sandbox, {"json.py": PLANTED_JSON, "analysis.py": WRITE_RESULTS})
    assert "results.json" in files and json.loads(files["results.json"])["changepoint_index"] == 100, messages
    assert snap["termination"] == "agent_stop" and snap["grade"]["results_valid"]


def test_many_large_files_are_capped_and_reported_not_a_crash(any_sandbox):
    messages, info, snap, files = _run_program(any_sandbox, {"analysis.py": MANY_LARGE})
    assert snap["termination"] == "agent_stop"
    assert len(files) <= 40 and sum(len(v) for v in files.values()) <= 400_000
    # The listing's caps hold: what is over them is named as left behind, the rest copied back (an
    # uncapped listing overflows the output limit and reads back as nothing).
    assert "not copied back" in messages[0] and not messages[0].startswith("Error"), messages[0][:300]


# Leaves the work dir unreadable to its own user: the listing that follows fails (docker: the exec
# user is unprivileged and holds no capability; local runs as whoever runs the tests, often root).
UNREADABLE_WORKDIR = WRITE_RESULTS + "import os\nos.chmod('.', 0)\n"


@pytest.mark.docker
def test_a_listing_that_fails_is_an_error_observation_not_an_env_failure(own_sandbox):
    messages, info, snap, files = _run_program(own_sandbox, {"analysis.py": UNREADABLE_WORKDIR})
    assert messages[0].startswith("Error: after analysis.py ran, its workspace could not be read back"), messages
    assert snap["termination"] == "agent_stop" and "results.json" not in files


def test_the_answer_key_cannot_be_rebuilt_from_the_task_id_inside_the_sandbox(any_sandbox):
    scores = []
    for index in range(101, 109):
        _, _, snap, _ = _run_program(any_sandbox, {"analysis.py": REBUILD_KEY}, task_id=f"changepoint-{index:03d}")
        assert snap["grade"]["results_valid"], snap["grade"]
        scores.append(snap["grade"]["answer_score"])
    # The old crc32-seeded key gave 1.0 each time (8 of 8). A guess in [60, 180) scores 1.0 (within
    # 3 of the change) with chance about 7/120: 3 or more of 8 by chance 0.9% of runs (it happened,
    # in a full suite), 5 or more 0.003%.
    assert sum(s == 1.0 for s in scores) <= 4, scores
