"""On-policy distillation on a verifiable task, with a pluggable token selector (all, top-|signal|,
DIAL, random, and the low-low swap with its random control).

Per step: the student samples one response per problem; the teacher scores every sampled token;
the per-token signal is ``log p_teacher - log p_student`` (the negative of the per-token reverse
KL estimate). The selector decides which positions enter the loss; the whole response stays in
the context either way. The loss is the policy gradient with the signal as a per-token reward,
``-sum_selected signal * log p_student / n_selected``. On all tokens this is the per-token form of
the reverse-KL gradient used by on-policy distillation: each token is credited with its own signal
only, not with the signals of the tokens after it (no return-to-go), so it is not the exact
sequence-level reverse-KL gradient.

Held-out metrics (``*_sampled``) score the task's evaluation set (held-out targets where the task has a
split); ``*_in_distribution`` score a fixed set from the distribution distillation trains on, where
the teacher gap is what all-token distillation should close.

Run: ``python -m rsigym.agents.train.opd --selector dial --steps 100 --log-dir runs/opd``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from . import sft
from .rollouts import generate, greedy_accuracy, sampled_metrics, token_log_probs
from .determinism import deterministic
from .runlog import JsonlLog, plot_curves
from .selectors import low_low, make_selector, top_share


@dataclass
class Args:
    selector: str = "dial"
    """token selector: all, top_signal, dial, random, swap_low_low or swap_random"""
    keep_ratio: float = 0.4
    """share of the batch's tokens in the loss (not used by ``all``); realised within one token per response"""
    beta: float = 0.5
    """DIAL strength: the logarithmic-mean weight is raised to this power (0: divergence only; 1: |p_t - p_s|,
    which on a near-deterministic teacher ignores the tokens the teacher is sure of; 0.5 sits between)"""
    low_prob_per_vocab: float = 1.0
    """a token is low-low when both models give it less than this / |V| (1: below the uniform probability;
    the threshold of the swaps and the statistics scales with the vocabulary)"""
    steps: int = 100
    """student updates"""
    prompts_per_step: int = 64
    """problems per step, one sampled response each"""
    learning_rate: float = 3e-4
    """Adam learning rate of the student"""
    seed: int = 0
    """seed of the problems, the sampling and the random selectors"""
    eval_every: int = 10
    """steps between greedy evaluations on the held-out set"""
    eval_size: int = 500
    """held-out problems per evaluation"""
    sample_k: int = 8
    """samples per held-out problem for Mean@k / Pass@k, at the start and the end"""
    student_sft_steps: int = 200
    """supervised steps of the student's warm start (pinned; accuracy recorded, never a stop rule)"""
    teacher_n_layer: int = 3
    """teacher depth (the student has 2 blocks of width 64)"""
    teacher_n_embd: int = 96
    """teacher width"""
    teacher_sft_steps: int = 400
    """supervised steps of the teacher"""
    teacher_learning_rate: float = 2e-3
    """teacher's supervised learning rate"""
    teacher_temperature: float = 1.0
    """the teacher's logits are divided by this when it scores tokens (> 1: softer)"""
    sft_seed: int = 0
    """seed of both warm starts (shared by every selector)"""
    task: str = "digitsum"
    """task family: digitsum (many valid answers) or addition (one)"""
    digits: int = 3
    """digits per addition operand (task addition)"""
    length: int = 5
    """digits per response (task digitsum)"""
    canonical_share: float = 0.2
    """share of the warm starts' digitsum demonstrations on the favoured path"""
    base: int = 10
    """digits per position (task digitsum)"""
    favoured: str = "canonical"
    """the favoured digitsum path: canonical (one rule) or per_target (a memorised answer per target)"""
    held_out_every: int = 0
    """digitsum targets t % held_out_every == 1 never enter training; evaluation uses only them (0: no split)"""
    cache_dir: str = ""
    """checkpoint cache of the warm starts; empty: train them in-process"""
    log_dir: str = ""
    """where ``opd_<selector>_s<seed>.jsonl`` and its PNG go; empty: no files"""
    threads: int = 1
    """torch intra-op threads"""
    curve_every: int = 0
    """steps between in-distribution Mean@k evaluations recorded in the history (``mean_at_k_in``: the learning
    curve of the teacher-gap share); 0: none (start and end only)"""


