"""The function-calling pool: BFCL-like single-turn examples with hidden quality factors.

An item is a dict: ``domain``, ``tools`` (the 4-5 tool names offered), ``history`` (earlier
turns: ``{"role": "user"|"tool", "content"}`` or ``{"role": "assistant", "tool_call": {...}}``),
``request`` (the user's message) and ``target``: ``{"type": "call", "name", "arguments"}``,
``{"type": "ask", "missing": param, "text"}`` or ``{"type": "no_call", "text"}``. Its hidden
``factor`` lives in a separate list and never in the item's text.

Factors and their shares in the pool (``FACTOR_SHARES``):

* ``clean`` 30%: a correct call.
* ``missing_function`` 10%: the requested tool is not offered; the target is no call.
* ``missing_parameter`` 10%: a required value is absent; the target asks for it.
* ``long_context`` 12%: distractor history turns hold other values of the same kinds.
* ``recovery`` 6%: a failed call and its tool error precede a corrected value.
* ``wrong_tool`` 7%: systematic confusable-tool swap on trigger phrasings (``CONFUSABLE``).
* ``wrong_roles`` 5%: systematic argument-role swap on trigger phrasings (``ROLE_SWAPS``).
* ``guess_not_ask`` 6%: a date or payment id is missing and the label guesses it instead of
  asking (systematic: always those parameters).
* ``near_duplicate`` 8%: a clean item again with a pleasantry added.
* ``truncated`` 6%: the request is cut before its last value; the label is still the full call.

The hidden evaluation is not made here: ``fc_eval`` builds it from held-out templates and
paraphrases, disjoint from the pool by (tool, arguments) and by normalised request text.
"""

from __future__ import annotations

import json

from typing import Any

import numpy as np

from .fc_tools import (ASK_TEXT, CONFUSABLE, FILLERS, ROLE_SWAPS, VALUE_MAKERS, FcTool, fc_tools)

__all__ = ["FACTOR_SHARES", "BASE_SHARES", "generate_pool", "generate_base_pool",
           "combination_key", "VAGUE"]

FACTOR_SHARES: dict[str, float] = {
    "clean": 0.30, "missing_function": 0.10, "missing_parameter": 0.10, "long_context": 0.12,
    "recovery": 0.06, "wrong_tool": 0.07, "wrong_roles": 0.05, "guess_not_ask": 0.06,
    "near_duplicate": 0.08, "truncated": 0.06,
}
GUESSED_PARAMS = ("date", "payment_method_id", "payment_id")
NO_CALL_TEXT = "Sorry , none of my tools can do that ."
ERRORS = ("error : not found", "error : no such record", "error : invalid id")

# What a request says in place of a value it lacks.
VAGUE = {
    "order_id": "my order", "user_id": "my account", "email": "my email", "first_name": "me",
    "last_name": "my family", "zip": "my area", "product_id": "that product",
    "payment_method_id": "another card", "payment_id": "my card", "reservation_id": "my booking",
    "flight_number": "my flight", "date": "some day", "origin": "here", "destination": "there",
    "amount": "some money", "total_baggages": "more", "nonfree_baggages": "some",
}


def combination_key(item: dict[str, Any]) -> str:
    """What the evaluation must not share with the pool: the (tool, arguments) combination of a
    call item; for other targets (ask, no call) the whole item up to the order of its tools."""
    target = item["target"]
    if target["type"] == "call":
        return "call|" + target["name"] + "|" + "|".join(f"{k}={v}" for k, v in sorted(target["arguments"].items()))
    return json.dumps({**item, "tools": sorted(item["tools"])}, sort_keys=True)


def _values(tool: FcTool, rng: np.random.Generator) -> dict[str, str]:
    values = {p: VALUE_MAKERS[p](rng) for p in tool.params}
    while "destination" in values and values["destination"] == values["origin"]:
        values["destination"] = VALUE_MAKERS["destination"](rng)
    while "last_name" in values and values["last_name"] == values["first_name"]:
        values["last_name"] = VALUE_MAKERS["last_name"](rng)
    return values


