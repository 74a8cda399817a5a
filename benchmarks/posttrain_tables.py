"""README tables of the post-training benchmarks, rendered from their committed results files.

``grpo_dropout.py`` and ``dial_opd.py`` write ``benchmarks/results/*.json``: per seed block the
regime statistics and the paired differences against the baseline, the stability column across
blocks and the claim verdicts. This script renders them as markdown and, with ``--write``, replaces
the block between the ``posttrain-tables`` markers of docs/families/posttrain.md, so every number and verdict in it
is the results files' (a test regenerates the block and compares).

Run: ``python benchmarks/posttrain_tables.py [--write]``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import readme_blocks

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BEGIN, END = "<!-- posttrain-tables:begin -->", "<!-- posttrain-tables:end -->"
METRIC_NAMES = {"mean_at_k": "Mean@k", "pass_at_k": "Pass@k", "mean_at_k_in": "in-distribution Mean@k",
                "pass_at_k_in": "in-distribution Pass@k", "greedy": "greedy", "entropy_end": "entropy (last 10%)",
                "train_reward_end": "training reward (last 10%)"}


def _delta(comparison: dict[str, Any]) -> str:
    low, high = comparison["ci"]
    return f"{comparison['mean']:+.3f} [{low:+.3f}, {high:+.3f}]"


def _regime_rows(results: dict[str, Any], rows: list[tuple[str, str]]) -> list[str]:
    blocks = results["blocks"]
    lines = ["| | " + " | ".join(f"block {b}" for b in blocks) + " |", "|---|" + "---|" * len(blocks)]
    for label, fmt in rows:
        lines.append(f"| {label} | " + " | ".join(_cell(fmt, block["regime"]) for block in blocks.values()) + " |")
    return lines


def _cell(fmt: str, regime: dict[str, Any]) -> str:
    """One regime cell; "not measured" where a results file predates the statistic."""
    try:
        return fmt.format(**regime)
    except KeyError:
        return "not measured"


def _units(results: dict[str, Any]) -> str:
    """Each block's (warm start, seed) runs: a product where the block's warm starts share their seeds, else pairs."""
    parts = []
    for name, block in results["blocks"].items():
        warm = sorted({u[0] for u in block["units"]})
        seeds = sorted({u[1] for u in block["units"]})
        if len(block["units"]) == len(warm) * len(seeds):
            parts.append(f"block {name}: warm starts {', '.join(map(str, warm))} x seeds {', '.join(map(str, seeds))}")
        else:
            pairs = ", ".join(f"{w}/{s}" for w, s in sorted(tuple(u) for u in block["units"]))
            parts.append(f"block {name}: warm start/seed {pairs}")
    return "; ".join(parts)


Column = tuple[str, Callable[[list[dict[str, float]]], str]]
"""an extra ablation column: its header and its cell from the variant's per-block metric means"""


