"""Task templates where the policy decides: cancellations, compensation, and requests it refuses."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np

from ...domain import TaskDraft
from .data_model import NOW
from .drafting import CABIN_WORDS, Snapshot, act, draft, money, permuted, replay_gold, spoken_date
from .templates_changes import alternatives, lookups

_REASON_WORDS = {"change_of_plan": "My plans changed, I no longer need this trip.",
                 "airline_cancelled_flight": "You cancelled my flight, so the trip no longer works for me.",
                 "health": "I'm ill and my doctor told me not to travel.",
                 "weather": "A severe storm is forecast at my destination, so I can't go.",
                 "other": "Something else came up."}


def _recent(res: dict[str, Any]) -> bool:
    return datetime.fromisoformat(NOW) - datetime.fromisoformat(res["created_at"]) <= timedelta(hours=24)


def _disruption(res: dict[str, Any]) -> dict[str, Any] | None:
    """The reservation's first cancelled flight, else its first delayed one, else None."""
    for status in ("cancelled", "delayed"):
        for leg in res["flights"]:
            if leg["status"] == status:
                return leg
    return None


def _compensable(snap: Snapshot, res: dict[str, Any]) -> bool:
    user = snap.users[res["user_id"]]
    return user["membership"] != "regular" or res["insurance"] == "yes" or res["cabin"] == "business"


def _certificate_dollars(res: dict[str, Any], leg: dict[str, Any]) -> int:
    return (100 if leg["status"] == "cancelled" else 50) * res["pax"]


def _cancel_grounds(res: dict[str, Any]) -> str | None:
    """Which cancellation rule applies (checked in this order), or None when none does."""
    if any(leg["status"] == "cancelled" for leg in res["flights"]):
        return "airline_cancelled_flight"
    if _recent(res):
        return "recent"
    if res["cabin"] == "business":
        return "business"
    if res["insurance"] == "yes":
        return "insurance"
    return None


