"""GRPO on verifiable addition, with a pluggable rollout filter (vanilla, GRPODropout, ablations).

Per step: sample ``prompts_per_step`` problems, G responses each from the current policy; score
them with the verifier; group-normalise the rewards into advantages; let the rollout filter pick
the rollouts (and advantages) that enter the update; then ``update_epochs`` passes of the clipped
importance-ratio objective on token log-probabilities, plus an optional KL penalty to the
warm-start policy. Each step's metrics go to a JSONL log; curves go to a PNG.

Run: ``python -m rsigym.agents.train.grpo --filter dropout --steps 60 --log-dir runs/grpo``.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from . import sft
from .arithmetic import AdditionTask
from .filters import RolloutGroup, group_advantages, make_filter
from .rollouts import generate, greedy_accuracy, token_log_probs
from .runlog import JsonlLog, plot_curves


@dataclass
class Args:
    filter: str = "none"
    """rollout filter: none, dropout, drop_no_recentre or random_drop"""
    drop_share: float = 0.125
    """most rollouts a dropout filter removes per group, as a share of the group (1 of 8)"""
    steps: int = 60
    """policy updates (each on a fresh batch of rollouts)"""
    prompts_per_step: int = 16
    """problems sampled per step"""
    group_size: int = 8
    """responses sampled per problem (G)"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    update_epochs: int = 2
    """gradient passes over each batch of rollouts (the ratio is 1 on the first)"""
    clip_eps: float = 0.2
    """PPO clip range of the importance ratio"""
    kl_coef: float = 0.0
    """weight of the KL penalty (k3 estimator) to the warm-start policy; 0 disables it"""
    seed: int = 0
    """seed of the problems, the sampling and the random filter"""
    eval_every: int = 10
    """steps between greedy evaluations on the held-out set"""
    eval_size: int = 500
    """held-out problems per evaluation"""
    sft_steps: int = 600
    """most supervised steps of the warm start"""
    sft_stop_at_accuracy: float = 0.4
    """the warm start stops once its validation accuracy reaches this"""
    sft_seed: int = 0
    """seed of the warm start (shared by every filter, so runs differ only in the update)"""
    digits: int = 3
    """digits per addition operand"""
    cache_dir: str = ""
    """checkpoint cache of the warm start; empty: train it in-process"""
    log_dir: str = ""
    """where ``grpo_<filter>_s<seed>.jsonl`` and its PNG go; empty: no files"""
    threads: int = 1
    """torch intra-op threads"""


def warm_start_args(args: Args) -> sft.Args:
    return sft.Args(digits=args.digits, steps=args.sft_steps, stop_at_accuracy=args.sft_stop_at_accuracy,
                    seed=args.sft_seed, cache_dir=args.cache_dir, threads=args.threads)


