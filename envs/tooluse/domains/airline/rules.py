"""Lookups and policy checks shared by the airline tools.

Every check raises ``ToolError`` with a message that names the offending value, because the
message is all the agent sees of a refused call.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from datetime import date, datetime, timedelta
from typing import Any

from ...toolkit import ToolError
from .data_model import CABINS, FREE_BAGS, NOW

MAX_PASSENGERS = 5
MIN_CONNECTION_MINUTES = 60
MAX_BAGGAGES = 99  # a sanity bound on the argument, not a policy rule


def dollars(cents: int) -> float:
    return round(cents / 100, 2)


def to_cents(amount: float, what: str) -> int:
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount * 100):
        raise ToolError(f"{what} must be a number of dollars, got {amount!r}")
    cents = round(amount * 100)
    if abs(cents - amount * 100) > 1e-6 or cents < 0:
        raise ToolError(f"{what} must be a non-negative amount in dollars with at most 2 decimals, got {amount}")
    return cents


def parse_date(value: str, what: str = "date") -> str:
    try:
        if len(value) != 10:
            raise ValueError
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ToolError(f"{what} must be a date in the format YYYY-MM-DD, got {value!r}") from None


def user_row(db: sqlite3.Connection, user_id: str) -> dict[str, Any]:
    row = db.execute("SELECT user_id, first_name, last_name, email, dob, membership FROM users "
                     "WHERE user_id = ?", (user_id,)).fetchone()
    if row is None:
        raise ToolError(f"user {user_id!r} not found")
    return dict(zip(("user_id", "first_name", "last_name", "email", "dob", "membership"), row))


def reservation_row(db: sqlite3.Connection, reservation_id: str) -> dict[str, Any]:
    row = db.execute("SELECT * FROM reservations WHERE reservation_id = ?", (reservation_id,)).fetchone()
    if row is None:
        raise ToolError(f"reservation {reservation_id!r} not found")
    keys = ("reservation_id", "user_id", "origin", "destination", "flight_type", "cabin",
            "total_baggages", "nonfree_baggages", "insurance", "status", "created_at")
    return dict(zip(keys, row))


def active_reservation(db: sqlite3.Connection, reservation_id: str) -> dict[str, Any]:
    reservation = reservation_row(db, reservation_id)
    if reservation["status"] != "active":
        raise ToolError(f"reservation {reservation_id} is {reservation['status']}; it cannot be changed")
    return reservation


def flight_leg(db: sqlite3.Connection, flight_number: str, day: str) -> dict[str, Any]:
    """One scheduled flight on one date, with its status and departure as ``YYYY-MM-DD HH:MM``."""
    row = db.execute(
        "SELECT f.flight_number, f.origin, f.destination, d.date, f.departure_time, f.arrival_time, d.status "
        "FROM flights f JOIN flight_dates d USING (flight_number) WHERE flight_number = ? AND date = ?",
        (flight_number, day)).fetchone()
    if row is None:
        raise ToolError(f"flight {flight_number} does not operate on {day}")
    leg = dict(zip(("flight_number", "origin", "destination", "date", "departure_time", "arrival_time",
                    "status"), row))
    leg["departure"] = f"{day} {leg['departure_time']}"
    return leg


def has_departed(leg: dict[str, Any]) -> bool:
    return leg["departure"] + ":00" <= NOW


def reservation_legs(db: sqlite3.Connection, reservation_id: str) -> list[dict[str, Any]]:
    rows = db.execute("SELECT flight_number, date, price_cents FROM reservation_flights "
                      "WHERE reservation_id = ? ORDER BY position", (reservation_id,)).fetchall()
    legs = []
    for flight_number, day, price in rows:
        leg = flight_leg(db, flight_number, day)
        leg["price_cents"] = price
        legs.append(leg)
    return legs


def passenger_count(db: sqlite3.Connection, reservation_id: str) -> int:
    return db.execute("SELECT COUNT(*) FROM reservation_passengers WHERE reservation_id = ?",
                      (reservation_id,)).fetchone()[0]


def refuse_if_departed(legs: list[dict[str, Any]], action: str) -> None:
    for leg in legs:
        if has_departed(leg):
            raise ToolError(f"flight {leg['flight_number']} of this reservation already departed on "
                            f"{leg['departure']}; a reservation with a flown flight cannot be {action} "
                            "(transfer the user to a human agent)")


def parse_flights(flights: list[dict[str, Any]]) -> list[tuple[str, str]]:
    if not flights:
        raise ToolError("flights must list at least one flight")
    if len(flights) > 4:
        raise ToolError(f"a reservation has at most 4 flights, got {len(flights)}")
    pairs = []
    for i, item in enumerate(flights):
        if set(item) != {"flight_number", "date"}:
            raise ToolError(f"flights[{i}] must have exactly the keys flight_number and date, got {sorted(item)}")
        pairs.append((str(item["flight_number"]), parse_date(str(item["date"]), f"flights[{i}].date")))
    if len(set(pairs)) != len(pairs):
        raise ToolError("the same flight on the same date appears twice in flights")
    return pairs


def parse_passengers(passengers: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    if not 1 <= len(passengers) <= MAX_PASSENGERS:
        raise ToolError(f"a reservation has 1 to {MAX_PASSENGERS} passengers, got {len(passengers)}")
    people = []
    for i, item in enumerate(passengers):
        if set(item) != {"first_name", "last_name", "dob"}:
            raise ToolError(f"passengers[{i}] must have exactly the keys first_name, last_name and dob, "
                            f"got {sorted(item)}")
        first, last = str(item["first_name"]).strip(), str(item["last_name"]).strip()
        if not first or not last:
            raise ToolError(f"passengers[{i}] needs a first and a last name")
        people.append((first, last, parse_date(str(item["dob"]), f"passengers[{i}].dob")))
    return people


def check_itinerary(legs: list[dict[str, Any]], origin: str, destination: str, flight_type: str) -> None:
    """The legs chain from ``origin`` to ``destination`` (and back to ``origin`` for a round trip)."""
    if legs[0]["origin"] != origin:
        raise ToolError(f"the first flight {legs[0]['flight_number']} leaves from {legs[0]['origin']}, "
                        f"not from the origin {origin}")
    for before, after in zip(legs, legs[1:]):
        if after["origin"] != before["destination"]:
            raise ToolError(f"flight {after['flight_number']} leaves from {after['origin']}, but the previous "
                            f"flight {before['flight_number']} arrives at {before['destination']}")
        arrival = datetime.fromisoformat(f"{before['date']} {before['arrival_time']}")
        if datetime.fromisoformat(after["departure"]) < arrival + timedelta(minutes=MIN_CONNECTION_MINUTES):
            raise ToolError(f"flight {after['flight_number']} on {after['date']} departs less than "
                            f"{MIN_CONNECTION_MINUTES} minutes after flight {before['flight_number']} arrives")
    ends = [leg["destination"] for leg in legs]
    if flight_type == "one_way" and (ends[-1] != destination or destination in ends[:-1]):
        raise ToolError(f"a one way trip must end at {destination}; these flights arrive at {ends}")
    if flight_type == "round_trip" and (ends[-1] != origin or destination not in ends[:-1]):
        raise ToolError(f"a round trip must reach {destination} and return to {origin}; "
                        f"these flights arrive at {ends}")


def cabin_seats(db: sqlite3.Connection, flight_number: str, day: str, cabin: str) -> tuple[int, int]:
    """(seats available, current price in cents) of one cabin on one flight date."""
    if cabin not in CABINS:
        raise ToolError(f"unknown cabin {cabin!r}; cabins are {', '.join(CABINS)}")
    seats, price = db.execute(f"SELECT {cabin}_seats, {cabin}_price_cents FROM flight_dates "  # cabin checked above
                              "WHERE flight_number = ? AND date = ?", (flight_number, day)).fetchone()
    return seats, price


def take_seats(db: sqlite3.Connection, leg: dict[str, Any], cabin: str, count: int,
               statuses: tuple[str, ...] = ("available",)) -> int:
    """Reserve ``count`` seats on a flight whose status is one of ``statuses``; returns the current fare in cents."""
    if leg["status"] not in statuses or has_departed(leg):
        raise ToolError(f"flight {leg['flight_number']} on {leg['date']} is {leg['status']} and cannot be booked")
    seats, price = cabin_seats(db, leg["flight_number"], leg["date"], cabin)
    if seats < count:
        raise ToolError(f"flight {leg['flight_number']} on {leg['date']} has {seats} {cabin} seats left, "
                        f"{count} needed")
    db.execute(f"UPDATE flight_dates SET {cabin}_seats = {cabin}_seats - ? WHERE flight_number = ? AND date = ?",
               (count, leg["flight_number"], leg["date"]))
    return price


def release_seats(db: sqlite3.Connection, leg: dict[str, Any], cabin: str, count: int) -> None:
    cabin_seats(db, leg["flight_number"], leg["date"], cabin)  # validates the cabin name
    db.execute(f"UPDATE flight_dates SET {cabin}_seats = {cabin}_seats + ? WHERE flight_number = ? AND date = ?",
               (count, leg["flight_number"], leg["date"]))


def check_baggages(total: int, nonfree: int) -> None:
    for name, value in (("total_baggages", total), ("nonfree_baggages", nonfree)):
        if not 0 <= value <= MAX_BAGGAGES:
            raise ToolError(f"{name} must be between 0 and {MAX_BAGGAGES}, got {value}")


def free_bags(membership: str, cabin: str, passengers: int) -> int:
    return FREE_BAGS[(membership, cabin)] * passengers


def payment_method(db: sqlite3.Connection, payment_id: str, user_id: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    row = db.execute("SELECT payment_id, user_id, kind, label, balance_cents FROM payment_methods "
                     "WHERE payment_id = ?", (payment_id,)).fetchone()
    if row is None or row[1] != user_id:
        raise ToolError(f"payment method {payment_id!r} not found for user {user_id}")
    method = dict(zip(("payment_id", "user_id", "kind", "label", "balance_cents"), row))
    if method["kind"] not in kinds:
        raise ToolError(f"payment method {payment_id} is a {method['kind']}; allowed here: {', '.join(kinds)}")
    return method


def charge(db: sqlite3.Connection, reservation_id: str, method: dict[str, Any], amount_cents: int) -> None:
    """Record a payment (negative: a refund) and move a gift card's or certificate's balance."""
    if method["kind"] != "credit_card":
        if amount_cents > method["balance_cents"]:
            raise ToolError(f"{method['payment_id']} has a balance of {dollars(method['balance_cents']):.2f}, "
                            f"less than the {dollars(amount_cents):.2f} to pay")
        db.execute("UPDATE payment_methods SET balance_cents = balance_cents - ? WHERE payment_id = ?",
                   (amount_cents, method["payment_id"]))
    db.execute("INSERT INTO payments VALUES (?, ?, ?, ?)", (reservation_id, method["payment_id"], amount_cents, NOW))


def new_id(db: sqlite3.Connection, table: str, column: str, prefix: str, digits: bool) -> str:
    """A fresh id derived from the table's row count: the same actions always yield the same id."""
    count = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    alphabet = "0123456789" if digits else "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
    for attempt in range(count, count + 1000):
        value = int.from_bytes(hashlib.sha256(f"{table}:{attempt}".encode()).digest()[:8], "big")
        chars = []
        for _ in range(7 if digits else 6):
            value, index = divmod(value, len(alphabet))
            chars.append(alphabet[index])
        candidate = prefix + "".join(chars)
        if db.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (candidate,)).fetchone() is None:
            return candidate
    raise RuntimeError(f"no free id in {table}")  # a broken database, not a bad call
