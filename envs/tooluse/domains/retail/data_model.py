"""The retail database: users, their payment methods, a product catalogue and orders.

Money is stored as integer cents everywhere (``*_cents`` columns) so that sums and refunds are
exact; tools report dollars rounded to two decimals. Every table has an ``INTEGER PRIMARY KEY``
so ``domain.db_rows`` (rows in rowid order) is a faithful, ordered picture of the state.
"""

from __future__ import annotations

import itertools
import json
import sqlite3

import numpy as np

from .vocabulary import CARD_BRANDS, CITIES, FIRST_NAMES, LAST_NAMES, PRODUCTS, STREETS

__all__ = ["SCHEMA", "ORDER_STATUSES", "N_USERS", "N_ORDERS", "build_db"]

ORDER_STATUSES = ("pending", "processed", "delivered", "cancelled", "return requested", "exchange requested")
_STATUS_WEIGHTS = (0.26, 0.14, 0.40, 0.10, 0.05, 0.05)
N_USERS = 240
N_ORDERS = 720

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY, user_id TEXT NOT NULL UNIQUE,
    first_name TEXT NOT NULL, last_name TEXT NOT NULL, email TEXT NOT NULL UNIQUE,
    address1 TEXT NOT NULL, address2 TEXT NOT NULL, city TEXT NOT NULL, state TEXT NOT NULL,
    country TEXT NOT NULL, zip TEXT NOT NULL);
CREATE TABLE payment_methods (
    id INTEGER PRIMARY KEY, payment_method_id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('credit_card', 'paypal', 'gift_card')),
    brand TEXT, last_four TEXT, balance_cents INTEGER);  -- brand/last_four: cards; balance: gift cards
CREATE TABLE products (id INTEGER PRIMARY KEY, product_id TEXT NOT NULL UNIQUE, name TEXT NOT NULL UNIQUE);
CREATE TABLE items (
    id INTEGER PRIMARY KEY, item_id TEXT NOT NULL UNIQUE, product_id TEXT NOT NULL,
    options TEXT NOT NULL, price_cents INTEGER NOT NULL, available INTEGER NOT NULL);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY, order_id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'processed', 'delivered', 'cancelled',
                                           'return requested', 'exchange requested')),
    address1 TEXT NOT NULL, address2 TEXT NOT NULL, city TEXT NOT NULL, state TEXT NOT NULL,
    country TEXT NOT NULL, zip TEXT NOT NULL, tracking_id TEXT,
    items_modified INTEGER NOT NULL DEFAULT 0,  -- the items of a pending order change at most once
    cancel_reason TEXT,
    resolution_payment_method_id TEXT);  -- where a requested return's refund / exchange's difference goes
CREATE TABLE order_items (
    id INTEGER PRIMARY KEY, order_id TEXT NOT NULL, item_id TEXT NOT NULL, price_cents INTEGER NOT NULL,
    request TEXT CHECK (request IN ('return', 'exchange')), new_item_id TEXT);
CREATE TABLE payments (
    id INTEGER PRIMARY KEY, order_id TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('payment', 'refund')),
    payment_method_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);
CREATE INDEX payment_methods_user ON payment_methods (user_id);
CREATE INDEX items_product ON items (product_id);
CREATE INDEX orders_user ON orders (user_id);
CREATE INDEX order_items_order ON order_items (order_id);
CREATE INDEX payments_order ON payments (order_id);
"""


def _unique_ids(rng: np.random.Generator, count: int, digits: int) -> list[str]:
    """``count`` distinct zero-padded decimal ids of ``digits`` digits, in random order."""
    ids = rng.choice(10**digits - 10 ** (digits - 1), size=count, replace=False) + 10 ** (digits - 1)
    return [str(int(i)) for i in ids]


def _address(rng: np.random.Generator) -> tuple[str, str, str, str, str, str]:
    city, state, prefix = CITIES[int(rng.integers(len(CITIES)))]
    street = f"{int(rng.integers(1, 9999))} {STREETS[int(rng.integers(len(STREETS)))]}"
    unit = f"Suite {int(rng.integers(100, 999))}" if rng.random() < 0.4 else ""
    return street, unit, city, state, "USA", f"{prefix}{int(rng.integers(100)):02d}"


def _insert_catalogue(db: sqlite3.Connection, rng: np.random.Generator) -> list[tuple[str, str, int]]:
    """Products and their variants; returns every variant as (item_id, product_id, price_cents)."""
    product_ids = _unique_ids(rng, len(PRODUCTS), 10)
    n_variants = [int(rng.integers(4, 10)) for _ in PRODUCTS]
    item_ids = iter(_unique_ids(rng, sum(n_variants), 10))
    products, items = [], []
    for (name, base_price, options), product_id, count in zip(PRODUCTS, product_ids, n_variants):
        products.append((product_id, name))
        combos = list(itertools.product(*options.values()))
        chosen = sorted(rng.choice(len(combos), size=min(count, len(combos)), replace=False))
        for index in chosen:
            option_values = dict(zip(options, combos[int(index)]))
            price_cents = int(round(base_price * 100 * rng.uniform(0.85, 1.2)))
            available = int(rng.random() < 0.8)
            items.append((next(item_ids), product_id, json.dumps(option_values), price_cents, available))
    db.executemany("INSERT INTO products (product_id, name) VALUES (?, ?)", products)
    db.executemany("INSERT INTO items (item_id, product_id, options, price_cents, available) "
                   "VALUES (?, ?, ?, ?, ?)", items)
    return [(item_id, product_id, price) for item_id, product_id, _, price, _ in items]


def _insert_users(db: sqlite3.Connection, rng: np.random.Generator) -> dict[str, list[str]]:
    """Users and payment methods; returns each user's payment method ids."""
    users: list[tuple[str, ...]] = []
    methods: list[tuple[str, str, str, str | None, str | None, int | None]] = []
    seen: set[tuple[str, str, str]] = set()
    method_numbers = iter(_unique_ids(rng, N_USERS * 4, 7))
    suffixes = iter(_unique_ids(rng, N_USERS, 4))
    while len(users) < N_USERS:
        first = FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]
        last = LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]
        address = _address(rng)
        if (first, last, address[5]) in seen:  # name + zip must identify a user
            continue
        seen.add((first, last, address[5]))
        suffix = next(suffixes)
        user_id = f"{first.lower()}_{last.lower()}_{suffix}"
        users.append((user_id, first, last, f"{first.lower()}.{last.lower()}{suffix}@example.com", *address))
        # One or two cards, maybe PayPal, maybe one gift card: "my gift card" is never ambiguous.
        for _ in range(int(rng.integers(1, 3))):
            brand = CARD_BRANDS[int(rng.integers(len(CARD_BRANDS)))]
            methods.append((f"credit_card_{next(method_numbers)}", user_id, "credit_card", brand,
                            f"{int(rng.integers(10000)):04d}", None))
        if rng.random() < 0.5:
            methods.append((f"paypal_{next(method_numbers)}", user_id, "paypal", None, None, None))
        if rng.random() < 0.6:
            balance_cents = int(rng.integers(0, 400)) * 100 + int(rng.integers(100))
            methods.append((f"gift_card_{next(method_numbers)}", user_id, "gift_card", None, None, balance_cents))
    db.executemany("INSERT INTO users (user_id, first_name, last_name, email, address1, address2, city, "
                   "state, country, zip) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", users)
    db.executemany("INSERT INTO payment_methods (payment_method_id, user_id, source, brand, last_four, "
                   "balance_cents) VALUES (?, ?, ?, ?, ?, ?)", methods)
    by_user: dict[str, list[str]] = {}
    for method in methods:
        by_user.setdefault(method[1], []).append(method[0])
    return by_user


