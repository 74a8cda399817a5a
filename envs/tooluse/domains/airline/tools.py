"""The airline tools: lookups here, reservation changes in ``bookings``; ``TOOLS`` lists them all."""

from __future__ import annotations

import ast
import math
import operator
import sqlite3
from typing import Any

from ...toolkit import Tool, ToolError, tool
from . import bookings
from .data_model import CABINS
from .rules import cabin_seats, dollars, flight_leg, parse_date, reservation_legs, reservation_row, user_row

__all__ = ["TOOLS"]


@tool("read")
def get_user_details(db: sqlite3.Connection, user_id: str) -> dict[str, Any]:
    """Get a user's profile: name, email, membership, saved passengers, payment methods and reservations.

    Args:
        user_id: The user's id, such as 'mia_li_3668'.
    """
    user = user_row(db, user_id)
    user["saved_passengers"] = [
        {"first_name": f, "last_name": last, "dob": dob} for f, last, dob in db.execute(
            "SELECT first_name, last_name, dob FROM saved_passengers WHERE user_id = ? ORDER BY rowid", (user_id,))]
    methods = {}
    for payment_id, kind, label, balance in db.execute(
            "SELECT payment_id, kind, label, balance_cents FROM payment_methods WHERE user_id = ? ORDER BY rowid",
            (user_id,)):
        methods[payment_id] = {"kind": kind, "label": label}
        if balance is not None:
            methods[payment_id]["balance"] = dollars(balance)
    user["payment_methods"] = methods
    user["reservations"] = [r for (r,) in db.execute(
        "SELECT reservation_id FROM reservations WHERE user_id = ? ORDER BY rowid", (user_id,))]
    return user


@tool("read")
def get_reservation_details(db: sqlite3.Connection, reservation_id: str) -> dict[str, Any]:
    """Get a reservation: its user, trip, cabin, flights with status and fare, passengers, baggage,
    insurance and payments.

    Args:
        reservation_id: The six-character reservation id, such as 'ZFA04Y'.
    """
    reservation = reservation_row(db, reservation_id)
    reservation["insurance"] = "yes" if reservation["insurance"] else "no"
    reservation["flights"] = [
        {key: leg[key] for key in ("flight_number", "origin", "destination", "date", "departure_time",
                                   "arrival_time", "status")} | {"price": dollars(leg["price_cents"])}
        for leg in reservation_legs(db, reservation_id)]
    reservation["passengers"] = [
        {"first_name": f, "last_name": last, "dob": dob} for f, last, dob in db.execute(
            "SELECT first_name, last_name, dob FROM reservation_passengers WHERE reservation_id = ? "
            "ORDER BY position", (reservation_id,))]
    reservation["payment_history"] = [
        {"payment_id": p, "amount": dollars(a)} for p, a in db.execute(
            "SELECT payment_id, amount_cents FROM payments WHERE reservation_id = ? ORDER BY rowid",
            (reservation_id,))]
    compensation = db.execute("SELECT payment_id, amount_cents FROM compensations WHERE reservation_id = ?",
                              (reservation_id,)).fetchone()
    if compensation:
        reservation["compensation"] = {"payment_id": compensation[0], "amount": dollars(compensation[1])}
    return reservation


def _airport(db: sqlite3.Connection, code: str, what: str) -> str:
    if db.execute("SELECT 1 FROM airports WHERE iata = ?", (code,)).fetchone() is None:
        raise ToolError(f"{what} {code!r} is not an airport code we serve (see list_all_airports)")
    return code


def _offer(db: sqlite3.Connection, flight_number: str, day: str) -> dict[str, Any]:
    leg = flight_leg(db, flight_number, day)
    leg.pop("departure")
    leg["cabins"] = {}
    for cabin in CABINS:
        seats, price = cabin_seats(db, flight_number, day, cabin)
        leg["cabins"][cabin] = {"seats_available": seats, "price": dollars(price)}
    return leg


def _bookable(db: sqlite3.Connection, origin: str, day: str, destination: str | None = None) -> list[str]:
    query = ("SELECT f.flight_number FROM flights f JOIN flight_dates d USING (flight_number) "
             "WHERE f.origin = ? AND d.date = ? AND d.status = 'available'")
    args: tuple[str, ...] = (origin, day)
    if destination is not None:
        query, args = query + " AND f.destination = ?", args + (destination,)
    return [fn for (fn,) in db.execute(query + " ORDER BY f.departure_time, f.flight_number", args)]


