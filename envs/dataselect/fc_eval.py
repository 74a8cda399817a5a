"""The function-calling track's hidden evaluation: held-out request templates and paraphrases.

The pool (and the base model's pool) phrase every request with the templates of ``fc_tools``;
the evaluation never uses them. It phrases requests with its own templates (``HELD_OUT``, two
per tool, none equal to a pool template) and paraphrases them (a lead-in or a tail from
``LEAD_INS`` / ``TAILS``), so a student is scored on request sentences it has not seen in any
form. The words that stand in for a missing value are the track's lexicon (``fc_pool.VAGUE``,
like the value shapes), not a template. Values come from the same value
makers (ids are embedded by shape, never memorised).

Disjointness from the pool is checked twice for every evaluation item: its (tool, arguments)
combination (``fc_pool.combination_key``) and its normalised request text (``normalise``:
lower case, punctuation and pleasantries dropped, spaces collapsed) must occur nowhere in the
pool; an item that collides is drawn again.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .fc_pool import NO_CALL_TEXT, VAGUE, _distractor_turns, _offered, _pick_tool, _values, combination_key
from .fc_tools import ASK_TEXT, FILLERS, FcTool, fc_tools

__all__ = ["HELD_OUT", "LEAD_INS", "TAILS", "EVAL_CATEGORIES", "normalise", "generate_eval"]

EVAL_CATEGORIES = ("base", "missing_function", "missing_parameter", "long_context")

HELD_OUT: dict[tuple[str, str], tuple[str, ...]] = {
    ("retail", "find_user_id_by_email"): (
        "what account id goes with the email {email}",
        "i registered with {email} but lost my user id"),
    ("retail", "find_user_id_by_name_zip"): (
        "locate the customer {first_name} {last_name} whose zip is {zip}",
        "account lookup : {first_name} {last_name} , zip {zip}"),
    ("retail", "get_user_details"): (
        "give me everything on file for user {user_id}",
        "fetch the customer record {user_id}"),
    ("retail", "get_order_details"): (
        "has order {order_id} shipped yet",
        "i want the details of my order {order_id}"),
    ("retail", "get_product_details"): (
        "what sizes and colors does product {product_id} have",
        "describe the item {product_id} for me"),
    ("retail", "modify_pending_order_payment"): (
        "for order {order_id} please bill {payment_method_id} instead",
        "move the payment of {order_id} over to {payment_method_id}"),
    ("retail", "list_product_types"): (
        "what product types are in your catalogue",
        "tell me the categories of products you carry"),
    ("airline", "get_user_details"): (
        "open the traveller profile {user_id}",
        "what does my account {user_id} look like"),
    ("airline", "get_reservation_details"): (
        "pull up booking {reservation_id}",
        "i need the details of reservation {reservation_id}"),
    ("airline", "search_direct_flight"): (
        "any nonstop flight from {origin} to {destination} on {date}",
        "i want to fly direct from {origin} to {destination} , date {date}"),
    ("airline", "search_onestop_flight"): (
        "flights from {origin} to {destination} with one connection on {date}",
        "a one stop trip from {origin} to {destination} on {date} is fine"),
    ("airline", "get_flight_status"): (
        "is flight {flight_number} on schedule for {date}",
        "status check : {flight_number} , {date}"),
    ("airline", "list_all_airports"): (
        "what airports are in your network",
        "which airport codes can i book"),
    ("airline", "send_certificate"): (
        "please issue {amount} as a certificate to {user_id} for booking {reservation_id}",
        "{user_id} should get a {amount} voucher for reservation {reservation_id}"),
    ("airline", "update_reservation_baggages"): (
        "for {reservation_id} i have {total_baggages} bags and {nonfree_baggages} are paid , use {payment_id}",
        "bags on {reservation_id} : {total_baggages} total , {nonfree_baggages} paid , pay by {payment_id}"),
}
LEAD_INS = ("", "", "hey there ,", "good morning ,", "quick question :", "excuse me ,")
TAILS = ("", "", ", thank you", ", appreciate it", ", if possible")
_PUNCTUATION = re.compile(r"[^\w@#.\- ]")


def normalise(text: str) -> str:
    """A request's text for the disjointness check: lower case, no punctuation or pleasantries."""
    words = _PUNCTUATION.sub(" ", text.lower()).split()
    return " ".join(w for w in words if w not in FILLERS)


def _request(tool: FcTool, values: dict[str, str], rng: np.random.Generator) -> str:
    template = HELD_OUT[(tool.domain, tool.name)][int(rng.integers(2))]
    lead, tail = LEAD_INS[int(rng.integers(len(LEAD_INS)))], TAILS[int(rng.integers(len(TAILS)))]
    return " ".join(p for p in (lead, template.format(**values), tail) if p)


def _held_out_turns(tool: FcTool, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Distractor history (as the pool's long-context items) phrased with held-out templates."""
    turns = _distractor_turns(tool, rng)
    for i in range(0, len(turns), 3):
        call = turns[i + 1]["tool_call"]
        other = next(t for t in fc_tools() if t.name == call["name"] and t.domain == tool.domain)
        turns[i] = {"role": "user", "content": _request(other, call["arguments"], rng)}
    return turns


def _make(category: str, rng: np.random.Generator) -> dict[str, Any]:
    tool = _pick_tool(rng, min_params=1 if category in ("missing_parameter", "long_context") else 0)
    values = _values(tool, rng)
    item: dict[str, Any] = {"domain": tool.domain, "tools": _offered(tool, rng, include=category != "missing_function"),
                            "history": [], "request": _request(tool, values, rng),
                            "target": {"type": "call", "name": tool.name, "arguments": values}}
    if category == "missing_function":
        item["target"] = {"type": "no_call", "text": NO_CALL_TEXT}
    elif category == "missing_parameter":
        param = tool.params[int(rng.integers(len(tool.params)))]
        item["request"] = " ".join(VAGUE[param] if w == values[param] else w for w in item["request"].split())
        item["target"] = {"type": "ask", "missing": param, "text": ASK_TEXT.format(param=param.replace("_", " "))}
    elif category == "long_context":
        item["history"] = _held_out_turns(tool, rng)
    return item


def generate_eval(per_category: int, seed: int, pool: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``per_category`` held-out items per category, disjoint from ``pool`` by combination and text."""
    rng = np.random.default_rng([seed, 0xE7A2])
    taken = {combination_key(item) for item in pool}
    texts = {normalise(item["request"]) for item in pool}
    items: list[dict[str, Any]] = []
    categories: list[str] = []
    for category in EVAL_CATEGORIES:
        made = 0
        while made < per_category:
            item = _make(category, rng)
            key, text = combination_key(item), normalise(item["request"])
            if key in taken or text in texts:
                continue
            taken.add(key)
            texts.add(text)
            items.append(item)
            categories.append(category)
            made += 1
    return items, categories
