"""MASS-style workflow evolution offline, over seeds: does evolution beat the seed workflow?

For each seed: evolve the seed workflow on the training tasks (one instance per family), then run
the seed and the evolved workflow on held-out tasks (``--test-per-family`` instances per family)
with the same role model. Prints, per seed and pooled: mean deterministic score of each
workflow with a bootstrap CI over tasks, the paired gain with its CI, output tokens and score per
output token (and its ratio, the paper's headline metric), the pairwise judge's agreement with the
deterministic grader on the held-out pairs (both orders; ties and inconsistent verdicts apart)
next to a coin-flip judge's (the control), and the cross-generation check: the workflow evolved
with the "new" role model (``rsigym/workflow_scripted_v2``) run with the old one against the old
model's own evolved workflow. Writes the SFT JSONL of the selected workflows and validates it.

    python benchmarks/workflow_evolution.py --seeds 0 1 2 [--sandbox docker] [--out DIR]
    python benchmarks/workflow_evolution.py --seeds 0 --write-spec envs/workflow/specs/evolved_offline.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import rsigym.envs.workflow.mass_policies  # noqa: F401  (offline judge and optimiser)
import rsigym.envs.workflow.policies  # noqa: F401  (offline roles)
from rsigym.envs.workflow.agents import RolePlayer
from rsigym.envs.workflow.analyses import agreement_counts, agreement_rate
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.pairwise_judge import PairwiseJudge
from rsigym.envs.workflow.mass import Execution, evolve, execute
from rsigym.envs.workflow.sft_export import sft_examples, validate_sft_jsonl, write_sft_jsonl
from rsigym.envs.workflow.tasks import make_task
from rsigym.sandbox import open_sandbox
from rsigym.stats import bootstrap_ci


@dataclass
class Args:
    """Benchmark settings."""

    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    rounds: int = 2                  # optimisation rounds
    candidates: int = 2              # candidate edits per round
    test_per_family: int = 2         # held-out instances per family
    role_model: str = "rsigym/workflow_scripted"
    new_role_model: str = "rsigym/workflow_scripted_v2"
    judge_model: str = "rsigym/workflow_judge"
    control_judge: str = "rsigym/workflow_judge_coin"
    optimizer_model: str = "rsigym/workflow_optimizer"
    sandbox: str = "auto"
    out: str = "workflow_bench_out"
    write_spec: str | None = None
    cross_generation: bool = True


def _train(seed: int) -> list[str]:
    return [f"{name}-{seed:03d}" for name in FAMILIES]


def _test(seed: int, per_family: int) -> list[str]:
    return [f"{name}-{100 + seed * per_family + i:03d}" for name in FAMILIES for i in range(per_family)]


def _ci(values: list[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{sum(values) / len(values):.3f} [{low:.3f}, {high:.3f}]"


def _judge_pairs(judge: PairwiseJudge, tasks: list[str], a: dict[str, Execution], b: dict[str, Execution]) -> list[Any]:
    return [(judge.compare(make_task(t), {**make_task(t).files, **a[t].files}, {**make_task(t).files, **b[t].files}),
             b[t].score - a[t].score) for t in tasks]


def main(args: Args) -> dict[str, Any]:
    console = Console(width=180)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[Any, ...]] = []
    pooled: dict[str, list[float]] = {"seed": [], "evolved": [], "gain": [], "tok_seed": [], "tok_evolved": []}
    judge_pairs: list[Any] = []
    control_pairs: list[Any] = []
    evolution_pairs: list[Any] = []  # verdicts inside the loop (no control: their files are not kept)
    cross: list[Any] = []
    examples: list[dict[str, Any]] = []
    started = time.perf_counter()
    with open_sandbox(args.sandbox) as box:
        for seed in args.seeds:
            result = evolve(_train(seed), role_model=args.role_model, judge_model=args.judge_model,
                            optimizer_model=args.optimizer_model, rounds=args.rounds, candidates=args.candidates,
                            seed=seed, sandbox=box)
            examples += [e for ex in result.selected for e in sft_examples(ex.dialogues)]
            for r in result.rounds:  # the evolution's own verdicts (candidate = b) against the grader
                evolution_pairs += [(v, c - i) for v, c, i in zip(r.verdicts, r.candidate_scores, r.incumbent_scores)]
            (out / f"evolved_seed{seed}.json").write_text(json.dumps(result.final_spec, indent=1, sort_keys=True))
            if args.write_spec and seed == args.seeds[0]:
                Path(args.write_spec).write_text(json.dumps(dict(result.final_spec, name="evolved_offline"),
                                                            indent=1, sort_keys=True) + "\n")
            tests = _test(seed, args.test_per_family)
            player = RolePlayer(args.role_model, seed=seed)
            base = {t: execute(result.seed_spec, t, player, seed=seed, sandbox=box) for t in tests}
            evo = {t: execute(result.final_spec, t, player, seed=seed, sandbox=box) for t in tests}
            s_seed, s_evo = [base[t].score for t in tests], [evo[t].score for t in tests]
            tok_seed = sum(base[t].output_tokens for t in tests) / len(tests)
            tok_evo = sum(evo[t].output_tokens for t in tests) / len(tests)
            pooled["seed"] += s_seed
            pooled["evolved"] += s_evo
            pooled["gain"] += [e - s for s, e in zip(s_seed, s_evo)]
            pooled["tok_seed"].append(tok_seed)
            pooled["tok_evolved"].append(tok_evo)
            judge_pairs += _judge_pairs(PairwiseJudge(args.judge_model, seed=seed), tests, base, evo)
            control_pairs += _judge_pairs(PairwiseJudge(args.control_judge, seed=seed, deterministic_first=False),
                                          tests, base, evo)
            accepted = [f"{r.mutation['op']}:{r.mutation.get('role', '')}" for r in result.rounds if r.accepted and r.mutation]
            rows.append((seed, _ci(s_seed), _ci(s_evo), _ci([e - s for s, e in zip(s_seed, s_evo)]),
                         f"{tok_seed:.0f}", f"{tok_evo:.0f}",
                         f"{(sum(s_evo) / tok_evo) / (sum(s_seed) / tok_seed):.2f}x" if sum(s_seed) else "inf",
                         ", ".join(accepted) or "-"))
            if args.cross_generation:
                new = evolve(_train(seed), role_model=args.new_role_model, judge_model=args.judge_model,
                             optimizer_model=args.optimizer_model, rounds=args.rounds, candidates=args.candidates,
                             seed=seed, sandbox=box)
                new_runs = {t: execute(new.final_spec, t, player, seed=seed, sandbox=box) for t in tests}
                cross += _judge_pairs(PairwiseJudge(args.judge_model, seed=seed), tests, evo, new_runs)
    table = Table(title=f"Workflow evolution offline ({len(args.seeds)} seeds, {len(pooled['gain'])} held-out tasks)")
    for column in ("seed", "seed workflow score", "evolved score", "gain (paired)", "tokens seed", "tokens evolved",
                   "score/token ratio", "accepted edits"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(c) for c in row))
    ratio = ((sum(pooled["evolved"]) / sum(pooled["tok_evolved"])) / (sum(pooled["seed"]) / sum(pooled["tok_seed"]))
             if sum(pooled["seed"]) else float("inf"))
    table.add_row("pooled", _ci(pooled["seed"]), _ci(pooled["evolved"]), _ci(pooled["gain"]),
                  f"{sum(pooled['tok_seed']) / len(args.seeds):.0f}", f"{sum(pooled['tok_evolved']) / len(args.seeds):.0f}",
                  f"{ratio:.2f}x", "")
    console.print(table)
    agreement = Table(title="Pairwise judge vs deterministic grader (held-out seed vs evolved pairs; both orders)")
    for column in ("judge", "pairs", "agreement (separated pairs)", "agree", "disagree", "judge tie", "grader tie", "inconsistent",
                   "decided by checks agree/disagree"):
        agreement.add_column(column)
    summary = {}
    for name, pairs in (("scripted judge", judge_pairs), ("coin judge (control)", control_pairs),
                        ("scripted judge, in-loop verdicts", evolution_pairs)):
        c = agreement_counts(pairs)
        summary[name] = c
        rate = agreement_rate(pairs)
        agreement.add_row(name, str(len(pairs)), f"{rate:.0%}" if rate == rate else "-", str(c["agree"]), str(c["disagree"]), str(c["judge_tie"]),
                          str(c["grader_tie"]), str(c["inconsistent"]),
                          f"{c['deterministic_agree']}/{c['deterministic_disagree']}")
    console.print(agreement)
    if cross:
        wins = sum(v.winner == "b" for v, _ in cross)
        losses = sum(v.winner == "a" for v, _ in cross)
        inconsistent = sum(v.inconsistent for v, _ in cross)
        ties = len(cross) - wins - losses - inconsistent
        console.print(f"Cross-generation check (workflow designed with {args.new_role_model}, run with "
                      f"{args.role_model}, vs the old model's own evolved workflow): {wins} wins, {losses} losses, "
                      f"{ties} ties, {inconsistent} inconsistent of {len(cross)}; grader delta "
                      f"{_ci([d for _, d in cross])}")
    path = out / "sft.jsonl"
    write_sft_jsonl(path, examples)
    count = validate_sft_jsonl(path)
    console.print(f"SFT export: {count} examples (one per role call) in {path}, schema-valid, workflow prompt stripped")
    console.print(f"wall time {time.perf_counter() - started:.0f} s")
    return {"pooled": pooled, "agreement": summary, "cross": len(cross), "sft_examples": count, "ratio": ratio}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--candidates", type=int, default=2)
    parser.add_argument("--test-per-family", type=int, default=2)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--out", default="workflow_bench_out")
    parser.add_argument("--write-spec", default=None)
    parser.add_argument("--no-cross-generation", action="store_true")
    ns = parser.parse_args()
    main(Args(seeds=ns.seeds, rounds=ns.rounds, candidates=ns.candidates, test_per_family=ns.test_per_family,
              sandbox=ns.sandbox, out=ns.out, write_spec=ns.write_spec, cross_generation=not ns.no_cross_generation))
    sys.exit(0)