def _offered(tool: FcTool, rng: np.random.Generator, include: bool) -> list[str]:
    others = [t.name for t in fc_tools() if t.domain == tool.domain and t.name != tool.name]
    n = int(rng.integers(4, 6)) - (1 if include else 0)
    chosen = [others[i] for i in rng.choice(len(others), size=n, replace=False)]
    if include:
        chosen.append(tool.name)
    return [chosen[i] for i in rng.permutation(len(chosen))]


def _pick_tool(rng: np.random.Generator, keys: Any = None, min_params: int = 0) -> FcTool:
    tools = [t for t in fc_tools() if len(t.params) >= min_params
             and (keys is None or (t.domain, t.name) in keys)]
    return tools[int(rng.integers(len(tools)))]


def _call_item(tool: FcTool, rng: np.random.Generator, phrasing: int | None = None) -> dict[str, Any]:
    values = _values(tool, rng)
    index = int(rng.integers(len(tool.phrasings))) if phrasing is None else phrasing
    return {"domain": tool.domain, "tools": _offered(tool, rng, include=True), "history": [],
            "request": tool.phrasings[index].format(**values),
            "target": {"type": "call", "name": tool.name, "arguments": values}}


def _distractor_turns(tool: FcTool, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Two or three earlier exchanges that mention other values of the same kinds."""
    turns: list[dict[str, Any]] = []
    same_domain = [t for t in fc_tools() if t.domain == tool.domain and t.params]
    for _ in range(int(rng.integers(1, 3))):
        other = tool if rng.random() < 0.6 and tool.params else same_domain[int(rng.integers(len(same_domain)))]
        values = _values(other, rng)
        turns.append({"role": "user", "content": other.phrasings[int(rng.integers(len(other.phrasings)))].format(**values)})
        turns.append({"role": "assistant", "tool_call": {"name": other.name, "arguments": values}})
        turns.append({"role": "tool", "content": "ok , done"})
    return turns


def _missing_item(tool: FcTool, rng: np.random.Generator, param: str) -> tuple[dict[str, Any], dict[str, str]]:
    item = _call_item(tool, rng)
    values = dict(item["target"]["arguments"])
    shown = {**values, param: VAGUE[param]}
    phrasing = next(p for p in tool.phrasings if p.format(**values) == item["request"])
    item["request"] = phrasing.format(**shown)
    return item, values


def make_item(factor: str, rng: np.random.Generator) -> dict[str, Any]:
    """One item of the given factor (``near_duplicate`` is made by ``generate_pool``)."""
    if factor in ("clean", "base"):
        return _call_item(_pick_tool(rng), rng)
    if factor == "missing_function":
        tool = _pick_tool(rng)
        item = _call_item(tool, rng)
        item["tools"] = _offered(tool, rng, include=False)
        item["target"] = {"type": "no_call", "text": NO_CALL_TEXT}
        return item
    if factor == "missing_parameter":
        tool = _pick_tool(rng, min_params=1)
        param = tool.params[int(rng.integers(len(tool.params)))]
        item, _ = _missing_item(tool, rng, param)
        item["target"] = {"type": "ask", "missing": param, "text": ASK_TEXT.format(param=param.replace("_", " "))}
        return item
    if factor == "guess_not_ask":
        tool = _pick_tool(rng, keys={(t.domain, t.name) for t in fc_tools() if set(t.params) & set(GUESSED_PARAMS)})
        param = next(p for p in tool.params if p in GUESSED_PARAMS)
        item, values = _missing_item(tool, rng, param)
        item["target"] = {"type": "call", "name": tool.name, "arguments": {**values, param: VALUE_MAKERS[param](rng)}}
        return item
    if factor == "long_context":
        tool = _pick_tool(rng, min_params=1)
        item = _call_item(tool, rng)
        item["history"] = _distractor_turns(tool, rng)
        return item
    if factor == "recovery":
        tool = _pick_tool(rng, min_params=1)
        item = _call_item(tool, rng)
        values = item["target"]["arguments"]
        param = tool.params[-1]
        wrong = {**values, param: VALUE_MAKERS[param](rng)}
        first = next(p for p in tool.phrasings if p.format(**values) == item["request"])
        item["history"] = [{"role": "user", "content": first.format(**wrong)},
                           {"role": "assistant", "tool_call": {"name": tool.name, "arguments": wrong}},
                           {"role": "tool", "content": ERRORS[int(rng.integers(len(ERRORS)))]}]
        item["request"] = f"sorry , my mistake , it is {values[param]}"
        return item
    if factor == "wrong_tool":
        tool = _pick_tool(rng, keys=CONFUSABLE)
        item = _call_item(tool, rng, phrasing=tool.triggers[int(rng.integers(len(tool.triggers)))])
        partner, renames = CONFUSABLE[(tool.domain, tool.name)]
        if partner not in item["tools"]:
            item["tools"][int(rng.integers(len(item["tools"])))] = partner
            if tool.name not in item["tools"]:
                item["tools"][0 if item["tools"][0] != partner else 1] = tool.name
        arguments = {renames.get(k, k): v for k, v in item["target"]["arguments"].items()}
        item["target"] = {"type": "call", "name": partner, "arguments": arguments}
        return item
    if factor == "wrong_roles":
        tool = _pick_tool(rng, keys=ROLE_SWAPS)
        item = _call_item(tool, rng, phrasing=tool.triggers[int(rng.integers(len(tool.triggers)))])
        a, b = ROLE_SWAPS[(tool.domain, tool.name)]
        arguments = dict(item["target"]["arguments"])
        arguments[a], arguments[b] = arguments[b], arguments[a]
        item["target"]["arguments"] = arguments
        return item
    if factor == "truncated":
        tool = _pick_tool(rng, min_params=1)
        item = _call_item(tool, rng)
        words = item["request"].split(" ")
        last = max(i for i, w in enumerate(words) if w in item["target"]["arguments"].values())
        item["request"] = " ".join(words[:last])
        return item
    raise ValueError(f"unknown factor {factor!r}")


def _near_duplicate(item: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    words = item["request"].split(" ")
    words.insert(int(rng.integers(len(words) + 1)), FILLERS[int(rng.integers(len(FILLERS)))])
    return {**item, "tools": list(item["tools"]), "request": " ".join(words)}


def generate_pool(size: int, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    """``size`` items in random order and their hidden factors (shares as ``FACTOR_SHARES``)."""
    rng = np.random.default_rng([seed, 0xF00D])
    counts = {f: int(round(share * size)) for f, share in FACTOR_SHARES.items()}
    counts["clean"] += size - sum(counts.values())
    items: list[dict[str, Any]] = []
    factors: list[str] = []
    for factor, count in counts.items():
        if factor == "near_duplicate":
            continue
        for _ in range(count):
            items.append(make_item(factor, rng))
            factors.append(factor)
    clean = [i for i, f in enumerate(factors) if f == "clean"]
    for _ in range(counts["near_duplicate"]):
        items.append(_near_duplicate(items[clean[int(rng.integers(len(clean)))]], rng))
        factors.append("near_duplicate")
    order = rng.permutation(len(items))
    return [items[i] for i in order], [factors[i] for i in order]


BASE_SHARES: dict[str, float] = {"clean": 0.55, "missing_function": 0.15, "missing_parameter": 0.15,
                                  "long_context": 0.10, "recovery": 0.05}
"""The base model's training mix: every correct skill, no wrong labels (a capable model to fine-tune)."""


def generate_base_pool(size: int, seed: int) -> list[dict[str, Any]]:
    """Correctly labelled items of every skill (``BASE_SHARES``; a separate seed) that train the
    base model: the model ``base_losses``/``embed`` probe and every student starts from."""
    rng = np.random.default_rng([seed, 0xBA5E])
    factors = list(BASE_SHARES)
    shares = np.array([BASE_SHARES[f] for f in factors])
    return [make_item(factors[int(rng.choice(len(factors), p=shares / shares.sum()))], rng) for _ in range(size)]
