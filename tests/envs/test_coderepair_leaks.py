"""CodeRepair-v0 tells the agent nothing about the candidates it did not execute.

The leak check (``rsigym.envs.coderepair.leakcheck``) relabels every unexecuted candidate's origin
(to a sentinel) and flips its public outcome, code kept, and requires everything the agent
receives to stay identical. On the env before this test existed it failed: once a problem was over,
``info["executed"]["finished_rounds"]`` listed the origin of every candidate of every round.
"""

from __future__ import annotations

import pytest

from rsigym.envs.coderepair.agents import WorldModelAgent
from rsigym.envs.coderepair.env import CodeRepairEnv
from rsigym.envs.coderepair.leakcheck import HashPickAgent, unexecuted_differences
from rsigym.records import AgentSpec

JOINT = {"warmup": 2, "check_every": 2, "min_fit_rows": 4, "min_samples": 4, "update_coder": True,
         "audit_rate": 0.5, "holdout": 0.5}
AGENTS = {"hash_pick": HashPickAgent,
          "joint_world_model": lambda: WorldModelAgent(AgentSpec(id="joint", kind="adaptive_world_model",
                                                                 params=JOINT))}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_no_unexecuted_candidates_origin_or_outcome_reaches_the_agent(agent):
    report = unexecuted_differences(
        lambda: CodeRepairEnv(sandbox="local", problems=6, coder_params={"drift_at": 0.5}), AGENTS[agent], seed=1)
    assert report.unexecuted >= 10, "the check must relabel some unexecuted candidates to mean anything"
    assert report.origins_told == 0, report.line()
    assert report.differing == (), f"{report.line()}: {report.differing[:3]}"


def test_the_check_finds_a_leak_planted_on_purpose():
    """The positive control: an env that shows every candidate's origin in its info is caught."""

    class Leaky(CodeRepairEnv):
        def _info(self, *args, **kwargs):
            info = super()._info(*args, **kwargs)
            info["origins"] = [c.origin for c in getattr(self, "_candidates", [])]
            return info

    report = unexecuted_differences(lambda: Leaky(sandbox="local", problems=3), HashPickAgent, seed=1)
    assert report.unexecuted > 0 and report.origins_told >= report.unexecuted
    assert report.differing and report.leaks > len(report.differing)
