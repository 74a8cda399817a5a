"""Row access shared by the retail tools: fetch-or-refuse lookups and the JSON views agents see.

Tools get a bare ``sqlite3.Connection`` (copies made by ``domain.copy_db`` carry no row factory),
so rows are turned into dicts here from the cursor's column names.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from ...toolkit import ToolError

__all__ = ["dollars", "fetch_one", "fetch_all", "user_row", "order_row", "item_row", "payment_method_row",
           "net_paid_cents", "user_view", "order_view", "product_view", "ADDRESS_FIELDS"]

ADDRESS_FIELDS = ("address1", "address2", "city", "state", "country", "zip")
_ORDER_ID = re.compile(r"^#W\d{7}$")


def dollars(cents: int) -> float:
    """Cents to dollars, rounded to the cent (what every tool reports)."""
    return round(cents / 100, 2)


def fetch_one(db: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
    cursor = db.execute(sql, args)
    row = cursor.fetchone()
    return None if row is None else dict(zip((c[0] for c in cursor.description), row))


def fetch_all(db: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    cursor = db.execute(sql, args)
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def user_row(db: sqlite3.Connection, user_id: str) -> dict[str, Any]:
    row = fetch_one(db, "SELECT * FROM users WHERE user_id = ?", (user_id,))
    if row is None:
        raise ToolError(f"user {user_id!r} not found")
    return row


def order_row(db: sqlite3.Connection, order_id: str) -> dict[str, Any]:
    if not _ORDER_ID.match(order_id):
        raise ToolError(f"order id must look like '#W1234567' ('#W' and 7 digits), got {order_id!r}")
    row = fetch_one(db, "SELECT * FROM orders WHERE order_id = ?", (order_id,))
    if row is None:
        raise ToolError(f"order {order_id!r} not found")
    return row


def item_row(db: sqlite3.Connection, item_id: str) -> dict[str, Any]:
    row = fetch_one(db, "SELECT i.*, p.name FROM items i JOIN products p USING (product_id) "
                        "WHERE i.item_id = ?", (item_id,))
    if row is None:
        raise ToolError(f"item {item_id!r} not found")
    return row


def payment_method_row(db: sqlite3.Connection, user_id: str, payment_method_id: str) -> dict[str, Any]:
    """The user's payment method; refuses one that does not exist or belongs to someone else."""
    row = fetch_one(db, "SELECT * FROM payment_methods WHERE payment_method_id = ?", (payment_method_id,))
    if row is None:
        raise ToolError(f"payment method {payment_method_id!r} not found")
    if row["user_id"] != user_id:
        raise ToolError(f"payment method {payment_method_id!r} does not belong to user {user_id!r}")
    return row


def net_paid_cents(db: sqlite3.Connection, order_id: str) -> dict[str, int]:
    """{payment method id: payments minus refunds} for the methods still holding money of the order."""
    rows = db.execute(
        "SELECT payment_method_id, SUM(CASE kind WHEN 'payment' THEN amount_cents ELSE -amount_cents END) "
        "FROM payments WHERE order_id = ? GROUP BY payment_method_id ORDER BY MIN(id)", (order_id,)).fetchall()
    return {method: net for method, net in rows if net > 0}


def _method_view(row: dict[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {"payment_method_id": row["payment_method_id"], "source": row["source"]}
    if row["source"] == "credit_card":
        view.update(brand=row["brand"], last_four=row["last_four"])
    elif row["source"] == "gift_card":
        view["balance"] = dollars(row["balance_cents"])
    return view


def user_view(db: sqlite3.Connection, user_id: str) -> dict[str, Any]:
    user = user_row(db, user_id)
    methods = fetch_all(db, "SELECT * FROM payment_methods WHERE user_id = ? ORDER BY id", (user_id,))
    orders = [r[0] for r in db.execute("SELECT order_id FROM orders WHERE user_id = ? ORDER BY id", (user_id,))]
    return {"user_id": user_id, "name": {"first_name": user["first_name"], "last_name": user["last_name"]},
            "email": user["email"], "address": {k: user[k] for k in ADDRESS_FIELDS},
            "payment_methods": [_method_view(m) for m in methods], "orders": orders}


def order_view(db: sqlite3.Connection, order_id: str) -> dict[str, Any]:
    order = order_row(db, order_id)
    lines = fetch_all(db, "SELECT o.item_id, o.price_cents, o.request, o.new_item_id, i.product_id, i.options, "
                          "p.name FROM order_items o JOIN items i USING (item_id) JOIN products p USING (product_id) "
                          "WHERE o.order_id = ? ORDER BY o.id", (order_id,))
    items = []
    for line in lines:
        item = {"item_id": line["item_id"], "product_id": line["product_id"], "name": line["name"],
                "options": json.loads(line["options"]), "price": dollars(line["price_cents"])}
        if line["request"]:
            item["request"] = line["request"]
        if line["new_item_id"]:
            item["new_item_id"] = line["new_item_id"]
        items.append(item)
    payments = fetch_all(db, "SELECT kind, payment_method_id, amount_cents FROM payments WHERE order_id = ? "
                             "ORDER BY id", (order_id,))
    view: dict[str, Any] = {
        "order_id": order_id, "user_id": order["user_id"], "status": order["status"],
        "address": {k: order[k] for k in ADDRESS_FIELDS}, "items": items,
        "total": dollars(sum(line["price_cents"] for line in lines)),
        "payment_history": [{"kind": p["kind"], "payment_method_id": p["payment_method_id"],
                             "amount": dollars(p["amount_cents"])} for p in payments],
        "items_modified": bool(order["items_modified"]),
    }
    for optional in ("tracking_id", "cancel_reason", "resolution_payment_method_id"):
        if order[optional] is not None:
            view[optional] = order[optional]
    return view


def product_view(db: sqlite3.Connection, product_id: str) -> dict[str, Any]:
    product = fetch_one(db, "SELECT * FROM products WHERE product_id = ?", (product_id,))
    if product is None:
        raise ToolError(f"product {product_id!r} not found (a product id has 10 digits)")
    variants = fetch_all(db, "SELECT * FROM items WHERE product_id = ? ORDER BY id", (product_id,))
    return {"product_id": product_id, "name": product["name"],
            "variants": [{"item_id": v["item_id"], "options": json.loads(v["options"]),
                          "price": dollars(v["price_cents"]), "available": bool(v["available"])}
                         for v in variants]}
