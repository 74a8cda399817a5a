"""On-policy distillation on addition, with a pluggable token selector (all, top-|signal|, DIAL, random).

Per step: the student samples one response per problem; the teacher scores every sampled token;
the per-token signal is ``log p_teacher - log p_student`` (the negative of the per-token reverse
KL estimate). The selector decides which positions enter the loss; the whole response stays in
the context either way. The loss is the policy gradient with the signal as a per-token reward,
``-sum_selected signal * log p_student / n_selected``. On all tokens this is the per-token form of
the reverse-KL gradient used by on-policy distillation: each token is credited with its own signal
only, not with the signals of the tokens after it (no return-to-go), so it is not the exact
sequence-level reverse-KL gradient.

Run: ``python -m rsigym.agents.train.opd --selector dial --steps 100 --log-dir runs/opd``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from . import sft
from .arithmetic import AdditionTask
from .rollouts import generate, greedy_accuracy, token_log_probs
from .runlog import JsonlLog, plot_curves
from .selectors import make_selector


@dataclass
class Args:
    selector: str = "dial"
    """token selector: all, top_signal, dial or random"""
    keep_ratio: float = 0.4
    """share of each response's tokens in the loss (not used by ``all``)"""
    beta: float = 1.0
    """DIAL strength: the logarithmic-mean weight is raised to this power"""
    steps: int = 100
    """student updates"""
    prompts_per_step: int = 64
    """problems per step, one sampled response each"""
    learning_rate: float = 3e-4
    """Adam learning rate of the student"""
    seed: int = 0
    """seed of the problems, the sampling and the random selector"""
    eval_every: int = 10
    """steps between greedy evaluations on the held-out set"""
    eval_size: int = 500
    """held-out problems per evaluation"""
    student_sft_steps: int = 600
    """most supervised steps of the student's warm start"""
    student_stop_at_accuracy: float = 0.4
    """the student's warm start stops once its validation accuracy reaches this"""
    teacher_n_layer: int = 3
    """teacher depth (the student has 2 blocks of width 64)"""
    teacher_n_embd: int = 96
    """teacher width"""
    teacher_sft_steps: int = 700
    """supervised steps of the teacher"""
    teacher_learning_rate: float = 2e-3
    """teacher's supervised learning rate"""
    sft_seed: int = 0
    """seed of both warm starts (shared by every selector)"""
    digits: int = 3
    """digits per addition operand"""
    cache_dir: str = ""
    """checkpoint cache of the warm starts; empty: train them in-process"""
    log_dir: str = ""
    """where ``opd_<selector>_s<seed>.jsonl`` and its PNG go; empty: no files"""
    threads: int = 1
    """torch intra-op threads"""


def student_args(args: Args) -> sft.Args:
    return sft.Args(digits=args.digits, steps=args.student_sft_steps, stop_at_accuracy=args.student_stop_at_accuracy,
                    seed=args.sft_seed, cache_dir=args.cache_dir, threads=args.threads)


def teacher_args(args: Args) -> sft.Args:
    return sft.Args(digits=args.digits, n_layer=args.teacher_n_layer, n_embd=args.teacher_n_embd,
                    steps=args.teacher_sft_steps, learning_rate=args.teacher_learning_rate, seed=args.sft_seed,
                    cache_dir=args.cache_dir, threads=args.threads)


def distillation_loss(student_log_probs: torch.Tensor, teacher_log_probs: torch.Tensor,
                      selected: torch.Tensor) -> torch.Tensor:
    """(N, R) log-probs of the sampled tokens and a bool selection -> scalar loss.

    The signal is detached: it is a reward for the sampled token, not a path for gradients.
    """
    signal = (teacher_log_probs - student_log_probs).detach()
    weights = selected.float()
    return -(signal * student_log_probs * weights).sum() / weights.sum().clamp(min=1.0)


def main(args: Args) -> dict:
    """Distil; returns ``{"final_accuracy", "teacher_accuracy", "history": [...], ...}``."""
    torch.set_num_threads(args.threads)
    task = AdditionTask(args.digits)
    student, student_metrics = sft.warm_start(student_args(args))
    teacher, teacher_metrics = sft.warm_start(teacher_args(args))
    teacher.eval()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    selector = make_selector(args.selector, args.keep_ratio, args.beta, torch.Generator().manual_seed(args.seed + 1))
    optimizer = torch.optim.Adam(student.parameters(), lr=args.learning_rate)
    eval_operands = task.eval_operands(args.eval_size)
    name = f"opd_{args.selector}{f'_b{args.beta:g}' if args.selector == 'dial' else ''}_s{args.seed}"
    log = JsonlLog(Path(args.log_dir) / f"{name}.jsonl" if args.log_dir else None)
    P, R = task.prompt_length, task.response_length
    history: list[dict] = []
    started = time.perf_counter()
    initial_accuracy = greedy_accuracy(student, task, eval_operands)

    for step in range(1, args.steps + 1):
        operands = task.sample_operands(args.prompts_per_step, generator)
        student.eval()
        sequences = generate(student, task.prompts(operands), R, generator)  # (N, P+R), on-policy
        student.train()
        rewards = task.rewards(sequences[:, P:], task.answers(operands))
        with torch.no_grad():
            teacher_log_probs, _ = token_log_probs(teacher, sequences, P)  # (N, R)
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
                  "selected_share": selected.float().mean().item(), "eval_accuracy": None}
        if step % args.eval_every == 0 or step == args.steps:
            record["eval_accuracy"] = greedy_accuracy(student, task, eval_operands)
        history.append(record)
        log.write(record)

    log.close()
    final_accuracy = history[-1]["eval_accuracy"] if history else initial_accuracy
    plot = None
    if args.log_dir and history:
        plot = str(plot_curves({name: history}, ["accuracy", "eval_accuracy", "entropy", "reverse_kl"],
                               Path(args.log_dir) / f"{name}.png", title=name))
    return {"selector": args.selector, "beta": args.beta, "seed": args.seed, "log_name": name, "initial_accuracy": initial_accuracy,
            "final_accuracy": final_accuracy, "teacher_accuracy": teacher_metrics["accuracy"],
            "student_warm_start": student_metrics, "history": history,
            "seconds": time.perf_counter() - started, "plot": plot}


if __name__ == "__main__":
    out = main(sft.parse_dataclass(Args))
    print(f"{out['selector']}: student greedy accuracy {out['initial_accuracy']:.3f} -> {out['final_accuracy']:.3f} "
          f"(teacher {out['teacher_accuracy']:.3f}), {out['seconds']:.0f} s")
