"""Task templates that change an existing reservation: flights, cabin, baggage, passengers."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...domain import TaskDraft
from .data_model import BAG_FEE_CENTS, CABINS, FREE_BAGS
from .drafting import (CABIN_WORDS, Snapshot, act, choose_payment, draft, money, pay_phrase, permuted, replay_gold,
                       spoken_date)

_LOOKUPS = ("get_user_details", "get_reservation_details")


def lookups(user_id: str, reservation_id: str) -> list[dict[str, Any]]:
    return [act(_LOOKUPS[0], user_id=user_id), act(_LOOKUPS[1], reservation_id=reservation_id)]


def _flights(reservation: dict[str, Any]) -> list[dict[str, str]]:
    return [{"flight_number": leg["flight_number"], "date": leg["date"]} for leg in reservation["flights"]]


def alternatives(snap: Snapshot, leg: dict[str, Any], cabin: str, pax: int, after: str) -> list[tuple[str, str]]:
    """Other bookable (flight number, date) on the leg's route after ``after`` with seats in ``cabin``."""
    rows = snap.db.execute(
        "SELECT f.flight_number, d.date FROM flights f JOIN flight_dates d USING (flight_number) "
        f"WHERE f.origin = ? AND f.destination = ? AND d.status = 'available' AND d.date > ? AND d.{cabin}_seats >= ? "
        "ORDER BY d.date, f.flight_number", (leg["origin"], leg["destination"], after, pax)).fetchall()
    return [(fn, day) for fn, day in rows if (fn, day) != (leg["flight_number"], leg["date"])]


