"""The function-calling track's tools, request phrasings and value generators.

Tools are the retail and airline tools of ``rsigym.envs.tooluse`` whose arguments are single
values (ids, codes, dates, counts), so every argument is one token of the request and an
argument is a pointer to an input position, as in BFCL's single-turn AST checker. Each tool has
several request phrasings; a few of them are the *triggers* on which the pool's systematic
wrong labels fire (see ``fc_pool``), so a student trained on noisy data learns a wrong rule
for exactly those phrasings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

__all__ = ["FcTool", "fc_tools", "tool_spec", "VALUE_MAKERS", "ASK_TEXT", "FILLERS", "FIRST_NAMES",
           "LAST_NAMES", "AIRPORTS", "CONFUSABLE", "ROLE_SWAPS"]

FIRST_NAMES = ("sara", "omar", "yusuf", "mei", "lucas", "amelia", "ivan", "noah", "fatima", "chen",
               "olivia", "raj", "ethan", "aisha", "mia", "liam", "sofia", "daniel", "emma", "juan")
LAST_NAMES = ("doe", "khan", "garcia", "lopez", "smith", "nguyen", "ito", "kim", "rossi", "patel",
              "muller", "silva", "brown", "novak", "ahmed", "moreau", "santos", "jensen", "li", "costa")
AIRPORTS = ("JFK", "LAX", "ORD", "SFO", "SEA", "BOS", "MIA", "DFW", "ATL", "DEN", "PHX", "LAS",
            "EWR", "IAH", "MSP", "DTW", "PHL", "CLT", "LGA", "MCO")
# Pleasantries a near duplicate may add; a duplicate detector may strip them.
FILLERS = ("please", "thanks", "hi", "hello", "kindly", "quickly")


def _digits(rng: np.random.Generator, n: int) -> str:
    return "".join(str(d) for d in rng.integers(0, 10, n))


def _letters(rng: np.random.Generator, n: int) -> str:
    return "".join(chr(65 + int(c)) for c in rng.integers(0, 26, n))


VALUE_MAKERS: dict[str, Callable[[np.random.Generator], str]] = {
    "order_id": lambda r: "#W" + _digits(r, 7),
    "user_id": lambda r: f"{FIRST_NAMES[r.integers(20)]}_{LAST_NAMES[r.integers(20)]}_{_digits(r, 4)}",
    "email": lambda r: f"{FIRST_NAMES[r.integers(20)]}.{LAST_NAMES[r.integers(20)]}{_digits(r, 3)}@example.com",
    "first_name": lambda r: FIRST_NAMES[r.integers(20)],
    "last_name": lambda r: LAST_NAMES[r.integers(20)],
    "zip": lambda r: _digits(r, 5),
    "product_id": lambda r: _digits(r, 10),
    "payment_method_id": lambda r: ("credit_card_", "gift_card_", "paypal_")[r.integers(3)] + _digits(r, 7),
    "payment_id": lambda r: ("credit_card_", "gift_card_", "certificate_")[r.integers(3)] + _digits(r, 7),
    "reservation_id": lambda r: _letters(r, 3) + _digits(r, 3),
    "flight_number": lambda r: "HAT" + _digits(r, 3),
    "date": lambda r: f"2024-{int(r.integers(5, 10)):02d}-{int(r.integers(1, 29)):02d}",
    "origin": lambda r: AIRPORTS[r.integers(len(AIRPORTS))],
    "destination": lambda r: AIRPORTS[r.integers(len(AIRPORTS))],
    "amount": lambda r: str(int(r.integers(1, 20)) * 50),
    "total_baggages": lambda r: str(int(r.integers(2, 6))),
    "nonfree_baggages": lambda r: str(int(r.integers(0, 2))),
}

# How the assistant asks for a missing parameter (the target of a clarifying question).
ASK_TEXT = "Could you tell me the {param}?"


@dataclass(frozen=True)
class FcTool:
    """A tool of the track: its domain, required parameters and request phrasings.

    ``phrasings`` use ``{param}`` slots; ``triggers`` are indices of phrasings on which a
    systematic wrong label may fire (confusable-tool swap, argument-role swap).
    """

    domain: str
    name: str
    params: tuple[str, ...]
    phrasings: tuple[str, ...]
    triggers: tuple[int, ...] = ()


_TOOLS: tuple[FcTool, ...] = (
    FcTool("retail", "find_user_id_by_email", ("email",), (
        "i forgot my account id , my email is {email}",
        "can you find my user id ? the email on file is {email}",
        "my email address is {email} , which account is mine",
        "look me up by email {email} please",
        "which user id belongs to {email}"), triggers=(3, 4)),
    FcTool("retail", "find_user_id_by_name_zip", ("first_name", "last_name", "zip"), (
        "my name is {first_name} {last_name} and my zip code is {zip}",
        "i am {first_name} {last_name} , zip {zip} , please find my account",
        "name : {last_name} , {first_name} ; zip code {zip}",
        "find the account of {first_name} {last_name} living in zip {zip}",
        "surname {last_name} first name {first_name} postcode {zip}"), triggers=(2, 4)),
    FcTool("retail", "get_user_details", ("user_id",), (
        "show me the profile of user {user_id}",
        "what payment methods does {user_id} have",
        "my user id is {user_id} , what do you have on file",
        "pull up the account {user_id}",
        "i need the details of customer {user_id}")),
    FcTool("retail", "get_order_details", ("order_id",), (
        "what is the status of order {order_id}",
        "can you check my order {order_id}",
        "where is my package from order {order_id}",
        "what items did i buy in {order_id}",
        "tell me what is in order {order_id} and its item list"), triggers=(3, 4)),
    FcTool("retail", "get_product_details", ("product_id",), (
        "what variants does product {product_id} come in",
        "is product {product_id} available in other sizes",
        "show the options for product {product_id}",
        "tell me about product {product_id}",
        "which colors exist for product {product_id}")),
    FcTool("retail", "modify_pending_order_payment", ("order_id", "payment_method_id"), (
        "change the payment of order {order_id} to {payment_method_id}",
        "please pay for {order_id} with {payment_method_id} instead",
        "switch order {order_id} to my {payment_method_id}",
        "use {payment_method_id} for my pending order {order_id}",
        "i want order {order_id} charged to {payment_method_id}")),
    FcTool("retail", "list_product_types", (), (
        "what kinds of products do you sell",
        "list every product type in your store",
        "which product categories are there",
        "what can i buy from you",
        "show me all product types")),
    FcTool("airline", "get_user_details", ("user_id",), (
        "my user id is {user_id} , what reservations do i have",
        "show the membership level of {user_id}",
        "look up my profile {user_id}",
        "what payment methods are saved for {user_id}",
        "how many certificates does {user_id} hold")),
    FcTool("airline", "get_reservation_details", ("reservation_id",), (
        "show me reservation {reservation_id}",
        "what flights are in booking {reservation_id}",
        "check my reservation {reservation_id} please",
        "how many passengers are on {reservation_id}",
        "what cabin is reservation {reservation_id} in")),
    FcTool("airline", "search_direct_flight", ("origin", "destination", "date"), (
        "find a direct flight from {origin} to {destination} on {date}",
        "are there direct flights from {origin} to {destination} on {date}",
        "i need a nonstop flight to {destination} from {origin} on {date}",
        "direct flights from {origin} to {destination} , {date} please",
        "show nonstop options to {destination} from {origin} for {date}"), triggers=(2, 4)),
    FcTool("airline", "search_onestop_flight", ("origin", "destination", "date"), (
        "find a flight with one stop from {origin} to {destination} on {date}",
        "i am fine with a connection , from {origin} to {destination} on {date}",
        "search one stop flights to {destination} from {origin} on {date}",
        "any connecting flights from {origin} to {destination} on {date}",
        "a layover is ok : to {destination} from {origin} on {date}"), triggers=(2, 4)),
    FcTool("airline", "get_flight_status", ("flight_number", "date"), (
        "what is the status of flight {flight_number} on {date}",
        "is {flight_number} delayed on {date}",
        "did flight {flight_number} leave on time on {date}",
        "check flight {flight_number} for {date}",
        "was {flight_number} cancelled on {date}")),
    FcTool("airline", "list_all_airports", (), (
        "which airports do you fly to",
        "list all the airports you serve",
        "what cities can i fly between",
        "show me your airport list",
        "give me every airport code")),
    FcTool("airline", "send_certificate", ("user_id", "reservation_id", "amount"), (
        "send a {amount} dollar certificate to {user_id} for reservation {reservation_id}",
        "compensate {user_id} with {amount} for the delay on {reservation_id}",
        "issue user {user_id} a certificate of {amount} , booking {reservation_id}",
        "give {user_id} {amount} dollars for {reservation_id}",
        "a {amount} certificate for {user_id} because of {reservation_id}")),
    FcTool("airline", "update_reservation_baggages", ("reservation_id", "total_baggages", "nonfree_baggages", "payment_id"), (
        "on {reservation_id} set {total_baggages} bags with {nonfree_baggages} paid , pay with {payment_id}",
        "update bags for {reservation_id} : total {total_baggages} , nonfree {nonfree_baggages} , using {payment_id}",
        "i want {nonfree_baggages} paid bags out of {total_baggages} on {reservation_id} , charge {payment_id}",
        "reservation {reservation_id} now has {total_baggages} bags , {nonfree_baggages} not free , {payment_id}",
        "charge {payment_id} for {nonfree_baggages} extra of {total_baggages} bags on {reservation_id}"), triggers=(2, 4)),
)

# Systematic wrong labels. A confusable-tool swap relabels a request for the key tool as a call
# to the partner tool (argument names mapped); an argument-role swap exchanges two arguments.
CONFUSABLE: dict[tuple[str, str], tuple[str, dict[str, str]]] = {
    ("airline", "search_direct_flight"): ("search_onestop_flight", {}),
    ("airline", "search_onestop_flight"): ("search_direct_flight", {}),
    ("retail", "get_order_details"): ("get_product_details", {"order_id": "product_id"}),
    ("retail", "find_user_id_by_email"): ("get_user_details", {"email": "user_id"}),
}
ROLE_SWAPS: dict[tuple[str, str], tuple[str, str]] = {
    ("airline", "search_direct_flight"): ("origin", "destination"),
    ("airline", "search_onestop_flight"): ("origin", "destination"),
    ("airline", "update_reservation_baggages"): ("total_baggages", "nonfree_baggages"),
    ("retail", "find_user_id_by_name_zip"): ("first_name", "last_name"),
}


@lru_cache(maxsize=1)
def fc_tools() -> tuple[FcTool, ...]:
    """Every tool of the track (checked against the tool-use domains' schemas once)."""
    for t in _TOOLS:
        spec = tool_spec(t.domain, t.name)
        required = tuple(spec["function"]["parameters"].get("required", ()))
        if set(required) != set(t.params):
            raise RuntimeError(f"{t.domain}.{t.name}: params {t.params} differ from the schema's {required}")
    return _TOOLS


@lru_cache(maxsize=None)
def tool_spec(domain: str, name: str) -> dict[str, Any]:
    """The OpenAI-style spec of a tool, from the tool-use domain that defines it."""
    from rsigym.envs.tooluse.catalog import get_domain

    for t in get_domain(domain).tools:
        if t.name == name:
            return t.spec()
    raise KeyError(f"no tool {name!r} in domain {domain!r}")