def student_args(args: Args) -> sft.Args:
    return sft.Args(**sft.task_fields(args), steps=args.student_sft_steps, seed=args.sft_seed,
                    cache_dir=args.cache_dir, threads=args.threads)


def teacher_args(args: Args) -> sft.Args:
    return sft.Args(**sft.task_fields(args), n_layer=args.teacher_n_layer,
                    n_embd=args.teacher_n_embd, steps=args.teacher_sft_steps, learning_rate=args.teacher_learning_rate,
                    seed=args.sft_seed, cache_dir=args.cache_dir, threads=args.threads)


def distillation_loss(student_log_probs: torch.Tensor, teacher_log_probs: torch.Tensor,
                      selected: torch.Tensor) -> torch.Tensor:
    """(N, R) log-probs of the sampled tokens and a bool selection -> scalar loss.

    The signal is detached: it is a reward for the sampled token, not a path for gradients.
    """
    signal = (teacher_log_probs - student_log_probs).detach()
    weights = selected.float()
    return -(signal * student_log_probs * weights).sum() / weights.sum().clamp(min=1.0)


def token_statistics(teacher_log_probs: torch.Tensor, student_log_probs: torch.Tensor, selected: torch.Tensor,
                     completable: torch.Tensor, low_prob: float, keep_ratio: float) -> dict[str, float]:
    """Regime statistics of one batch of sampled tokens (all (N, R)).

    ``low_low_share``: tokens both models give less than ``low_prob``; ``low_low_error_share``: the
    share of those that are a mistake or follow one (``completable`` False: the answer can no longer
    be right), against ``error_share`` over all tokens; ``low_low_share_fixed_01``: both below 0.1,
    the old fixed cut-off; ``teacher_sure_share``: p_t > 0.99; ``selected_low_low_share``: low-low
    share among the selected tokens; ``overlap_top_signal``: share of the selected tokens that
    divergence-only selection also picks; ``top_signal_low_low_share``: low-low share among those.
    """
    mask = torch.ones_like(selected)
    both_low = low_low(teacher_log_probs, student_log_probs, mask, low_prob)
    errors = ~completable
    by_signal = top_share((teacher_log_probs - student_log_probs).abs(), mask, keep_ratio)
    chosen = selected.sum().clamp(min=1).item()
    return {"low_low_share": both_low.float().mean().item(),
            "low_low_error_share": (both_low & errors).sum().item() / both_low.sum().clamp(min=1).item(),
            "error_share": errors.float().mean().item(),
            "low_low_share_fixed_01": low_low(teacher_log_probs, student_log_probs, mask, 0.1).float().mean().item(),
            "teacher_sure_share": (teacher_log_probs.exp() > 0.99).float().mean().item(),
            "top_signal_low_low_share": (both_low & by_signal).sum().item() / by_signal.sum().clamp(min=1).item(),
            "selected_low_low_share": (both_low & selected).sum().item() / chosen,
            "overlap_top_signal": (by_signal & selected).sum().item() / chosen}


def main(args: Args) -> dict:
    """Distil; returns ``{"final_accuracy", "teacher_accuracy", sampled metrics, "history": [...], ...}``."""
    with deterministic(args.threads):
        return _main(args)


