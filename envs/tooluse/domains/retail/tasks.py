"""The retail task catalogue: a fixed controlled mix, then rounds of every template.

``generate_tasks`` walks the database's orders and users in one seeded random order and hands
each template the next order that fits it, so no order serves two tasks. A task is the user's
authentication (email, or name and zip) plus one request, or two for multi-intent tasks.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Iterator

import numpy as np

from ...domain import TaskDraft
from .task_parts import BUILDERS, Lookup, Part, call

__all__ = ["generate_tasks", "CONTROLLED_MIX", "REST_MIX", "ROUNDS", "MULTI_PAIRS"]

# The controlled split: 8 cancels, 6 returns, 4 address/payment changes, 4 exchanges or item
# modifications, 3 refusals, interleaved. Renaming tools moves a known share of these.
CONTROLLED_MIX = (
    "cancel", "return", "modify_order_address", "cancel", "exchange", "return", "refuse_cancel",
    "cancel", "modify_order_payment", "return_to_gift_card", "modify_order_items", "cancel", "refuse_return",
    "return", "cancel", "exchange", "modify_order_address", "cancel", "return", "refuse_foreign_refund",
    "modify_order_items", "cancel", "modify_order_payment", "return_to_gift_card", "cancel",
)
REST_MIX = (
    "cancel", "return", "exchange", "modify_order_items", "modify_order_address", "modify_order_payment",
    "modify_user_address", "refuse_cancel", "refuse_return", "refuse_other_product", "refuse_foreign_refund",
    "refuse_gift_balance", "multi", "cancel", "return", "multi",
)
ROUNDS = 9
MULTI_PAIRS = (
    ("cancel", "return"), ("modify_order_address", "modify_user_address"), ("return", "exchange"),
    ("modify_order_payment", "cancel"), ("exchange", "modify_order_items"), ("modify_user_address", "return"),
)
_GREETINGS = ("Hi!", "Hello.", "Hi there.", "Good afternoon.")
_ORDERLESS = {"modify_user_address"}


class _Generator:
    """The state of one generation: orders already used, and the walk orders."""

    def __init__(self, db: sqlite3.Connection, rng: np.random.Generator):
        self.rng = rng
        self.lookup = Lookup(db)
        order_ids = [r[0] for r in db.execute("SELECT order_id FROM orders ORDER BY id")]
        self.order_ids = [order_ids[int(i)] for i in rng.permutation(len(order_ids))]
        user_ids = [r[0] for r in db.execute("SELECT user_id FROM users ORDER BY id")]
        self.user_ids = [user_ids[int(i)] for i in rng.permutation(len(user_ids))]
        self.used: set[str] = set()  # order ids, and user ids whose profile a task already changes
        self.multi_count = 0

    def _fresh_orders(self, order_ids: list[str]) -> Iterator[dict[str, Any]]:
        return (self.lookup.order(o) for o in order_ids if o not in self.used)

    def single(self, name: str) -> tuple[dict[str, Any], list[Part]]:
        build = BUILDERS[name]
        if name in _ORDERLESS:
            user_id = next(u for u in self.user_ids if u not in self.used)
            self.used.add(user_id)
            user = self.lookup.user(user_id)
            part = build(self.lookup, None, user, self.rng)
            assert part is not None  # order-less builders always fit
            return user, [part]
        for order in self._fresh_orders(self.order_ids):
            user = self.lookup.user(order["user_id"])
            part = build(self.lookup, order, user, self.rng)
            if part is not None:
                self.used.add(order["order_id"])
                return user, [part]
        raise RuntimeError(f"retail task generation: no order left for template {name!r}")

    def multi(self) -> tuple[dict[str, Any], list[Part]]:
        names = MULTI_PAIRS[self.multi_count % len(MULTI_PAIRS)]
        self.multi_count += 1
        for user_id in self.user_ids:
            if user_id in self.used:
                continue
            user = self.lookup.user(user_id)
            parts: list[Part] = []
            taken: list[str] = []
            for name in names:
                if name in _ORDERLESS:
                    orderless = BUILDERS[name](self.lookup, None, user, self.rng)
                    assert orderless is not None  # order-less builders always fit
                    parts.append(orderless)
                    continue
                candidates = [o for o in user["orders"] if o not in taken]
                part = next((p for p in (BUILDERS[name](self.lookup, order, user, self.rng)
                                         for order in self._fresh_orders(candidates)) if p is not None), None)
                if part is None:
                    break
                taken.append(part.actions[0]["arguments"]["order_id"])  # every order part reads its order first
                parts.append(part)
            else:
                self.used.update(taken)
                if any(name in _ORDERLESS for name in names):
                    self.used.add(user_id)
                return user, parts
        raise RuntimeError(f"retail task generation: no user left for the pair {names}")

    def draft(self, user: dict[str, Any], parts: list[Part]) -> TaskDraft:
        name, email = user["name"], user["email"]
        zip_code = user["address"]["zip"]
        by_email = self.rng.random() < 0.5
        if by_email:
            who, lookup = f"My email is {email}.", call("find_user_id_by_email", email=email)
        else:
            who = f"I'm {name['first_name']} {name['last_name']}, zip code {zip_code}."
            lookup = call("find_user_id_by_name_zip", first_name=name["first_name"], last_name=name["last_name"],
                          zip=zip_code)
        greeting = _GREETINGS[int(self.rng.integers(len(_GREETINGS)))]
        if len(parts) == 1:
            request = f"{greeting} {who} {parts[0].ask}"
        else:
            request = f"{greeting} {who} I have two requests. First, {parts[0].ask} Second, {parts[1].ask}"
        order_ids = [a["arguments"]["order_id"] for p in parts for a in p.actions[:1] if "order_id" in a["arguments"]]
        # A scripted user answers with the first entry whose keyword the question contains. So
        # confirmations come first (they restate details: "the refund of 54.20 to your Visa: shall
        # I proceed?"), then the request's specifics, and last "order" and "name", which appear in
        # most questions.
        answers = {"confirm": "Yes, please go ahead.", "proceed": "Yes, please."}
        for part in parts:
            for key, reply in part.answers.items():
                # Two parts can both expect a question about payment: the user answers for both.
                answers[key] = reply if key not in answers or len(parts) == 1 else f"{answers[key]} {reply}"
        answers |= {"email": email, "zip": zip_code, "order": " and ".join(order_ids),
                    "name": f"{name['first_name']} {name['last_name']}"}
        actions: list[dict[str, Any]] = [lookup]
        for part in parts:
            actions.extend(a for a in part.actions if a not in actions)  # a read needed once is called once
        return TaskDraft(
            template=parts[0].template if len(parts) == 1 else "multi_intent",
            instructions={"request": request,
                          "identity": {"email": email, "first_name": name["first_name"],
                                       "last_name": name["last_name"], "zip": zip_code},
                          "intent": "; ".join(p.intent for p in parts), "answers": answers},
            gold_actions=tuple(actions),
            required_outputs=tuple(o for p in parts for o in p.outputs),
            must_refuse=any(p.must_refuse for p in parts))


def generate_tasks(db: sqlite3.Connection, seed: int) -> list[TaskDraft]:
    """Retail task drafts: the 25 of ``CONTROLLED_MIX`` first, then ``ROUNDS`` rounds of ``REST_MIX``.

    Args:
        db: The database of ``domain.DB_SEED`` (only read).
        seed: Seed of the Generator behind every choice (orders, items, wording).
    """
    generator = _Generator(db, np.random.default_rng(seed))
    drafts = []
    for name in CONTROLLED_MIX + REST_MIX * ROUNDS:
        user, parts = generator.multi() if name == "multi" else generator.single(name)
        drafts.append(generator.draft(user, parts))
    return drafts
