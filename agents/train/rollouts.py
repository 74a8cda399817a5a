"""Sampling responses from a policy and scoring tokens under a policy."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .tasks import VerifiableTask


@torch.no_grad()
def generate(model: nn.Module, prompts: torch.Tensor, length: int, generator: torch.Generator | None = None,
             temperature: float = 1.0, greedy: bool = False) -> torch.Tensor:
    """Extend (N, P) prompts by ``length`` tokens -> (N, P + length) sequences.

    Responses have a fixed length in the task family here, so there is no end token and no padding.
    Recomputes the whole prefix per token (no KV cache): sequences are ~12 tokens long.
    """
    sequences = prompts
    for _ in range(length):
        logits = model(sequences)[:, -1, :]  # (N, V)
        if greedy:
            next_token = logits.argmax(dim=-1, keepdim=True)
        else:
            probs = F.softmax(logits / temperature, dim=-1)
            next_token = torch.multinomial(probs, 1, generator=generator)  # (N, 1)
        sequences = torch.cat([sequences, next_token], dim=1)
    return sequences


def token_log_probs(model: nn.Module, sequences: torch.Tensor, prompt_length: int, temperature: float = 1.0
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of the response tokens and the policy entropy at each response position.

    ``sequences`` (N, P + R) -> (log_probs (N, R), entropy (N, R)). Differentiable. ``temperature``
    scales the logits first (a teacher scored at temperature > 1 is softer).
    """
    logits = model(sequences[:, :-1])[:, prompt_length - 1:, :] / temperature  # (N, R, V): tokens P..P+R-1
    log_probs_all = F.log_softmax(logits, dim=-1)  # (N, R, V)
    responses = sequences[:, prompt_length:]  # (N, R)
    log_probs = log_probs_all.gather(-1, responses.unsqueeze(-1)).squeeze(-1)  # (N, R)
    entropy = -(log_probs_all.exp() * log_probs_all).sum(-1)  # (N, R)
    return log_probs, entropy


@torch.no_grad()
def greedy_accuracy(model: nn.Module, task: VerifiableTask, problems: torch.Tensor, batch_size: int = 512) -> float:
    """Share of ``problems`` (N, k) whose greedy response the verifier accepts."""
    was_training = model.training
    model.eval()
    correct = 0.0
    for start in range(0, len(problems), batch_size):
        chunk = problems[start:start + batch_size]
        sequences = generate(model, task.prompts(chunk), task.response_length, greedy=True)
        correct += float(task.score(sequences[:, task.prompt_length:], chunk).sum())
    model.train(was_training)
    return correct / max(len(problems), 1)


@torch.no_grad()
def sampled_metrics(model: nn.Module, task: VerifiableTask, problems: torch.Tensor, k: int,
                    generator: torch.Generator, temperature: float = 1.0) -> dict[str, float]:
    """Sample ``k`` responses per problem (temperature ``temperature``) and score them.

    Returns ``mean_at_k`` (share of the N * k samples that are right: the unbiased Pass@1 estimate),
    ``first_sample`` (share right among the first sample per problem: Mean@1 on its own),
    ``pass_at_k`` (share of problems with at least one right sample among the k) and
    ``distinct_correct_at_k`` (mean number of different right responses among a problem's k samples).
    """
    was_training = model.training
    model.eval()
    prompts = task.prompts(problems).repeat_interleave(k, dim=0)  # (N*k, P)
    sequences = generate(model, prompts, task.response_length, generator, temperature=temperature)
    responses = sequences[:, task.prompt_length:]
    rewards = task.score(responses, problems.repeat_interleave(k, dim=0)).view(-1, k)  # (N, k)
    model.train(was_training)
    grouped = responses.view(len(problems), k, -1)
    distinct = [len({tuple(r) for r, ok in zip(grouped[i].tolist(), rewards[i].tolist()) if ok})
                for i in range(len(problems))]
    return {"mean_at_k": rewards.mean().item(), "first_sample": rewards[:, 0].mean().item(),
            "pass_at_k": (rewards.max(dim=1).values).mean().item(),
            "distinct_correct_at_k": sum(distinct) / max(len(distinct), 1)}
