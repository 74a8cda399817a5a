"""Supervised warm start: teacher-forced next-token training on correct worked answers.

Produces the GRPO starting policy (a small model trained for a pinned, small number of steps:
non-trivial but imperfect) and the distillation teacher (a larger model trained longer).
Checkpoints are cached by a hash of ``Args`` so the benchmarks train each warm start once. The
length of training is a step count, never an accuracy threshold: accuracy can jump between two
checks, so a threshold gives a different starting policy on another machine or seed.

Run: ``python -m rsigym.agents.train.sft --steps 600``.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch
import torch.nn.functional as F

from rsigym.cache import atomic_write_bytes, cache_key

from .determinism import deterministic
from .model import GPT, GPTConfig
from .rollouts import greedy_accuracy
from .tasks import VerifiableTask, make_task

T = TypeVar("T")


@dataclass
class Args:
    task: str = "digitsum"
    """task family: digitsum (many valid answers) or addition (one)"""
    digits: int = 3
    """digits per addition operand (task addition)"""
    length: int = 5
    """digits per response (task digitsum)"""
    canonical_share: float = 0.2
    """share of digitsum demonstrations on the favoured path (the rest: uniform over right answers)"""
    base: int = 10
    """digits per position (task digitsum)"""
    favoured: str = "canonical"
    """the favoured digitsum path: canonical (one rule) or per_target (a memorised answer per target)"""
    held_out_every: int = 0
    """digitsum targets t % held_out_every == 1 are held out of training and evaluated (0: no split)"""
    n_layer: int = 2
    """transformer blocks"""
    n_head: int = 4
    """attention heads"""
    n_embd: int = 64
    """model width"""
    steps: int = 600
    """optimizer steps"""
    batch_size: int = 128
    """problems per step"""
    learning_rate: float = 3e-3
    """AdamW peak learning rate (cosine decay to 10%)"""
    seed: int = 0
    """seed of the initial weights and of the training problems"""
    eval_size: int = 1000
    """held-out problems scored greedily at the end"""
    cache_dir: str = ""
    """folder of cached checkpoints; empty: no cache"""
    threads: int = 1
    """torch intra-op threads"""


TASK_FIELDS = ("task", "digits", "length", "canonical_share", "base", "favoured", "held_out_every")


def task_fields(args: object) -> dict:
    """The task settings of any ``Args`` with the ``TASK_FIELDS`` (sft, grpo, opd), by name."""
    return {name: getattr(args, name) for name in TASK_FIELDS}


def task_of(args: object) -> VerifiableTask:
    fields = task_fields(args)
    return make_task(fields.pop("task"), **fields)


def _key(args: Args) -> str:
    return cache_key("sft", {k: v for k, v in dataclasses.asdict(args).items() if k != "cache_dir"})  # threads change the sums


def build_model(args: Args, task: VerifiableTask) -> GPT:
    config = GPTConfig(vocab_size=task.tokenizer.vocab_size, block_size=task.prompt_length + task.response_length,
                       n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd)
    return GPT(config)


def train(args: Args, task: VerifiableTask | None = None) -> tuple[GPT, dict]:
    """Train from scratch; returns the model and ``{"accuracy", "loss", "seconds"}``.

    ``task``: a task object to train on instead of the one ``args`` names (an env behind ``ConfigEnvTask``).
    """
    with deterministic(args.threads):
        return _train(args, task)


def _train(args: Args, task: VerifiableTask | None = None) -> tuple[GPT, dict]:
    task = task_of(args) if task is None else task
    torch.manual_seed(args.seed)  # weight initialisation draws from the global generator
    model = build_model(args, task)
    generator = torch.Generator().manual_seed(args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01, betas=(0.9, 0.98))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.1 + 0.45 * (1 + torch.cos(torch.tensor(torch.pi * step / args.steps)).item()))
    started, loss_value = time.perf_counter(), float("nan")
    P = task.prompt_length
    for step in range(args.steps):
        problems = task.sample_problems(args.batch_size, generator)
        sequences = torch.cat([task.prompts(problems), task.demonstrations(problems, generator)], dim=1)  # (B, P + R)
        logits = model(sequences[:, :-1])[:, P - 1:, :]  # (B, R, V): only the response is supervised
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), sequences[:, P:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        loss_value = loss.item()
    accuracy = greedy_accuracy(model, task, task.eval_problems(args.eval_size))
    return model, {"accuracy": accuracy, "loss": loss_value, "steps": args.steps,
                   "seconds": time.perf_counter() - started}


def warm_start(args: Args, task: VerifiableTask | None = None) -> tuple[GPT, dict]:
    """``train(args, task)``, through the checkpoint cache when ``args.cache_dir`` is set (never for an injected
    ``task``: the cache key knows only the task ``args`` name)."""
    path = Path(args.cache_dir) / f"sft-{_key(args)}.pt" if args.cache_dir and task is None else None
    if path is not None and path.exists():
        saved = torch.load(path, weights_only=False)
        model = GPT(GPTConfig(**saved["config"]))
        model.load_state_dict(saved["state"])
        return model, saved["metrics"]
    model, metrics = train(args, task)
    if path is not None:  # atomic: concurrent benchmark runs may share the folder
        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        torch.save({"config": model.config.to_dict(), "state": model.state_dict(), "metrics": metrics}, buffer)
        atomic_write_bytes(path, buffer.getvalue())
    return model, metrics


def main(args: Args) -> dict:
    model, metrics = warm_start(args)
    print(f"sft: {model.num_parameters()} parameters, greedy accuracy {metrics['accuracy']:.3f}, "
          f"final loss {metrics['loss']:.3f}, {metrics['steps']} steps, {metrics['seconds']:.1f} s")
    return metrics


def parse_args(argv: list[str] | None = None) -> Args:
    """Every ``Args`` field as a ``--flag`` (shared by the training scripts)."""
    return parse_dataclass(Args, argv)


def parse_dataclass(cls: type[T], argv: list[str] | None = None) -> T:
    """A ``--flag`` per field of the dataclass ``cls``, parsed from ``argv``."""
    parser = argparse.ArgumentParser()
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        default = field.default
        flag = "--" + field.name.replace("_", "-")
        if isinstance(default, bool):
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=default)
        elif isinstance(default, tuple):
            parser.add_argument(flag, type=type(default[0]), nargs=len(default), default=default)
        else:
            parser.add_argument(flag, type=type(default), default=default)
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in vars(parser.parse_args(argv)).items()}
    return cls(**values)


if __name__ == "__main__":
    main(parse_args())
