"""WRITE tools of the retail domain: they change orders, payments and addresses.

Each tool checks the policy before touching a row and raises ``ToolError`` otherwise; the
toolkit runs WRITE tools in a transaction, so a refused call changes nothing.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any, Literal

from ...toolkit import ToolError, tool
from .row_views import (ADDRESS_FIELDS, dollars, fetch_all, item_row, net_paid_cents, order_row, order_view,
                      payment_method_row, user_row, user_view)

__all__ = ["cancel_pending_order", "modify_pending_order_address", "modify_pending_order_payment",
           "modify_pending_order_items", "return_delivered_order_items", "exchange_delivered_order_items",
           "modify_user_address"]

_ZIP = re.compile(r"^\d{5}$")


def _require_status(order: dict[str, Any], status: str, action: str) -> None:
    if order["status"] != status:
        raise ToolError(f"order {order['order_id']} is {order['status']!r}: only {status} orders can {action}")


def _move_money(db: sqlite3.Connection, order_id: str, method: dict[str, Any], kind: str, cents: int) -> None:
    """Record a payment or refund; a gift card's balance changes at once, cards and PayPal settle later."""
    db.execute("INSERT INTO payments (order_id, kind, payment_method_id, amount_cents) VALUES (?, ?, ?, ?)",
               (order_id, kind, method["payment_method_id"], cents))
    if method["source"] == "gift_card":
        sign = -1 if kind == "payment" else 1
        db.execute("UPDATE payment_methods SET balance_cents = balance_cents + ? WHERE payment_method_id = ?",
                   (sign * cents, method["payment_method_id"]))


def _check_refund_target(db: sqlite3.Connection, order: dict[str, Any], method: dict[str, Any]) -> None:
    original = net_paid_cents(db, order["order_id"])
    if method["payment_method_id"] not in original and method["source"] != "gift_card":
        raise ToolError(f"a refund goes to the original payment method ({', '.join(original)}) or a gift card "
                        f"of the user, not {method['payment_method_id']!r}")


def _check_charge_source(method: dict[str, Any], cents: int, what: str) -> None:
    if method["source"] == "gift_card" and method["balance_cents"] < cents:
        balance = dollars(method["balance_cents"])
        raise ToolError(f"gift card {method['payment_method_id']} has a balance of {balance:.2f}, "
                        f"which does not cover the {what} of {dollars(cents):.2f}")


def _plan_swap(db: sqlite3.Connection, order: dict[str, Any], item_ids: list[str],
               new_item_ids: list[str]) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """Match each old item to a line of the order and check its replacement; returns
    ([(order_items row id, new item row)], price difference in cents, new minus old)."""
    if not item_ids or len(item_ids) != len(new_item_ids):
        raise ToolError(f"item_ids and new_item_ids must be non-empty and of equal length, "
                        f"got {len(item_ids)} and {len(new_item_ids)}")
    lines = fetch_all(db, "SELECT id, item_id, price_cents FROM order_items WHERE order_id = ? ORDER BY id",
                      (order["order_id"],))
    plan, diff_cents, used = [], 0, set()
    for old_id, new_id in zip(item_ids, new_item_ids):
        line = next((ln for ln in lines if ln["item_id"] == old_id and ln["id"] not in used), None)
        if line is None:
            raise ToolError(f"item {old_id!r} is not in order {order['order_id']} (or is listed more often "
                            "than the order holds it)")
        used.add(line["id"])
        old, new = item_row(db, old_id), item_row(db, new_id)
        if new["product_id"] != old["product_id"]:
            raise ToolError(f"item {new_id!r} is a {new['name']}, not a {old['name']}: an item can only be "
                            "swapped for another variant of the same product")
        if new_id == old_id:
            raise ToolError(f"new item {new_id!r} is the same variant as the old one")
        if not new["available"]:
            raise ToolError(f"item {new_id!r} ({old['name']}) is out of stock")
        plan.append((line["id"], new))
        diff_cents += new["price_cents"] - line["price_cents"]
    return plan, diff_cents


def _check_difference_method(db: sqlite3.Connection, order: dict[str, Any], payment_method_id: str,
                             diff_cents: int) -> dict[str, Any]:
    method = payment_method_row(db, order["user_id"], payment_method_id)
    if diff_cents < 0:
        _check_refund_target(db, order, method)
    else:
        _check_charge_source(method, diff_cents, "price difference")
    return method


