"""The prompt-ready text of an ExperimentForecast-v0 round, and the JSON view numeric forecasters read.

Experience and candidate lines share one pipe-separated layout that ``parse_lines`` reads back
(the offline heuristic reads the text exactly as an LLM would, through this parser).
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from .archive import Archive, BaselineRecord
from .research import research_environment

__all__ = ["GAIN_DEFINITION", "environment_block", "experience_line", "candidate_line", "round_text", "parse_lines"]

GAIN_DEFINITION = ("Gain of an intervention over the baseline, averaged over paired seeds: log(baseline loss / "
                   "intervention loss) for loss metrics, (baseline error - intervention error) / baseline error "
                   "for error rates; positive is better, 0 is no change, and a crashed run is scored as the "
                   "trivial predictor (per-seed gains are floored at -1).")


def curve_summary(curve: Sequence[float]) -> str:
    """The training curve at 25/50/75/100% of the logged points."""
    if not curve:
        return "no curve logged"
    n = len(curve)
    points = [curve[max(0, min(n - 1, round(q * n) - 1))] for q in (0.25, 0.5, 0.75, 1.0)]
    return "training curve at 25/50/75/100% of the budget: " + ", ".join(f"{p:.4g}" for p in points)


def environment_block(name: str, baseline: BaselineRecord | None, *, target: bool) -> str:
    env = research_environment(name)
    lines = [f"### {name}{' (target)' if target else ''}", env.description,
             f"Budget: {env.budget_text()}. Metric: {env.metric} (lower is better; {env.metric_kind}).",
             "Baseline config: " + json.dumps(dict(env.baseline), sort_keys=True)]
    if baseline is not None:
        mean = sum(baseline.metrics) / len(baseline.metrics)
        lines.append(f"Baseline {env.metric}: {mean:.4g} (mean of {len(baseline.metrics)} seeds); "
                     + curve_summary(baseline.curve))
    return "\n".join(lines)


def _diff_text(diff: dict[str, Any]) -> str:
    return json.dumps(diff, sort_keys=True, separators=(",", ":"))


def experience_line(source: str, environment: str, intervention: str, group: str, text: str,
                    diff: dict[str, Any], gain: float, se: float | None) -> str:
    shown = f"{gain:+.4f}" + (f" +- {se:.4f}" if se is not None else " (one seed)")
    return f"- {source} | {environment} | {intervention} | {group} | {text} | {_diff_text(diff)} | gain {shown}"


def candidate_line(index: int, environment: str, intervention: str, group: str, text: str, diff: dict[str, Any]) -> str:
    return f"{index}. candidate | {environment} | {intervention} | {group} | {text} | {_diff_text(diff)}"


_LINE = re.compile(r"^(?:- (archive|executed)|(\d+)\. candidate) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| (.*) \| (\{.*\})"
                   r"(?: \| gain ([+-][0-9.]+))?", re.M)


def parse_lines(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(experience, candidates) read back from a round's text: dicts with environment, intervention,
    group, text, diff, and ``gain`` for experience lines."""
    experience, candidates = [], []
    for match in _LINE.finditer(text):
        source, index, environment, intervention, group, description, diff, gain = match.groups()
        try:
            parsed_diff = json.loads(diff)
        except json.JSONDecodeError:
            parsed_diff = {}
        row: dict[str, Any] = {"environment": environment.strip(), "intervention": intervention.strip(),
                               "group": group.strip(), "text": description.strip(), "diff": parsed_diff}
        if index is not None:
            candidates.append(row)
        elif gain is not None:
            experience.append({**row, "gain": float(gain), "source": source})
    return experience, candidates


def round_text(*, archive: Archive, target: str, environments: Sequence[str], condition: str, observed: str,
               round_index: int, rounds: int, select: int, experience: Sequence[str], executed: Sequence[str],
               candidates: Sequence[str], error: str | None = None) -> str:
    """The whole observation text of one round."""
    made = round_index * select
    parts = [
        f"# Experiment forecasting: round {round_index + 1} of {rounds} ({made} of {rounds * select} selections made)",
        f"Predict the gain of each of the {len(candidates)} candidate interventions on the target environment "
        f"{target}. The {select} candidates with the highest predictions are run and their observed gains "
        "are added to your experience; the episode's score is the best true gain found.",
        GAIN_DEFINITION, "", "## Environments",
        *(environment_block(name, archive.baselines.get(name), target=name == target) for name in environments),
        "", f"## Experience from the archive ({len(experience)} records; condition {condition}; "
            f"observed gains: {'mean of paired seeds +- SE' if observed == 'mean' else 'one seed each'})",
        *experience,
        "", f"## Executed in this episode ({len(executed)})", *executed,
        "", "## Candidates", *candidates, "",
    ]
    if error:
        parts.append(f"Error in your last reply: {error}")
    parts.append(f'Reply with {{"predictions": [{len(candidates)} numbers]}}: one predicted gain per candidate, '
                 "in candidate order.")
    return "\n".join(parts)
