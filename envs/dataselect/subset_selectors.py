"""Data selectors for DataSelection-v0: from visible items and base-model losses to five groups.

Everything here reads only what the agent may read (the items' JSON and the losses the env's
``base_losses`` action returns) and needs only numpy and the standard library, because the
scripted agents send this very module to the sandbox as ``run_python`` code (``selector_script``).

A selector returns ``(groups, order)``: five disjoint groups of ``group_size`` rows, and the
group indices from predicted best to worst.

* ``random``: five random groups.
* ``base_loss_bands``: rows sorted by base loss, cut into five bands; lowest loss predicted best.
* ``dedup``: drop near duplicates, then random groups; groups holding duplicates predicted worst.
* ``stratified``: an honest suspicion score per row (a label value absent from the text, a
  near duplicate, a base loss that is an outlier within its stratum, a confident-learning
  disagreement); strata by domain, label type and history kind (or by digit label); within each
  stratum rows ordered by suspicion (random among equals, for diversity) and dealt to the groups
  as quintiles, so every group keeps each stratum's share. Least suspicious predicted best.
* ``confident_learning``: flags rows whose label's self-confidence exp(-loss) lies below the
  mean self-confidence of their class; unflagged rows first.
* ``most_suspicious``: the most suspicious rows first (no strata), a deliberately bad selector.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import numpy as np

__all__ = ["SELECTORS", "select", "suspicion", "stratum", "selector_script"]

N_GROUPS = 5
_FILLERS = frozenset(("please", "thanks", "hi", "hello", "kindly", "quickly"))


def stratum(item: dict[str, Any]) -> str:
    """The visible stratum of a row: digit label, or domain x label type x history kind."""
    if "pixels" in item:
        return f"label={item['label']}"
    history = item.get("history") or []
    kind = "none" if not history else ("error" if any(str(t.get("content", "")).startswith("error") for t in history) else "turns")
    return f"{item['domain']}|{item['target']['type']}|{kind}"


def _text_words(item: dict[str, Any]) -> set[str]:
    words = set(str(item.get("request", "")).split())
    for turn in item.get("history") or []:
        words.update(str(turn.get("content", "")).split())
        words.update(str(v) for v in (turn.get("tool_call") or {}).get("arguments", {}).values())
    return words


def value_missing(item: dict[str, Any]) -> bool:
    """A call whose argument value appears nowhere in the request or history: a guess or a cut."""
    target = item.get("target") or {}
    if target.get("type") != "call":
        return False
    words = _text_words(item)
    return any(str(v) not in words for v in target.get("arguments", {}).values())


def _duplicate_key(item: dict[str, Any]) -> str:
    if "pixels" in item:
        return json.dumps([[v // 4 for v in line] for line in item["pixels"]] + [item["label"]])
    request = " ".join(w for w in str(item["request"]).split() if w not in _FILLERS)
    return json.dumps([request, sorted(item["tools"]), item["history"], item["target"]], sort_keys=True)


def duplicates(items: Sequence[dict[str, Any]]) -> np.ndarray:
    """True for every row whose normalised content repeats an earlier row."""
    seen: set[str] = set()
    flags = np.zeros(len(items), dtype=bool)
    for i, item in enumerate(items):
        key = _duplicate_key(item)
        flags[i] = key in seen
        seen.add(key)
    return flags


def _class_of(item: dict[str, Any]) -> str:
    if "pixels" in item:
        return str(item["label"])
    target = item["target"]
    return target.get("name") or target["type"]


def confident_learning_flags(items: Sequence[dict[str, Any]], losses: np.ndarray) -> np.ndarray:
    """Rows whose label self-confidence exp(-loss) is below their class's mean self-confidence."""
    confidence = np.exp(-np.asarray(losses, dtype=float))
    classes = np.array([_class_of(item) for item in items])
    flags = np.zeros(len(items), dtype=bool)
    for c in set(classes.tolist()):
        members = classes == c
        flags[members] = confidence[members] < confidence[members].mean()
    return flags


def _known_strata(items: Sequence[dict[str, Any]], losses: np.ndarray) -> np.ndarray:
    """Rows of strata the base model fits (median base loss below 1 nat). Elsewhere (label types
    or contexts it never learnt) its losses say nothing about a label's quality."""
    strata = np.array([stratum(item) for item in items])
    known = np.zeros(len(items), dtype=bool)
    for s in set(strata.tolist()):
        members = strata == s
        known[members] = float(np.median(losses[members])) < 1.0
    return known


def _loss_outliers(items: Sequence[dict[str, Any]], losses: np.ndarray) -> np.ndarray:
    """Base losses far above their stratum's typical loss (median + 3 x MAD, at least 2x median),
    in strata the base model fits."""
    strata = np.array([stratum(item) for item in items])
    flags = np.zeros(len(items), dtype=bool)
    known = _known_strata(items, losses)
    for s in set(strata[known].tolist()):
        members = (strata == s) & known
        values = losses[members]
        median = float(np.median(values))
        mad = float(np.median(np.abs(values - median)))
        flags[members] = values > max(median + 3 * 1.4826 * mad, 2 * median, 0.05)
    return flags


