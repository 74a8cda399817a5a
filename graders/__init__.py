"""Cross-family analyses that read records only: TRACE pairing and verdicts, rerun noise.

The Grader protocol, the grader registry and fixed-trajectory regrading live in the kernel
(``rsigym.grader``, ``rsigym.regrade``) and are re-exported here, as are the statistics
(``rsigym.report.stats``). Family graders live in their family's folder (``rsigym.envs.<family>.graders``)
and join through the entry-point group ``rsigym.graders``, like any third-party grader.
"""

from rsigym.grader import (ENTRY_POINT_GROUP, NEEDS, Grader, available_graders, get_grader, grade_record,
                           register_grader)
from rsigym.regrade import regrade
from rsigym.report.stats import (
    TostResult, flip_rate, icc_oneway, mcnemar_exact, minimum_detectable_difference, ndcg_at_k, paired_bootstrap_ci,
    regret_at_k, single_run_difference_sd, spearman, tost_paired,
)

from .reruns import RerunNoise, rerun_noise, reruns_analysis
from .trace import BehaviourDiff, Pair, Pairs, behaviour_diff, pair_records, rerun_behaviour
from .trace_effects import Effect, Part, RegradeEffect, TaskDelta, paired_effect, regrade_effect
from .trace_verdict import Attribution, BehaviourRate, Missing, Verdict, attribute
from .trace_report import trace_analysis
from .judges import judge_agreement, judge_grade_name, judges_analysis, presentation_invariance

__all__ = [
    "ENTRY_POINT_GROUP", "NEEDS", "Grader",
    "available_graders", "get_grader", "grade_record", "register_grader", "regrade",
    # TRACE and statistics
    "BehaviourDiff", "Effect", "Pair", "Pairs", "RegradeEffect", "RerunNoise", "TaskDelta", "TostResult",
    "Verdict", "behaviour_diff", "flip_rate", "icc_oneway", "mcnemar_exact", "minimum_detectable_difference",
    "ndcg_at_k", "pair_records", "paired_bootstrap_ci", "paired_effect", "regrade_effect", "regret_at_k",
    "rerun_noise", "reruns_analysis", "single_run_difference_sd", "spearman", "tost_paired",
    "judge_agreement", "judge_grade_name", "judges_analysis", "presentation_invariance",
    "trace_analysis", "attribute", "Attribution", "BehaviourRate", "Missing", "Part", "rerun_behaviour",
]
