"""Calibration cases of the workflow analyses, on constructed records whose truth is known.

* ``workflow_scores``: a blind control scoring 0 must read "the ruler separates"; a "control"
  that scores as well as the others (a grader that cannot tell) must read "CONTROL FAILED".
* ``workflow_pairwise``: on 12 model-comparison tasks where one workflow's code chose by
  cross-validation (right) and the other's by training error (wrong), the scripted judge must agree with the grader
  and call the wins; a coin-flip judge put in its place must be flagged (no better than the coin
  control, or insufficient data), never reported as agreeing.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Callable

from calibration_cases.common import Case
from rsigym.envs.workflow.analyses import workflow_pairwise, workflow_scores
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.tasks import grade_workspace, make_task
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Grade, Trajectory, Usage

REPORT = "# Report\n\n## Method\nx\n\n## Result\ny\n\n## Validation\nz\n"
EVOLVED = {"name": "spec", "params": {"name": "evolved_offline"}}
SALT = "ca1b" * 8
CODE = FAMILIES["model_comparison"].code


def _record(agent: str, condition: Any, task_id: str, files: dict[str, str], score: float, tokens: int) -> Trajectory:
    task = make_task(task_id, SALT)
    state = {"task_id": task_id, "files": files, "answer_sha256": task.key_sha256, "dialogues": [], "task_salt": SALT}
    return Trajectory(episode_key=f"{agent}-{condition}-{task_id}", env=EnvRef("rsigym/Workflow-v0", {}, task_id, condition),
                      agent=AgentSpec(agent, "workflow_roles"), seed=0, rep=0, final=FinalSnapshot.of(state),
                      usage=Usage(completion_tokens=tokens), grades=[Grade("workflow_score", "1", score)])


def _records(n: int = 12) -> list[Trajectory]:
    out = []
    for index in range(100, 100 + n):
        task = make_task(f"model_comparison-{index:03d}", SALT)
        wrong = "linear" if task.key["best_model"] != "linear" else "knn1"
        good = {"analysis.py": CODE["robust"], "report.md": REPORT,
                "results.json": json.dumps({"best_model": task.key["best_model"], "method": "5-fold cross-validation"})}
        bad = {"analysis.py": CODE["naive"], "report.md": REPORT,
               "results.json": json.dumps({"best_model": wrong, "method": "training error"})}
        out.append(_record("scripted", None, task.task_id, bad, grade_workspace(task, bad)[0], 200))
        out.append(_record("scripted", EVOLVED, task.task_id, good, grade_workspace(task, good)[0], 500))
    return out


def _scores(lucky: bool) -> Case:
    records = _records() + [_record("blind", None, "changepoint-000", {}, 0.95 if lucky else 0.0, 0)]
    verdict = workflow_scores(records, Path(tempfile.mkdtemp()), baseline="none", control="blind").verdict
    expected = "CONTROL FAILED" if lucky else "the ruler separates"
    return Case("workflow_scores", "blind control" + (" that scores high" if lucky else ""), expected,
                verdict.split("; ")[-1][:90], expected in verdict)


def _pairwise(judge_model: str) -> Case:
    verdict = workflow_pairwise(_records(), Path(tempfile.mkdtemp()), baseline="none", judge_model=judge_model).verdict
    if judge_model.endswith("coin"):
        ok = "NO BETTER THAN A COIN" in verdict or "insufficient" in verdict
        expected = "flagged as no better than a coin"
    else:
        ok = "12 wins, 0 losses" in verdict and "agrees with the grader on 100%" in verdict
        expected = "12 wins, agrees with the grader"
    return Case("workflow_pairwise", judge_model, expected, verdict[-90:], ok)


CASES: list[Callable[[], Case]] = [
    lambda: _scores(False), lambda: _scores(True),
    lambda: _pairwise("rsigym/workflow_judge"), lambda: _pairwise("rsigym/workflow_judge_coin"),
]