def _main(args: Args) -> dict:
    task = sft.task_of(args)
    low_prob = args.low_prob_per_vocab / task.tokenizer.vocab_size
    student, student_metrics = sft.warm_start(student_args(args))
    teacher, teacher_metrics = sft.warm_start(teacher_args(args))
    teacher.eval()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    selector = make_selector(args.selector, args.keep_ratio, args.beta, torch.Generator().manual_seed(args.seed + 1),
                             low_prob)
    optimizer = torch.optim.Adam(student.parameters(), lr=args.learning_rate)
    eval_problems = task.eval_problems(args.eval_size)
    name = f"opd_{args.selector}{f'_b{args.beta:g}' if args.selector == 'dial' else ''}_w{args.sft_seed}_s{args.seed}"
    log = JsonlLog(Path(args.log_dir) / f"{name}.jsonl" if args.log_dir else None)
    P, R = task.prompt_length, task.response_length
    history: list[dict] = []
    started = time.perf_counter()
    initial_accuracy = greedy_accuracy(student, task, eval_problems)
    initial_sampled = sampled_metrics(student, task, eval_problems, args.sample_k, torch.Generator().manual_seed(777))
    teacher_sampled = sampled_metrics(teacher, task, eval_problems, args.sample_k, torch.Generator().manual_seed(777),
                                      temperature=args.teacher_temperature)
    # in distribution: the targets distillation trains on (a task without a split: the evaluation set again)
    in_problems = task.in_distribution_problems(args.eval_size) if hasattr(task, "in_distribution_problems") \
        else eval_problems
    initial_in = sampled_metrics(student, task, in_problems, args.sample_k, torch.Generator().manual_seed(778))
    teacher_in = sampled_metrics(teacher, task, in_problems, args.sample_k, torch.Generator().manual_seed(778),
                                 temperature=args.teacher_temperature)

    for step in range(1, args.steps + 1):
        problems = task.sample_problems(args.prompts_per_step, generator)
        student.eval()
        sequences = generate(student, task.prompts(problems), R, generator)  # (N, P+R), on-policy
        student.train()
        rewards = task.score(sequences[:, P:], problems)
        with torch.no_grad():
            teacher_log_probs, _ = token_log_probs(teacher, sequences, P, args.teacher_temperature)  # (N, R)
        student_log_probs, entropy = token_log_probs(student, sequences, P)  # (N, R), with gradients
        mask = torch.ones_like(student_log_probs, dtype=torch.bool)  # fixed-length responses: all valid
        selected = selector(teacher_log_probs, student_log_probs.detach(), mask)
        loss = distillation_loss(student_log_probs, teacher_log_probs, selected)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)
        optimizer.step()

        reverse_kl = (student_log_probs - teacher_log_probs).detach().mean().item()
        record = {"step": step, "reward": rewards.mean().item(), "accuracy": rewards.mean().item(),
                  "entropy": entropy.detach().mean().item(), "reverse_kl": reverse_kl,
                  "selected_share": selected.float().mean().item(), "eval_accuracy": None,
                  **token_statistics(teacher_log_probs, student_log_probs.detach(), selected,
                                     task.completable(sequences[:, P:], problems), low_prob, args.keep_ratio)}
        if step % args.eval_every == 0 or step == args.steps:
            record["eval_accuracy"] = greedy_accuracy(student, task, eval_problems)
        if args.curve_every and step % args.curve_every == 0:
            record["mean_at_k_in"] = sampled_metrics(student, task, in_problems, args.sample_k,
                                                     torch.Generator().manual_seed(778))["mean_at_k"]
        history.append(record)
        log.write(record)

    log.close()
    final_accuracy = history[-1]["eval_accuracy"] if history else initial_accuracy
    final_sampled = sampled_metrics(student, task, eval_problems, args.sample_k, torch.Generator().manual_seed(777))
    final_in = sampled_metrics(student, task, in_problems, args.sample_k, torch.Generator().manual_seed(778))
    plot = None
    if args.log_dir and history:
        plot = str(plot_curves({name: history}, ["accuracy", "eval_accuracy", "entropy", "reverse_kl"],
                               Path(args.log_dir) / f"{name}.png", title=name))
    return {"selector": args.selector, "beta": args.beta, "seed": args.seed, "log_name": name, "low_prob": low_prob,
            "initial_accuracy": initial_accuracy, "final_accuracy": final_accuracy,
            "initial_sampled": initial_sampled, "final_sampled": final_sampled,
            "teacher_accuracy": teacher_metrics["accuracy"], "teacher_sampled": teacher_sampled,
            "initial_in_distribution": initial_in, "final_in_distribution": final_in,
            "teacher_in_distribution": teacher_in,
            "student_warm_start": student_metrics, "teacher_warm_start": teacher_metrics, "history": history,
            "seconds": time.perf_counter() - started, "plot": plot}


if __name__ == "__main__":
    out = main(sft.parse_dataclass(Args))
    print(f"{out['log_name']}: student greedy accuracy {out['initial_accuracy']:.3f} -> {out['final_accuracy']:.3f}, "
          f"sampled Mean@k {out['initial_sampled']['mean_at_k']:.3f} -> {out['final_sampled']['mean_at_k']:.3f} "
          f"(teacher greedy {out['teacher_accuracy']:.3f}), {out['seconds']:.0f} s")
