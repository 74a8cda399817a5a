"""The rerun check: train an archive row again and compare its paired gains with the archived ones.

``rerun_check`` reruns the baseline and the intervention on some of the row's paired seeds and
passes when the rerun mean gain is within 3 paired SEs of the archived mean over the same seeds
(one thread, same seeds: on the build's machine and library versions the runs repeat bit for
bit; the 3 SE margin leaves room for another BLAS or torch build). ``RERUN_ROWS`` names one
real (non-placebo) intervention per research environment, so every environment is checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from .archive import GAIN_FLOOR, ArchiveRecord
from .research import gain, research_environment, run

__all__ = ["RerunCheck", "rerun_check", "RERUN_ROWS"]

RERUN_ROWS = {
    "charlm-pydoc": "charlm-pydoc/lr_x3", "charlm-stdlib": "charlm-stdlib/wider",
    "digits-mlp": "digits-mlp/lr_x3", "digits-cnn": "digits-cnn/dropout", "tabular-bc": "tabular-bc/C_div10",
    "tabular-wine": "tabular-wine/C_div10", "bc-mlp": "bc-mlp/lr_x3", "regress-diabetes": "regress-diabetes/lasso_small",
    "regress-friedman": "regress-friedman/poly2", "seq-ar": "seq-ar/lags_2", "seq-season": "seq-season/season",
    "seq-threshold": "seq-threshold/boosting", "clf-moons": "clf-moons/knn",
    "clf-sparse": "clf-sparse/C_div10", "clf-circles": "clf-circles/linear_kernel", "clf-hastie": "clf-hastie/trees_x2",
    "knn-blobs": "knn-blobs/quarter_data", "knn-digits": "knn-digits/half_data", "text-topics": "text-topics/tenth_data",
    "text-spam": "text-spam/quarter_data", "regress-friedman3": "regress-friedman3/knn",
    "regress-sparse": "regress-sparse/alpha_x10", "regress-friedman2": "regress-friedman2/forest",
    "regress-lowrank": "regress-lowrank/alpha_x10", "regress-uncorrelated": "regress-uncorrelated/lasso_small",
    "seq-chaos": "seq-chaos/knn", "seq-arma": "seq-arma/lags_8", "seq-period7": "seq-period7/lags_12",
    "svm-moons": "svm-moons/gamma_1", "svm-bc": "svm-bc/C_div10", "knn-wine": "knn-wine/no_scaling",
    "clf-quantiles": "clf-quantiles/poly2",
    "text-sentiment": "text-sentiment/C_div3", "text-authors": "text-authors/alpha_01",
    "text-topics-lr": "text-topics-lr/C_x10", "text-spam-nb": "text-spam-nb/binary",
    "knn-patches": "knn-patches/k15",
    "svm-patches": "svm-patches/C_x10", "logreg-patches": "logreg-patches/C_div10",
    "clf-iris": "clf-iris/C_div10", "regress-scurve": "regress-scurve/knn",
    "regress-swissroll": "regress-swissroll/forest", "regress-linnerud": "regress-linnerud/alpha_x10",
    "seq-walk": "seq-walk/difference", "seq-twoseason": "seq-twoseason/lags_12",
    "seq-resonant": "seq-resonant/difference",
}


@dataclass(frozen=True)
class RerunCheck:
    """One row rerun: the seeds used, the rerun and archived per-seed gains, and the verdict."""

    intervention: str
    seeds: list[int]
    rerun_gains: list[float]
    archived_gains: list[float]
    margin: float

    @property
    def rerun_mean(self) -> float:
        return sum(self.rerun_gains) / len(self.rerun_gains)

    @property
    def archived_mean(self) -> float:
        return sum(self.archived_gains) / len(self.archived_gains)

    @property
    def identical(self) -> bool:
        return all(abs(a - b) <= 1e-6 for a, b in zip(self.rerun_gains, self.archived_gains))

    @property
    def passed(self) -> bool:
        return abs(self.rerun_mean - self.archived_mean) <= self.margin


def rerun_check(record: ArchiveRecord, seeds: int = 4) -> RerunCheck:
    """Rerun ``record`` on its first ``seeds`` paired seeds (baseline and intervention each)."""
    env, chosen = record.environment, record.seeds[:seeds]
    rerun = []
    for seed in chosen:
        base, treated = run(env, {}, seed), run(env, record.diff, seed)
        metric = research_environment(env).floor_metric if treated.crashed else treated.metric
        rerun.append(round(max(GAIN_FLOOR, gain(env, base.metric, metric)), 6))
    archived = [record.gains[record.seeds.index(s)] for s in chosen]
    return RerunCheck(record.intervention, list(chosen), rerun, archived, 3 * max(record.gain_se, 1e-6))
