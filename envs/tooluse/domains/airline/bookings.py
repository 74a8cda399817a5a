"""The airline's WRITE tools: book, cancel, change flights, passengers and baggage, compensate.

Each tool checks the policy itself, so an agent that skips a rule gets a ``ToolError`` instead of
a changed database (the toolkit rolls a failed WRITE back).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from typing import Any, Literal

from ...toolkit import ToolError, tool
from .data_model import BAG_FEE_CENTS, INSURANCE_CENTS, NOW
from .rules import (active_reservation, charge, check_baggages, check_itinerary, dollars, flight_leg, free_bags,
                    new_id, parse_flights, parse_passengers, passenger_count, payment_method,
                    refuse_if_departed, release_seats, reservation_legs, reservation_row, take_seats,
                    to_cents, user_row)

Cabin = Literal["basic_economy", "economy", "business"]
Reason = Literal["change_of_plan", "airline_cancelled_flight", "health", "weather", "other"]
COMPENSATION_CENTS = {"cancelled": 10000, "delayed": 5000}  # per passenger


def _nonfree_required(total: int, allowance: int, already_paid: int = 0) -> int:
    return max(already_paid, total - allowance)


def _write_flights(db: sqlite3.Connection, reservation_id: str, rows: list[tuple[str, str, int]]) -> None:
    """Rewrite a reservation's flights in place, so equal itineraries give equal rows."""
    for position, (flight_number, day, price) in enumerate(rows):
        updated = db.execute("UPDATE reservation_flights SET flight_number = ?, date = ?, price_cents = ? "
                             "WHERE reservation_id = ? AND position = ?",
                             (flight_number, day, price, reservation_id, position)).rowcount
        if not updated:
            db.execute("INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?)",
                       (reservation_id, position, flight_number, day, price))
    db.execute("DELETE FROM reservation_flights WHERE reservation_id = ? AND position >= ?",
               (reservation_id, len(rows)))


@tool("write")
def book_reservation(db: sqlite3.Connection, user_id: str, origin: str, destination: str,
                     flight_type: Literal["one_way", "round_trip"], cabin: Cabin, flights: list[dict],
                     passengers: list[dict], payment_methods: list[dict], total_baggages: int,
                     nonfree_baggages: int, insurance: bool) -> dict[str, Any]:
    """Book a new reservation for a user and charge it; every flight is in the same cabin.

    Args:
        user_id: The id of the user who books and pays.
        origin: Airport code where the trip starts, such as 'JFK'.
        destination: Airport code of the trip's destination (for a round trip, the turning point).
        flight_type: 'one_way' or 'round_trip'.
        cabin: The cabin for every flight: 'basic_economy', 'economy' or 'business'.
        flights: The flights in travel order, each {"flight_number": "HAT170", "date": "YYYY-MM-DD"}.
        passengers: 1 to 5 travellers, each {"first_name": ..., "last_name": ..., "dob": "YYYY-MM-DD"}.
        payment_methods: How to pay, each {"payment_id": ..., "amount": dollars}; the amounts must add
            up to the total price. At most one credit card and at most one certificate.
        total_baggages: Checked bags for the whole reservation.
        nonfree_baggages: Checked bags beyond the free allowance (50 dollars each).
        insurance: Whether to buy travel insurance (30 dollars per passenger).
    """
    user = user_row(db, user_id)
    legs = [flight_leg(db, fn, day) for fn, day in parse_flights(flights)]
    check_itinerary(legs, origin, destination, flight_type)
    people = parse_passengers(passengers)
    check_baggages(total_baggages, nonfree_baggages)
    required = _nonfree_required(total_baggages, free_bags(user["membership"], cabin, len(people)))
    if nonfree_baggages != required:
        raise ToolError(f"a {user['membership']} member in {cabin} with {len(people)} passenger(s) and "
                        f"{total_baggages} bags has {required} non-free bags, not {nonfree_baggages}")
    fares = [take_seats(db, leg, cabin, len(people)) for leg in legs]
    total = (sum(fares) + INSURANCE_CENTS * insurance) * len(people) + BAG_FEE_CENTS * required
    methods, amounts = [], []
    for i, item in enumerate(payment_methods):
        if set(item) != {"payment_id", "amount"}:
            raise ToolError(f"payment_methods[{i}] must have exactly the keys payment_id and amount, "
                            f"got {sorted(item)}")
        methods.append(payment_method(db, str(item["payment_id"]), user_id,
                                      ("credit_card", "gift_card", "certificate")))
        amounts.append(to_cents(item["amount"], f"payment_methods[{i}].amount"))
    kinds = [m["kind"] for m in methods]
    if len({m["payment_id"] for m in methods}) != len(methods):
        raise ToolError("a payment method appears twice in payment_methods")
    if kinds.count("credit_card") > 1 or kinds.count("certificate") > 1:
        raise ToolError("a reservation is paid with at most one credit card and at most one certificate")
    if sum(amounts) != total:
        raise ToolError(f"the payments add up to {dollars(sum(amounts)):.2f} but the total price is "
                        f"{dollars(total):.2f}")
    reservation_id = new_id(db, "reservations", "reservation_id", "", digits=False)
    db.execute("INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               (reservation_id, user_id, origin, destination, flight_type, cabin, total_baggages, required,
                int(insurance), "active", NOW))
    _write_flights(db, reservation_id, [(leg["flight_number"], leg["date"], fare) for leg, fare in zip(legs, fares)])
    db.executemany("INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
                   [(reservation_id, i, *person) for i, person in enumerate(people)])
    # charged in payment-id order, so listing the same payments in another order gives the same state
    for method, amount in sorted(zip(methods, amounts), key=lambda pair: pair[0]["payment_id"]):
        charge(db, reservation_id, method, amount)
    return {"reservation_id": reservation_id, "status": "active", "cabin": cabin,
            "flights": [{"flight_number": leg["flight_number"], "date": leg["date"], "price": dollars(fare)}
                        for leg, fare in zip(legs, fares)],
            "passengers": len(people), "nonfree_baggages": required, "total_price": dollars(total)}