def _checked_address(fields: tuple[str, ...]) -> tuple[str, ...]:
    """(address1, address2, city, state, country, zip), stripped; only address2 may be empty."""
    address = tuple(value.strip() for value in fields)
    missing = [name for name, value in zip(ADDRESS_FIELDS, address) if not value and name != "address2"]
    if missing:
        raise ToolError(f"address fields must not be empty: {', '.join(missing)}")
    if not _ZIP.match(address[5]):
        raise ToolError(f"zip must be 5 digits, got {address[5]!r}")
    return address


@tool("write")
def cancel_pending_order(db: sqlite3.Connection, order_id: str,
                         reason: Literal["no longer needed", "ordered by mistake"]) -> dict[str, Any]:
    """Cancel a pending order and refund everything paid to the payment methods it came from.

    Gift card refunds are credited at once; credit card and PayPal refunds arrive in 5-7 business
    days. The result is the cancelled order with its refund total.

    Args:
        order_id: The order id, like "#W1234567".
        reason: Why the user cancels: "no longer needed" or "ordered by mistake".
    """
    order = order_row(db, order_id)
    _require_status(order, "pending", "be cancelled")
    refund_cents = 0
    for method_id, cents in net_paid_cents(db, order_id).items():
        _move_money(db, order_id, payment_method_row(db, order["user_id"], method_id), "refund", cents)
        refund_cents += cents
    db.execute("UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE order_id = ?", (reason, order_id))
    return {**order_view(db, order_id), "refund_total": dollars(refund_cents)}


@tool("write")
def modify_pending_order_address(db: sqlite3.Connection, order_id: str, address1: str, address2: str,
                                 city: str, state: str, country: str, zip: str) -> dict[str, Any]:
    """Change the shipping address of a pending order; returns the updated order.

    Args:
        order_id: The order id, like "#W1234567".
        address1: Street and number, like "123 Maple Street".
        address2: Apartment or suite, or "" when there is none.
        city: The city.
        state: The state, like "TX".
        country: The country, like "USA".
        zip: The 5-digit zip code.
    """
    order = order_row(db, order_id)
    _require_status(order, "pending", "have their address changed")
    address = _checked_address((address1, address2, city, state, country, zip))
    db.execute("UPDATE orders SET address1 = ?, address2 = ?, city = ?, state = ?, country = ?, zip = ? "
               "WHERE order_id = ?", (*address, order_id))
    return order_view(db, order_id)


@tool("write")
def modify_pending_order_payment(db: sqlite3.Connection, order_id: str, payment_method_id: str) -> dict[str, Any]:
    """Pay a pending order with another payment method of its owner; the old method is refunded.

    A gift card must hold at least the order total. Returns the updated order.

    Args:
        order_id: The order id, like "#W1234567".
        payment_method_id: The user's new payment method, like "credit_card_1234567" or "gift_card_7654321".
    """
    order = order_row(db, order_id)
    _require_status(order, "pending", "change their payment method")
    paid = net_paid_cents(db, order_id)
    if len(paid) != 1:
        raise ToolError(f"order {order_id} is paid with {len(paid)} payment methods; only an order paid with "
                        "exactly one can change its payment method")
    (old_id, cents), = paid.items()
    if payment_method_id == old_id:
        raise ToolError(f"order {order_id} is already paid with {payment_method_id}")
    new = payment_method_row(db, order["user_id"], payment_method_id)
    _check_charge_source(new, cents, "order total")
    _move_money(db, order_id, new, "payment", cents)
    _move_money(db, order_id, payment_method_row(db, order["user_id"], old_id), "refund", cents)
    return order_view(db, order_id)


@tool("write")
def modify_pending_order_items(db: sqlite3.Connection, order_id: str, item_ids: list[str], new_item_ids: list[str],
                               payment_method_id: str) -> dict[str, Any]:
    """Swap items of a pending order for other variants (options) of the same products.

    This can be done once per order, so all swaps go in one call. The price difference is
    charged to, or refunded to, the given payment method; the result is the updated order and the
    difference (positive: the user pays more).

    Args:
        order_id: The order id, like "#W1234567".
        item_ids: Item ids in the order to replace; list an id twice to replace two units of it.
        new_item_ids: The replacement item ids, position by position; each must be an available
            variant of the same product.
        payment_method_id: Pays a positive difference (any method of the user; a gift card must cover
            it) or receives a negative one (the original payment method or a gift card of the user).
    """
    order = order_row(db, order_id)
    _require_status(order, "pending", "have their items modified")
    if order["items_modified"]:
        raise ToolError(f"the items of order {order_id} were already modified once; they cannot change again")
    plan, diff_cents = _plan_swap(db, order, item_ids, new_item_ids)
    method = _check_difference_method(db, order, payment_method_id, diff_cents)
    for line_id, new in plan:
        db.execute("UPDATE order_items SET item_id = ?, price_cents = ? WHERE id = ?",
                   (new["item_id"], new["price_cents"], line_id))
    if diff_cents:
        _move_money(db, order_id, method, "payment" if diff_cents > 0 else "refund", abs(diff_cents))
    db.execute("UPDATE orders SET items_modified = 1 WHERE order_id = ?", (order_id,))
    return {**order_view(db, order_id), "price_difference": dollars(diff_cents)}


