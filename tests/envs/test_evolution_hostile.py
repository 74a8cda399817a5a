"""Hostile candidate programs are contained and scored failed with a reason; the run goes on.

Docker cases need an engine (CI has one: RSIGYM_REQUIRE_DOCKER=1 turns a skip into a failure).
The local provider is tried only where it is meaningful: it has no network or filesystem
isolation and, for root, no process limit, so the network, host-file and fork-bomb programs
are docker-only.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rsigym.envs  # noqa: F401
from rsigym.envs.evolution import EVOLUTION_LIMITS, Proposal, SandboxEvaluator, make_task
from rsigym.sandbox import LocalSandbox

PACK = "\ndef pack():\n    import numpy as np\n    return np.full((26, 2), 0.5), np.zeros(26)\n"
HOSTILE = {
    "infinite_loop": "def pack():\n    while True:\n        pass\n",
    "fork_bomb": ("import os\ndef pack():\n    while True:\n        try:\n            os.fork()\n"
                  "        except OSError:\n            pass\n"),
    "memory_bomb": "def pack():\n    hog = [1.5] * (4 * 10**9)\n    return hog, hog\n",
    "network": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3).close()\n" + PACK,
    "write_outside": "open('/etc/rsigym-owned', 'w').write('owned')\n" + PACK,
    "output_flood": "import sys\nsys.stdout.write('x' * 100_000_000)\n" + PACK,
    "missing_module": "import rsigym_no_such_module\n" + PACK,
    "syntax_error": "def pack(:\n    return 1\n",
}
REASONS = {
    "infinite_loop": "timed out", "fork_bomb": "timed out", "memory_bomb": "memory",
    "network": "Network is unreachable", "write_outside": "loading the candidate failed",
    "output_flood": "output exceeded", "missing_module": "ModuleNotFoundError: No module named 'rsigym_no_such_module'",
    "syntax_error": "syntax error",
}
LOCAL_SAFE = ("infinite_loop", "memory_bomb", "output_flood", "missing_module", "syntax_error")


@pytest.fixture(scope="module")
def docker_sandbox():
    from rsigym.sandbox import open_sandbox
    from rsigym.sandbox.factory import resolve_provider

    used, reason = resolve_provider("auto")
    if used != "docker":
        if os.environ.get("RSIGYM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"RSIGYM_REQUIRE_DOCKER=1 but docker is unusable: {reason}")
        pytest.skip(f"docker is unusable: {reason}")
    sandbox = open_sandbox("docker", EVOLUTION_LIMITS)
    yield sandbox
    sandbox.close()


def _check(evaluator: SandboxEvaluator, name: str) -> None:
    result = evaluator.evaluate(HOSTILE[name], "full")
    assert result.score is None, (name, result)
    assert REASONS[name].lower() in result.reason.lower(), (name, result.reason)
    # the run goes on: the seed program still evaluates to its score in the same sandbox
    seed = evaluator.evaluate(evaluator.task.seed_program, "full")
    assert seed.score == pytest.approx(0.9797642169962064), (name, seed)


@pytest.mark.docker
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_candidates_fail_with_a_reason_in_docker(docker_sandbox, name):
    evaluator = SandboxEvaluator(make_task("circle_packing_26"), docker_sandbox, timeout_s=4.0)
    _check(evaluator, name)
    if name == "write_outside":
        assert "Read-only file system" in evaluator.evaluate(HOSTILE[name], "full").reason


@pytest.mark.parametrize("name", LOCAL_SAFE)
def test_hostile_candidates_fail_with_a_reason_locally(name):
    with LocalSandbox(EVOLUTION_LIMITS) as sandbox:
        _check(SandboxEvaluator(make_task("circle_packing_26"), sandbox, timeout_s=4.0), name)


class ScriptedSource:
    """Proposes the given programs in turn (then the seed program's children from ``mutate``)."""

    name = "scripted"

    def __init__(self, programs: list[str]) -> None:
        self.programs = list(programs)

    def propose(self, parent_code: str, parent_score: float, partner_code: str | None,
                library: dict[str, str], task_description: str, rng: np.random.Generator) -> Proposal:
        code = self.programs.pop(0) if self.programs else library["grid"]
        return Proposal(code, "scripted", 0, 0)


@pytest.mark.docker
def test_an_episode_goes_on_past_hostile_candidates(docker_sandbox):
    names = ["infinite_loop", "fork_bomb", "output_flood", "missing_module"]
    env: Any = gym.make("rsigym/ProgramEvolution-v0", task="circle_packing_26", budget=5, timeout_s=4.0,
                        source=ScriptedSource([HOSTILE[n] for n in names]), sandbox=docker_sandbox).unwrapped
    env.reset(seed=0)
    reasons = []
    for _ in names:
        _, reward, terminated, _, info = env.step({"decision": "full"})
        reasons.append(info["decided"]["reason"])
        assert info["decided"]["status"] == "failed" and reward == 0.0 and not terminated
    assert all(REASONS[n] in r for n, r in zip(names, reasons)), reasons
    _, reward, terminated, _, info = env.step({"decision": "full"})  # the grid seed: a real score
    assert terminated and info["best_score"] > 2.2 and reward > 1.2
    assert info["budget"]["failed_evaluations"] == 4 and env.sandbox_info["provider"] == "docker"