@tool("write")
def cancel_reservation(db: sqlite3.Connection, reservation_id: str, reason: Reason) -> dict[str, Any]:
    """Cancel a whole reservation and refund every payment to the payment method it came from.

    Args:
        reservation_id: The reservation to cancel.
        reason: Why the user cancels: 'change_of_plan', 'airline_cancelled_flight', 'health',
            'weather' or 'other'.
    """
    reservation = active_reservation(db, reservation_id)
    legs = reservation_legs(db, reservation_id)
    refuse_if_departed(legs, "cancelled")
    airline_cancelled = any(leg["status"] == "cancelled" for leg in legs)
    if reason == "airline_cancelled_flight" and not airline_cancelled:
        raise ToolError(f"no flight of reservation {reservation_id} was cancelled by the airline")
    booked = datetime.fromisoformat(reservation["created_at"])
    recent = datetime.fromisoformat(NOW) - booked <= timedelta(hours=24)
    covered = bool(reservation["insurance"]) and reason in ("health", "weather")
    if not (recent or airline_cancelled or reservation["cabin"] == "business" or covered):
        insurance = "travel insurance that does not cover the reason " + reason if reservation["insurance"] \
            else "no travel insurance"
        raise ToolError(f"reservation {reservation_id} cannot be cancelled: booked {reservation['created_at']} "
                        f"(more than 24 hours ago), no flight cancelled by the airline, {reservation['cabin']} "
                        f"cabin, {insurance}")
    refunds = []
    for payment_id, paid in db.execute("SELECT payment_id, SUM(amount_cents) FROM payments WHERE reservation_id = ? "
                                       "GROUP BY payment_id ORDER BY MIN(rowid)", (reservation_id,)).fetchall():
        if paid > 0:
            method = payment_method(db, payment_id, reservation["user_id"], ("credit_card", "gift_card", "certificate"))
            charge(db, reservation_id, method, -paid)
            refunds.append({"payment_id": payment_id, "amount": dollars(paid)})
    count = passenger_count(db, reservation_id)
    for leg in legs:
        release_seats(db, leg, reservation["cabin"], count)
    db.execute("UPDATE reservations SET status = 'cancelled' WHERE reservation_id = ?", (reservation_id,))
    return {"reservation_id": reservation_id, "status": "cancelled", "refunds": refunds,
            "refund_total": dollars(sum(round(r["amount"] * 100) for r in refunds))}