@tool("write")
def return_delivered_order_items(db: sqlite3.Connection, order_id: str, item_ids: list[str],
                                 payment_method_id: str) -> dict[str, Any]:
    """Request the return of items of a delivered order; the refund is paid once they arrive back.

    An order can have one return or exchange, so all items go in one call. The result is the
    order, now "return requested", and the refund amount.

    Args:
        order_id: The order id, like "#W1234567".
        item_ids: Item ids in the order to return; list an id twice to return two units of it.
        payment_method_id: Receives the refund: the order's original payment method or a gift card
            of the user.
    """
    order = order_row(db, order_id)
    _require_status(order, "delivered", "be returned")
    if not item_ids:
        raise ToolError("item_ids must name at least one item to return")
    method = payment_method_row(db, order["user_id"], payment_method_id)
    _check_refund_target(db, order, method)
    lines = fetch_all(db, "SELECT id, item_id, price_cents FROM order_items WHERE order_id = ? ORDER BY id",
                      (order_id,))
    refund_cents, used = 0, set()
    for item_id in item_ids:
        line = next((ln for ln in lines if ln["item_id"] == item_id and ln["id"] not in used), None)
        if line is None:
            raise ToolError(f"item {item_id!r} is not in order {order_id} (or is listed more often than the "
                            "order holds it)")
        used.add(line["id"])
        refund_cents += line["price_cents"]
        db.execute("UPDATE order_items SET request = 'return' WHERE id = ?", (line["id"],))
    db.execute("UPDATE orders SET status = 'return requested', resolution_payment_method_id = ? "
               "WHERE order_id = ?", (payment_method_id, order_id))
    return {**order_view(db, order_id), "refund_amount": dollars(refund_cents)}


@tool("write")
def exchange_delivered_order_items(db: sqlite3.Connection, order_id: str, item_ids: list[str],
                                   new_item_ids: list[str], payment_method_id: str) -> dict[str, Any]:
    """Request the exchange of delivered items for other variants (options) of the same products.

    An order can have one return or exchange, so all items go in one call. The price difference
    is settled with the given payment method when the exchange is processed. The result is the
    order, now "exchange requested", and the difference (positive: the user pays more).

    Args:
        order_id: The order id, like "#W1234567".
        item_ids: Item ids in the order to exchange; list an id twice to exchange two units of it.
        new_item_ids: The replacement item ids, position by position; each must be an available
            variant of the same product.
        payment_method_id: Pays a positive difference (any method of the user; a gift card must cover
            it) or receives a negative one (the original payment method or a gift card of the user).
    """
    order = order_row(db, order_id)
    _require_status(order, "delivered", "be exchanged")
    plan, diff_cents = _plan_swap(db, order, item_ids, new_item_ids)
    _check_difference_method(db, order, payment_method_id, diff_cents)
    for line_id, new in plan:
        db.execute("UPDATE order_items SET request = 'exchange', new_item_id = ? WHERE id = ?",
                   (new["item_id"], line_id))
    db.execute("UPDATE orders SET status = 'exchange requested', resolution_payment_method_id = ? "
               "WHERE order_id = ?", (payment_method_id, order_id))
    return {**order_view(db, order_id), "price_difference": dollars(diff_cents)}


@tool("write")
def modify_user_address(db: sqlite3.Connection, user_id: str, address1: str, address2: str, city: str,
                        state: str, country: str, zip: str) -> dict[str, Any]:
    """Change a user's default address (existing orders keep theirs); returns the user's details.

    Args:
        user_id: The user id, like "sara_doe_1234".
        address1: Street and number, like "123 Maple Street".
        address2: Apartment or suite, or "" when there is none.
        city: The city.
        state: The state, like "TX".
        country: The country, like "USA".
        zip: The 5-digit zip code.
    """
    user_row(db, user_id)
    address = _checked_address((address1, address2, city, state, country, zip))
    db.execute("UPDATE users SET address1 = ?, address2 = ?, city = ?, state = ?, country = ?, zip = ? "
               "WHERE user_id = ?", (*address, user_id))
    return user_view(db, user_id)