@tool("read")
def search_direct_flight(db: sqlite3.Connection, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    """Search bookable nonstop flights between two airports on a date, with seats left and fare per cabin.

    Args:
        origin: Departure airport code, such as 'JFK'.
        destination: Arrival airport code, such as 'SFO'.
        date: Travel date, 'YYYY-MM-DD'.
    """
    day = parse_date(date)
    _airport(db, origin, "origin")
    _airport(db, destination, "destination")
    return [_offer(db, fn, day) for fn in _bookable(db, origin, day, destination)]


@tool("read")
def search_onestop_flight(db: sqlite3.Connection, origin: str, destination: str,
                          date: str) -> list[list[dict[str, Any]]]:
    """Search bookable connections with exactly one stop on a date; each result is a pair of flights.

    Args:
        origin: Departure airport code, such as 'JFK'.
        destination: Final arrival airport code, such as 'SFO'.
        date: Travel date of both flights, 'YYYY-MM-DD'.
    """
    day = parse_date(date)
    _airport(db, origin, "origin")
    _airport(db, destination, "destination")
    pairs = []
    for first in _bookable(db, origin, day):
        leg = flight_leg(db, first, day)
        if leg["destination"] == destination:
            continue
        for second in _bookable(db, leg["destination"], day, destination):
            onward = flight_leg(db, second, day)
            arrive_h, arrive_m = map(int, leg["arrival_time"].split(":"))
            depart_h, depart_m = map(int, onward["departure_time"].split(":"))
            if depart_h * 60 + depart_m >= arrive_h * 60 + arrive_m + 60:  # an hour to connect
                pairs.append([_offer(db, first, day), _offer(db, second, day)])
    return pairs


@tool("read")
def list_all_airports(db: sqlite3.Connection) -> list[dict[str, str]]:
    """List every airport the airline serves, with its code and city."""
    return [{"iata": code, "city": city} for code, city in db.execute("SELECT iata, city FROM airports ORDER BY iata")]


@tool("read")
def get_flight_status(db: sqlite3.Connection, flight_number: str, date: str) -> dict[str, Any]:
    """Get the status of a flight on a date: available, delayed, cancelled or landed.

    Args:
        flight_number: The flight number, such as 'HAT170'.
        date: The flight date, 'YYYY-MM-DD'.
    """
    leg = flight_leg(db, flight_number, parse_date(date))
    leg.pop("departure")
    return leg


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ToolError("division by zero")
        return _OPERATORS[type(node.op)](left, right)
    raise ToolError("only numbers, + - * / and parentheses are allowed")


@tool("read")
def calculate(db: sqlite3.Connection, expression: str) -> float:
    """Evaluate an arithmetic expression of numbers, + - * / and parentheses; the result is rounded to 2 decimals.

    Args:
        expression: The expression, such as '(120 + 80) * 2 - 15.5'.
    """
    if len(expression) > 200:
        raise ToolError(f"expression is too long ({len(expression)} characters, at most 200)")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        raise ToolError(f"cannot parse expression {expression!r}") from None
    result = _evaluate(tree.body)
    if not math.isfinite(result):
        raise ToolError(f"the result of {expression!r} is too large")
    return round(result, 2)


@tool("read")
def transfer_to_human_agents(db: sqlite3.Connection, summary: str) -> str:
    """Hand the conversation to a human agent, when the user asks for one or the request is outside this policy.

    Args:
        summary: A short summary of the user's issue for the human agent.
    """
    if not summary.strip():
        raise ToolError("summary must describe the user's issue")
    return "Transfer successful: a human agent will take over this conversation."


TOOLS: tuple[Tool, ...] = (
    get_user_details, get_reservation_details, search_direct_flight, search_onestop_flight,
    list_all_airports, get_flight_status, calculate,
    bookings.book_reservation, bookings.cancel_reservation, bookings.update_reservation_flights,
    bookings.update_reservation_passengers, bookings.update_reservation_baggages, bookings.send_certificate,
    transfer_to_human_agents,
)