def ablation_table(results: dict[str, Any], baseline: str, metrics: tuple[str, ...], label: str,
                   extra: Sequence[Column] = ()) -> list[str]:
    """Per variant: means pooled over blocks, the ``extra`` columns, and per metric each block's paired
    difference with its verdict, then the stability column (the verdict both blocks agree on, else "unstable")."""
    blocks = results["blocks"]
    header = ["variant", *(f"{METRIC_NAMES[m]} (mean)" for m in metrics), *(name for name, _ in extra)]
    for m in metrics:
        header += [f"Δ {METRIC_NAMES[m]} vs {label}, block {b} [95% CI]" for b in blocks] + [f"{METRIC_NAMES[m]}: stable"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for variant, stability in results["stability"].items():
        cells = [f"`{variant}`"]
        for m in metrics:
            means = [block["variants"][variant]["mean"][m] for block in blocks.values()]
            cells.append(f"{sum(means) / len(means):.3f}")
        cells += [cell([block["variants"][variant]["mean"] for block in blocks.values()]) for _, cell in extra]
        for m in metrics:
            cells += [f"{_delta(c)} {c['label']}" for c in
                      (block["variants"][variant][f"vs_{baseline}"][m] for block in blocks.values())]
            cells.append(stability[m])
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def tolerance_line(results: dict[str, Any]) -> str:
    """The tolerance within which a rerun elsewhere must agree with these block means."""
    tolerance = results.get("tolerance")
    if not tolerance:
        return "Rerun tolerance: not measured (no power blocks)."
    cells = ", ".join(f"{METRIC_NAMES.get(m, m)} ±{v:.3f}" for m, v in tolerance["metrics"].items())
    return (f"Rerun tolerance (a rerun on another machine must give every block mean within it, with the same "
            f"verdicts; `benchmarks/posttrain_regenerate.py` checks the quick preset): {cells}. Measured: "
            f"{tolerance['sds']:g} SD of the block-mean difference between `{tolerance['rerun']}` and "
            f"`{tolerance['baseline']}` (other random draws only) over {tolerance['blocks']} blocks, at least {tolerance['floor']:.3f} (one evaluation problem).")


DETECT, FALSE_CALL = 0.8, 0.05
"""the targets of the power study: a positive control detected in at least 80% of replications, a null called in
at most 5%"""


def power_met(arm: dict[str, Any], rate: dict[str, Any]) -> str:
    """"met" where the observed rate reaches the arm's target, "not met" where it misses, "none" without replications."""
    if not rate["total"]:
        return "none"
    if arm["arm"] == "positive control":
        return "met" if rate["rate"] >= DETECT else "not met"
    return "met" if rate["rate"] <= FALSE_CALL else "not met"


def power_table(results: dict[str, Any]) -> list[str]:
    """Positive-control detection and null false-call rates of the tables' verdict rule (two blocks that agree,
    counted over disjoint pairs of blocks), with exact intervals, judged against the targets; beside them the
    rates of one block's verdict (informative: the tables never call a claim on one block), the mean difference
    and the mean MDD."""
    lines = ["| arm | compared | replications: pairs (blocks) | the tables' rule, two blocks (pairs): detected / "
             "called [exact 95% CI] | target | target met (two-block rule) | one block (informative): detected / "
             "called [exact 95% CI] | one block against the target | mean Δ | mean MDD |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for arm in results.get("power", []):
        per_block, pairs = arm["per_block"], arm["two_blocks"]
        target = f">= {DETECT:.0%} detected" if arm["arm"] == "positive control" else f"<= {FALSE_CALL:.0%} called"
        effect = f"{arm['effect_mean']:+.3f}" if "effect_mean" in arm else "not measured"
        cells = [arm["arm"], f"`{arm['variant']}` - `{arm['baseline']}` on {METRIC_NAMES[arm['metric']]}",
                 f"{pairs['total']} ({per_block['total']})", _rate(pairs), target, f"**{power_met(arm, pairs)}**",
                 _rate(per_block), power_met(arm, per_block), effect, f"{arm['mdd_mean']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    totals = [arm["two_blocks"]["total"] for arm in results.get("power", []) if arm["two_blocks"]["total"]]
    if totals:
        n = max(totals)
        lines += ["", f"Met / not met compares the observed rate of the tables' own rule (a verdict where two blocks "
                      f"agree: pairs A+B, C+D, ...; A+B are the tables' blocks) with the target. Over {n} pairs the "
                      f"exact 95% interval of 0 calls still reaches {1 - 0.025 ** (1 / n):.2f}: a false-call rate "
                      f"under {FALSE_CALL:.0%} is shown (upper bound below it) only by "
                      f"{_clean_replications(FALSE_CALL)} replications (pairs) without a call."]
    return lines


def claim_metric_targets(results: dict[str, Any]) -> list[str]:
    """Per metric the claims use: every positive control and the null by the tables' own rule (two blocks that
    agree, over pairs of blocks), one block's rates beside them, and the design's resolution there (the null
    arm's mean MDD per block). "met" where some positive control on the metric reaches its target by the
    two-block rule and every null there stays within its own; a claim of a smaller effect than the MDD is
    beyond this design's resolution whatever the controls show."""
    power = results.get("power", [])
    lines = ["| metric the claims use | claims | positive controls: detected, two-block rule (pairs) [exact 95% CI] | "
             "null: called, two-block rule (pairs) [exact 95% CI] | mean MDD (null arm) | both targets (two-block rule) |",
             "|---|---|---|---|---|---|"]
    for metric in dict.fromkeys(c["metric"] for c in results["claims"]):
        ids = ", ".join(c["id"] for c in results["claims"] if c["metric"] == metric)
        controls = [a for a in power if a["metric"] == metric and a["arm"] == "positive control"]
        nulls = [a for a in power if a["metric"] == metric and a["arm"] == "null"]
        detected = "; ".join(f"`{a['variant']}` {_rate(a['two_blocks'])}: {power_met(a, a['two_blocks'])} (one block "
                             f"{_rate(a['per_block'])}; mean Δ {a.get('effect_mean', math.nan):+.3f})"
                             for a in controls) or "none"
        called = "; ".join(f"`{a['variant']}` {_rate(a['two_blocks'])}: {power_met(a, a['two_blocks'])} (one block "
                           f"{_rate(a['per_block'])})" for a in nulls) or "none"
        mdd = "; ".join(f"{a['mdd_mean']:.3f}" for a in nulls) or "not measured"
        both = "met" if (any(power_met(a, a["two_blocks"]) == "met" for a in controls) and nulls
                         and all(power_met(a, a["two_blocks"]) == "met" for a in nulls)) else "not met"
        lines.append(f"| {METRIC_NAMES[metric]} | {ids} | {detected} | {called} | {mdd} | {both} |")
    return lines


def _clean_replications(rate: float) -> int:
    """The fewest replications whose exact 95% interval of 0 events lies below ``rate``."""
    return math.ceil(math.log(0.025) / math.log(1 - rate))


def _rate(rate: dict[str, Any]) -> str:
    if not rate["total"]:
        return "none"
    low, high = rate["ci"]
    return f"{rate['count']}/{rate['total']} = {rate['rate']:.2f} [{low:.2f}, {high:.2f}]"


def _reading(claim: dict[str, Any]) -> str:
    """Decided where both blocks agree on a sign; otherwise beyond this design's resolution, with its MDD."""
    mdd = max(c["mdd"] for c in claim["blocks"].values())
    if claim["verdict"] in ("holds", "refuted"):
        return "decided"
    if claim["verdict"] == "not shown":
        return f"beyond this design's resolution: an effect under the MDD (up to {mdd:.3f}) is missed"
    if claim["verdict"] == "unstable":
        return f"undecided: the blocks disagree (MDD up to {mdd:.3f})"
    return claim["verdict"]


def claims_table(results: dict[str, Any], extra: Column | None = None) -> list[str]:
    """Per claim, each block's difference, MDD and verdict, the two-block verdict, and the ``extra`` column of
    the claim's variant."""
    blocks = list(results["blocks"])
    head = f" {extra[0]} of the claim's variant |" if extra else ""
    lines = ["| claim | compared |" + head + " " + " | ".join(f"block {b}: Δ [95% CI], MDD, verdict" for b in blocks)
             + " | verdict (both blocks) | reading |", "|---|---|" + "---|" * (len(blocks) + 2 + bool(extra))]
    for claim in results["claims"]:
        cells = [f"{claim['id']}: {claim['text']}",
                 f"`{claim['variant']}` - `{claim['baseline']}` on {METRIC_NAMES[claim['metric']]}"]
        if extra:
            cells.append(extra[1]([block["variants"][claim["variant"]]["mean"] for block in results["blocks"].values()]))
        for b in blocks:
            c = claim["blocks"][b]
            cells.append(f"{_delta(c)}, {c['mdd']:.3f}, {c['label']}")
        cells.append(f"**{claim['verdict']}**")
        cells.append(_reading(claim))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


GRPO_REGIME = [
    ("targets: training / held-out / overlap", "{train_targets} / {held_out_targets} / {held_out_overlap}"),
    ("valid answers per held-out target: mean (min-max)", "{valid_answers_mean:.0f} ({valid_answers_min}-{valid_answers_max})"),
    ("warm start on held-out: greedy / Mean@k / Pass@k", "{warm_greedy:.3f} / {warm_mean_at_k:.3f} / {warm_pass_at_k:.3f}"),
    ("warm start: distinct right answers among k samples", "{warm_distinct_correct_at_k:.2f}"),
    ("vanilla GRPO: rollouts that are the memorised answer, first→last 10%",
     "{vanilla_favoured_start:.3f}→{vanilla_favoured_end:.3f}"),
    ("vanilla GRPO: token entropy, first→last 10%", "{vanilla_entropy_start:.3f}→{vanilla_entropy_end:.3f}"),
    ("vanilla GRPO: training reward, last 10%", "{vanilla_train_reward_end:.3f}"),
    ("vanilla GRPO: held-out Mean@k / Pass@k, warm start→end",
     "{warm_mean_at_k:.3f}→{vanilla_mean_at_k_end:.3f} / {warm_pass_at_k:.3f}→{vanilla_pass_at_k_end:.3f}"),
]


def _twin_cell(means: list[dict[str, float]]) -> str:
    """Drops per run and the share of them that left an identical copy in the update (pooled over blocks)."""
    drops = sum(m.get("drops", 0.0) for m in means)
    if not drops:
        return "0"
    twins = sum(m.get("drops_with_copy", 0.0) for m in means)
    return f"{drops / len(means):.0f} ({twins / drops:.1%})"


TWIN_COLUMN: Column = ("drops per run (share with a surviving twin)", _twin_cell)


def grpo_tables(results: dict[str, Any]) -> str:
    s = results["settings"]
    head = (f"GRPO on `digitsum` (length {s['length']}, a memorised favoured answer per target in "
            f"{s['canonical_share']:g} of the warm start's demonstrations), held-out targets t % {s['held_out_every']} == 1; "
            f"{s['warm_starts']} warm starts ({s['sft_steps']} supervised steps) x {s['seeds']} seeds per block, "
            f"{s['steps']} steps x {s['prompts_per_step']} targets x G={s['group_size']}, k={s['sample_k']} samples per "
            f"held-out problem ({s['eval_size']} problems), {s['threads']} thread(s). {_units(results)}. CIs: Student t "
            f"over the warm starts' mean differences; MDD: minimum detectable difference of that rule (alpha 0.05, power 0.8).")
    lines = [head, "", "Regime:", "", *_regime_rows(results, GRPO_REGIME), "", "Ablations (paired against vanilla GRPO):", "",
             *ablation_table(results, "none", ("mean_at_k", "pass_at_k", "entropy_end"), "vanilla", [TWIN_COLUMN]), "",
             "Claims:", "", *claims_table(results, TWIN_COLUMN), "",
             "Power of the verdict rule (independent blocks of this design):", "", *power_table(results), "",
             "Targets per metric the claims use:", "", *claim_metric_targets(results), "",
             tolerance_line(results)]
    return "\n".join(lines)


DIAL_REGIME = [
    ("vocabulary |V| / low-low cut-off (both p below)", "{vocabulary} / {low_prob:.4f}"),
    ("targets: training / held-out / overlap", "{train_targets} / {held_out_targets} / {held_out_overlap}"),
    ("valid answers per held-out target: mean (min-max)", "{valid_answers_mean:.0f} ({valid_answers_min}-{valid_answers_max})"),
    ("student warm start on held-out: greedy / Mean@k / Pass@k", "{student_greedy:.3f} / {student_mean_at_k:.3f} / {student_pass_at_k:.3f}"),
    ("teacher on held-out: greedy / Mean@k / Pass@k", "{teacher_greedy:.3f} / {teacher_mean_at_k:.3f} / {teacher_pass_at_k:.3f}"),
    ("in distribution (training targets, fresh samples), Mean@k: student warm start / teacher / all tokens at the end",
     "{student_mean_at_k_in:.3f} / {teacher_mean_at_k_in:.3f} / {all_mean_at_k_in:.3f}"),
    ("all tokens: teacher gap closed in distribution, learning curve (share at step)", "{all_gap_curve_text}"),
    ("held-out targets, Mean@k: student warm start / teacher / all tokens at the end",
     "{student_mean_at_k:.3f} / {teacher_mean_at_k:.3f} / {all_mean_at_k:.3f}"),
    ("sampled tokens that are low-low (first 10% of steps)", "{low_low_share:.3f}"),
    ("low-low tokens that are a mistake or follow one (all tokens: share)", "{low_low_error_share:.3f} ({error_share:.3f})"),
    ("sampled tokens low-low at the old fixed cut-off p < 0.1", "{low_low_share_fixed_01:.3f}"),
    ("tokens the teacher is sure of (p_t > 0.99)", "{teacher_sure_share:.3f}"),
    ("low-low share of divergence-only picks", "{top_signal_low_low_share:.3f}"),
]


def _gap_cell(means: list[dict[str, float]]) -> str:
    """Share of the teacher's in-distribution Mean@k lead over the student warm start that the run closed (pooled)."""
    start = sum(m["start_mean_at_k_in"] for m in means)
    gap = sum(m["teacher_mean_at_k_in"] for m in means) - start
    return f"{(sum(m['mean_at_k_in'] for m in means) - start) / gap:.0%}" if gap > 0 else "no gap"


GAP_COLUMN: Column = ("teacher gap closed, in distribution", _gap_cell)


def dial_tables(results: dict[str, Any]) -> str:
    s = results["settings"]
    head = (f"On-policy distillation on `digitsum` (base {s['base']}, length {s['length']}), held-out targets "
            f"t % {s['held_out_every']} == 1, keep ratio {s['keep_ratio']:g}; {s['warm_starts']} warm starts (student "
            f"{s['student_sft_steps']}, teacher {s['teacher_sft_steps']} supervised steps) x {s['seeds']} seeds per block, "
            f"{s['steps']} steps x {s['prompts_per_step']} targets, k={s['sample_k']} samples per held-out problem "
            f"({s['eval_size']} problems), {s['threads']} thread(s). {_units(results)}. Low-low: both probabilities "
            f"below {s['low_prob_per_vocab']:g}/|V|. CIs: Student t over the warm starts' mean differences; MDD: "
            f"minimum detectable difference of that rule (alpha 0.05, power 0.8).")
    lines = [head, "", "Regime:", "", *_regime_rows(results, DIAL_REGIME), "",
             "Ablations (paired against all-token distillation):", "",
             *ablation_table(results, "all", ("mean_at_k_in", "mean_at_k"), "all tokens", [GAP_COLUMN]), "",
             "Claims:", "", *claims_table(results, GAP_COLUMN), "",
             "Power of the verdict rule (independent blocks of this design):", "", *power_table(results), "",
             "Targets per metric the claims use:", "", *claim_metric_targets(results), "",
             power_gap_line(results), "", tolerance_line(results)]
    return "\n".join(lines)


def power_gap_line(results: dict[str, Any]) -> str:
    """The teacher gap all-token distillation closed over the power blocks, against its target."""
    gap = results.get("power_gap")
    if not gap:
        return "Teacher gap closed over the power blocks: not measured."
    shares = [v for v in gap["per_block"].values() if not math.isnan(v)]
    return (f"All tokens, in-distribution teacher gap closed over the {gap['blocks']} power blocks (each block's 3 "
            f"warm starts pooled, as in the gap column): {gap['pooled']:.1%} pooled, {min(shares):.0%} to "
            f"{max(shares):.0%} per block, {gap['reaching_target']} of {gap['blocks']} blocks at or above the "
            f"{gap['target']:.0%} target.")


def render(results_dir: Path = RESULTS) -> str:
    """The README block (without the markers) from the results files present."""
    parts = []
    for file_name, renderer in (("grpo_dropout.json", grpo_tables), ("dial_opd.json", dial_tables)):
        path = results_dir / file_name
        if path.exists():
            parts.append(f"From `benchmarks/results/{file_name}`:\n\n" + renderer(json.loads(path.read_text())))
    return "\n\n".join(parts)


def readme_block(readme: str) -> str:
    """The text between the markers of ``readme``; a clear error when they are missing."""
    return readme_blocks.block(readme, BEGIN, END)


def write_readme(readme_path: Path = ROOT / "docs" / "families" / "posttrain.md", results_dir: Path = RESULTS) -> None:
    readme_blocks.replace(readme_path, BEGIN, END, render(results_dir))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the README block")
    if parser.parse_args().write:
        write_readme()
    else:
        print(render())
