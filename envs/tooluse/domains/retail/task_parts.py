"""One request of a retail task, per template: what the user asks and the gold calls that serve it.

A builder looks at one order (and its owner) and returns a ``Part``, or ``None`` when the order
does not fit the template (wrong status, no variant to swap to, no gift card). ``tasks``
adds authentication and joins one or two parts into a ``TaskDraft``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .vocabulary import CITIES, STREETS
from .row_views import order_view, product_view, user_view

__all__ = ["Part", "Lookup", "BUILDERS", "call"]



@dataclass(frozen=True)
class Part:
    """One request: the user's words, their answers, the gold calls after authentication, outputs."""

    template: str
    ask: str  # a sentence starting with "I", so that two parts join as "First, I... Second, I..."
    intent: str
    actions: tuple[dict[str, Any], ...]
    answers: dict[str, str] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    must_refuse: bool = False


class Lookup:
    """Cached views of the (unchanging) template database."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self._cache: dict[tuple[str, str], dict[str, Any]] = {}
        self.product_names = [r[0] for r in db.execute("SELECT name FROM products ORDER BY id")]
        self.credit_cards = db.execute("SELECT payment_method_id, user_id FROM payment_methods "
                                       "WHERE source = 'credit_card' ORDER BY id").fetchall()

    def _view(self, kind: str, key: str, make: Callable[[sqlite3.Connection, str], dict[str, Any]]) -> dict[str, Any]:
        if (kind, key) not in self._cache:
            self._cache[kind, key] = make(self.db, key)
        return self._cache[kind, key]

    def order(self, order_id: str) -> dict[str, Any]:
        return self._view("order", order_id, order_view)

    def user(self, user_id: str) -> dict[str, Any]:
        return self._view("user", user_id, user_view)

    def product(self, product_id: str) -> dict[str, Any]:
        return self._view("product", product_id, product_view)


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def cents(dollars: float) -> int:
    return int(round(dollars * 100))


def money(amount_cents: int) -> str:
    return f"{abs(amount_cents) / 100:.2f}"


def options_text(options: dict[str, str]) -> str:
    return ", ".join(f"{name} {value}" for name, value in options.items())


def method_phrase(method: dict[str, Any]) -> str:
    if method["source"] == "credit_card":
        return f"my {method['brand'].capitalize()} card ending in {method['last_four']}"
    return "my PayPal account" if method["source"] == "paypal" else "my gift card"


def original_method_id(order: dict[str, Any]) -> str:
    net: dict[str, int] = {}
    for entry in order["payment_history"]:
        sign = 1 if entry["kind"] == "payment" else -1
        net[entry["payment_method_id"]] = net.get(entry["payment_method_id"], 0) + sign * cents(entry["amount"])
    return next(method for method, amount in net.items() if amount > 0)


def new_address(rng: np.random.Generator) -> tuple[dict[str, str], str]:
    """A random address as tool arguments, and as the user would say it."""
    city, state, prefix = CITIES[int(rng.integers(len(CITIES)))]
    fields = {"address1": f"{int(rng.integers(1, 9999))} {STREETS[int(rng.integers(len(STREETS)))]}",
              "address2": f"Apt {int(rng.integers(1, 60))}" if rng.random() < 0.5 else "",
              "city": city, "state": state, "country": "USA", "zip": f"{prefix}{int(rng.integers(100)):02d}"}
    unit = f", {fields['address2']}" if fields["address2"] else ""
    return fields, f"{fields['address1']}{unit}, {city}, {state} {fields['zip']}, USA"


def _pick(rng: np.random.Generator, options: list[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def cancel(lk: Lookup, order: dict[str, Any], user: dict[str, Any], rng: np.random.Generator) -> Part | None:
    if order["status"] != "pending":
        return None
    reason = _pick(rng, ["no longer needed", "ordered by mistake"])
    why = "I don't need it anymore" if reason == "no longer needed" else "I ordered it by mistake"
    oid = order["order_id"]
    return Part("cancel_pending_order", f"I want to cancel my order {oid}, because {why}.",
                f"cancel pending order {oid} ({reason})",
                (call("get_order_details", order_id=oid), call("cancel_pending_order", order_id=oid, reason=reason)),
                {"reason": why[0].upper() + why[1:] + "."}, (money(cents(order["total"])),))


def modify_address(lk: Lookup, order: dict[str, Any], user: dict[str, Any], rng: np.random.Generator) -> Part | None:
    if order["status"] != "pending":
        return None
    fields, spoken = new_address(rng)
    oid = order["order_id"]
    return Part("modify_order_address", f"I need order {oid} shipped to {spoken} instead.",
                f"change the shipping address of pending order {oid}",
                (call("get_order_details", order_id=oid), call("modify_pending_order_address", order_id=oid, **fields)),
                {"address": spoken})


def modify_payment(lk: Lookup, order: dict[str, Any], user: dict[str, Any], rng: np.random.Generator) -> Part | None:
    total = cents(order["total"])
    if order["status"] != "pending":
        return None
    old = original_method_id(order)
    options = [m for m in user["payment_methods"] if m["payment_method_id"] != old
               and (m["source"] != "gift_card" or cents(m["balance"]) >= total)]
    if not options:
        return None
    new = _pick(rng, options)
    oid, phrase = order["order_id"], method_phrase(new)
    return Part("modify_order_payment", f"I'd like to pay for order {oid} with {phrase} instead.",
                f"pay pending order {oid} with {new['payment_method_id']}",
                (call("get_order_details", order_id=oid), call("get_user_details", user_id=user["user_id"]),
                 call("modify_pending_order_payment", order_id=oid, payment_method_id=new["payment_method_id"])),
                {"payment": f"Please use {phrase}."}, (money(total),))


def _returner(gift_share: float) -> Callable[..., Part | None]:
    """Builder for returns; the refund goes to the user's gift card with probability ``gift_share``
    (when they have one), else to the original payment method."""

    def build(lk: Lookup, order: dict[str, Any], user: dict[str, Any], rng: np.random.Generator) -> Part | None:
        gift = next((m for m in user["payment_methods"] if m["source"] == "gift_card"), None)
        if order["status"] != "delivered" or (gift_share == 1 and gift is None):
            return None
        products = [item["product_id"] for item in order["items"]]
        items = [item for item in order["items"] if products.count(item["product_id"]) == 1]  # "the X": unambiguous
        if not items:
            return None
        count = 2 if len(items) >= 2 and rng.random() < 0.4 else 1
        chosen = [items[int(i)] for i in sorted(rng.choice(len(items), size=count, replace=False))]
        refund = sum(cents(item["price"]) for item in chosen)
        to_gift = gift is not None and rng.random() < gift_share
        oid, names = order["order_id"], " and the ".join(item["name"] for item in chosen)
        target = gift["payment_method_id"] if gift is not None and to_gift else original_method_id(order)
        where = "to my gift card" if to_gift else "to the original payment method"
        intent_where = "to the user's gift card" if to_gift else "to the original payment method"
        reads = (call("get_order_details", order_id=oid),) + ((call("get_user_details", user_id=user["user_id"]),)
                                                              if to_gift else ())
        return Part("return_delivered_items", f"I'd like to return the {names} from order {oid}"
                                              f"{', with the refund on my gift card' if to_gift else ''}.",
                    f"return {len(chosen)} item(s) of delivered order {oid}, refund {intent_where}",
                    reads + (call("return_delivered_order_items", order_id=oid,
                                  item_ids=[i["item_id"] for i in chosen], payment_method_id=target),),
                    {"refund": f"The refund should go {where}.", "payment": f"The refund should go {where}.",
                     "item": f"Just the {names}."}, (money(refund),))

    return build


def _swap(template: str, status: str, tool: str) -> Callable[..., Part | None]:
    """Builder for exchanges (delivered) and item modifications (pending): one item, same product."""

    def build(lk: Lookup, order: dict[str, Any], user: dict[str, Any], rng: np.random.Generator) -> Part | None:
        if order["status"] != status or order["items_modified"]:
            return None
        products = [item["product_id"] for item in order["items"]]
        for index in rng.permutation(len(order["items"])):
            item = order["items"][int(index)]
            if products.count(item["product_id"]) > 1:
                continue  # "the T-Shirt" would be ambiguous
            variants = [v for v in lk.product(item["product_id"])["variants"]
                        if v["available"] and v["item_id"] != item["item_id"] and v["price"] != item["price"]]
            if variants:
                new = _pick(rng, variants)
                break
        else:
            return None
        diff = cents(new["price"]) - cents(item["price"])
        original = original_method_id(order)
        methods = user["payment_methods"]
        if diff < 0:  # a refund: the original method or the user's gift card
            options = [m for m in methods if m["payment_method_id"] == original or m["source"] == "gift_card"]
        else:
            options = [m for m in methods if m["source"] != "gift_card" or cents(m["balance"]) >= diff]
        preferred = [m for m in options if m["payment_method_id"] == original]
        method = preferred[0] if preferred and rng.random() < 0.6 else _pick(rng, options)
        oid, name, phrase = order["order_id"], item["name"], method_phrase(method)
        wanted = options_text(new["options"])
        ask = (f"I received order {oid} and I'd like to exchange the {name} ({options_text(item['options'])}) "
               f"for the one with {wanted}." if status == "delivered" else
               f"I'd like to change the {name} in my order {oid} to the one with {wanted}; it hasn't shipped yet.")
        reads = [call("get_order_details", order_id=oid), call("get_product_details", product_id=item["product_id"])]
        if method["payment_method_id"] != original:
            reads.append(call("get_user_details", user_id=user["user_id"]))
        settle = "refund" if diff < 0 else "charge"
        return Part(template, ask, f"{template.replace('_', ' ')} in order {oid}: {name} -> {wanted}, {settle} via "
                                   f"{method['payment_method_id']}",
                    (*reads, call(tool, order_id=oid, item_ids=[item["item_id"]], new_item_ids=[new["item_id"]],
                                  payment_method_id=method["payment_method_id"])),
                    {"payment": f"Use {phrase} for the price difference.",
                     "refund": f"Use {phrase} for the price difference.",
                     "item": f"Only the {name}; nothing else changes."}, (money(diff),))

    return build


def modify_user_address(lk: Lookup, order: dict[str, Any] | None, user: dict[str, Any],
                        rng: np.random.Generator) -> Part | None:
    fields, spoken = new_address(rng)
    return Part("modify_user_address", f"I moved, so I need the default address on my account changed to {spoken}.",
                "change the user's default address",
                (call("get_user_details", user_id=user["user_id"]),
                 call("modify_user_address", user_id=user["user_id"], **fields)), {"address": spoken})


# In a refusal the user accepts no alternative, so an agent that offers one and acts on a "yes"
# changes the database where the policy wanted nothing changed.
_INSIST = "No, I only want exactly what I asked for; otherwise please leave everything as it is."


def _refusal(template: str, ask: str, intent: str, reads: tuple[dict[str, Any], ...],
             outputs: tuple[str, ...] = ()) -> Part:
    answers = {"confirm": _INSIST, "proceed": _INSIST, "instead": _INSIST, "shall i": _INSIST,
               "should i": _INSIST, "would you like": _INSIST, "go ahead": _INSIST,
               "reason": "I just don't need it anymore."}
    return Part(template, ask, intent, reads, answers, outputs, must_refuse=True)


def refuse_cancel(lk: Lookup, order: dict[str, Any], user: dict[str, Any], rng: np.random.Generator) -> Part | None:
    if order["status"] not in ("processed", "delivered"):
        return None
    oid = order["order_id"]
    return _refusal("refuse_cancel_not_pending", f"I want to cancel order {oid}; I don't need it anymore.",
                    f"cancel order {oid}, which is {order['status']} (not allowed)",
                    (call("get_order_details", order_id=oid),), (order["status"],))


def refuse_return(lk: Lookup, order: dict[str, Any], user: dict[str, Any], rng: np.random.Generator) -> Part | None:
    if order["status"] not in ("pending", "processed"):
        return None
    oid, item = order["order_id"], _pick(rng, order["items"])
    return _refusal("refuse_return_not_delivered", f"I want to return the {item['name']} from order {oid}.",
                    f"return an item of order {oid}, which is {order['status']} (not allowed)",
                    (call("get_order_details", order_id=oid),), (order["status"],))


def refuse_other_product(lk: Lookup, order: dict[str, Any], user: dict[str, Any],
                         rng: np.random.Generator) -> Part | None:
    if order["status"] != "delivered":
        return None
    oid, item = order["order_id"], _pick(rng, order["items"])
    other = _pick(rng, [name for name in lk.product_names if name != item["name"]])
    return _refusal("refuse_exchange_other_product",
                    f"I'd like to exchange the {item['name']} from order {oid} for the {other} instead.",
                    f"exchange a {item['name']} for a {other} (different product, not allowed)",
                    (call("get_order_details", order_id=oid),))


def refuse_foreign_refund(lk: Lookup, order: dict[str, Any], user: dict[str, Any],
                          rng: np.random.Generator) -> Part | None:
    if order["status"] != "delivered":
        return None
    oid, item = order["order_id"], _pick(rng, order["items"])
    foreign = _pick(rng, [method for method, owner in lk.credit_cards if owner != user["user_id"]])
    return _refusal("refuse_refund_foreign_method",
                    f"I want to return the {item['name']} from order {oid}, and the refund must go to my sister's "
                    f"card, payment method {foreign}.",
                    f"refund to {foreign}, a card of another user (not allowed)",
                    (call("get_order_details", order_id=oid), call("get_user_details", user_id=user["user_id"])))


def refuse_gift_balance(lk: Lookup, order: dict[str, Any], user: dict[str, Any],
                        rng: np.random.Generator) -> Part | None:
    gift = next((m for m in user["payment_methods"] if m["source"] == "gift_card"), None)
    if (order["status"] != "pending" or gift is None or cents(gift["balance"]) >= cents(order["total"])
            or gift["payment_method_id"] == original_method_id(order)):
        return None
    oid = order["order_id"]
    return _refusal("refuse_gift_card_balance", f"I'd like to pay for order {oid} with my gift card instead.",
                    f"pay order {oid} with a gift card whose balance is below the total (not allowed)",
                    (call("get_order_details", order_id=oid), call("get_user_details", user_id=user["user_id"])),
                    (money(cents(gift["balance"])),))


BUILDERS: dict[str, Callable[..., Part | None]] = {
    "cancel": cancel, "modify_order_address": modify_address, "modify_order_payment": modify_payment,
    "modify_order_items": _swap("modify_order_items", "pending", "modify_pending_order_items"),
    "return": _returner(0.4), "return_to_gift_card": _returner(1.0),
    "exchange": _swap("exchange_delivered_items", "delivered", "exchange_delivered_order_items"),
    "modify_user_address": modify_user_address,
    "refuse_cancel": refuse_cancel, "refuse_return": refuse_return, "refuse_other_product": refuse_other_product,
    "refuse_foreign_refund": refuse_foreign_refund, "refuse_gift_balance": refuse_gift_balance,
}