def cancel_eligible(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """Cancel a reservation that one of the four rules allows, in turn, and report the refund."""
    pools: dict[str, list[dict[str, Any]]] = {grounds: [] for grounds in
                                              ("airline_cancelled_flight", "recent", "business", "insurance")}
    for res in permuted(rng, snap.open_reservations()):
        grounds = _cancel_grounds(res)
        if grounds is not None:
            pools[grounds].append(res)
    drafts: list[TaskDraft] = []
    while len(drafts) < count and any(pools.values()):
        for grounds, pool in pools.items():
            if not pool or len(drafts) == count:
                continue
            res = pool.pop(0)
            user = snap.users[res["user_id"]]
            reason = {"recent": "change_of_plan", "business": "change_of_plan",
                      "insurance": str(rng.choice(["health", "weather"]))}.get(grounds, grounds)
            gold = lookups(user["user_id"], res["reservation_id"]) + [
                act("cancel_reservation", reservation_id=res["reservation_id"], reason=reason)]
            refund = replay_gold(snap.db, gold)[-1]["refund_total"]
            request = (f"Hi, my user id is {user['user_id']}. Please cancel my reservation {res['reservation_id']} "
                       f"from {res['origin']} to {res['destination']}. How much will I get back?")
            name = "cancel_airline_cancelled" if grounds == "airline_cancelled_flight" else f"cancel_{grounds}"
            drafts.append(draft(name, user, request, f"Cancel {res['reservation_id']} and learn the refund.",
                                {"reason": _REASON_WORDS[reason]}, gold, (money(refund),)))
    return drafts


def compensation(snap: Snapshot, rng: np.random.Generator, count: int, cancel_too: bool = False) -> list[TaskDraft]:
    """An eligible user asks for compensation for a disrupted flight (and, with ``cancel_too``, cancels)."""
    drafts: list[TaskDraft] = []
    for res in permuted(rng, snap.open_reservations()):
        if len(drafts) == count:
            break
        leg = _disruption(res)
        if leg is None or not _compensable(snap, res) or (cancel_too and leg["status"] != "cancelled"):
            continue
        user = snap.users[res["user_id"]]
        amount = _certificate_dollars(res, leg)
        gold = lookups(user["user_id"], res["reservation_id"])
        request = (f"Hi, user id {user['user_id']}. My flight {leg['flight_number']} on {spoken_date(leg['date'])} "
                   f"(reservation {res['reservation_id']}) was {leg['status']}. ")
        if cancel_too:
            gold.append(act("cancel_reservation", reservation_id=res["reservation_id"],
                            reason="airline_cancelled_flight"))
            request += "Please cancel the whole reservation and refund me, and I also expect compensation."
        else:
            request += "This really messed up my plans. Is there any compensation you can give me?"
        gold.append(act("send_certificate", user_id=user["user_id"], reservation_id=res["reservation_id"],
                        amount=float(amount)))
        results = replay_gold(snap.db, gold)
        required = (money(results[-2]["refund_total"]),) if cancel_too else ()
        drafts.append(draft("cancel_and_compensate" if cancel_too else "compensation", user, request,
                            f"{'Cancel the reservation and get' if cancel_too else 'Get'} the compensation for the "
                            f"{leg['status']} flight {leg['flight_number']}.",
                            {"reason": _REASON_WORDS["airline_cancelled_flight"]} if cancel_too else {}, gold,
                            required + (money(results[-1]["amount"]),)))
    return drafts


def refuse_change_basic_economy(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """Move a basic economy flight to another date: the policy forbids it."""
    drafts: list[TaskDraft] = []
    for res in permuted(rng, snap.open_reservations()):
        if len(drafts) == count:
            break
        leg = res["flights"][0]
        if res["cabin"] != "basic_economy" or _disruption(res) is not None:
            continue
        options = alternatives(snap, leg, "basic_economy", res["pax"], "2024-05-15")
        if not options:
            continue
        flight_number, day = options[int(rng.integers(len(options)))]
        user = snap.users[res["user_id"]]
        request = (f"Hi, my user id is {user['user_id']}. I need to switch flight {leg['flight_number']} on "
                   f"{spoken_date(leg['date'])} in reservation {res['reservation_id']} to flight {flight_number} on "
                   f"{spoken_date(day)}. I'll pay any difference.")
        drafts.append(draft("refuse_change_basic_economy", user, request,
                            f"Move {leg['flight_number']} to {flight_number} on {day} (basic economy: refused).",
                            {"cabin": "I don't want to change the cabin, just the flight."},
                            lookups(user["user_id"], res["reservation_id"]), must_refuse=True))
    return drafts


def refuse_cancel(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """Cancel for a change of plans a reservation that no cancellation rule covers."""
    drafts: list[TaskDraft] = []
    for res in permuted(rng, snap.open_reservations()):
        if len(drafts) == count:
            break
        if _cancel_grounds(res) not in (None, "insurance"):
            continue
        user = snap.users[res["user_id"]]
        request = (f"Hello, user id {user['user_id']}. I want to cancel reservation {res['reservation_id']} "
                   f"({CABIN_WORDS[res['cabin']]}, {res['origin']} to {res['destination']}) and get my money back.")
        drafts.append(draft("refuse_cancel", user, request,
                            f"Cancel {res['reservation_id']} for a change of plans (not allowed: refused).",
                            {"reason": _REASON_WORDS["change_of_plan"]},
                            lookups(user["user_id"], res["reservation_id"]), must_refuse=True))
    return drafts


def refuse_compensation(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """A regular member without insurance or business cabin asks for compensation: not eligible."""
    drafts: list[TaskDraft] = []
    for res in permuted(rng, [r for r in snap.reservations if r["status"] == "active"]):
        if len(drafts) == count:
            break
        leg = _disruption(res)
        if leg is None or _compensable(snap, res):
            continue
        user = snap.users[res["user_id"]]
        request = (f"Hi, user id {user['user_id']}. My flight {leg['flight_number']} on {spoken_date(leg['date'])} "
                   f"(reservation {res['reservation_id']}) was {leg['status']}. I want compensation for this; "
                   "I don't want to change or cancel anything.")
        drafts.append(draft("refuse_compensation", user, request,
                            f"Get compensation for {leg['flight_number']} (not eligible: refused).", {},
                            lookups(user["user_id"], res["reservation_id"]), must_refuse=True))
    return drafts