def change_flight(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """Move a one-way flight, or a round trip's return, to another date or flight in the same cabin."""
    drafts: list[TaskDraft] = []
    for res in permuted(rng, snap.open_reservations()):
        if len(drafts) == count:
            break
        if res["cabin"] == "basic_economy" or len(res["flights"]) != (1 if res["flight_type"] == "one_way" else 2):
            continue
        leg = res["flights"][-1]
        after = res["flights"][0]["date"] if res["flight_type"] == "round_trip" else "2024-05-15"
        options = alternatives(snap, leg, res["cabin"], res["pax"], after)
        if not options or leg["status"] == "cancelled":
            continue
        flight_number, day = options[int(rng.integers(len(options)))]
        user = snap.users[res["user_id"]]
        difference = (snap.cabin(flight_number, day, res["cabin"])[1] - leg["price"]) * res["pax"]
        payment = choose_payment(rng, user, max(difference, 0))
        flights = _flights(res)
        flights[-1] = {"flight_number": flight_number, "date": day}
        gold = lookups(user["user_id"], res["reservation_id"]) + [
            act("search_direct_flight", origin=leg["origin"], destination=leg["destination"], date=day),
            act("update_reservation_flights", reservation_id=res["reservation_id"], cabin=res["cabin"],
                flights=flights, payment_id=payment)]
        changed = replay_gold(snap.db, gold)[-1]
        same = flight_number == leg["flight_number"]
        target = f"the same flight {flight_number}" if same else f"flight {flight_number}"
        which = "my return flight" if res["flight_type"] == "round_trip" else "my flight"
        request = (f"Hello, user id {user['user_id']} here. On reservation {res['reservation_id']} I need to move "
                   f"{which} {leg['flight_number']} on {spoken_date(leg['date'])} to {target} on {spoken_date(day)}, "
                   f"same cabin. How much will that cost?")
        required = (money(abs(changed["price_difference"])),) if changed["price_difference"] else ()
        drafts.append(draft("change_flight", user, request,
                            f"Move {leg['flight_number']} on {leg['date']} to {flight_number} on {day}.",
                            {"payment": f"Use {pay_phrase(user, payment)}.",
                             "cabin": f"Keep {CABIN_WORDS[res['cabin']]}."}, gold, required))
    return drafts


def _upgrade(snap: Snapshot, rng: np.random.Generator, res: dict[str, Any]) -> tuple[str, int] | None:
    """A higher cabin with seats on every flight, and the fare difference in dollars; None if there is none."""
    if res["cabin"] == "business" or any(leg["status"] not in ("available", "delayed") for leg in res["flights"]):
        return None
    higher = [c for c in CABINS[CABINS.index(res["cabin"]) + 1:]
              if all(snap.cabin(leg["flight_number"], leg["date"], c)[0] >= res["pax"] for leg in res["flights"])]
    if not higher:
        return None
    cabin = higher[int(rng.integers(len(higher)))]
    fares = sum(snap.cabin(leg["flight_number"], leg["date"], cabin)[1] - leg["price"] for leg in res["flights"])
    return cabin, int(fares * res["pax"])


def _searches(res: dict[str, Any]) -> list[dict[str, Any]]:
    seen = dict.fromkeys((leg["origin"], leg["destination"], leg["date"]) for leg in res["flights"])
    return [act("search_direct_flight", origin=o, destination=d, date=day) for o, d, day in seen]


def _bag_fee(user: dict[str, Any], res: dict[str, Any], cabin: str, added: int) -> tuple[int, int, int]:
    """(new total, new non-free count, fee in dollars) after adding ``added`` bags."""
    total = res["total_baggages"] + added
    nonfree = max(res["nonfree_baggages"], total - FREE_BAGS[(user["membership"], cabin)] * res["pax"])
    return total, nonfree, (nonfree - res["nonfree_baggages"]) * BAG_FEE_CENTS // 100


def upgrade_cabin(snap: Snapshot, rng: np.random.Generator, count: int, with_bags: bool = False) -> list[TaskDraft]:
    """Upgrade every flight of a reservation to a higher cabin (optionally also adding bags)."""
    drafts: list[TaskDraft] = []
    for res in permuted(rng, snap.open_reservations()):
        if len(drafts) == count:
            break
        upgrade = _upgrade(snap, rng, res)
        if upgrade is None:
            continue
        cabin, difference = upgrade
        user = snap.users[res["user_id"]]
        added = int(rng.integers(1, 3))
        total, nonfree, fee = _bag_fee(user, res, cabin, added)
        payment = choose_payment(rng, user, difference + (fee if with_bags else 0))
        gold = lookups(user["user_id"], res["reservation_id"]) + _searches(res) + [
            act("update_reservation_flights", reservation_id=res["reservation_id"], cabin=cabin,
                flights=_flights(res), payment_id=payment)]
        request = (f"Hi, I'm {user['first_name']} {user['last_name']} (user id {user['user_id']}). I'd like to "
                   f"upgrade reservation {res['reservation_id']} from {CABIN_WORDS[res['cabin']]} to "
                   f"{CABIN_WORDS[cabin]} on all flights. What is the price difference?")
        intent = f"Upgrade {res['reservation_id']} to {cabin}."
        if with_bags:
            gold.append(act("update_reservation_baggages", reservation_id=res["reservation_id"],
                            total_baggages=total, nonfree_baggages=nonfree, payment_id=payment))
            request += f" After that, please also add {added} checked bag{'s' if added > 1 else ''}."
            intent += f" Then add {added} bag(s)."
        results = replay_gold(snap.db, gold)
        required = tuple(money(r[key]) for r, key in ((results[-2 if with_bags else -1], "price_difference"),
                                                       (results[-1], "charge")) if r.get(key))
        drafts.append(draft("upgrade_and_bags" if with_bags else "upgrade_cabin", user, request, intent,
                            {"payment": f"Charge {pay_phrase(user, payment)}."}, gold, required))
    return drafts


def add_baggage(snap: Snapshot, rng: np.random.Generator, count: int, refused_change: bool = False) -> list[TaskDraft]:
    """Add paid checked bags; with ``refused_change`` a basic economy user also asks for a refused flight change."""
    drafts: list[TaskDraft] = []
    for res in permuted(rng, snap.open_reservations()):
        if len(drafts) == count:
            break
        if refused_change and res["cabin"] != "basic_economy":
            continue
        user = snap.users[res["user_id"]]
        added = int(rng.integers(1, 3))
        total, nonfree, fee = _bag_fee(user, res, res["cabin"], added)
        if fee == 0:
            continue
        payment = choose_payment(rng, user, fee)
        gold = lookups(user["user_id"], res["reservation_id"]) + [
            act("update_reservation_baggages", reservation_id=res["reservation_id"], total_baggages=total,
                nonfree_baggages=nonfree, payment_id=payment)]
        charged = replay_gold(snap.db, gold)[-1]["charge"]
        bags = f"{added} checked bag{'s' if added > 1 else ''}"
        request = f"Hi, my user id is {user['user_id']}. I'd like to add {bags} to reservation {res['reservation_id']}."
        intent = f"Add {added} bag(s) to {res['reservation_id']} and learn the fee."
        if refused_change:
            leg = res["flights"][0]
            request = (f"Hi, my user id is {user['user_id']}. Two things about reservation {res['reservation_id']}: "
                       f"I want to move flight {leg['flight_number']} to one day later, and I'd like to add {bags}.")
            intent = f"Move {leg['flight_number']} (not allowed: basic economy) and add {added} bag(s)."
        drafts.append(draft("refuse_change_add_bags" if refused_change else "add_baggage", user, request, intent,
                            {"payment": f"Put it on {pay_phrase(user, payment)}."}, gold, (money(charged),)))
    return drafts


def update_passenger(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """Correct one passenger's date of birth or last name."""
    drafts: list[TaskDraft] = []
    last_names = sorted({u["last_name"] for u in snap.users.values()})
    for res in permuted(rng, snap.open_reservations()):
        if len(drafts) == count:
            break
        user = snap.users[res["user_id"]]
        people = [dict(p) for p in res["passengers"]]
        index = int(rng.integers(len(people)))
        person = people[index]
        old_name = f"{person['first_name']} {person['last_name']}"
        if rng.random() < 0.5:
            year, month, day = person["dob"].split("-")
            person["dob"] = f"{int(year) + int(rng.choice([-1, 1]))}-{month}-{day if day != '29' else '28'}"
            fix, what = f"should be {person['dob']}", "date of birth"
        else:
            person["last_name"] = next(n for n in permuted(rng, last_names) if n != person["last_name"])
            fix, what = f"should be {person['last_name']}", "last name"
        gold = lookups(user["user_id"], res["reservation_id"]) + [
            act("update_reservation_passengers", reservation_id=res["reservation_id"], passengers=people)]
        replay_gold(snap.db, gold)
        request = (f"Hi, user id {user['user_id']}. On reservation {res['reservation_id']} the {what} of passenger "
                   f"{old_name} is wrong; it {fix}. Can you fix it?")
        drafts.append(draft("update_passenger", user, request, f"Correct {old_name}'s {what}.", {}, gold))
    return drafts