def suspicion(items: Sequence[dict[str, Any]], losses: np.ndarray) -> np.ndarray:
    """How suspicious each row looks from visible evidence (a count of flags, higher is worse)."""
    losses = np.asarray(losses, dtype=float)
    value = np.array([value_missing(item) for item in items], dtype=float)
    known = _known_strata(items, losses)
    return (2 * value + 2 * duplicates(items) + _loss_outliers(items, losses)
            + 0.5 * (confident_learning_flags(items, losses) & known))


def _deal(ranked: Sequence[int], group_size: int) -> list[list[int]]:
    """Consecutive bands of a ranking, best first."""
    return [list(ranked[k * group_size:(k + 1) * group_size]) for k in range(N_GROUPS)]


def _stratified(items: Sequence[dict[str, Any]], score: np.ndarray, group_size: int,
                rng: np.random.Generator) -> list[list[int]]:
    """Quintiles within strata: each stratum's rows, least suspicious first, dealt to the groups in
    proportion to the stratum's size; groups are topped up from the leftovers in the same order."""
    n = len(items)
    used = N_GROUPS * group_size
    strata = np.array([stratum(item) for item in items])
    groups: list[list[int]] = [[] for _ in range(N_GROUPS)]
    leftovers: list[tuple[float, float, int]] = []
    for s in sorted(set(strata.tolist())):
        members = np.where(strata == s)[0]
        tiebreak = rng.random(len(members))
        ranked = members[np.lexsort((tiebreak, score[members]))]
        share = int(math.floor(len(members) * used / n / N_GROUPS))  # rows per group from this stratum
        for k in range(N_GROUPS):
            groups[k] += ranked[k * share:(k + 1) * share].tolist()
        leftovers += [(float(score[r]), float(t), int(r)) for r, t in zip(ranked[N_GROUPS * share:], tiebreak[N_GROUPS * share:])]
    leftovers.sort()
    fill = [r for _, _, r in leftovers]
    for k in range(N_GROUPS):
        need = group_size - len(groups[k])
        groups[k] += fill[:need]
        fill = fill[need:]
    return groups


def select(name: str, items: Sequence[dict[str, Any]], losses: Sequence[float] | None, group_size: int,
           seed: int) -> tuple[list[list[int]], list[int]]:
    """Run selector ``name``; ``items[i]["row"]`` is the pool row of ``items[i]``."""
    if name not in SELECTORS:
        raise ValueError(f"unknown selector {name!r}; known: {', '.join(SELECTORS)}")
    rng = np.random.default_rng(seed)
    if N_GROUPS * group_size > len(items):
        raise ValueError(f"{N_GROUPS} groups of {group_size} need {N_GROUPS * group_size} rows; the pool has {len(items)}")
    loss = np.zeros(len(items)) if losses is None else np.asarray(losses, dtype=float)
    order = list(range(N_GROUPS))
    if name == "random":
        groups = _deal(rng.permutation(len(items)).tolist(), group_size)
    elif name == "base_loss_bands":
        ranked = np.argsort(loss, kind="stable")
        band = len(items) // N_GROUPS
        groups = [ranked[k * band:k * band + group_size].tolist() for k in range(N_GROUPS)]
    elif name == "dedup":
        dup = duplicates(items)
        ranked = np.lexsort((rng.random(len(items)), dup))
        groups = _deal(ranked.tolist(), group_size)
    elif name == "confident_learning":
        flags = confident_learning_flags(items, loss)
        groups = _deal(np.lexsort((rng.random(len(items)), flags)).tolist(), group_size)
    elif name == "stratified":
        groups = _stratified(items, suspicion(items, loss), group_size, rng)
    elif name == "most_suspicious":  # the same evidence, most suspicious rows first, no strata
        groups = _deal(np.lexsort((rng.random(len(items)), -suspicion(items, loss))).tolist(), group_size)
    rows = [int(item["row"]) for item in items]
    return [[rows[i] for i in group] for group in groups], order


SELECTORS = ("random", "base_loss_bands", "dedup", "stratified", "confident_learning", "most_suspicious")


def selector_script(name: str, group_size: int, seed: int) -> str:
    """Python source that runs selector ``name`` in the sandbox on ``pool/items.jsonl`` and
    ``analysis/base_losses.json`` and writes ``submission.csv`` and ``order.json``."""
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    return source + f'''

if __name__ == "__main__":
    import os
    items = [json.loads(line) for line in open("pool/items.jsonl")]
    losses = None
    if os.path.exists("analysis/base_losses.json"):
        table = json.load(open("analysis/base_losses.json"))
        losses = [table.get(str(item["row"]), 0.0) for item in items]
    groups, order = select({name!r}, items, losses, {int(group_size)}, {int(seed)})
    with open("submission.csv", "w") as f:
        f.write("row,group\\n")
        for g, group in enumerate(groups):
            f.writelines(f"{{r}},{{g}}\\n" for r in group)
    json.dump(order, open("order.json", "w"))
    print("wrote submission.csv", [len(g) for g in groups], "order", order)
'''