def clipped_policy_loss(log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor,
                        clip_eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO/PPO surrogate on (N, R) token log-probs with (N,) sequence advantages.

    Returns the loss (token mean per response, then mean over responses) and the clipped share.
    """
    ratio = (log_probs - old_log_probs).exp()  # (N, R)
    A = advantages.unsqueeze(1)  # (N, 1): every token of a response shares its advantage
    surrogate = torch.minimum(ratio * A, ratio.clamp(1 - clip_eps, 1 + clip_eps) * A)
    clipped = ((ratio - 1).abs() > clip_eps).float().mean()
    return -surrogate.mean(dim=1).mean(), clipped


def kl_to_reference(log_probs: torch.Tensor, ref_log_probs: torch.Tensor) -> torch.Tensor:
    """k3 estimate of KL(policy || reference) per sampled token, averaged: exp(d) - d - 1, d = ref - new."""
    d = ref_log_probs - log_probs
    return (d.exp() - d - 1).mean()


def main(args: Args) -> dict:
    """Train; returns ``{"final_accuracy", "history": [per-step metrics], ...}``."""
    torch.set_num_threads(args.threads)
    task = AdditionTask(args.digits)
    model, warm_metrics = sft.warm_start(warm_start_args(args))
    reference = copy.deepcopy(model).eval() if args.kl_coef > 0 else None
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    rollout_filter = make_filter(args.filter, args.drop_share, torch.Generator().manual_seed(args.seed + 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    eval_operands = task.eval_operands(args.eval_size)
    name = f"grpo_{args.filter}_s{args.seed}"
    log = JsonlLog(Path(args.log_dir) / f"{name}.jsonl" if args.log_dir else None)
    P, R, G = task.prompt_length, task.response_length, args.group_size
    history: list[dict] = []
    started = time.perf_counter()
    initial_accuracy = greedy_accuracy(model, task, eval_operands)

    for step in range(1, args.steps + 1):
        # 1. rollouts: G samples per prompt from the current (old) policy
        operands = task.sample_operands(args.prompts_per_step, generator)
        prompts = task.prompts(operands).repeat_interleave(G, dim=0)  # (B*G, P)
        model.eval()
        sequences = generate(model, prompts, R, generator)  # (B*G, P+R)
        model.train()
        rewards = task.rewards(sequences[:, P:], task.answers(operands).repeat_interleave(G, dim=0))  # (B*G,)
        with torch.no_grad():
            old_log_probs, entropy = token_log_probs(model, sequences, P)  # (B*G, R) each
            ref_log_probs = token_log_probs(reference, sequences, P)[0] if reference is not None else None

        # 2. group advantages, then the filter picks rollouts per group
        advantages = group_advantages(rewards.view(-1, G))  # (B, G)
        sequence_log_probs = old_log_probs.sum(dim=1).view(-1, G)  # (B, G) log pi_old(response)
        kept_index, kept_advantages = [], []
        for b in range(len(operands)):
            result = rollout_filter(RolloutGroup(rewards.view(-1, G)[b], sequence_log_probs[b], advantages[b]))
            kept_index.append(result.kept + b * G)
            kept_advantages.append(result.advantages)
        index = torch.cat(kept_index)
        A = torch.cat(kept_advantages)  # (K,)

        # 3. clipped policy-gradient passes over the kept rollouts
        for _ in range(args.update_epochs):
            log_probs, _ = token_log_probs(model, sequences[index], P)  # (K, R)
            loss, clipped = clipped_policy_loss(log_probs, old_log_probs[index], A, args.clip_eps)
            kl = torch.zeros(())
            if ref_log_probs is not None:
                kl = kl_to_reference(log_probs, ref_log_probs[index])
                loss = loss + args.kl_coef * kl
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

        record = {"step": step, "reward": rewards.mean().item(), "accuracy": rewards.mean().item(),
                  "entropy": entropy.mean().item(), "rollouts_used": len(index) / len(operands),
                  "clip_fraction": clipped.item(), "kl": kl.item(), "eval_accuracy": None}
        if step % args.eval_every == 0 or step == args.steps:
            record["eval_accuracy"] = greedy_accuracy(model, task, eval_operands)
        history.append(record)
        log.write(record)

    log.close()
    final_accuracy = history[-1]["eval_accuracy"] if history else initial_accuracy
    plot = None
    if args.log_dir and history:
        plot = str(plot_curves({name: history}, ["accuracy", "eval_accuracy", "entropy", "rollouts_used"],
                               Path(args.log_dir) / f"{name}.png", title=name))
    return {"filter": args.filter, "seed": args.seed, "initial_accuracy": initial_accuracy,
            "final_accuracy": final_accuracy, "warm_start": warm_metrics, "history": history,
            "seconds": time.perf_counter() - started, "plot": plot}


if __name__ == "__main__":
    out = main(sft.parse_dataclass(Args))
    print(f"{out['filter']}: greedy accuracy {out['initial_accuracy']:.3f} -> {out['final_accuracy']:.3f}, "
          f"mean rollouts used per prompt {sum(r['rollouts_used'] for r in out['history']) / max(len(out['history']), 1):.2f}, "
          f"{out['seconds']:.0f} s")
