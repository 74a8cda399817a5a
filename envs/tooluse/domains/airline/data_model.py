"""The airline database: airports, four weeks of scheduled flights with three cabins, members and
their reservations.

Money is stored as integer cents (``*_cents`` columns) so sums and refunds are exact; tools show
dollars. Every fare, fee and balance is a whole number of dollars. The clock is frozen at ``NOW``
so the 24-hour cancellation rule and "already departed" checks do not depend on when tests run.

Each flight date holds its three cabins as columns (``<cabin>_seats``, ``<cabin>_price_cents``)
rather than as rows of their own: the database is hashed after every episode and every gold
replay, and that cost grows with the row count.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import TypeVar

import numpy as np

__all__ = ["NOW", "CABINS", "MEMBERSHIPS", "FREE_BAGS", "BAG_FEE_CENTS", "INSURANCE_CENTS",
           "SCHEMA", "build_db"]

NOW = "2024-05-15 15:00:00"  # the frozen "current time" of every episode
FIRST_DAY, N_DAYS = date(2024, 5, 4), 28
CABINS = ("basic_economy", "economy", "business")
MEMBERSHIPS = ("regular", "silver", "gold")
# Free checked bags per passenger, by membership and cabin.
FREE_BAGS = {("regular", "basic_economy"): 0, ("regular", "economy"): 1, ("regular", "business"): 2,
             ("silver", "basic_economy"): 1, ("silver", "economy"): 2, ("silver", "business"): 3,
             ("gold", "basic_economy"): 2, ("gold", "economy"): 3, ("gold", "business"): 3}
BAG_FEE_CENTS = 5000       # each non-free checked bag
INSURANCE_CENTS = 3000     # travel insurance, per passenger

SCHEMA = """
CREATE TABLE airports (iata TEXT PRIMARY KEY, city TEXT NOT NULL);
CREATE TABLE flights (flight_number TEXT PRIMARY KEY, origin TEXT NOT NULL, destination TEXT NOT NULL,
    departure_time TEXT NOT NULL, arrival_time TEXT NOT NULL);
CREATE TABLE flight_dates (flight_number TEXT NOT NULL, date TEXT NOT NULL, status TEXT NOT NULL,
    basic_economy_seats INTEGER NOT NULL, basic_economy_price_cents INTEGER NOT NULL,
    economy_seats INTEGER NOT NULL, economy_price_cents INTEGER NOT NULL,
    business_seats INTEGER NOT NULL, business_price_cents INTEGER NOT NULL,
    PRIMARY KEY (flight_number, date));
CREATE TABLE users (user_id TEXT PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
    email TEXT NOT NULL, dob TEXT NOT NULL, membership TEXT NOT NULL);
CREATE TABLE saved_passengers (user_id TEXT NOT NULL, first_name TEXT NOT NULL,
    last_name TEXT NOT NULL, dob TEXT NOT NULL);
CREATE TABLE payment_methods (payment_id TEXT PRIMARY KEY, user_id TEXT NOT NULL,
    kind TEXT NOT NULL, label TEXT NOT NULL, balance_cents INTEGER);
