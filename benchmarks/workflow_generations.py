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
            recursion += [judge1_held.compare(task_brief(t), h1[t].files, h1_on_2[t].files).winner for t in tests]
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
    console.print(f"wall time {time.perf_counter() - started:.0f} s")
    return {"pooled": pooled, "rows": rows, "judged": judged, "recursion": recursion}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument("--selfplay-per-family", type=int, default=4)
    parser.add_argument("--test-per-family", type=int, default=4)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--out", default="workflow_generations_out")
    parser.add_argument("--gen2-model", default=None)
    ns = parser.parse_args()
    main(Args(seeds=ns.seeds, budget=ns.budget, selfplay_per_family=ns.selfplay_per_family,
              test_per_family=ns.test_per_family, sandbox=ns.sandbox, out=ns.out, gen2_model=ns.gen2_model))
    sys.exit(0)
