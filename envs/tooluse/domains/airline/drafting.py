"""What every airline task template needs: a read-only snapshot of the database, phrasing helpers,
and a gold replay on a scratch copy whose results supply the facts the agent must report.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from ...domain import TaskDraft, copy_db
from ...toolkit import call_tool
from .data_model import NOW
from .rules import cabin_seats
from .tools import TOOLS, get_reservation_details, get_user_details

CABIN_WORDS = {"basic_economy": "basic economy", "economy": "economy", "business": "business"}
_BY_NAME = {t.name: t for t in TOOLS}


@dataclass(frozen=True)
class Snapshot:
    """The database as the task templates see it, rows in a fixed order.

    Attributes:
        db: The connection (never written: gold actions replay on copies).
        users: ``get_user_details`` of every user, by user id, in rowid order.
        reservations: ``get_reservation_details`` of every reservation, in rowid order, plus
            ``pax`` (passenger count) and ``departed`` (a flight left before ``NOW``).
    """

    db: sqlite3.Connection
    users: dict[str, dict[str, Any]]
    reservations: list[dict[str, Any]]

    @classmethod
    def of(cls, db: sqlite3.Connection) -> Snapshot:
        users = {uid: get_user_details.fn(db, uid) for (uid,) in db.execute("SELECT user_id FROM users ORDER BY rowid")}
        reservations = []
        for (rid,) in db.execute("SELECT reservation_id FROM reservations ORDER BY rowid"):
            details = get_reservation_details.fn(db, rid)
            details["pax"] = len(details["passengers"])
            details["departed"] = any(f"{leg['date']} {leg['departure_time']}:00" <= NOW for leg in details["flights"])
            reservations.append(details)
        return cls(db, users, reservations)

    def open_reservations(self) -> list[dict[str, Any]]:
        """Active reservations none of whose flights has departed: the ones that can change."""
        return [r for r in self.reservations if r["status"] == "active" and not r["departed"]]

    def cabin(self, flight_number: str, day: str, cabin: str) -> tuple[int, int]:
        """(seats available, price in whole dollars)."""
        seats, cents = cabin_seats(self.db, flight_number, day, cabin)
        return seats, cents // 100


def act(tool_name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool_name, "arguments": arguments}


def replay_gold(db: sqlite3.Connection, gold: list[dict[str, Any]]) -> list[Any]:
    """Results of the gold actions on a scratch copy; a failure is a generator bug, so it raises."""
    scratch = copy_db(db)
    results = []
    for action in gold:
        result, error = call_tool(_BY_NAME[action["tool"]], scratch, action["arguments"])
        if error is not None:
            raise RuntimeError(f"gold action {action} failed while drafting: {error}")
        results.append(result)
    return results


def money(amount: float) -> str:
    """An amount as the agent would write it: '412' for whole dollars, '412.50' otherwise."""
    return str(int(amount)) if float(amount).is_integer() else f"{amount:.2f}"


def spoken_date(day: str) -> str:
    value = date.fromisoformat(day)
    return f"{value:%B} {value.day}, {value.year}"


def identity(user: dict[str, Any]) -> dict[str, str]:
    return {"user_id": user["user_id"], "name": f"{user['first_name']} {user['last_name']}", "email": user["email"]}


def pay_phrase(user: dict[str, Any], payment_id: str) -> str:
    method = user["payment_methods"][payment_id]
    if method["kind"] == "credit_card":
        return f"my {method['label']} ({payment_id})"
    return f"my {method['label']} {payment_id}"


def choose_payment(rng: np.random.Generator, user: dict[str, Any], amount: float) -> str:
    """A credit card, or (half the time, when one covers ``amount``) a gift card."""
    methods = user["payment_methods"]
    gift = [p for p, m in methods.items() if m["kind"] == "gift_card" and m["balance"] >= amount]
    cards = [p for p, m in methods.items() if m["kind"] == "credit_card"]
    if gift and rng.random() < 0.5:
        return gift[int(rng.integers(len(gift)))]
    return cards[int(rng.integers(len(cards)))]


_CONFIRMATIONS = {"confirm": "Yes, please go ahead.", "proceed": "Yes, please."}
# When the policy refuses, questions that invite a yes get the user insisting on the request instead.
_INSIST = "I'd really like you to do exactly what I asked, please."
_INSISTING = dict.fromkeys(("confirm", "proceed", "instead", "shall i", "should i", "would you like", "go ahead"),
                           _INSIST)


def draft(template: str, user: dict[str, Any], request: str, intent: str, answers: dict[str, str],
          gold: list[dict[str, Any]], required: tuple[str, ...] = (), must_refuse: bool = False) -> TaskDraft:
    """A task draft; ``answers`` are keyed by a word the agent's question would contain.

    A scripted user replies with the first answer whose keyword the question contains, so the
    confirmations come first: an agent asking for confirmation restates the details ("2 bags on
    your Visa, 100 dollars: shall I proceed?"), which would otherwise match a specific keyword.
    """
    first = _INSISTING if must_refuse else _CONFIRMATIONS
    instructions = {"request": request, "identity": identity(user), "intent": intent,
                    "answers": {**first, **answers}}
    return TaskDraft(template, instructions, tuple(gold), required, must_refuse)


def permuted(rng: np.random.Generator, items: list[Any]) -> list[Any]:
    return [items[int(i)] for i in rng.permutation(len(items))]