@tool("write")
def update_reservation_flights(db: sqlite3.Connection, reservation_id: str, cabin: Cabin, flights: list[dict],
                               payment_id: str) -> dict[str, Any]:
    """Change a reservation's flights and/or cabin; the fare difference is charged to, or refunded to,
    one payment method.

    Args:
        reservation_id: The reservation to change.
        cabin: The cabin for every flight after the change (may equal the current one).
        flights: The full new list of flights in travel order, unchanged ones included, each
            {"flight_number": "HAT170", "date": "YYYY-MM-DD"}.
        payment_id: A credit card or gift card of the user, charged or refunded the difference.
    """
    reservation = active_reservation(db, reservation_id)
    old_legs = reservation_legs(db, reservation_id)
    refuse_if_departed(old_legs, "changed")
    pairs = parse_flights(flights)
    old_pairs = [(leg["flight_number"], leg["date"]) for leg in old_legs]
    if reservation["cabin"] == "basic_economy" and pairs != old_pairs:
        raise ToolError(f"reservation {reservation_id} is basic economy: its flights cannot be changed "
                        "(only its cabin can be upgraded)")
    if pairs == old_pairs and cabin == reservation["cabin"]:
        raise ToolError(f"nothing to change: reservation {reservation_id} already has these flights in {cabin}")
    legs = [flight_leg(db, fn, day) for fn, day in pairs]
    check_itinerary(legs, reservation["origin"], reservation["destination"], reservation["flight_type"])
    method = payment_method(db, payment_id, reservation["user_id"], ("credit_card", "gift_card"))
    count = passenger_count(db, reservation_id)
    old_price = {(leg["flight_number"], leg["date"]): leg["price_cents"] for leg in old_legs}
    for leg in old_legs:
        if (leg["flight_number"], leg["date"]) not in pairs or cabin != reservation["cabin"]:
            release_seats(db, leg, reservation["cabin"], count)
    rows = []
    for leg, pair in zip(legs, pairs):
        if pair in old_price and cabin == reservation["cabin"]:
            rows.append((*pair, old_price[pair]))  # an unchanged flight keeps the fare paid for it
        else:  # a kept flight may be delayed and still change cabin; a new one must be available
            statuses = ("available", "delayed") if pair in old_price else ("available",)
            rows.append((*pair, take_seats(db, leg, cabin, count, statuses)))
    difference = (sum(r[2] for r in rows) - sum(old_price.values())) * count
    if difference:
        charge(db, reservation_id, method, difference)
    _write_flights(db, reservation_id, rows)
    db.execute("UPDATE reservations SET cabin = ? WHERE reservation_id = ?", (cabin, reservation_id))
    return {"reservation_id": reservation_id, "cabin": cabin,
            "flights": [{"flight_number": fn, "date": day, "price": dollars(p)} for fn, day, p in rows],
            "price_difference": dollars(difference), "payment_id": payment_id}


@tool("write")
def update_reservation_passengers(db: sqlite3.Connection, reservation_id: str,
                                  passengers: list[dict]) -> dict[str, Any]:
    """Correct the passengers' names or dates of birth; the number of passengers cannot change.

    Args:
        reservation_id: The reservation to change.
        passengers: The full list of passengers in the same order, each
            {"first_name": ..., "last_name": ..., "dob": "YYYY-MM-DD"}.
    """
    active_reservation(db, reservation_id)
    refuse_if_departed(reservation_legs(db, reservation_id), "changed")
    people = parse_passengers(passengers)
    old = db.execute("SELECT first_name, last_name, dob FROM reservation_passengers WHERE reservation_id = ? "
                     "ORDER BY position", (reservation_id,)).fetchall()
    if len(people) != len(old):
        raise ToolError(f"reservation {reservation_id} has {len(old)} passenger(s); the number of passengers "
                        f"cannot change (got {len(people)})")
    if people == [tuple(row) for row in old]:
        raise ToolError(f"nothing to change: reservation {reservation_id} already has these passengers")
    for position, person in enumerate(people):
        db.execute("UPDATE reservation_passengers SET first_name = ?, last_name = ?, dob = ? "
                   "WHERE reservation_id = ? AND position = ?", (*person, reservation_id, position))
    return {"reservation_id": reservation_id,
            "passengers": [dict(zip(("first_name", "last_name", "dob"), p)) for p in people]}


