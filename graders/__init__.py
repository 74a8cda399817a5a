"""Graders: the Grader protocol, the registry by name, fixed-trajectory regrading, and the
record-only analyses (TRACE pairing, rerun noise) with their statistics.

Third-party graders join through the entry-point group ``rsigym.graders``.
"""

from .base import (ENTRY_POINT_GROUP, NEEDS, Grader, available_graders, get_grader, grade_record,
                   register_grader)
from .blackbox import BlackBoxBestValue
from .dataselect import OrderSpearman, SelectionGain, TopGroupIsBest
from .evolution import EvolutionBestScore, evolution_analysis
from .hpo import BestValidationError, FinalTestError
from .probe import ProbeAnswerCheck, ProbeGuessEfficiency
from .regrade import regrade
from .reruns import RerunNoise, rerun_noise, reruns_analysis
from .stats import (TostResult, flip_rate, icc_oneway, mcnemar_exact, minimum_detectable_difference,
                    ndcg_at_k, paired_bootstrap_ci, regret_at_k, single_run_difference_sd, spearman,
                    tost_paired)
from .trace import BehaviourDiff, Pair, Pairs, behaviour_diff, pair_records, rerun_behaviour
from .trace_effects import Effect, Part, RegradeEffect, TaskDelta, paired_effect, regrade_effect
from .trace_verdict import Attribution, BehaviourRate, Missing, Verdict, attribute
from .trace_report import trace_analysis
from .tooluse import ActionMatch, ActionMatchMapped, DbStateMatch, LLMJudge, OutputsTold, TaskReward

__all__ = [
    "ActionMatch", "ActionMatchMapped", "BlackBoxBestValue", "DbStateMatch", "LLMJudge", "OutputsTold",
    "TaskReward", "BestValidationError", "FinalTestError", "ENTRY_POINT_GROUP", "NEEDS", "Grader", "ProbeAnswerCheck",
    "ProbeGuessEfficiency", "available_graders", "get_grader", "grade_record", "register_grader", "regrade",
    "OrderSpearman", "SelectionGain", "TopGroupIsBest",
    # TRACE and statistics
    "BehaviourDiff", "Effect", "Pair", "Pairs", "RegradeEffect", "RerunNoise", "TaskDelta", "TostResult",
    "Verdict", "behaviour_diff", "flip_rate", "icc_oneway", "mcnemar_exact", "minimum_detectable_difference",
    "ndcg_at_k", "pair_records", "paired_bootstrap_ci", "paired_effect", "regrade_effect", "regret_at_k",
    "rerun_noise", "reruns_analysis", "single_run_difference_sd", "spearman", "tost_paired",
    "trace_analysis", "attribute", "Attribution", "BehaviourRate", "Missing", "Part", "rerun_behaviour",
    "EvolutionBestScore", "evolution_analysis",
]
