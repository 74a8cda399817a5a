"""Graders: the Grader protocol, the registry by name, fixed-trajectory regrading, and the
record-only analyses (TRACE pairing, rerun noise) with their statistics.

Third-party graders join through the entry-point group ``rsigym.graders``.
"""

from .base import (ENTRY_POINT_GROUP, NEEDS, Grader, available_graders, get_grader, grade_record,
                   register_grader)
from .regrade import regrade
from .reruns import RerunNoise, rerun_noise, reruns_analysis
from rsigym.stats import (TostResult, flip_rate, icc_oneway, mcnemar_exact, minimum_detectable_difference,
                    ndcg_at_k, paired_bootstrap_ci, regret_at_k, single_run_difference_sd, spearman,
                    tost_paired)
from .trace import BehaviourDiff, Pair, Pairs, behaviour_diff, pair_records, rerun_behaviour
from .trace_effects import Effect, Part, RegradeEffect, TaskDelta, paired_effect, regrade_effect
from .trace_verdict import Attribution, BehaviourRate, Missing, Verdict, attribute
from .trace_report import trace_analysis

__all__ = [
    "ENTRY_POINT_GROUP", "NEEDS", "Grader",
    "available_graders", "get_grader", "grade_record", "register_grader", "regrade",
    # TRACE and statistics
    "BehaviourDiff", "Effect", "Pair", "Pairs", "RegradeEffect", "RerunNoise", "TaskDelta", "TostResult",
    "Verdict", "behaviour_diff", "flip_rate", "icc_oneway", "mcnemar_exact", "minimum_detectable_difference",
    "ndcg_at_k", "pair_records", "paired_bootstrap_ci", "paired_effect", "regrade_effect", "regret_at_k",
    "rerun_noise", "reruns_analysis", "single_run_difference_sd", "spearman", "tost_paired",
    "trace_analysis", "attribute", "Attribution", "BehaviourRate", "Missing", "Part", "rerun_behaviour",
]

# The env families' graders live in their folders (envs/<family>/graders.py) and register
# themselves on import. Imported as modules (no names), last, so that importing a family's graders
# first does not meet a half-initialised name here.
from rsigym.envs.probe import graders as _probe_graders  # noqa: E402,F401
from rsigym.envs.blackbox import graders as _blackbox_graders  # noqa: E402,F401
from rsigym.envs.hpo import graders as _hpo_graders  # noqa: E402,F401
from rsigym.envs.dataselect import graders as _dataselect_graders  # noqa: E402,F401
from rsigym.envs.evolution import graders as _evolution_graders  # noqa: E402,F401
from rsigym.envs.tooluse import graders as _tooluse_graders  # noqa: E402,F401
