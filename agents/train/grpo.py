"""GRPO on a verifiable task, with a pluggable rollout filter (vanilla, GRPODropout, ablations) and
the entropy-control baselines (KL-Cov, Clip-Cov, an entropy bonus).

Per step: sample ``prompts_per_step`` problems, G responses each from the current policy; score
them with the verifier; group-normalise the rewards into advantages; let the rollout filter pick
the rollouts (and advantages) that enter the update; then ``update_epochs`` passes of the clipped
importance-ratio objective on token log-probabilities, plus an optional KL penalty to the
warm-start policy and an optional entropy control (``entropy_control.py``). Each step's metrics go to a JSONL log; curves go to a PNG.

Run: ``python -m rsigym.agents.train.grpo --filter dropout --steps 60 --log-dir runs/grpo``.
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from . import sft
from .digitsum import DigitSumTask
from .entropy_control import clip_cov_mask, kl_cov_mask, token_covariance
from .filters import RolloutGroup, group_advantages, make_filter
from .rollouts import generate, greedy_accuracy, sampled_metrics, token_log_probs
from .determinism import deterministic
from .runlog import JsonlLog, plot_curves
from .tasks import VerifiableTask

CONTROLS = ("none", "kl_cov", "clip_cov", "entropy_bonus")


@dataclass
class Args:
    filter: str = "none"
    """rollout filter: none, dropout, drop_no_recentre, random_drop, dropout_every_copy (drop an answer with all
    its copies in the group), drop_every_copy_no_recentre or random_drop_every_copy"""
    drop_share: float = 0.125
    """most rollouts a dropout filter removes per group, as a share of the group (1 of 8)"""
    control: str = "none"
    """entropy control: none, kl_cov, clip_cov or entropy_bonus"""
    kl_cov_share: float = 0.02
    """KL-Cov: share of the batch's tokens (top covariance) that get the KL term"""
    kl_cov_coef: float = 1.0
    """KL-Cov: weight of |log pi - log pi_old| on those tokens"""
    clip_cov_share: float = 0.02
    """Clip-Cov: share of the batch's tokens whose gradient is removed"""
    clip_cov_bounds: tuple[float, float] = (1.0, 5.0)
    """Clip-Cov: covariance range the removed tokens are drawn from"""
    entropy_coef: float = 0.01
    """entropy bonus: weight of the mean token entropy subtracted from the loss"""
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
    sample_k: int = 8
    """samples per held-out problem for Mean@k / Pass@k, at the start and the end"""
    sft_steps: int = 200
    """supervised steps of the warm start (pinned; its accuracy is recorded, never a stop rule)"""
    sft_seed: int = 0
    """seed of the warm start (shared by every filter, so runs differ only in the update)"""
    task: str = "digitsum"
    """task family: digitsum (many valid answers) or addition (one)"""
    digits: int = 3
    """digits per addition operand (task addition)"""
    length: int = 5
    """digits per response (task digitsum)"""
    canonical_share: float = 0.2
    """share of the warm start's digitsum demonstrations on the favoured path"""
    base: int = 10
    """digits per position (task digitsum)"""
    favoured: str = "canonical"
    """the favoured digitsum path: canonical (one rule) or per_target (a memorised answer per target)"""
    held_out_every: int = 0
    """digitsum targets t % held_out_every == 1 never enter training; evaluation uses only them (0: no split)"""
    train_held_out: bool = False
    """a positive control, not a method: GRPO's problems are the held-out targets (the warm start and the evaluation
    set stay as they are), so the run trains on what it is scored on"""
    cache_dir: str = ""
    """checkpoint cache of the warm start; empty: train it in-process"""
    log_dir: str = ""
    """where ``grpo_<filter>_s<seed>.jsonl`` and its PNG go; empty: no files"""
    threads: int = 1
    """torch intra-op threads"""


def warm_start_args(args: Args) -> sft.Args:
    return sft.Args(**sft.task_fields(args), steps=args.sft_steps, seed=args.sft_seed, cache_dir=args.cache_dir,
                    threads=args.threads)


def run_name(args: Args) -> str:
    parts = [p for p in (args.filter, args.control) if p != "none"] or ["none"]
    return f"grpo_{'_'.join(parts)}_w{args.sft_seed}_s{args.seed}"


