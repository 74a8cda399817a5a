"""The LLM candidate source: mutation and crossover prompts through LiteLLM.

The prompt carries the task, the parent's code and score and, for crossover, a second program;
the model answers with a whole new program (``mode="rewrite"``, in a ```python block) or with
SEARCH/REPLACE edits of the parent (``mode="diff"``). Requests go through ``rsigym.llm.client``
(retries, usage and cost); tokens come from the provider's usage.
"""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np

from rsigym.llm import RetryPolicy, complete

from .source_base import Proposal

__all__ = ["LLMSource", "apply_diff", "extract_program"]

_CODE_BLOCK = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)
_DIFF_BLOCK = re.compile(r"<<<<<<< SEARCH\n(.*?)\n=======\n(.*?)\n>>>>>>> REPLACE", re.DOTALL)

_RULES = {
    "rewrite": "Answer with the complete improved program in one ```python code block.",
    "diff": ("Answer with one or more edits of the parent program, each in the form\n"
             "<<<<<<< SEARCH\n<exact lines of the parent>\n=======\n<new lines>\n>>>>>>> REPLACE"),
}


def extract_program(text: str) -> str | None:
    blocks = _CODE_BLOCK.findall(text or "")
    return max(blocks, key=len).strip() + "\n" if blocks else None


def apply_diff(parent: str, text: str) -> str | None:
    """The parent with every SEARCH/REPLACE edit applied; None when there is none or one misses."""
    edits = _DIFF_BLOCK.findall(text or "")
    if not edits:
        return None
    code = parent
    for search, replace in edits:
        if search not in code:
            return None
        code = code.replace(search, replace, 1)
    return code


class LLMSource:
    """Candidates written by an LLM (any LiteLLM model string).

    Args:
        model: LiteLLM model string.
        mode: ``rewrite`` or ``diff``.
        crossover_p: Probability of a crossover prompt (two programs) rather than a mutation one.
        temperature, max_tokens, api_base: Sampling and endpoint parameters.
        max_retries, backoff_base_s, timeout_s: Provider-error retries and per-request timeout.
        litellm_kwargs: Anything else for ``litellm.completion`` (e.g. ``mock_response`` in tests).
    """

    name = "llm"

    def __init__(self, model: str, mode: str = "rewrite", crossover_p: float = 0.3, temperature: float = 0.8,
                 max_tokens: int | None = 4096, api_base: str | None = None, max_retries: int = 4,
                 backoff_base_s: float = 1.0, timeout_s: float = 300.0,
                 litellm_kwargs: dict[str, Any] | None = None) -> None:
        if mode not in _RULES:
            raise ValueError(f"mode must be one of {', '.join(_RULES)}, got {mode!r}")
        self.model, self.mode, self.crossover_p = model, mode, crossover_p
        self.temperature, self.max_tokens, self.api_base = temperature, max_tokens, api_base
        self.retry, self.timeout_s = RetryPolicy(max_retries, backoff_base_s), timeout_s
        self.litellm_kwargs = dict(litellm_kwargs or {})

    def messages(self, parent_code: str, parent_score: float, partner_code: str | None,
                 task_description: str) -> list[dict[str, str]]:
        parts = [f"Task: {task_description}", f"Parent program (score {parent_score:.6g}):\n```python\n{parent_code}```"]
        if partner_code is not None:
            parts.append(f"Another good program; combine the best ideas of both:\n```python\n{partner_code}```")
        else:
            parts.append("Propose one change that should raise the score.")
        parts.append(_RULES[self.mode])
        return [{"role": "system", "content": "You improve programs by evolutionary search."},
                {"role": "user", "content": "\n\n".join(parts)}]

    def propose(self, parent_code: str, parent_score: float, partner_code: str | None,
                library: dict[str, str], task_description: str, rng: np.random.Generator) -> Proposal:
        partner = partner_code if partner_code is not None and rng.random() < self.crossover_p else None
        params: dict[str, Any] = {"temperature": self.temperature, "seed": int(rng.integers(2**31))}
        if self.max_tokens:
            params["max_tokens"] = self.max_tokens
        params.update(self.litellm_kwargs)
        reply = complete(self.messages(parent_code, parent_score, partner, task_description), model=self.model,
                         role="candidate_source", api_base=self.api_base, params=params, retry=self.retry,
                         timeout_s=self.timeout_s, rng=random.Random(params["seed"]))
        text = reply.text
        code = apply_diff(parent_code, text) if self.mode == "diff" else extract_program(text)
        operator = f"llm {'crossover' if partner else 'mutation'} ({self.mode})"
        if code is None:  # an unusable answer is a candidate that fails to parse, at its real cost
            code, operator = f"# the model's answer held no usable {self.mode}\n" + "(\n", operator + ", unusable"
        return Proposal(code, operator, reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage)