@tool("write")
def update_reservation_baggages(db: sqlite3.Connection, reservation_id: str, total_baggages: int,
                                nonfree_baggages: int, payment_id: str) -> dict[str, Any]:
    """Add checked bags to a reservation; bags beyond the free allowance cost 50 dollars each.

    Args:
        reservation_id: The reservation to change.
        total_baggages: The new total number of checked bags (at least the current total).
        nonfree_baggages: The new number of bags beyond the free allowance.
        payment_id: A credit card or gift card of the user, charged for the added non-free bags.
    """
    reservation = active_reservation(db, reservation_id)
    refuse_if_departed(reservation_legs(db, reservation_id), "changed")
    check_baggages(total_baggages, nonfree_baggages)
    old_total, old_nonfree = reservation["total_baggages"], reservation["nonfree_baggages"]
    if total_baggages < old_total:
        raise ToolError(f"reservation {reservation_id} has {old_total} bags; bags can be added but not removed")
    if total_baggages == old_total:
        raise ToolError(f"nothing to change: reservation {reservation_id} already has {old_total} bags")
    membership = user_row(db, reservation["user_id"])["membership"]
    count = passenger_count(db, reservation_id)
    allowance = free_bags(membership, reservation["cabin"], count)
    required = _nonfree_required(total_baggages, allowance, old_nonfree)
    if nonfree_baggages != required:
        raise ToolError(f"with {total_baggages} bags and a free allowance of {allowance} ({membership} member, "
                        f"{reservation['cabin']}, {count} passenger(s)) the reservation has {required} non-free "
                        f"bags, not {nonfree_baggages}")
    method = payment_method(db, payment_id, reservation["user_id"], ("credit_card", "gift_card"))
    fee = (required - old_nonfree) * BAG_FEE_CENTS
    if fee:
        charge(db, reservation_id, method, fee)
    db.execute("UPDATE reservations SET total_baggages = ?, nonfree_baggages = ? WHERE reservation_id = ?",
               (total_baggages, required, reservation_id))
    return {"reservation_id": reservation_id, "total_baggages": total_baggages, "nonfree_baggages": required,
            "charge": dollars(fee), "payment_id": payment_id}


@tool("write")
def send_certificate(db: sqlite3.Connection, user_id: str, reservation_id: str, amount: float) -> dict[str, Any]:
    """Issue a compensation certificate for a cancelled or delayed flight of an eligible reservation.

    Args:
        user_id: The user who receives the certificate.
        reservation_id: The user's reservation whose flight was cancelled or delayed.
        amount: The certificate amount in dollars: 100 per passenger for a cancelled flight,
            50 per passenger for a delayed one.
    """
    user = user_row(db, user_id)
    reservation = reservation_row(db, reservation_id)
    if reservation["user_id"] != user_id:
        raise ToolError(f"reservation {reservation_id} does not belong to user {user_id}")
    if db.execute("SELECT 1 FROM compensations WHERE reservation_id = ?", (reservation_id,)).fetchone():
        raise ToolError(f"reservation {reservation_id} was already compensated")
    if not (user["membership"] in ("silver", "gold") or reservation["insurance"] or reservation["cabin"] == "business"):
        raise ToolError(f"reservation {reservation_id} is not eligible for compensation: regular member, "
                        f"{reservation['cabin']} cabin, no travel insurance")
    statuses = {leg["status"] for leg in reservation_legs(db, reservation_id)}
    disruption = "cancelled" if "cancelled" in statuses else "delayed" if "delayed" in statuses else None
    if disruption is None:
        raise ToolError(f"no flight of reservation {reservation_id} was cancelled or delayed")
    expected = COMPENSATION_CENTS[disruption] * passenger_count(db, reservation_id)
    if to_cents(amount, "amount") != expected:
        raise ToolError(f"the compensation for a {disruption} flight on reservation {reservation_id} is "
                        f"{dollars(expected):.2f}, not {amount:.2f}")
    payment_id = new_id(db, "payment_methods", "payment_id", "certificate_", digits=True)
    db.execute("INSERT INTO payment_methods VALUES (?, ?, ?, ?, ?)",
               (payment_id, user_id, "certificate", "travel certificate", expected))
    db.execute("INSERT INTO compensations VALUES (?, ?, ?)", (reservation_id, payment_id, expected))
    return {"payment_id": payment_id, "amount": dollars(expected), "reason": f"{disruption} flight"}