def _insert_orders(db: sqlite3.Connection, rng: np.random.Generator,
                   variants: list[tuple[str, str, int]], methods: dict[str, list[str]]) -> None:
    user_rows = db.execute("SELECT user_id, address1, address2, city, state, country, zip "
                           "FROM users ORDER BY id").fetchall()
    # Every user has at least one order; the rest go to random users.
    extra = rng.integers(len(user_rows), size=N_ORDERS - len(user_rows))
    owners = list(range(len(user_rows))) + [int(u) for u in extra]
    order_ids = _unique_ids(rng, N_ORDERS, 7)
    tracking_ids = _unique_ids(rng, N_ORDERS, 12)
    statuses = rng.choice(len(ORDER_STATUSES), size=N_ORDERS, p=_STATUS_WEIGHTS)
    orders, lines, payments = [], [], []
    for owner, number, tracking, status_index in zip(owners, order_ids, tracking_ids, statuses):
        user_id, *home = user_rows[owner]
        order_id = f"#W{number}"
        status = ORDER_STATUSES[int(status_index)]
        address = tuple(home) if rng.random() < 0.85 else _address(rng)
        picks = rng.choice(len(variants), size=int(rng.integers(1, 5)), replace=False)
        total = 0
        for pick in sorted(int(p) for p in picks):
            item_id, _, price_cents = variants[pick]
            request = {"return requested": "return", "exchange requested": "exchange"}.get(status)
            new_item = None
            if request == "exchange":  # an exchange goes to another variant of the same product
                siblings = [v[0] for v in variants if v[1] == variants[pick][1] and v[0] != item_id]
                new_item = siblings[int(rng.integers(len(siblings)))]
            lines.append((order_id, item_id, price_cents, request, new_item))
            total += price_cents
        method = methods[user_id][int(rng.integers(len(methods[user_id])))]
        payments.append((order_id, "payment", method, total))
        if status == "cancelled":
            payments.append((order_id, "refund", method, total))
        resolution = method if status in ("return requested", "exchange requested") else None
        reason = ("no longer needed", "ordered by mistake")[int(rng.integers(2))] if status == "cancelled" else None
        shipped = status in ("processed", "delivered", "return requested", "exchange requested")
        orders.append((order_id, user_id, status, *address, tracking if shipped else None, reason, resolution))
    db.executemany("INSERT INTO orders (order_id, user_id, status, address1, address2, city, state, country, "
                   "zip, tracking_id, cancel_reason, resolution_payment_method_id) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", orders)
    db.executemany("INSERT INTO order_items (order_id, item_id, price_cents, request, new_item_id) "
                   "VALUES (?, ?, ?, ?, ?)", lines)
    db.executemany("INSERT INTO payments (order_id, kind, payment_method_id, amount_cents) VALUES (?, ?, ?, ?)",
                   payments)


def build_db(seed: int) -> sqlite3.Connection:
    """A new in-memory retail database, identical for equal seeds.

    Args:
        seed: Seed of the ``numpy`` Generator every random choice is drawn from.
    """
    rng = np.random.default_rng(seed)
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(SCHEMA)
    variants = _insert_catalogue(db, rng)
    methods = _insert_users(db, rng)
    _insert_orders(db, rng, variants, methods)
    db.commit()
    return db
