"""Reports: analyses over records, rendered to Markdown with plots.

An analysis is ``analyse(records, out_dir, **params) -> ReportSection``, registered by name and
named in scenario files. The kernel ships ``summary``: per grader (and grader version) x agent x
condition, the mean score with a seeded 95% bootstrap confidence interval, and termination counts.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..records.trajectory import Trajectory
from .report_parts import ReportSection, condition_label, md_code, md_file_name, md_text
from ..records.redact import redact_text
from ..registry import ANALYSES
from .reply_quality import WARN_RATE, reply_rates, reply_warnings
from .stats import bootstrap_ci

__all__ = ["ReportSection", "register_analysis", "available_analyses", "summary", "write_report",
           "bootstrap_ci", "condition_label", "md_text", "md_code", "md_file_name"]

Analysis = Callable[..., "ReportSection"]


def register_analysis(name: str) -> Callable[[Analysis], Analysis]:
    """Decorator: make ``fn`` the analysis ``name`` of scenario files and ``rsigym report``.

    From another package, use the entry-point group ``rsigym.analyses`` instead (``name =
    "pkg.module:function"``): it reaches every process.
    """
    return ANALYSES.register(name)


def available_analyses() -> list[str]:
    """Every analysis name: registered here or through the ``rsigym.analyses`` entry points."""
    return list(ANALYSES)


@register_analysis("summary")
def summary(records: Sequence[Trajectory], out_dir: Path, *, confidence: float = 0.95) -> ReportSection:
    """Mean score per grader x agent x condition with bootstrap CIs; termination counts."""
    from .score_cells import score_cells

    scores, failed = score_cells(records)
    terminations: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for record in records:
        terminations[(record.agent.id, condition_label(record.env.condition))][record.termination] += 1

    repeats = sum(n - 1 for n in Counter(r.episode_key for r in records).values())
    lines = [f"{len(records)} episodes. Scores: mean and {confidence:.0%} bootstrap CI "
             "(percentile, 2000 resamples, seed 0); infra errors are not scored."
             + (f" {repeats} records repeat an earlier record's episode key (each one counted)." if repeats else ""),
             ""]
    plots = []
    for (grader, version, params), cells in sorted(scores.items()):
        lines += [f"### {md_text(grader)} (v{md_text(version)}{', ' + md_text(params) if params else ''})", "",
                  "| agent | condition | n | mean | CI low | CI high | grader errors |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for (agent, condition), values in sorted(cells.items()):
            low, high = bootstrap_ci(values, confidence=confidence)
            lines.append(f"| {md_text(agent)} | {md_text(condition)} | {len(values)} | {np.mean(values):.3f} | "
                         f"{low:.3f} | {high:.3f} | {failed[((grader, version, params), (agent, condition))]} |")
        lines.append("")
        plots.append(_plot_scores(out_dir, grader, version, params, cells, confidence))
    all_terms = sorted({t for c in terminations.values() for t in c})
    lines += ["### Terminations", "", "| agent | condition | " + " | ".join(md_text(t) for t in all_terms) + " |",
              "|---|---|" + "---:|" * len(all_terms)]
    for (agent, condition), counts in sorted(terminations.items()):
        lines.append(f"| {md_text(agent)} | {md_text(condition)} | " + " | ".join(str(counts[t]) for t in all_terms) + " |")
    infra = sum(c["infra_error"] for c in terminations.values())
    verdict = (f"{len(records)} episodes, {infra} infra errors" if records else "no records")
    if repeats:
        verdict += f", {repeats} repeated episode keys"
    rates = reply_rates(records)
    if rates:  # reply-format failures belong next to the infra errors, not only in the cost table
        lines += ["", "### Replies", "", "Replies received per agent and role, those fed back as invalid "
                  "(failed parsing or the action schema) and those without a tool call where tools were "
                  "offered; the tool mode each record says was used.", "",
                  "| agent | role | tool mode | replies | invalid | invalid rate | text-only | text-only rate |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {md_text(r.agent)} | {md_text(r.role)} | {md_text(', '.join(sorted(r.tool_modes)) or '-')} | {r.replies} | {r.invalid} | "
                  f"{r.invalid_rate:.0%} | {r.text_only} | {r.text_rate:.0%} |" for r in rates]
        verdict += "; invalid replies: " + ", ".join(f"{md_text(r.agent)} ({md_text(r.role)}) {r.invalid_rate:.0%} of {r.replies}"
                                                     for r in rates)
        if reply_warnings(rates):
            verdict += f" (WARNING: above {WARN_RATE:.0%}, see the report's first lines)"
    return ReportSection("Summary", "\n".join(lines), verdict, [p for p in plots if p])


def _plot_scores(out_dir: Path, grader: str, version: str, params: str,
                 cells: dict[tuple[str, str], list[float]], confidence: float) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{a}\n{c}" for a, c in sorted(cells)]
    means = [float(np.mean(cells[k])) for k in sorted(cells)]
    cis = [bootstrap_ci(cells[k], confidence=confidence) for k in sorted(cells)]
    errors = np.array([[m - lo for m, (lo, _) in zip(means, cis)], [hi - m for m, (_, hi) in zip(means, cis)]])
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(labels) + 1), 3.2))
    ax.bar(range(len(labels)), means, yerr=np.clip(errors, 0, None), capsize=4, color="#4C72B0")
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel(f"{grader} (v{version})")
    ax.set_title(f"{grader} {params}: mean with {confidence:.0%} CI".replace("  ", " "), fontsize=9)
    fig.tight_layout()
    digest = hashlib.sha256(params.encode()).hexdigest()[:6]
    name = md_file_name(f"summary_{grader}_v{version}_{digest}.png")
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name


def warm_report_imports() -> threading.Thread:
    """Import what ``write_report`` will need (matplotlib with Agg, scipy.stats: about 1.5 s of
    CPU) on a daemon thread, so that a runner that waits on its workers pays them while its
    episodes run, not after the last one. Nothing is imported that ``write_report`` would not
    import itself; a failure here is left to ``write_report`` to raise where it would have."""

    def load() -> None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
            from scipy import stats  # noqa: F401
        except Exception:  # noqa: BLE001 - write_report imports them again and reports the error
            pass

    thread = threading.Thread(target=load, name="rsigym-report-imports", daemon=True)
    thread.start()
    return thread


def write_report(out_dir: str | Path, records: Sequence[Trajectory], analyses: Sequence[Any],
                 *, title: str = "rsigym report", errors: list[str] | None = None) -> Path:
    """Run the named analyses and write ``report.md`` in ``out_dir``; returns its path.

    An analysis that raises becomes a section that says so (the others are still written); its
    one-line error is appended to ``errors`` when given. The report always ends with the "Cost and
    time" section (``rsigym.report.costs``): tokens, cost, latency and retries per agent.
    """
    from .costs import usage_section

    import matplotlib

    out_dir = Path(out_dir)
    sections: list[ReportSection] = []
    with matplotlib.rc_context({"text.parse_math": False}):  # "$" in an agent id is a dollar, not mathtext
        _run_analyses(analyses, records, out_dir, sections, errors)
    _distinct_titles(sections, analyses)
    sections.append(usage_section(records, out_dir))  # every report says what its results cost
    text = [f"# {md_text(title)}", ""]  # a scenario or folder name
    text += [f"> **Warning:** {md_text(line)}" for line in reply_warnings(reply_rates(records))]
    if text[-1].startswith(">"):
        text.append("")
    for section in sections:
        # a title and a verdict are one line each, whatever names an analysis put in them
        text += [f"## {' '.join(section.title.splitlines())}", ""]
        if section.verdict:
            text += [f"**Verdict:** {' '.join(section.verdict.splitlines())}", ""]
        text += [section.markdown, ""]
        text += [f"![{p}]({p})" for p in section.plots] + [""]
    path = out_dir / "report.md"
    path.write_text(redact_text("\n".join(text)))
    return path


def _distinct_titles(sections: list[ReportSection], analyses: Sequence[Any]) -> None:
    """Give sections that share a title (one analysis named twice with other parameters, e.g.
    ``trace`` on two graders) the parameters that set them apart, so no two read alike."""
    params = [{} if isinstance(spec, str) else dict(spec.params) for spec in analyses]
    titles = [section.title for section in sections]
    for i, section in enumerate(sections):
        twins = [j for j, title in enumerate(titles) if title == section.title and j != i]
        if not twins:
            continue
        differing = sorted(k for k in params[i].keys() | {k for j in twins for k in params[j]}
                           if any(params[i].get(k) != params[j].get(k) for j in twins))
        label = ", ".join(f"{k}={_param_text(params[i].get(k, '(default)'))}" for k in differing)
        section.title = f"{section.title} ({md_text(label)})" if label else f"{section.title} ({i + 1})"


def _param_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "/".join(_param_text(v) for v in value) or "none"
    return str(value)


def _run_analyses(analyses: Sequence[Any], records: Sequence[Trajectory], out_dir: Path,
                  sections: list[ReportSection], errors: list[str] | None) -> None:
    for spec in analyses:
        name, params = (spec, {}) if isinstance(spec, str) else (spec.name, spec.params)
        analyse = ANALYSES.lookup(name)
        try:
            sections.append(analyse(records, out_dir, **params))
        except Exception as exc:  # noqa: BLE001 - one broken analysis must not cost the report
            line = f"analysis {name!r} failed: {type(exc).__name__}: {exc}".replace("\n", " ")[:300]
            if errors is not None:
                errors.append(line)
            sections.append(ReportSection(f"{md_text(name)} (failed)", md_code(line), verdict="not computed: the analysis raised"))