def clipped_surrogate(log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor,
                      clip_eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO/PPO per-token surrogate on (N, R) token log-probs with (N,) sequence advantages.

    Returns the (N, R) surrogate to maximise and the clipped share of tokens.
    """
    ratio = (log_probs - old_log_probs).exp()  # (N, R)
    A = advantages.unsqueeze(1)  # (N, 1): every token of a response shares its advantage
    surrogate = torch.minimum(ratio * A, ratio.clamp(1 - clip_eps, 1 + clip_eps) * A)
    return surrogate, ((ratio - 1).abs() > clip_eps).float().mean()


def kl_to_reference(log_probs: torch.Tensor, ref_log_probs: torch.Tensor) -> torch.Tensor:
    """k3 estimate of KL(policy || reference) per sampled token, averaged: exp(d) - d - 1, d = ref - new."""
    d = ref_log_probs - log_probs
    return (d.exp() - d - 1).mean()


def group_statistics(responses: torch.Tensor, kept: list[torch.Tensor], group_size: int,
                     sequence_log_probs: torch.Tensor) -> dict[str, float]:
    """Regime statistics of one step's groups: how distinct the rollouts are, what dropping removed.

    ``responses`` (B*G, R); ``kept[b]`` the kept indices within group b; ``sequence_log_probs``
    (B, G) under the sampling policy. Returns ``distinct_share`` (distinct responses / G, mean over
    groups), ``drops``, ``drops_with_copy`` (dropped rollouts with an identical response still kept
    in their group: dropping one only down-weights an answer the update still reinforces) and
    ``dropped_probability`` (sum of the dropped rollouts' probabilities; divide by ``drops``).
    """
    distinct, drops, with_copy, dropped_probability = 0.0, 0, 0, 0.0
    for b, kept_b in enumerate(kept):
        rows = [tuple(r) for r in responses[b * group_size:(b + 1) * group_size].tolist()]
        distinct += len(set(rows)) / group_size
        kept_rows = {rows[i] for i in kept_b.tolist()}
        for i in set(range(group_size)) - set(kept_b.tolist()):
            drops += 1
            with_copy += rows[i] in kept_rows
            dropped_probability += float(sequence_log_probs[b, i].exp())
    return {"distinct_share": distinct / max(len(kept), 1), "drops": drops, "drops_with_copy": with_copy,
            "dropped_probability": dropped_probability}


def held_out_problems(task: DigitSumTask, count: int, generator: torch.Generator) -> torch.Tensor:
    """(count, 1) targets, uniform on the held-out targets (``train_held_out``: the positive control)."""
    targets = torch.tensor(task.held_out_targets())
    return targets[torch.randint(0, len(targets), (count,), generator=generator)].view(-1, 1)


def favoured_share(responses: torch.Tensor, problems: torch.Tensor,
                   favoured_answer: Callable[[int], list[int]] | None) -> float | None:
    """Share of (N, R) rollouts that are their target's favoured answer (the mode the warm start was
    taught); None for a task without one."""
    if favoured_answer is None:
        return None
    modes = {t: favoured_answer(t) for t in set(problems[:, 0].tolist())}
    return sum(r == modes[t] for r, t in zip(responses.tolist(), problems[:, 0].tolist())) / max(len(responses), 1)


def main(args: Args, task: VerifiableTask | None = None) -> dict:
    """Train; returns ``{"final_accuracy", "initial"/"final" sampled metrics, "history": [...], ...}``.

    ``task``: a task object instead of the one ``args`` names, e.g. an env (in-process or served) behind
    ``ConfigEnvTask``; its warm start is then evaluated on ``eval_size`` problems (each scored by the task,
    at the task's cost) and never cached.
    """
    with deterministic(args.threads):
        return _main(args, task)


def _main(args: Args, injected: VerifiableTask | None = None) -> dict:
    if args.control not in CONTROLS:
        raise ValueError(f"unknown entropy control {args.control!r}; expected one of {', '.join(CONTROLS)}")
    task = sft.task_of(args) if injected is None else injected
    favoured_answer = getattr(task, "favoured_answer", None)
    warm_args = warm_start_args(args) if injected is None else replace(warm_start_args(args), eval_size=args.eval_size)
    model, warm_metrics = sft.warm_start(warm_args, injected)
    reference = copy.deepcopy(model).eval() if args.kl_coef > 0 else None
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    control_generator = torch.Generator().manual_seed(args.seed + 2)
    rollout_filter = make_filter(args.filter, args.drop_share, torch.Generator().manual_seed(args.seed + 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    eval_problems = task.eval_problems(args.eval_size)
    sample_problems = task.sample_problems
    if args.train_held_out:
        if not isinstance(task, DigitSumTask) or not task.held_out_every:
            raise ValueError("train_held_out needs a task with held-out targets (digitsum with held_out_every >= 2)")
        sample_problems = functools.partial(held_out_problems, task)
    name = run_name(args)
    log = JsonlLog(Path(args.log_dir) / f"{name}.jsonl" if args.log_dir else None)
    P, R, G = task.prompt_length, task.response_length, args.group_size
    history: list[dict] = []
    started = time.perf_counter()
    initial_accuracy = greedy_accuracy(model, task, eval_problems)
    # the held-out sampling generator is fixed apart from the training seed's, so start and end see the same draws
    initial_sampled = sampled_metrics(model, task, eval_problems, args.sample_k, torch.Generator().manual_seed(777))

    for step in range(1, args.steps + 1):
        # 1. rollouts: G samples per prompt from the current (old) policy
        problems = sample_problems(args.prompts_per_step, generator)
        prompts = task.prompts(problems).repeat_interleave(G, dim=0)  # (B*G, P)
        model.eval()
        sequences = generate(model, prompts, R, generator)  # (B*G, P+R)
        model.train()
        rewards = task.score(sequences[:, P:], problems.repeat_interleave(G, dim=0))  # (B*G,)
        with torch.no_grad():
            old_log_probs, entropy = token_log_probs(model, sequences, P)  # (B*G, R) each
            ref_log_probs = token_log_probs(reference, sequences, P)[0] if reference is not None else None

        # 2. group advantages, then the filter picks rollouts per group
        advantages = group_advantages(rewards.view(-1, G))  # (B, G)
        sequence_log_probs = old_log_probs.sum(dim=1).view(-1, G)  # (B, G) log pi_old(response)
        kept_in_group, kept_index, kept_advantages = [], [], []
        for b in range(len(problems)):
            result = rollout_filter(RolloutGroup(rewards.view(-1, G)[b], sequence_log_probs[b], advantages[b],
                                                 sequences[b * G:(b + 1) * G, P:]))
            kept_in_group.append(result.kept)
            kept_index.append(result.kept + b * G)
            kept_advantages.append(result.advantages)
        index = torch.cat(kept_index)
        A = torch.cat(kept_advantages)  # (K,)
        informative = [len(k) for k, a in zip(kept_in_group, advantages) if bool((a != 0).any())]

        # 3. clipped policy-gradient passes over the kept rollouts, with the entropy control if any
        controlled_share = 0.0
        for _ in range(args.update_epochs):
            log_probs, token_entropy = token_log_probs(model, sequences[index], P)  # (K, R)
            surrogate, clipped = clipped_surrogate(log_probs, old_log_probs[index], A, args.clip_eps)
            token_loss = -surrogate  # (K, R); the loss is its mean per response, then over responses
            if args.control in ("kl_cov", "clip_cov"):
                valid = torch.ones_like(log_probs, dtype=torch.bool)
                covariance = token_covariance(log_probs.detach(), A, valid)
                if args.control == "kl_cov":
                    chosen = kl_cov_mask(covariance, valid, args.kl_cov_share)
                    token_loss = token_loss + args.kl_cov_coef * chosen * (log_probs - old_log_probs[index]).abs()
                else:
                    low, high = args.clip_cov_bounds
                    chosen = clip_cov_mask(covariance, valid, args.clip_cov_share, low, high, control_generator)
                    token_loss = token_loss.masked_fill(chosen, 0.0)  # no gradient through these tokens
                controlled_share = chosen.float().mean().item()
            loss = token_loss.mean(dim=1).mean()
            if args.control == "entropy_bonus":
                loss = loss - args.entropy_coef * token_entropy.mean()
            kl = torch.zeros(())
            if ref_log_probs is not None:
                kl = kl_to_reference(log_probs, ref_log_probs[index])
                loss = loss + args.kl_coef * kl
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

        record = {"step": step, "reward": rewards.mean().item(), "accuracy": rewards.mean().item(),
                  "entropy": entropy.mean().item(), "rollouts_used": len(index) / len(problems),
                  "rollouts_used_informative": sum(informative) / len(informative) if informative else None,
                  "informative_groups": len(informative), "clip_fraction": clipped.item(), "kl": kl.item(),
                  "controlled_share": controlled_share, "eval_accuracy": None,
                  "favoured_share": favoured_share(sequences[:, P:], problems.repeat_interleave(G, dim=0),
                                                   favoured_answer),
                  **group_statistics(sequences[:, P:], kept_in_group, G, sequence_log_probs)}
        if step % args.eval_every == 0 or step == args.steps:
            record["eval_accuracy"] = greedy_accuracy(model, task, eval_problems)
        history.append(record)
        log.write(record)

    log.close()
    final_accuracy = history[-1]["eval_accuracy"] if history else initial_accuracy
    final_sampled = sampled_metrics(model, task, eval_problems, args.sample_k, torch.Generator().manual_seed(777))
    plot = None
    if args.log_dir and history:
        plot = str(plot_curves({name: history}, ["accuracy", "eval_accuracy", "entropy", "rollouts_used"],
                               Path(args.log_dir) / f"{name}.png", title=name))
    return {"filter": args.filter, "control": args.control, "seed": args.seed, "log_name": name,
            "initial_accuracy": initial_accuracy, "final_accuracy": final_accuracy,
            "initial_sampled": initial_sampled, "final_sampled": final_sampled,
            "warm_start": warm_metrics, "history": history, "seconds": time.perf_counter() - started, "plot": plot}


if __name__ == "__main__":
    out = main(sft.parse_dataclass(Args))
    print(f"{out['log_name']}: greedy accuracy {out['initial_accuracy']:.3f} -> {out['final_accuracy']:.3f}, "
          f"sampled Pass@k {out['initial_sampled']['pass_at_k']:.3f} -> {out['final_sampled']['pass_at_k']:.3f}, "
          f"{out['seconds']:.0f} s")
