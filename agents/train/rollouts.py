"""Sampling responses from a policy and scoring tokens under a policy."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .arithmetic import AdditionTask


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


def token_log_probs(model: nn.Module, sequences: torch.Tensor, prompt_length: int
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of the response tokens and the policy entropy at each response position.

    ``sequences`` (N, P + R) -> (log_probs (N, R), entropy (N, R)). Differentiable.
    """
    logits = model(sequences[:, :-1])[:, prompt_length - 1:, :]  # (N, R, V): predicts tokens P..P+R-1
    log_probs_all = F.log_softmax(logits, dim=-1)  # (N, R, V)
    responses = sequences[:, prompt_length:]  # (N, R)
    log_probs = log_probs_all.gather(-1, responses.unsqueeze(-1)).squeeze(-1)  # (N, R)
    entropy = -(log_probs_all.exp() * log_probs_all).sum(-1)  # (N, R)
    return log_probs, entropy


@torch.no_grad()
def greedy_accuracy(model: nn.Module, task: AdditionTask, operands: torch.Tensor, batch_size: int = 512) -> float:
    """Share of ``operands`` (N, 2) whose greedy response is exactly right."""
    was_training = model.training
    model.eval()
    correct = 0.0
    for start in range(0, len(operands), batch_size):
        chunk = operands[start:start + batch_size]
        sequences = generate(model, task.prompts(chunk), task.response_length, greedy=True)
        correct += float(task.rewards(sequences[:, task.prompt_length:], task.answers(chunk)).sum())
    model.train(was_training)
    return correct / max(len(operands), 1)
