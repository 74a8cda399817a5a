"""Judge study: do two LLM judges agree on the same trajectories, and does a judge keep its grade
when only the presentation of a trajectory changes?

Judge grades carry the judge's identity in the grade name, ``<grader>/<rubric>/<model>``, the
rubric followed by ``@<presentation>`` when the trajectory was re-rendered (tools renamed or
reordered) for the judge; several judges and presentations thus coexist on one record. (No ``:``
or ``|``: grade names end up in file names and Markdown tables; the model, which may hold ``/``
or ``@``, comes last.) The ``judges`` analysis
reads them back: per pair of judges, on the records both graded, pass/fail agreement, Cohen's
kappa and the disagreement rate, each with a CI from a bootstrap over tasks (records of one task
are not independent); per judge and presentation, the share of records whose grade changed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Sequence

import numpy as np

from rsigym.records import Trajectory
from rsigym.report import ReportSection, md_code, md_text, register_analysis

__all__ = ["JudgeId", "judge_grade_name", "parse_judge_grade_name", "JudgePair", "Invariance",
           "judge_agreement", "presentation_invariance", "judges_analysis"]

PASS_THRESHOLD = 0.5


@dataclass(frozen=True)
class JudgeId:
    grader: str
    rubric: str
    model: str
    presentation: str = ""  # "" = the trajectory as it was run

    @property
    def judge(self) -> str:
        return f"{self.grader}/{self.rubric}/{self.model}"


def judge_grade_name(grader: str, rubric: str, model: str, presentation: str = "") -> str:
    """The grade name of a judge: ``grader/rubric/model``, or ``grader/rubric@presentation/model``."""
    for part, value in (("grader", grader), ("rubric", rubric), ("presentation", presentation)):
        if any(c in value for c in "/@:|"):
            raise ValueError(f"judge {part} may not contain '/', '@', ':' or '|': {value!r}")
    if not (grader and rubric and model):
        raise ValueError(f"judge grader, rubric and model must be non-empty, got {grader!r}, {rubric!r}, {model!r}")
    return f"{grader}/{rubric}" + (f"@{presentation}" if presentation else "") + f"/{model}"


def parse_judge_grade_name(name: str) -> JudgeId | None:
    """The ``JudgeId`` of a judge grade name, None for any other grade."""
    parts = name.split("/", 2)
    if len(parts) != 3 or not all(parts):
        return None
    rubric, _, presentation = parts[1].partition("@")
    return JudgeId(parts[0], rubric, parts[2], presentation) if rubric else None


def _judge_scores(records: Sequence[Trajectory], grader: str) -> dict[JudgeId, dict[str, tuple[str, float]]]:
    """{judge id: {episode key: (task, latest score)}} for grades of ``grader`` (None scores dropped)."""
    table: dict[JudgeId, dict[str, tuple[str, float]]] = defaultdict(dict)
    for record in records:
        for grade in record.grades:  # in order: the latest grade of a name wins
            found = parse_judge_grade_name(grade.grader)
            if found is None or found.grader != grader:
                continue
            if grade.score is None:
                table[found].pop(record.episode_key, None)
            else:
                table[found][record.episode_key] = (str(record.env.task_id), float(grade.score))
    return table


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two pass/fail vectors: ``(p_o - p_e) / (1 - p_e)`` with chance agreement
    ``p_e = p_a p_b + (1 - p_a)(1 - p_b)``. Written out (it equals scikit-learn's
    ``cohen_kappa_score``, checked in the tests) because the bootstrap calls it thousands of
    times and the library call costs milliseconds each. nan when p_e = 1 (one class only)."""
    if a.size == 0:
        return math.nan
    observed = float(np.mean(a == b))
    pa, pb = float(np.mean(a)), float(np.mean(b))
    chance = pa * pb + (1 - pa) * (1 - pb)
    return math.nan if chance >= 1 else (observed - chance) / (1 - chance)


def _cluster_bootstrap(tasks: list[str], a: np.ndarray, b: np.ndarray, confidence: float,
                       resamples: int, seed: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Percentile CIs of (kappa, disagreement) resampling whole tasks (scipy's bootstrap has no
    clusters, so the resampling is written out here)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, task in enumerate(tasks):
        groups[task].append(i)
    index = [np.array(groups[task]) for task in sorted(groups)]  # a stable order: records may come in any
    rng = np.random.default_rng(seed)
    kappas, disagreements = [], []
    for _ in range(resamples):
        chosen = np.concatenate([index[j] for j in rng.integers(len(index), size=len(index))])
        kappas.append(_kappa(a[chosen], b[chosen]))
        disagreements.append(float(np.mean(a[chosen] != b[chosen])))
    tail = 100 * (1 - confidence) / 2
    finite = [k for k in kappas if not math.isnan(k)]
    kappa_ci = ((float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail)))
                if finite else (math.nan, math.nan))
    return kappa_ci, (float(np.percentile(disagreements, tail)), float(np.percentile(disagreements, 100 - tail)))


@dataclass(frozen=True)
class JudgePair:
    first: str
    second: str
    records: int
    tasks: int
    agreement: float
    kappa: float
    kappa_ci: tuple[float, float]
    disagreement: float
    disagreement_ci: tuple[float, float]


