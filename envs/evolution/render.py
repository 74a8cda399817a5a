"""The prompt-ready text of a ProgramEvolution-v0 observation."""

from __future__ import annotations

from typing import Any

from rsigym.spaces import TEXT_CHARSET

__all__ = ["observation_text", "TEXT_LENGTH", "CODE_CHARS"]

TEXT_LENGTH = 16_000
CODE_CHARS = 8_000


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def _clean(text: str) -> str:
    return "".join(c if c in TEXT_CHARSET else "?" for c in text)


def observation_text(view: dict[str, Any]) -> str:
    """``view`` holds the fields the env shows; see ``ProgramEvolutionEnv._view``."""
    lines = [f"Task {view['task']}: {view['description']}",
             f"Budget: {view['budget_left']:.3g} of {view['budget']:g} full-evaluation equivalents left "
             f"(partial costs {view['partial_cost']:.3g}; partial evaluation "
             f"{'available' if view['partial_available'] else 'not available for this task'}).",
             f"Best full score so far: {_fmt(view['best_score'])}.",
             f"Candidate #{view['id']} (generation {view['generation']}, {view['operator']}), parent "
             f"#{view['parent_id']} with score {_fmt(view['parent_score'])}."]
    if view["siblings"]:
        failures, tried = view["sibling_failures"]
        lines.append(f"Siblings (other children of the same parent; {failures} of {tried} evaluated failed, "
                     f"the last {len(view['siblings'])} shown): " + "; ".join(view["siblings"]) + ".")
    if view["stage"] == 1:
        lines.append(f"This candidate's partial score: {_fmt(view['partial_score'])} (best partial-comparable "
                     f"score: {_fmt(view['reference_partial'])}). Choose full to finish its evaluation "
                     f"(cost {view['rest_cost']:.3g}) or discard to stop here.")
    for note in view["notes"]:
        lines.append(note)
    if view.get("error"):
        lines.append(f"Error: {view['error'][:400]}")
    lines.append('Reply with {"decision": "discard" | "partial" | "full"}.')
    code = view["code"] if len(view["code"]) <= CODE_CHARS else view["code"][:CODE_CHARS] + "\n# ... (truncated)\n"
    head = "\n".join(lines[:-1])
    return _clean(f"{head}\nCandidate code:\n```python\n{code}```\n{lines[-1]}")[:TEXT_LENGTH]
