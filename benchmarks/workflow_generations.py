"""MASS's outer loop offline, two generations end to end: evolve, self-judge, distil, train, evolve again, compare.

Generation 1 is the scripted model (``rsigym/workflow_scripted`` roles, ``rsigym/workflow_judge``,
the generic ``rsigym/workflow_optimizer``). Per seed (one secret salt per seed):

1. gen-1 evolves a workflow from the seed spec on the five training tasks (``--budget`` candidates);
2. self-play: the seed and the evolved workflow run on ``--selfplay-per-family`` further training
   instances per family; gen-1's own judge compares the two workspaces of each task, and the
   preferred one's dialogues are kept (ties keep neither). The hidden-key score of kept and not
   kept executions is printed for the report only;
3. the kept dialogues become SFT examples with everything the workflow added stripped (counted:
   examples carrying workflow-added text must be 0), exported as TRL chat JSONL;
4. gen-2, a small torch policy (``GenerationPolicy``), is fitted: its executor on the SFT
   examples, its judge on gen-1's self-play verdicts, its optimiser's edit scorer on gen-1's
   accepted against rejected edits;
5. gen-2 evolves again from the seed spec with itself as executor, judge and optimiser, sampling
   its own actions and edits (no replay of gen-1's);
6. held-out comparison (``--test-per-family`` test instances per family): gen-1 with its evolved
   workflow against gen-2 with its own, and gen-2 under the seed workflow (does the distilled
   model carry the workflow's gains without it?). Paired score differences with bootstrap CIs
   over held-out tasks and both judges' pairwise verdicts (wins, losses, ties, inconsistent);
7. the recursion test: gen-1 executes both workflows (its own and gen-2's design) on the held-out
   tasks and gen-1's judge compares them; the share of decided comparisons that prefer the
   gen-2-designed workflow, with an exact CI (unit: the held-out task comparison).

    python benchmarks/workflow_generations.py --seeds 0 1 [--budget 6] [--out DIR]
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
from scipy.stats import binomtest
from rich.table import Table

import rsigym.envs.workflow.mass_policies as mass_policies
import rsigym.envs.workflow.policies  # noqa: F401  (offline roles)
from rsigym.agents.offline import OfflineReply, register_offline_policy
from rsigym.envs.workflow.agents import RolePlayer
from rsigym.envs.workflow.analyses import paired_verdict
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.gen_policy import GenerationPolicy, TrainConfig
from rsigym.envs.workflow.mass import Execution, evolve, execute
from rsigym.envs.workflow.pairwise_judge import PairwiseJudge
from rsigym.envs.workflow.sft_export import sft_examples, validate_sft_jsonl, workflow_added_texts, write_sft_jsonl
from rsigym.envs.workflow.spec import seed_spec
from rsigym.envs.workflow.tasks import new_salt, task_brief
from rsigym.sandbox import open_sandbox

_RECORDED: list[tuple[str, str]] = []


@register_offline_policy("workflow_judge_recorded")
def _recorded_judge(request: Any) -> OfflineReply:
    """gen-1's judge, keeping (prompt, winner) as training data for gen-2's judge."""
    reply = mass_policies.workflow_judge_policy(request)
    _RECORDED.append((str(request.messages[-1].get("content") or ""), reply.action["winner"]))
    return reply


@dataclass
class Args:
    """Benchmark settings."""

    seeds: list[int] = field(default_factory=lambda: [0, 1])
    budget: int = 6
    selfplay_per_family: int = 4
    test_per_family: int = 4
    sandbox: str = "auto"
    out: str = "workflow_generations_out"
    gen2_model: str | None = None      # a LiteLLM model in gen-2's place (no training)
    results: str | None = None         # write the per-run rows and the summary here (JSON)


def carrying(examples: list[dict[str, Any]], specs: list[dict[str, Any]]) -> int:
    """Examples that still hold any text a workflow added."""
    added = {t for spec in specs for t in workflow_added_texts(spec)}
    return sum(any(t in m["content"] for m in e["messages"] for t in added) for e in examples)


def main(args: Args) -> dict[str, Any]:
    console = Console(width=180)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    gen1 = "rsigym/workflow_scripted"
    rows, pooled = [], {"gen2_vs_gen1": [], "gen2_seedspec_vs_gen1": [], "gen1": [], "gen2": [], "gen2_seedspec": []}
    blocks: list[str] = []
    recursion: list[str] = []   # gen-1 executes gen-1's (a) and gen-2's (b) design; gen-1's judge
    judged: dict[str, list[str]] = {"gen-1 judge": [], "gen-2 judge": []}
    per_run: list[dict[str, Any]] = []  # the search run (seed) is the independent unit
    with open_sandbox(args.sandbox) as box:
        for seed in args.seeds:
            salt = new_salt()
            train = [f"{name}-{seed:03d}" for name in FAMILIES]
            t0 = time.perf_counter()
            evolved1 = evolve(train, role_model=gen1, judge_model="rsigym/workflow_judge",
                              optimizer_model="rsigym/workflow_optimizer", rounds=args.budget, candidates=1,
                              seed=seed, sandbox=box, task_salt=salt)
            spec1 = evolved1.final_spec
            player1 = RolePlayer(gen1, seed=seed)
            selfplay = [f"{name}-{10 + seed * args.selfplay_per_family + i:03d}" for name in FAMILIES
                        for i in range(args.selfplay_per_family)]
            _RECORDED.clear()
            judge1 = PairwiseJudge("rsigym/workflow_judge_recorded", seed=seed)
            kept: list[tuple[Execution, dict[str, Any]]] = []
            dropped: list[Execution] = []
            for task in selfplay:
                # Three samples per task (the seed workflow, the evolved one twice with other role
                # seeds): a judged tournament keeps the one that beat another; all ties keep none.
                samples = [(execute(seed_spec(), task, player1, seed=seed, sandbox=box, task_salt=salt), seed_spec())]
                samples += [(execute(spec1, task, RolePlayer(gen1, seed=seed + 1000 * k), seed=seed + 1000 * k,
                                     sandbox=box, task_salt=salt), spec1) for k in (0, 1)]
                best, won = samples[0], False
                for challenger in samples[1:]:
                    winner = judge1.compare(task_brief(task), best[0].files, challenger[0].files).winner
                    if winner == "b":
                        best, won = challenger, True
                    elif winner == "a":
                        won = True
                if won:
                    kept.append(best)
                dropped += [e for e, _ in samples if not (won and e is best[0])]
            examples = [e for execution, spec in kept for e in sft_examples(execution.dialogues, spec)]
            path = out / f"sft_seed{seed}.jsonl"
            write_sft_jsonl(path, examples)
            count = validate_sft_jsonl(path)
            leaked = carrying(examples, [seed_spec(), spec1])
            accepted = [r.mutation for r in evolved1.rounds if r.accepted and r.mutation]
            if not examples:
                rows.append((seed, f"0 kept / {len(dropped)} not", "-", "0", "insufficient data: nothing to train on",
                             "-", "-", f"{time.perf_counter() - t0:.0f}"))
                continue
            if args.gen2_model:
                gen2 = args.gen2_model
                sizes = "-"
            else:
                policy = GenerationPolicy(TrainConfig(seed=seed))
                n_exec = policy.fit_executor(examples)
                n_judge = policy.fit_judge(list(_RECORDED))
                n_opt = policy.fit_optimizer(accepted, [r.mutation for r in evolved1.rounds
                                                        if not r.accepted and r.mutation])
                gen2 = policy.serve(f"workflow_gen2_seed{seed}")
                sizes = (f"executor {n_exec} samples/{len(policy.actions)} actions (train acc "
                         f"{policy.train_accuracy['executor']:.2f}), judge {n_judge} verdicts (train acc "
                         f"{policy.train_accuracy['judge']:.2f}), optimiser {n_opt} edits")
            evolved2 = evolve(train, role_model=gen2, judge_model=gen2, optimizer_model=gen2, rounds=args.budget,
                              candidates=1, seed=seed, sandbox=box, task_salt=salt)
            spec2 = evolved2.final_spec
            tests = [f"{name}-{100 + seed * args.test_per_family + i:03d}" for name in FAMILIES
                     for i in range(args.test_per_family)]
            player2 = RolePlayer(gen2, seed=seed)
            h1 = {t: execute(spec1, t, player1, seed=seed, sandbox=box, task_salt=salt) for t in tests}
            h2 = {t: execute(spec2, t, player2, seed=seed, sandbox=box, task_salt=salt) for t in tests}
            h2s = {t: execute(seed_spec(), t, player2, seed=seed, sandbox=box, task_salt=salt) for t in tests}
            h1_on_2 = {t: execute(spec2, t, player1, seed=seed, sandbox=box, task_salt=salt) for t in tests}
            judge1_held = PairwiseJudge("rsigym/workflow_judge", seed=seed)
            mine = [judge1_held.compare(task_brief(t), h1[t].files, h1_on_2[t].files).winner for t in tests]
            recursion += mine
            per_run.append({"seed": seed, "gen1": sum(h1[t].score for t in tests) / len(tests),
                            "gen2": sum(h2[t].score for t in tests) / len(tests),
                            "gen2_seedspec": sum(h2s[t].score for t in tests) / len(tests),
                            "prefer_gen2": mine.count("b"), "prefer_gen1": mine.count("a"), "ties": mine.count("tie")})
            for name, model in (("gen-1 judge", "rsigym/workflow_judge"), ("gen-2 judge", gen2)):
                judge = PairwiseJudge(model, seed=seed)
                judged[name] += [judge.compare(task_brief(t), h1[t].files, h2[t].files).winner for t in tests]
            blocks += [f"seed {seed}"] * len(tests)
            pooled["gen1"] += [h1[t].score for t in tests]
            pooled["gen2"] += [h2[t].score for t in tests]
            pooled["gen2_seedspec"] += [h2s[t].score for t in tests]
            pooled["gen2_vs_gen1"] += [h2[t].score - h1[t].score for t in tests]
            pooled["gen2_seedspec_vs_gen1"] += [h2s[t].score - h1[t].score for t in tests]
            kept_scores = [e.score for e, _ in kept]
            rows.append((seed, f"{len(kept)} kept / {len(dropped)} not",
                         f"{sum(kept_scores) / max(len(kept_scores), 1):.3f} vs "
                         f"{sum(e.score for e in dropped) / max(len(dropped), 1):.3f}",
                         f"{count} ({leaked} carrying workflow text)", sizes,
                         ", ".join(m["op"] for m in accepted) or "-",
                         ", ".join(r.mutation["op"] for r in evolved2.rounds if r.accepted and r.mutation) or "-",
                         f"{time.perf_counter() - t0:.0f}"))
    table = Table(title="Two generations offline (per seed)")
    for column in ("seed", "self-judged filter", "hidden-key score kept vs not (report only)", "SFT examples",
                   "gen-2 training", "gen-1 accepted edits", "gen-2 accepted edits", "wall s"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(c) for c in row))
    console.print(table)
    n = len(pooled["gen1"])
    if not n:
        console.print("insufficient data: no seed produced a second generation")
        return {"pooled": pooled, "rows": rows, "judged": judged}
    mean = {k: sum(v) / len(v) for k, v in pooled.items() if v}
    console.print(f"held-out hidden-key score ({n} tasks): gen-1 + its workflow {mean['gen1']:.3f}; gen-2 + its workflow "
                  f"{mean['gen2']:.3f}; gen-2 + seed workflow {mean['gen2_seedspec']:.3f}")
    for key, label in (("gen2_vs_gen1", "gen-2 (own workflow) - gen-1 (own workflow)"),
                       ("gen2_seedspec_vs_gen1", "gen-2 (seed workflow) - gen-1 (own workflow)")):
        console.print(f"{label}, paired: {paired_verdict(pooled[key], blocks)}")
    for name, winners in judged.items():
        console.print(f"{name} on gen-1 (a) vs gen-2 (b), both orders: gen-2 wins {winners.count('b')}, "
                      f"losses {winners.count('a')}, ties or inconsistent {winners.count('tie')} of {len(winners)}")
    decided = [w for w in recursion if w != "tie"]
    prefer = sum(w == "b" for w in decided)
    if len(decided) >= 5:
        ci = binomtest(prefer, len(decided)).proportion_ci(method="exact")
        share = f"{prefer}/{len(decided)} = {prefer / len(decided):.0%} [{ci.low:.0%}, {ci.high:.0%}]"
    else:
        share = f"insufficient data ({len(decided)} decided comparisons)"
    console.print(f"recursion test (gen-1 executes both designs, gen-1's judge): share preferring the gen-2-designed "
                  f"workflow {share}; {len(recursion) - len(decided)} of {len(recursion)} ties")
    summary = run_summary(per_run)
    for line in summary["lines"]:
        console.print(line)
    wall = time.perf_counter() - started
    console.print(f"wall time {wall:.0f} s")
    if args.results:
        Path(args.results).write_text(json.dumps({"settings": {"seeds": list(args.seeds), "budget": args.budget,
                                                               "selfplay_per_family": args.selfplay_per_family,
                                                               "test_per_family": args.test_per_family,
                                                               "sandbox": args.sandbox},
                                                  "per_run": per_run, "summary": summary, "wall_s": round(wall)},
                                                 indent=1) + "\n")
    return {"pooled": pooled, "rows": rows, "judged": judged, "recursion": recursion, "per_run": per_run,
            "summary": summary}


RESULTS = Path(__file__).resolve().parent / "results" / "workflow_generations.json"


def readme_sentence(result: dict[str, Any]) -> str:
    """The sentence of docs/families/workflow.md for a results file (a test checks the page holds it)."""
    summary, settings = result["summary"], result["settings"]
    return (f"Measured over {summary['runs']} runs (seeds {min(settings['seeds'])}-{max(settings['seeds'])}, budget "
            f"{settings['budget']}, {settings['test_per_family']} held-out tasks per family, "
            f"`benchmarks/results/workflow_generations.json`, {result['wall_s'] // 60} min): held-out score gen-1 "
            f"{summary['gen1']:.3f}, gen-2 {summary['gen2']:.3f}, gen-2 - gen-1 {summary['difference']:+.3f} "
            f"[{summary['ci'][0]:+.3f}, {summary['ci'][1]:+.3f}] (t interval over runs), MDD {summary['mdd']:.3f}: "
            f"{summary['verdict']}. Recursion share {summary['prefer_gen2']}/{summary['decided']} = "
            f"{summary['share']:.0%} [{summary['share_ci'][0]:.0%}, {summary['share_ci'][1]:.0%}] (bootstrap over "
            f"runs; {summary['ties']} ties), against the paper's 64%.")


def recursion_verdict(p_value: float, excess: float, alpha: float = 0.05) -> str:
    """The recursion test's call: a side of one half when the sign-flip test over runs rejects an
    even share at ``alpha`` (two-sided), else none."""
    if p_value >= alpha:
        return "no detectable preference"
    return "gen-2 designs preferred" if excess > 0 else "gen-1 designs preferred"


def recursion_call(per_run: list[dict[str, Any]]) -> str:
    """The docs page's phrase for the recursion call on a results file's runs (recomputed, so a test can compare)."""
    summary = run_summary(per_run)
    return (f"on the committed runs, {summary['recursion_verdict']} (sign-flip p = {summary['recursion_p']:.4f}, "
            f"4000 flips over {summary['runs']} runs)")


def run_summary(per_run: list[dict[str, Any]], *, resamples: int = 4000, seed: int = 0) -> dict[str, Any]:
    """gen-2 against gen-1 with the run (seed) as the unit: the mean per-run difference in held-out
    score with a t interval over runs and the MDD (80% power, two-sided 5%); the recursion share
    (decided comparisons preferring the gen-2-designed workflow, gen-1 executing both) with a
    bootstrap CI that resamples runs (comparisons within a run are not independent). Fewer than 5
    runs, or fewer than 5 decided comparisons: insufficient data."""
    import numpy as np
    from scipy import stats

    runs = sorted(per_run, key=lambda r: r["seed"])  # order-free
    out: dict[str, Any] = {"runs": len(runs), "lines": []}
    if len(runs) < 5:
        out["lines"].append(f"per run: insufficient data ({len(runs)} runs; at least 5)")
        return out
    diff = np.array([r["gen2"] - r["gen1"] for r in runs])
    se = float(diff.std(ddof=1) / np.sqrt(len(diff)))
    q = float(stats.t.ppf(0.975, len(diff) - 1))
    low, high = float(diff.mean() - q * se), float(diff.mean() + q * se)
    mdd = float((q + stats.t.ppf(0.8, len(diff) - 1)) * se)
    verdict = "gen-2 better" if low > 0 else "gen-2 worse" if high < 0 else "no detectable difference"
    out.update(gen1=float(np.mean([r["gen1"] for r in runs])), gen2=float(np.mean([r["gen2"] for r in runs])),
               difference=float(diff.mean()), ci=[low, high], mdd=mdd, verdict=verdict)
    out["lines"].append(f"gen-2 - gen-1 over {len(runs)} runs (unit: the run): {diff.mean():+.3f} [{low:+.3f}, {high:+.3f}], "
                        f"MDD {mdd:.3f}: {verdict} (gen-1 {out['gen1']:.3f}, gen-2 {out['gen2']:.3f})")
    b = np.array([r["prefer_gen2"] for r in runs], dtype=float)
    d = b + np.array([r["prefer_gen1"] for r in runs], dtype=float)
    out.update(prefer_gen2=int(b.sum()), decided=int(d.sum()), ties=int(sum(r["ties"] for r in runs)))
    if d.sum() < 5:
        out["lines"].append(f"recursion share: insufficient data ({int(d.sum())} decided comparisons)")
        return out
    draws = np.random.default_rng(seed).integers(len(runs), size=(resamples, len(runs)))
    shares = b[draws].sum(axis=1) / np.maximum(d[draws].sum(axis=1), 1)
    share = float(b.sum() / d.sum())
    ci = [float(np.quantile(shares, 0.025)), float(np.quantile(shares, 0.975))]
    # the call: a sign-flip test over runs of each run's excess of gen-2 preferences over half its
    # decided comparisons (exact under a null whose per-run shares spread symmetrically about one
    # half; the percentile bootstrap over 20 runs called a true one half 17 times in 200)
    excess = b - d / 2
    flips = np.random.default_rng([seed, 1]).choice([-1.0, 1.0], size=(resamples, len(runs)))
    p_value = float((1 + np.sum(np.abs(flips @ excess) >= abs(excess.sum()) - 1e-9)) / (resamples + 1))
    out.update(share=share, share_ci=ci, recursion_p=p_value,
               recursion_verdict=recursion_verdict(p_value, float(excess.sum())))
    out["lines"].append(f"recursion share (gen-1 executes both designs; decided comparisons preferring gen-2's design): "
                        f"{int(b.sum())}/{int(d.sum())} = {share:.0%} [{ci[0]:.0%}, {ci[1]:.0%}] (bootstrap over runs; "
                        f"{out['ties']} ties); the paper: 64%")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument("--selfplay-per-family", type=int, default=4)
    parser.add_argument("--test-per-family", type=int, default=4)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--out", default="workflow_generations_out")
    parser.add_argument("--gen2-model", default=None)
    parser.add_argument("--results", default=None, help="write the per-run rows and the summary (JSON) here")
    ns = parser.parse_args()
    main(Args(seeds=ns.seeds, budget=ns.budget, selfplay_per_family=ns.selfplay_per_family,
              test_per_family=ns.test_per_family, sandbox=ns.sandbox, out=ns.out, gen2_model=ns.gen2_model,
              results=ns.results))
    sys.exit(0)