CREATE TABLE reservations (reservation_id TEXT PRIMARY KEY, user_id TEXT NOT NULL,
    origin TEXT NOT NULL, destination TEXT NOT NULL, flight_type TEXT NOT NULL, cabin TEXT NOT NULL,
    total_baggages INTEGER NOT NULL, nonfree_baggages INTEGER NOT NULL, insurance INTEGER NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE reservation_flights (reservation_id TEXT NOT NULL, position INTEGER NOT NULL,
    flight_number TEXT NOT NULL, date TEXT NOT NULL, price_cents INTEGER NOT NULL);
CREATE TABLE reservation_passengers (reservation_id TEXT NOT NULL, position INTEGER NOT NULL,
    first_name TEXT NOT NULL, last_name TEXT NOT NULL, dob TEXT NOT NULL);
CREATE TABLE payments (reservation_id TEXT NOT NULL, payment_id TEXT NOT NULL,
    amount_cents INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE compensations (reservation_id TEXT PRIMARY KEY, payment_id TEXT NOT NULL,
    amount_cents INTEGER NOT NULL);
CREATE INDEX reservation_flights_by_id ON reservation_flights (reservation_id);
CREATE INDEX reservation_passengers_by_id ON reservation_passengers (reservation_id);
CREATE INDEX payments_by_id ON payments (reservation_id);
CREATE INDEX reservations_by_user ON reservations (user_id);
"""

_AIRPORTS = (("ATL", "Atlanta"), ("BOS", "Boston"), ("DEN", "Denver"), ("DFW", "Dallas-Fort Worth"),
             ("JFK", "New York"), ("LAX", "Los Angeles"), ("LAS", "Las Vegas"), ("MIA", "Miami"),
             ("ORD", "Chicago"), ("PHX", "Phoenix"), ("SEA", "Seattle"), ("SFO", "San Francisco"),
             ("IAH", "Houston"), ("MSP", "Minneapolis"))
_FIRST = ("Mia", "Noah", "Olivia", "Liam", "Emma", "Ethan", "Ava", "Lucas", "Sofia", "Mason",
          "Isabella", "James", "Amelia", "Omar", "Yara", "Chen", "Priya", "Mateo", "Aisha", "Ivan",
          "Hana", "Raj", "Lena", "Daniel", "Fatima", "Kenji", "Nora", "Diego", "Sara", "Yusuf",
          "Elena", "Juan", "Chloe", "Arjun", "Maya", "Lei", "Anya", "Tomas", "Zoe", "Malik")
_LAST = ("Li", "Garcia", "Smith", "Kim", "Patel", "Nguyen", "Rossi", "Muller", "Silva", "Khan",
         "Brown", "Lopez", "Wilson", "Sato", "Ahmed", "Novak", "Jones", "Cohen", "Ito", "Martin",
         "Davis", "Moore", "Taylor", "Clark", "Lewis", "Walker", "Young", "Hill", "Wright", "Scott",
         "Green", "Adams", "Baker", "Nelson", "Carter", "Mitchell", "Perez", "Roberts", "Turner", "Reed")
_ID_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
_CARD_BRANDS = ("visa", "mastercard", "amex")


T = TypeVar("T")


def _pick(rng: np.random.Generator, options: Sequence[T]) -> T:
    return options[int(rng.integers(len(options)))]


def _dob(rng: np.random.Generator) -> str:
    return (date(1950, 1, 1) + timedelta(days=int(rng.integers(0, 55 * 365)))).isoformat()


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _add_flights(db: sqlite3.Connection, rng: np.random.Generator) -> Schedule:
    """Routes in both directions plus a few second flights on busy routes; returns the schedule."""
    codes = [code for code, _ in _AIRPORTS]
    pairs = [(a, b) for i, a in enumerate(codes) for b in codes[i + 1:]]
    chosen = [pairs[i] for i in sorted(rng.choice(len(pairs), size=22, replace=False))]
    routes = [route for a, b in chosen for route in ((a, b), (b, a))]
    routes += [routes[i] for i in sorted(rng.choice(len(routes), size=8, replace=False))]
    numbers = rng.choice(np.arange(100, 1000), size=len(routes), replace=False)
    schedule = {}
    for (origin, destination), number in zip(routes, numbers):
        departure = int(rng.integers(5 * 4, 18 * 4)) * 15           # 05:00 .. 17:45
        arrival = departure + int(rng.integers(6, 23)) * 15          # 1.5 h .. 5.5 h later, same day
        schedule[f"HAT{number}"] = (origin, destination, departure, arrival)
    db.executemany("INSERT INTO flights VALUES (?, ?, ?, ?, ?)",
                   [(fn, o, d, _clock(dep), _clock(arr)) for fn, (o, d, dep, arr) in schedule.items()])
    now = datetime.fromisoformat(NOW)
    date_rows = []
    for fn, (_, _, departure, _) in schedule.items():
        base = np.array([rng.integers(50, 100), 0, 0])
        base[1] = base[0] + rng.integers(40, 120)
        base[2] = base[1] + rng.integers(150, 400)
        for day in range(N_DAYS):
            when = datetime.combine(FIRST_DAY + timedelta(days=day), datetime.min.time()) \
                + timedelta(minutes=departure)
            days_ahead = (when.date() - now.date()).days
            roll = rng.random()
            if when < now:
                status = "cancelled" if roll < 0.03 else "landed"
            elif days_ahead <= 3:
                status = "delayed" if roll < 0.12 else "cancelled" if roll < 0.2 else "available"
            else:
                status = "cancelled" if roll < 0.04 else "available"
            factor = rng.uniform(0.8, 1.3)  # one factor per day keeps basic < economy < business
            row: list[str | int] = [fn, when.date().isoformat(), status]
            for price in base:
                row += [0 if rng.random() < 0.08 else int(rng.integers(1, 21)), int(round(price * factor)) * 100]
            date_rows.append(tuple(row))
    db.executemany("INSERT INTO flight_dates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", date_rows)
    return schedule


def _add_users(db: sqlite3.Connection, rng: np.random.Generator, n_users: int) -> list[tuple[str, str, str, str]]:
    """Members with saved passengers and payment methods; returns (user_id, first, last, dob)."""
    users: list[tuple[str, str, str, str]] = []
    taken_ids: set[str] = set()
    taken_numbers: set[int] = set()
    saved_rows: list[tuple[str, str, str, str]] = []
    method_rows: list[tuple[str, str, str, str, int | None]] = []

    def payment_id(kind: str) -> str:
        while True:
            number = int(rng.integers(1_000_000, 10_000_000))
            if number not in taken_numbers:
                taken_numbers.add(number)
                return f"{kind}_{number}"

    while len(users) < n_users:
        first, last = _pick(rng, _FIRST), _pick(rng, _LAST)
        number = int(rng.integers(1000, 10000))
        user_id = f"{first}_{last}_{number}".lower()
        if user_id in taken_ids:
            continue
        taken_ids.add(user_id)
        membership = MEMBERSHIPS[int(rng.choice(3, p=[0.5, 0.3, 0.2]))]
        dob = _dob(rng)
        users.append((user_id, first, last, dob))
        db.execute("INSERT INTO users VALUES (?, ?, ?, ?, ?, ?)",
                   (user_id, first, last, f"{first}.{last}{number}@example.com".lower(), dob, membership))
        for _ in range(int(rng.integers(0, 4))):
            saved_rows.append((user_id, _pick(rng, _FIRST), _pick(rng, _LAST), _dob(rng)))
        for _ in range(int(rng.integers(1, 3))):
            method_rows.append((payment_id("credit_card"), user_id, "credit_card",
                                f"{_pick(rng, _CARD_BRANDS)} ending in {int(rng.integers(1000, 10000))}", None))
        for _ in range(int(rng.integers(0, 3))):
            method_rows.append((payment_id("gift_card"), user_id, "gift_card", "gift card",
                                int(rng.integers(0, 61)) * 500))
        for _ in range(int(rng.integers(0, 3))):
            method_rows.append((payment_id("certificate"), user_id, "certificate", "travel certificate",
                                int(_pick(rng, (50, 100, 150, 250, 500))) * 100))
    db.executemany("INSERT INTO saved_passengers VALUES (?, ?, ?, ?)", saved_rows)
    db.executemany("INSERT INTO payment_methods VALUES (?, ?, ?, ?, ?)", method_rows)
    return users


Schedule = dict[str, tuple[str, str, int, int]]  # flight number -> (origin, destination, departure, arrival minutes)


def _itinerary(rng: np.random.Generator, schedule: Schedule) -> tuple[list[tuple[str, str]], str]:
    """Flights (number, date) of one reservation: direct or one stop one way, or direct round trip."""
    numbers = sorted(schedule)
    first = _pick(rng, numbers)
    origin, stop, _, arrival = schedule[first]
    day = FIRST_DAY + timedelta(days=int(rng.integers(N_DAYS)))
    legs = [(first, day.isoformat())]
    if rng.random() < 0.25:  # a connection at least an hour later, same day
        onward = [fn for fn in numbers if schedule[fn][0] == stop and schedule[fn][1] != origin
                  and schedule[fn][2] >= arrival + 60]
        if onward:
            legs.append((_pick(rng, onward), day.isoformat()))
            return legs, "one_way"
    back_day = day + timedelta(days=int(rng.integers(2, 7)))
    returns = [fn for fn in numbers if schedule[fn][:2] == (stop, origin)]
    if rng.random() < 0.45 and returns and back_day < FIRST_DAY + timedelta(days=N_DAYS):
        legs.append((_pick(rng, returns), back_day.isoformat()))
        return legs, "round_trip"
    return legs, "one_way"


def _add_reservations(db: sqlite3.Connection, rng: np.random.Generator, schedule: Schedule,
                      users: list[tuple[str, str, str, str]], n_reservations: int) -> None:
    now = datetime.fromisoformat(NOW)
    membership = dict(db.execute("SELECT user_id, membership FROM users"))
    saved: dict[str, list[tuple[str, str, str]]] = {}
    for user_id, first_name, last_name, dob in db.execute("SELECT * FROM saved_passengers ORDER BY rowid"):
        saved.setdefault(user_id, []).append((first_name, last_name, dob))
    payers: dict[str, list[str]] = {}
    for payment_id, user_id in db.execute(
            "SELECT payment_id, user_id FROM payment_methods WHERE kind != 'certificate' ORDER BY rowid"):
        payers.setdefault(user_id, []).append(payment_id)
    prices = {}
    for fn, d, *fares in db.execute("SELECT flight_number, date, basic_economy_price_cents, economy_price_cents, "
                                    "business_price_cents FROM flight_dates"):
        prices.update({(fn, d, cabin): fare for cabin, fare in zip(CABINS, fares)})
    taken: set[str] = set()
    for _ in range(n_reservations):
        reservation_id = "".join(_pick(rng, _ID_CHARS) for _ in range(6))
        if reservation_id in taken:
            continue
        taken.add(reservation_id)
        user_id, first, last, dob = users[int(rng.integers(len(users)))]
        legs, flight_type = _itinerary(rng, schedule)
        origin = schedule[legs[0][0]][0]
        destination = schedule[legs[-1][0]][1] if flight_type == "one_way" else schedule[legs[0][0]][1]
        cabin = CABINS[int(rng.choice(3, p=[0.3, 0.45, 0.25]))]
        people = [(first, last, dob)] if rng.random() < 0.7 else []
        companions = list(saved.get(user_id, []))
        for _ in range(int(rng.integers(0, 3))):
            if companions:
                people.append(companions.pop(int(rng.integers(len(companions)))))
        if not people:
            people.append((_pick(rng, _FIRST), _pick(rng, _LAST), _dob(rng)))
        departure = datetime.fromisoformat(f"{legs[0][1]} {_clock(schedule[legs[0][0]][2])}")
        if departure > now + timedelta(days=2) and rng.random() < 0.12:
            created = now - timedelta(minutes=int(rng.integers(30, 23 * 60)))  # inside the 24 h window
        else:
            created = min(departure, now - timedelta(days=1)) - timedelta(minutes=int(rng.integers(60, 25 * 24 * 60)))
        insurance = int(rng.random() < 0.4)
        total_bags = int(rng.integers(0, 2 * len(people) + 1))
        nonfree = max(0, total_bags - FREE_BAGS[membership[user_id], cabin] * len(people))
        fares = [prices[(fn, d, cabin)] for fn, d in legs]
        total = (sum(fares) + insurance * INSURANCE_CENTS) * len(people) + nonfree * BAG_FEE_CENTS
        cancelled = rng.random() < 0.08
        created_at = created.strftime("%Y-%m-%d %H:%M:%S")
        db.execute("INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (reservation_id, user_id, origin, destination, flight_type, cabin, total_bags, nonfree,
                    insurance, "cancelled" if cancelled else "active", created_at))
        db.executemany("INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?)",
                       [(reservation_id, i, fn, d, fare) for i, ((fn, d), fare) in enumerate(zip(legs, fares))])
        db.executemany("INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
                       [(reservation_id, i, *person) for i, person in enumerate(people)])
        payer = _pick(rng, payers[user_id])
        db.execute("INSERT INTO payments VALUES (?, ?, ?, ?)", (reservation_id, payer, total, created_at))
        if cancelled:
            db.execute("INSERT INTO payments VALUES (?, ?, ?, ?)", (reservation_id, payer, -total, created_at))


def build_db(seed: int, n_users: int = 220, n_reservations: int = 520) -> sqlite3.Connection:
    """A new in-memory airline database, fully determined by ``seed``.

    Args:
        seed: Seed of the ``numpy`` generator that draws every row.
        n_users: Number of members.
        n_reservations: Number of reservation draws (a rare id collision drops one).

    Returns:
        An open connection usable from any thread.
    """
    rng = np.random.default_rng(seed)
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO airports VALUES (?, ?)", _AIRPORTS)
    schedule = _add_flights(db, rng)
    users = _add_users(db, rng, n_users)
    _add_reservations(db, rng, schedule, users, n_reservations)
    db.commit()
    return db
