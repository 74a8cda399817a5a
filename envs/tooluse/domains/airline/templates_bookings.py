"""Task templates that book new reservations: one way, nonstop or with one connection."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...domain import TaskDraft
from .data_model import BAG_FEE_CENTS, CABINS, FREE_BAGS, INSURANCE_CENTS
from .drafting import (CABIN_WORDS, Snapshot, act, choose_payment, draft, money, pay_phrase, permuted,
                       replay_gold, spoken_date)
from .tools import search_direct_flight, search_onestop_flight

FIRST_BOOKABLE_DAY = "2024-05-17"  # two days after NOW, so every offer is clearly in the future


def _party(rng: np.random.Generator, user: dict[str, Any]) -> list[dict[str, str]]:
    people = [{"first_name": user["first_name"], "last_name": user["last_name"], "dob": user["dob"]}]
    saved = user["saved_passengers"]
    if saved and rng.random() < 0.4:
        people.append(dict(saved[int(rng.integers(len(saved)))]))
    return people


def _payments(rng: np.random.Generator, user: dict[str, Any], total: int) -> list[dict[str, Any]]:
    """One method for the total, or sometimes a certificate topped up by a credit card."""
    methods = user["payment_methods"]
    certificates = [p for p, m in methods.items() if m["kind"] == "certificate" and 0 < m["balance"] < total]
    if certificates and rng.random() < 0.35:
        certificate = certificates[0]
        card = next(p for p, m in methods.items() if m["kind"] == "credit_card")
        balance = methods[certificate]["balance"]
        return [{"payment_id": certificate, "amount": float(balance)},
                {"payment_id": card, "amount": float(total - balance)}]
    return [{"payment_id": choose_payment(rng, user, total), "amount": float(total)}]


def _flight_phrase(rng: np.random.Generator, offers: list[dict[str, Any]], chosen: dict[str, Any],
                   cabin: str, pax: int) -> str:
    """Name the flight by number, by departure time or as the cheapest, whichever is unambiguous."""
    fits = [o for o in offers if o["cabins"][cabin]["seats_available"] >= pax]
    cheapest = min(o["cabins"][cabin]["price"] for o in fits)
    ways = [f"flight {chosen['flight_number']}"]
    if [o["departure_time"] for o in offers].count(chosen["departure_time"]) == 1:
        ways.append(f"the nonstop flight that leaves at {chosen['departure_time']}")
    prices = [o["cabins"][cabin]["price"] for o in fits]
    if chosen["cabins"][cabin]["price"] == cheapest and prices.count(cheapest) == 1:
        ways.append(f"the cheapest nonstop flight with {CABIN_WORDS[cabin]} seats")
    return ways[int(rng.integers(len(ways)))]


def _booking_answers(rng: np.random.Generator, user: dict[str, Any], people: list[dict[str, str]], cabin: str,
                     bags: int, insurance: bool, payments: list[dict[str, Any]]) -> dict[str, str]:
    travellers = " and ".join(f"{p['first_name']} {p['last_name']} (born {p['dob']})" for p in people)
    paying = " and ".join(f"{money(p['amount'])} dollars on {pay_phrase(user, p['payment_id'])}" for p in payments) \
        if len(payments) > 1 else f"All of it on {pay_phrase(user, payments[0]['payment_id'])}"
    return {"passenger": f"The travellers are {travellers}.",
            "cabin": f"{CABIN_WORDS[cabin].capitalize()}, please.",
            "bag": f"{bags} checked bag{'s' if bags != 1 else ''} in total." if bags else "No checked bags.",
            "insurance": "Yes, add travel insurance." if insurance else "No insurance, thanks.",
            "payment": f"{paying}."}


def _book(snap: Snapshot, rng: np.random.Generator, user: dict[str, Any], legs: list[dict[str, Any]],
          cabin: str, people: list[dict[str, str]], search: dict[str, Any], route_phrase: str) -> TaskDraft:
    pax = len(people)
    bags = int(rng.integers(0, 3))
    nonfree = max(0, bags - FREE_BAGS[(user["membership"], cabin)] * pax)
    insurance = bool(rng.random() < 0.3)
    fares = sum(snap.cabin(leg["flight_number"], leg["date"], cabin)[1] for leg in legs)
    total = (fares + insurance * INSURANCE_CENTS // 100) * pax + nonfree * BAG_FEE_CENTS // 100
    payments = _payments(rng, user, total)
    origin, destination = legs[0]["origin"], legs[-1]["destination"]
    gold = [act("get_user_details", user_id=user["user_id"]), search,
            act("book_reservation", user_id=user["user_id"], origin=origin, destination=destination,
                flight_type="one_way", cabin=cabin,
                flights=[{"flight_number": leg["flight_number"], "date": leg["date"]} for leg in legs],
                passengers=people, payment_methods=payments, total_baggages=bags, nonfree_baggages=nonfree,
                insurance=insurance)]
    booked = replay_gold(snap.db, gold)[-1]
    who = "just me" if pax == 1 else f"me and {people[1]['first_name']} {people[1]['last_name']}"
    request = (f"Hi, my user id is {user['user_id']}. I want to book a one-way trip in {CABIN_WORDS[cabin]} from "
               f"{origin} to {destination} on {spoken_date(legs[0]['date'])}, on {route_phrase}, for {who}.")
    return draft("book_one_way" if len(legs) == 1 else "book_one_stop", user, request,
                 f"Book {origin}-{destination} on {legs[0]['date']} in {cabin} and learn the total price.",
                 _booking_answers(rng, user, people, cabin, bags, insurance, payments), gold,
                 (money(booked["total_price"]),))


def book_one_way(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """Book a nonstop flight, named by number, departure time or as the cheapest."""
    offers = snap.db.execute(
        "SELECT f.origin, f.destination, d.date FROM flights f JOIN flight_dates d USING (flight_number) "
        "WHERE d.status = 'available' AND d.date >= ? ORDER BY f.flight_number, d.date",
        (FIRST_BOOKABLE_DAY,)).fetchall()
    drafts: list[TaskDraft] = []
    for user in permuted(rng, list(snap.users.values())):
        if len(drafts) == count:
            break
        origin, destination, day = offers[int(rng.integers(len(offers)))]
        results = search_direct_flight.fn(snap.db, origin, destination, day)
        people = _party(rng, user)
        options = [(o, c) for o in results for c in CABINS if o["cabins"][c]["seats_available"] >= len(people)]
        if not options:
            continue
        chosen, cabin = options[int(rng.integers(len(options)))]
        search = act("search_direct_flight", origin=origin, destination=destination, date=day)
        drafts.append(_book(snap, rng, user, [chosen], cabin, people, search,
                            _flight_phrase(rng, results, chosen, cabin, len(people))))
    return drafts


def book_one_stop(snap: Snapshot, rng: np.random.Generator, count: int) -> list[TaskDraft]:
    """Book a connection with one stop, named by its two flight numbers."""
    airports = [code for (code,) in snap.db.execute("SELECT iata FROM airports ORDER BY iata")]
    days = [day for (day,) in snap.db.execute(
        "SELECT DISTINCT date FROM flight_dates WHERE date >= ? ORDER BY date", (FIRST_BOOKABLE_DAY,))]
    drafts: list[TaskDraft] = []
    for user in permuted(rng, list(snap.users.values())):
        if len(drafts) == count:
            break
        origin, destination = (airports[int(i)] for i in rng.choice(len(airports), size=2, replace=False))
        day = days[int(rng.integers(len(days)))]
        people = _party(rng, user)
        options = [(pair, c) for pair in search_onestop_flight.fn(snap.db, origin, destination, day) for c in CABINS
                   if min(leg["cabins"][c]["seats_available"] for leg in pair) >= len(people)]
        if not options:
            continue
        pair, cabin = options[int(rng.integers(len(options)))]
        search = act("search_onestop_flight", origin=origin, destination=destination, date=day)
        phrase = f"the connection through {pair[0]['destination']}: flight {pair[0]['flight_number']} then flight " \
                 f"{pair[1]['flight_number']}"
        drafts.append(_book(snap, rng, user, pair, cabin, people, search, phrase))
    return drafts
