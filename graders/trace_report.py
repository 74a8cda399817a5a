"""The ``trace`` report section: one paired attribution per agent x treatment condition."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from rsigym.records import Trajectory, canonical_json
from rsigym.report import ReportSection, condition_label, md_code, md_text, register_analysis

from .trace import BASELINE_NAMES, matches_condition, pair_records, rerun_behaviour
from .trace_effects import Effect, RegradeEffect
from .trace_verdict import MIN_TASKS, Attribution, Verdict, attribute

__all__ = ["TraceRow", "plot_name", "trace_analysis", "treatment_names"]


@dataclass(frozen=True)
class TraceRow:
    agent: str
    treatment: str
    attribution: Attribution

    @property
    def positive_control(self) -> bool:
        return self.attribution.positive_control

    @property
    def effect(self) -> Effect:
        return self.attribution.effect

    @property
    def regrade(self) -> RegradeEffect | None:
        return self.attribution.regrade

    @property
    def verdict(self) -> Verdict:
        return self.attribution.verdict


def treatment_names(records: Sequence[Trajectory], baseline: str) -> list[str]:
    """Every condition other than ``baseline``: by name, or by full label where one name
    covers several parameter settings (so that pairing stays one-to-one)."""
    labels: dict[str, set[str]] = {}
    for record in records:
        condition = record.env.condition
        if matches_condition(condition, baseline):
            continue
        if condition is None or condition["name"] in BASELINE_NAMES:
            labels.setdefault("identity", set()).add("identity")
        else:
            labels.setdefault(condition["name"], set()).add(condition_label(condition))
    return sorted(name if len(found) == 1 else label
                  for name, found in labels.items() for label in sorted(found))


@register_analysis("trace")
def trace_analysis(records: Sequence[Trajectory], out_dir: Path, *, baseline: str = "identity",
                   treatments: Sequence[str] | None = None, grader: str = "reward",
                   regrade_grader: str | None = None, margin: float = 0.10,
                   positive_controls: Sequence[str] = (), confidence: float = 0.95,
                   min_tasks: int = MIN_TASKS) -> ReportSection:
    """TRACE attribution of each treatment against ``baseline``, per agent, with a verdict each.

    ``treatments`` defaults to every other condition in the records; ``positive_controls`` are
    conditions known to change the outcome (judged ``detected`` / ``not detected``) and are
    added to the treatments when missing. The task is the unit; behaviour noise comes from
    identical reruns of the baseline arm. See ``rsigym.graders.trace_verdict`` for the rules.
    """
    wanted = list(treatments) if treatments is not None else treatment_names(records, baseline)
    wanted += [c for c in positive_controls if c not in wanted]
    rows: list[TraceRow] = []
    notes = []
    for treatment in wanted:
        pairs = pair_records(records, baseline, treatment)
        notes.append(f"- {md_text(treatment)}: {len(pairs)} pairs, {pairs.infra_excluded} infra-error records "
                     f"left out, {pairs.unpaired} records without a partner, {pairs.duplicates} "
                     "repeated records (same episode key) left out")
        # an agent whose every pair broke still gets its row; one that never ran the treatment does not
        broken = {r.agent.id for r in pairs.left_out if r.termination == "infra_error"}
        for agent in sorted({p.agent_id for p in pairs} | broken):
            found = attribute(pairs, grader, agent=agent, baseline=baseline, regrade_grader=regrade_grader,
                              noise=rerun_behaviour(records, baseline, agent),
                              treatment_noise=rerun_behaviour(records, treatment, agent), margin=margin,
                              confidence=confidence,
                              positive_control=treatment in positive_controls, min_tasks=min_tasks)
            rows.append(TraceRow(agent, treatment, found))

    lines = [f"Paired runs of {md_code(grader)}: each treatment against {md_code(baseline)} on the same task, "
             f"agent, seed and rep. **The task is the unit**: each task's pairs (seeds x reruns) are "
             f"averaged first, n counts tasks. Delta = treatment - baseline, {confidence:.0%} "
             "bootstrap CI over tasks; sign-flip permutation test (exact up to 14 tasks); established = "
             f"both exclude 0; TOST against margin {margin:.2f}; fewer than {min_tasks} tasks: insufficient "
             "data. Behaviour changed = actions (tool names mapped back) or final database differ, per "
             "task, against the rate between identical reruns of the baseline arm (tasks without baseline "
             "reruns left out; reruns that never differ while pairs differ both ways are flagged as a "
             "possible shared seed and not used); where behaviour is identical in every pair and rerun, "
             "every score change is the grader's (measurement artifact, with the share of tasks it flips)."
             + (f" Regrade grader: {md_code(regrade_grader)}; grader part = delta - regrade delta, "
                "behaviour part = regrade delta." if regrade_grader else
                " No regrade grader: pairs with identical actions and end state are the regrade (grader part = "
                "their score change per task, behaviour part = delta less it) when 10 or more tasks have one."),
             "", *notes, ""]
    if not rows:
        return ReportSection("TRACE", "\n".join(lines + ["No pairs."]), "no pairs")
    lines += ["| agent | treatment | n tasks (pairs) | baseline | treatment mean | delta | 95% CI "
              "| sign-flip p | TOST p | behaviour changed (reruns) | grader flips, identical behaviour "
              "| grader part | behaviour part | missing | verdict |",
              "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|---|---|---|"]
    for row in rows:
        e, a = row.effect, row.attribution
        grader_part = a.grader_part.text() if a.grader_part and a.regrade and a.regrade.regraded.n else "-"
        behaviour_part = a.behaviour_part.text() if a.behaviour_part and a.behaviour_part.n else "-"
        name = md_text(row.treatment) + (" (positive control)" if row.positive_control else "")
        noise_rate = f"{a.behaviour.noise:.0%}" if a.behaviour.reference else "-"
        f = a.flips
        flips = f"{f.flipped}/{f.tasks} tasks ({f.down} down, {f.up} up)" if f and f.tasks else "-"
        m = a.missing
        missing = f"{m.ungraded_pairs}/{m.infra_records}/{m.unpaired_records}"
        lines.append(f"| {md_text(row.agent)} | {name} | {e.n} ({e.n_pairs}) | {e.mean_baseline:.3f} "
                     f"| {e.mean_treatment:.3f} | {e.delta:+.3f} | [{e.ci_low:+.3f}, {e.ci_high:+.3f}] "
                     f"| {e.p_value:.3g} | {e.tost.p_value:.3g} | {a.behaviour.rate:.0%} ({noise_rate}) "
                     f"| {flips} | {grader_part} | {behaviour_part} | {missing} | **{row.verdict.label}**: "
                     f"{md_text(decided_by(row.verdict))} |")
    lines += ["", "missing = ungraded pairs / infra-error records / unpaired records; a verdict is "
              "withheld when filling them at an extreme (either grader's worst or best case, unknown behaviour "
              "changed or not) could change it. Grader flips: tasks where a pair with identical behaviour "
              "is scored differently (down: lower under the treatment)."]
    lines += [""] + [f"- **{md_text(r.agent)} / {md_text(r.treatment)}: {r.verdict.label}.** {md_text(r.verdict.sentence)}."
                     for r in rows]
    lines += _flip_tables(rows) + _per_task_table(rows)
    summary = "; ".join(f"{md_text(r.agent)}/{md_text(r.treatment)}: {r.verdict.label}" for r in rows)
    # several trace sections may share a report: only the default one gets the plain file name
    params = [baseline, treatments, grader, regrade_grader, margin, list(positive_controls), confidence]
    if min_tasks != MIN_TASKS:
        params.append(min_tasks)
    name = plot_name("trace_effects", params, ["identity", None, "reward", None, 0.10, [], 0.95])
    return ReportSection("TRACE", "\n".join(lines), summary, [_plot_effects(out_dir / name, rows, margin)])


# What decided a label whose rule states nothing beyond the label (the others carry their own text).
_RULES = {
    "indistinguishable from noise": "rule 7: neither the CI over tasks nor the sign-flip test establishes a change",
    "detected": "positive control: the CI lies beyond the margin, or |delta| does and the score moved",
    "not detected": "positive control: neither the CI nor |delta| with a moved score goes beyond the margin",
}


def decided_by(verdict: Verdict) -> str:
    """The rule that decided ``verdict`` and what held for it, for the verdict cell of a row."""
    return verdict.rule or _RULES.get(verdict.label, "see the sentence below the table")


def plot_name(stem: str, params: list[Any], defaults: list[Any]) -> str:
    """``stem.png`` for default parameters, else ``stem_<6 hex of the parameters>.png``."""
    if params == defaults:
        return f"{stem}.png"
    return f"{stem}_{hashlib.sha256(canonical_json(params).encode()).hexdigest()[:6]}.png"


def _per_task_table(rows: list[TraceRow]) -> list[str]:
    lines = ["", "<details><summary>Per-task deltas (the unit of inference)</summary>", "",
             "| agent | treatment | task | n | baseline | treatment | delta |",
             "|---|---|---|---:|---:|---:|---:|"]
    for row in rows:
        for t in row.effect.per_task:
            lines.append(f"| {md_text(row.agent)} | {md_text(row.treatment)} | {md_text(t.task_id)} | {t.n} | {t.mean_baseline:.3f} "
                         f"| {t.mean_treatment:.3f} | {t.delta:+.3f} |")
    return lines + ["", "</details>"]


def _flip_tables(rows: list[TraceRow]) -> list[str]:
    if all(r.regrade is None or not r.regrade.flips for r in rows):  # the implicit regrade has no flips
        return []
    kinds = ["pass->pass", "pass->fail", "fail->pass", "fail->fail"]
    lines = ["", "Regrade flips (original grade -> regrade, per record):", "",
             "| agent | treatment | side | " + " | ".join(kinds) + " |", "|---|---|---|" + "---:|" * 4]
    for row in rows:
        if row.regrade is None or not row.regrade.flips or row.effect.n_pairs == 0:
            continue
        for side, counts in row.regrade.flips.items():
            lines.append(f"| {md_text(row.agent)} | {md_text(row.treatment)} | {md_text(side)} | "
                         + " | ".join(str(counts[k]) for k in kinds) + " |")
    return lines


def _plot_effects(path: Path, rows: list[TraceRow], margin: float) -> str:
    """A forest plot: one line per treatment x agent, so long labels stay readable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, max(2.4, 0.32 * len(rows) + 1.2)))
    ax.axvspan(-margin, margin, color="#999999", alpha=0.2, label=f"±{margin:.2f} margin")
    ax.axvline(0, color="black", linewidth=0.8)
    for i, row in enumerate(rows):
        e = row.effect
        if e.n == 0:
            continue
        color = "#C44E52" if row.positive_control else "#4C72B0"
        ax.errorbar([e.delta], [i], xerr=[[max(e.delta - e.ci_low, 0)], [max(e.ci_high - e.delta, 0)]],
                    fmt="o", color=color, capsize=3)
    ax.set_yticks(range(len(rows)), [f"{r.treatment} / {r.agent}" for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top, in table order
    ax.set_xlabel("delta (treatment - baseline)")
    ax.set_title("TRACE: paired delta over tasks with 95% CI (red: positive control)", fontsize=9)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name