def judge_agreement(records: Sequence[Trajectory], grader: str = "llm_judge", *, confidence: float = 0.95,
                    resamples: int = 2000, seed: int = 0) -> list[JudgePair]:
    """Every pair of judges (as-run presentation) on the records both graded, pass = score >= 0.5."""
    table = {j: v for j, v in _judge_scores(records, grader).items() if not j.presentation}
    out = []
    for first, second in combinations(sorted(table, key=lambda j: j.judge), 2):
        keys = sorted(set(table[first]) & set(table[second]))
        a = np.array([table[first][k][1] >= PASS_THRESHOLD for k in keys], dtype=int)
        b = np.array([table[second][k][1] >= PASS_THRESHOLD for k in keys], dtype=int)
        tasks = [table[first][k][0] for k in keys]
        if keys:
            kappa_ci, dis_ci = _cluster_bootstrap(tasks, a, b, confidence, resamples, seed)
            agreement = float(np.mean(a == b))
        else:
            kappa_ci, dis_ci, agreement = (math.nan, math.nan), (math.nan, math.nan), math.nan
        out.append(JudgePair(first.judge, second.judge, len(keys), len(set(tasks)), agreement, _kappa(a, b),
                             kappa_ci, 1 - agreement, dis_ci))
    return out


@dataclass(frozen=True)
class Invariance:
    judge: str
    presentation: str
    records: int
    changed: int  # records whose score differs from the as-run grade
    flipped: int  # records whose pass/fail differs

    @property
    def invariant(self) -> bool:
        return self.records > 0 and self.changed == 0


def presentation_invariance(records: Sequence[Trajectory], grader: str = "llm_judge") -> list[Invariance]:
    """Per judge and re-rendered presentation: how many grades changed against the as-run one."""
    table = _judge_scores(records, grader)
    plain = {j.judge: v for j, v in table.items() if not j.presentation}
    out = []
    for judge_id, scores in sorted(table.items(), key=lambda kv: (kv[0].judge, kv[0].presentation)):
        if not judge_id.presentation or judge_id.judge not in plain:
            continue
        base = plain[judge_id.judge]
        keys = sorted(set(scores) & set(base))
        changed = sum(scores[k][1] != base[k][1] for k in keys)
        flipped = sum((scores[k][1] >= PASS_THRESHOLD) != (base[k][1] >= PASS_THRESHOLD) for k in keys)
        out.append(Invariance(judge_id.judge, judge_id.presentation, len(keys), changed, flipped))
    return out


@register_analysis("judges")
def judges_analysis(records: Sequence[Trajectory], out_dir: Path, *, grader: str = "llm_judge",
                    confidence: float = 0.95) -> ReportSection:
    """Judge agreement (Cohen's kappa, disagreement rate, CIs over tasks) and presentation invariance."""
    pairs = judge_agreement(records, grader, confidence=confidence)
    invariance = presentation_invariance(records, grader)
    lines = [f"Judges are grades named {md_code(str(grader) + '/<rubric>/<model>')} (`<rubric>@<presentation>` when "
             "the trajectory was re-rendered for the judge). Pass = score >= 0.5. Agreement, Cohen's "
             f"kappa and the disagreement rate on the records both judges graded, {confidence:.0%} "
             "CIs from a bootstrap over tasks.", ""]
    if not pairs and not invariance:
        return ReportSection("Judges", "\n".join(lines + ["Fewer than two judges on any record."]), "no judge pairs")
    if pairs:
        lines += ["| judge A | judge B | records | tasks | agreement | Cohen's kappa | 95% CI | disagreement | 95% CI |",
                  "|---|---|---:|---:|---:|---:|---|---:|---|"]
        for p in pairs:
            lines.append(f"| {md_code(p.first)} | {md_code(p.second)} | {p.records} | {p.tasks} | {p.agreement:.3f} | "
                         f"{p.kappa:.3f} | [{p.kappa_ci[0]:.3f}, {p.kappa_ci[1]:.3f}] | {p.disagreement:.3f} | "
                         f"[{p.disagreement_ci[0]:.3f}, {p.disagreement_ci[1]:.3f}] |")
    if invariance:
        lines += ["", "Presentation invariance (the same trajectory re-rendered; the grade must not change):", "",
                  "| judge | presentation | records | grade changed | pass/fail flipped | invariant |",
                  "|---|---|---:|---:|---:|---|"]
        for inv in invariance:
            lines.append(f"| {md_code(inv.judge)} | {md_text(inv.presentation)} | {inv.records} | {inv.changed} | {inv.flipped} | "
                         f"{'yes' if inv.invariant else '**no**'} |")
    summary = "; ".join([f"{md_text(p.first)} vs {md_text(p.second)}: kappa {p.kappa:.2f} [{p.kappa_ci[0]:.2f}, {p.kappa_ci[1]:.2f}], "
                         f"disagree {p.disagreement:.0%}" for p in pairs]
                        + [f"{md_text(i.judge)}@{md_text(i.presentation)}: {i.changed}/{i.records} changed" for i in invariance])
    return ReportSection("Judges", "\n".join(lines), summary)
