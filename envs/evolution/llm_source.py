"""The LLM candidate source: mutation and crossover prompts through LiteLLM.

The prompt carries the task, the parent's code and score and, for crossover, a second program;
the model answers with a whole new program (``mode="rewrite"``, in a ```python block) or with
SEARCH/REPLACE edits of the parent (``mode="diff"``). Tokens come from the provider's usage.
LiteLLM is imported on first use (it takes seconds).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .sources import Proposal

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
        litellm_kwargs: Anything else for ``litellm.completion`` (e.g. ``mock_response`` in tests).
    """

    name = "llm"

    def __init__(self, model: str, mode: str = "rewrite", crossover_p: float = 0.3, temperature: float = 0.8,
                 max_tokens: int | None = 4096, api_base: str | None = None,
                 litellm_kwargs: dict[str, Any] | None = None) -> None:
        if mode not in _RULES:
            raise ValueError(f"mode must be one of {', '.join(_RULES)}, got {mode!r}")
        self.model, self.mode, self.crossover_p = model, mode, crossover_p
        self.temperature, self.max_tokens, self.api_base = temperature, max_tokens, api_base
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
        from rsigym.agents.litellm_loader import load_litellm

        litellm = load_litellm()  # local cost map, quiet, the offline rsigym/... models installed

        partner = partner_code if partner_code is not None and rng.random() < self.crossover_p else None
        request: dict[str, Any] = {"model": self.model, "temperature": self.temperature,
                                   "messages": self.messages(parent_code, parent_score, partner, task_description),
                                   "seed": int(rng.integers(2**31)), "drop_params": True}
        if self.max_tokens:
            request["max_tokens"] = self.max_tokens
        if self.api_base:
            request["api_base"] = self.api_base
        request.update(self.litellm_kwargs)
        response = litellm.completion(**request)
        text = str(response.choices[0].message.content or "")
        usage = getattr(response, "usage", None)
        code = apply_diff(parent_code, text) if self.mode == "diff" else extract_program(text)
        operator = f"llm {'crossover' if partner else 'mutation'} ({self.mode})"
        if code is None:  # an unusable answer is a candidate that fails to parse, at its real cost
            code, operator = f"# the model's answer held no usable {self.mode}\n" + "(\n", operator + ", unusable"
        return Proposal(code, operator, int(getattr(usage, "prompt_tokens", 0) or 0),
                        int(getattr(usage, "completion_tokens", 0) or 0))
