"""Workflow analyses: scores and score per output token by workflow, pairwise judging, SFT export.

* ``workflow_scores``: mean ``workflow_score`` per agent x condition (workflow) with a CI over
  tasks, output tokens, score per 1k output tokens and its ratio to the baseline workflow.
  Control: the ``control`` agent (a blind one) must score below every other agent, else the
  verdict says the ruler failed.
* ``workflow_pairwise``: each condition's workspace against the baseline's on the same task,
  seed and agent, judged both orders (the model sees the workspaces only); wins, losses, ties and
  inconsistent verdicts apart, and agreement with the deterministic grader, next to a coin-flip
  judge's on the same pairs (the control: a judge no better than it tells nothing). With the
  condition a workflow designed by a newer model and the agent the older model, this is the
  cross-generation check.
* ``workflow_sft``: the dialogues of one condition's episodes that the judge prefers over the
  baseline's (self-judged filtering) as TRL chat JSONL (``sft.jsonl``), validated; the verdict
  fails when an example keeps the workflow prompt.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from rsigym.records import Trajectory
from rsigym.report import ReportSection, condition_label, md_code, md_text, register_analysis
from rsigym.report.stats import bootstrap_ci, minimum_detectable_difference

from .pairwise_judge import PairwiseJudge
from .sft_export import sft_examples, validate_sft_jsonl, write_sft_jsonl
from .tasks import task_brief

__all__ = ["workflow_scores", "workflow_pairwise", "workflow_sft", "agreement_counts", "agreement_rate",
           "paired_verdict"]


def _score(record: Trajectory, grader: str = "workflow_score") -> float | None:
    for grade in record.grades:
        if grade.grader == grader and grade.score is not None:
            return float(grade.score)
    return None


def _state(record: Trajectory) -> dict[str, Any]:
    state = record.final.state if record.final is not None else None
    if not isinstance(state, dict):
        raise ValueError(f"record {record.episode_key} has no workflow snapshot")
    return state


def _workflow_records(records: Sequence[Trajectory]) -> list[Trajectory]:
    return [r for r in records if r.final and isinstance(r.final.state, dict) and "dialogues" in r.final.state]


@register_analysis("workflow_scores")
def workflow_scores(records: Sequence[Trajectory], out_dir: Path, *, baseline: str = "none",
                    control: str | None = None) -> ReportSection:
    """Score and score per output token per agent x workflow; the control agent must score lowest."""
    cells: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    missing = 0
    for record in _workflow_records(records):
        score = _score(record)
        if score is None:
            missing += 1
            continue
        cells[(record.agent.id, condition_label(record.env.condition))].append((score, record.usage.completion_tokens))
    lines = ["| agent | workflow | episodes | mean score | 95% CI | output tokens | score / 1k tokens | ratio to baseline |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    per_token: dict[tuple[str, str], float] = {}
    for cell, values in sorted(cells.items()):
        scores = [s for s, _ in values]
        tokens = sum(t for _, t in values) / len(values)
        per_token[cell] = sum(scores) / len(scores) / max(tokens, 1.0) * 1000
    for cell, values in sorted(cells.items()):
        scores = [s for s, _ in values]
        low, high = bootstrap_ci(scores)
        base = per_token.get((cell[0], baseline))
        ratio = f"{per_token[cell] / base:.2f}x" if base else "-"
        tokens = sum(t for _, t in values) / len(values)
        lines.append(f"| {md_text(cell[0])} | {md_text(cell[1])} | {len(values)} | {sum(scores) / len(scores):.3f} | "
                     f"[{low:.3f}, {high:.3f}] | {tokens:.0f} | {per_token[cell]:.3f} | {ratio} |")
    means = {cell: sum(s for s, _ in v) / len(v) for cell, v in cells.items()}
    if not means:
        return ReportSection("Workflow scores", "no workflow records", "insufficient data")
    best = max(means, key=means.__getitem__)
    verdict = f"best: {md_text(best[0])} under {md_text(best[1])} ({means[best]:.3f}); {missing} records without a score"
    if control is not None:
        control_means = [m for (agent, _), m in means.items() if agent == control]
        others = [m for (agent, _), m in means.items() if agent != control]
        if not control_means or not others:
            verdict += f"; control {md_code(control)}: insufficient data"
        elif max(control_means) < min(others):
            verdict += f"; control {md_code(control)} scores {max(control_means):.3f}, below every other agent: the ruler separates"
        else:
            verdict += f"; CONTROL FAILED: {md_code(control)} scores {max(control_means):.3f}, not below every other agent"
    return ReportSection("Workflow scores", "\n".join(lines), verdict)


def _direction(deltas: list[float]) -> str:
    low, high = bootstrap_ci(deltas)
    return "better" if low > 0 else "worse" if high < 0 else "no detectable difference"


def paired_verdict(deltas: Sequence[float], blocks: Sequence[Any], min_n: int = 5) -> str:
    """A paired difference (b minus a per held-out task) with its CI, the minimum detectable
    difference (alpha 0.05, power 0.8, from the deltas' SD), and the verdict per seed block:
    "unstable" when two blocks disagree. "insufficient data" under ``min_n`` tasks."""
    values = [float(d) for d in deltas]
    if len(values) < min_n:
        return f"insufficient data ({len(values)} tasks)"
    low, high = bootstrap_ci(values)
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / max(len(values) - 1, 1)) ** 0.5
    mdd = minimum_detectable_difference(sd, len(values))
    by_block: dict[Any, list[float]] = defaultdict(list)
    for block, value in zip(blocks, values):
        by_block[block].append(value)
    per_block = {b: _direction(v) if len(v) >= min_n else "insufficient data" for b, v in sorted(by_block.items())}
    overall = _direction(values)
    decided = {v for v in per_block.values() if v != "insufficient data"}
    stability = "unstable between seed blocks" if len(decided) > 1 else "stable across seed blocks"
    blocks_text = ", ".join(f"{b}: {v}" for b, v in per_block.items())
    return (f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] over {len(values)} tasks, minimum detectable difference "
            f"{mdd:.3f}: {overall if len(decided) <= 1 else 'unstable'} ({stability}; {blocks_text})")


def agreement_counts(pairs: list[tuple[Any, float]], margin: float = 0.05) -> dict[str, int]:
    """Count verdicts against the grader's delta (b minus a): agree, disagree, judge tie, grader tie, inconsistent."""
    counts = dict.fromkeys(["agree", "disagree", "judge_tie", "grader_tie", "inconsistent"], 0)
    for verdict, delta in pairs:
        truth = "tie" if abs(delta) <= margin else ("b" if delta > 0 else "a")
        if verdict.inconsistent:
            counts["inconsistent"] += 1
        elif verdict.winner == "tie":
            counts["judge_tie"] += 1
        elif truth == "tie":
            counts["grader_tie"] += 1
        else:
            counts["agree" if verdict.winner == truth else "disagree"] += 1
    return counts


def agreement_rate(pairs: list[tuple[Any, float]], margin: float = 0.05) -> float:
    """Share of the pairs the grader separates (|delta| > margin) where the verdict picks the grader's winner."""
    decisive = [(v, d) for v, d in pairs if abs(d) > margin]
    if not decisive:
        return float("nan")
    return sum(v.winner == ("b" if d > 0 else "a") for v, d in decisive) / len(decisive)


@register_analysis("workflow_pairwise")
def workflow_pairwise(records: Sequence[Trajectory], out_dir: Path, *, baseline: str = "none",
                      judge_model: str = "rsigym/workflow_judge", control_model: str = "rsigym/workflow_judge_coin",
                      api_base: str | None = None) -> ReportSection:
    """Each workflow vs the baseline workflow, per task/seed/agent, judged both orders."""
    by_key: dict[tuple[str, int, str, int], dict[str, Trajectory]] = defaultdict(dict)
    for record in _workflow_records(records):
        key = (record.env.task_id or "", record.seed, record.agent.id, record.rep)
        by_key[key][condition_label(record.env.condition)] = record
    judges = {"judge": PairwiseJudge(judge_model, api_base=api_base),
              "control": PairwiseJudge(control_model, api_base=api_base)}
    results: dict[tuple[str, str], dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for key, group in sorted(by_key.items()):
        if baseline not in group:
            continue
        a = group[baseline]
        for condition, b in sorted(group.items()):
            score_a, score_b = _score(a), _score(b)
            if condition == baseline or score_a is None or score_b is None:
                continue
            brief = task_brief(_state(a)["task_id"])
            for name, judge in judges.items():
                verdict = judge.compare(brief, _state(a)["files"], _state(b)["files"])
                results[(condition, key[2])][name].append((verdict, score_b - score_a))
    if not results:
        return ReportSection("Workflow pairwise judging", f"no pairs with baseline {md_code(baseline)}", "insufficient data")
    lines = ["| workflow vs baseline | agent | judge | wins | losses | ties | inconsistent | agree | disagree | "
             "judge tie | grader tie |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    verdicts = []
    for (condition, agent), by_judge in sorted(results.items()):
        for name, pairs in sorted(by_judge.items()):
            wins = sum(v.winner == "b" for v, _ in pairs)
            losses = sum(v.winner == "a" for v, _ in pairs)
            inconsistent = sum(v.inconsistent for v, _ in pairs)
            ties = len(pairs) - wins - losses - inconsistent
            c = agreement_counts(pairs)
            lines.append(f"| {md_text(condition)} | {md_text(agent)} | {name} | {wins} | {losses} | {ties} | {inconsistent} | "
                         f"{c['agree']} | {c['disagree']} | {c['judge_tie']} | {c['grader_tie']} |")
        judge_pairs, control_pairs = by_judge["judge"], by_judge["control"]
        j_rate, c_rate = agreement_rate(judge_pairs), agreement_rate(control_pairs)
        decisive = sum(abs(d) > 0.05 for _, d in judge_pairs)
        wins = sum(v.winner == "b" for v, _ in judge_pairs)
        losses = sum(v.winner == "a" for v, _ in judge_pairs)
        head = f"{md_text(condition)} vs {md_text(baseline)} ({md_text(agent)}): {wins} wins, {losses} losses over {len(judge_pairs)} tasks"
        if decisive < 3:
            verdicts.append(head + f"; insufficient data for the agreement control ({decisive} pairs the grader separates)")
        elif j_rate > c_rate:
            verdicts.append(head + f"; judge agrees with the grader on {j_rate:.0%} vs the coin judge's {c_rate:.0%}")
        else:
            verdicts.append(head + f"; JUDGE NO BETTER THAN A COIN: {j_rate:.0%} vs {c_rate:.0%}")
    return ReportSection("Workflow pairwise judging", "\n".join(lines), "; ".join(verdicts))


def _pair_key(record: Trajectory) -> tuple[str, int, str, int]:
    return (record.env.task_id or "", record.seed, record.agent.id, record.rep)


@register_analysis("workflow_sft")
def workflow_sft(records: Sequence[Trajectory], out_dir: Path, *, condition: str = "none", baseline: str = "none",
                 judge_model: str = "rsigym/workflow_judge", agents: list[str] | None = None,
                 api_base: str | None = None) -> ReportSection:
    """SFT JSONL (TRL chat messages, workflow text stripped) from the episodes of ``condition`` that
    the model's own judge prefers over the ``baseline`` episode of the same task, seed and agent
    (self-judged filtering; the hidden-key score is only reported). With ``condition`` equal to
    ``baseline`` every episode is kept (nothing to judge against)."""
    pool = [r for r in _workflow_records(records) if agents is None or r.agent.id in agents]
    base = {_pair_key(r): r for r in pool if condition_label(r.env.condition) == baseline}
    judge = PairwiseJudge(judge_model, api_base=api_base)
    kept, dropped, unpaired = [], [], 0
    for record in sorted((r for r in pool if condition_label(r.env.condition) == condition), key=_pair_key):
        partner = base.get(_pair_key(record))
        if condition == baseline:
            kept.append(record)
        elif partner is None:
            unpaired += 1
        elif judge.compare(task_brief(_state(record)["task_id"]), _state(partner)["files"],
                           _state(record)["files"]).winner == "b":
            kept.append(record)
        else:
            dropped.append(record)
    examples = [e for r in kept for e in sft_examples(_state(r)["dialogues"], _state(r).get("spec"))]
    path = Path(out_dir) / "sft.jsonl"
    write_sft_jsonl(path, examples)

    def mean(rs: list[Trajectory]) -> str:
        scores = [s for s in (_score(r) for r in rs) if s is not None]
        return f"{sum(scores) / len(scores):.3f}" if scores else "-"

    try:
        count = validate_sft_jsonl(path)
        verdict = (f"{count} examples from {len(kept)} episodes of {md_text(condition)} the judge preferred over {md_text(baseline)} "
                   f"({len(dropped)} not preferred, {unpaired} without a {md_text(baseline)} episode); hidden-key score of "
                   f"kept {mean(kept)} vs not kept {mean(dropped)} (report only); schema-valid, workflow text stripped")
    except ValueError as exc:
        verdict = f"SFT EXPORT INVALID: {md_text(exc)}"
    if not kept:
        verdict = f"insufficient data: no episode of {md_text(condition)} was preferred over {md_text(baseline)} ({unpaired} unpaired)"
    roles: dict[str, int] = defaultdict(int)
    for r in kept:
        for d in _state(r)["dialogues"]:
            roles[d["role"]] += 1
    table = "| role | dialogues |\n|---|---:|\n" + "\n".join(f"| {md_text(k)} | {v} |" for k, v in sorted(roles.items()))
    return ReportSection("Workflow SFT export", table, verdict)
