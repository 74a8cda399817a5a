"""The retail domain: an online store's users, catalogue and orders, its policy, tools and tasks."""

from __future__ import annotations

from pathlib import Path

from ...domain import Domain
from .data_model import build_db
from .tasks import generate_tasks
from .tools import TOOLS

__all__ = ["DOMAIN"]

# Same meaning, new names: cancellations (8 of the 25 controlled tasks), exchanges (2) and
# order address changes (2) use these, so renaming moves 12 / 25 = 0.48 of the controlled split.
_RENAMES = {
    "cancel_pending_order": "void_open_order",
    "exchange_delivered_order_items": "swap_received_items",
    "modify_pending_order_address": "update_open_order_shipping",
}

_PARAPHRASES = {
    "find_user_id_by_email": "Return the id of the customer whose account uses this email address.",
    "find_user_id_by_name_zip": "Return the id of the customer with this first and last name whose home "
                                "address has this postal code.",
    "get_user_details": "Show a customer's account: name, email, home address, saved payment methods "
                        "(gift cards with their remaining balance) and the ids of their orders.",
    "get_order_details": "Show one order: whose it is, its state, where it ships, its items and prices, "
                         "the total and every payment or refund made for it.",
    "get_product_details": "Show one product with each of its variants: item id, option values, price and "
                           "whether it is in stock.",
    "list_product_types": "Show all products on sale, mapping each product name to its product id.",
    "calculate": "Work out an arithmetic expression (numbers, + - * / and brackets) and give the result "
                 "to the cent.",
    "transfer_to_human_agents": "Pass the customer to a human colleague, along with a summary of their problem.",
    "cancel_pending_order": "Call off an order that has not been processed yet; whatever was paid goes back "
                            "to the payment methods used, gift cards immediately, cards and PayPal within "
                            "5-7 business days.",
    "modify_pending_order_address": "Send an order that has not been processed yet to a different address; "
                                    "gives back the updated order.",
    "modify_pending_order_payment": "Move the charge of an unprocessed order to another of its owner's payment "
                                    "methods, refunding the previous one; gives back the updated order.",
    "modify_pending_order_items": "Replace items of an unprocessed order with other variants of the same "
                                  "products, settling the price difference.",
    "return_delivered_order_items": "Open a return for items of an order that has arrived; the money is paid "
                                    "back when the items come in.",
    "exchange_delivered_order_items": "Open an exchange of items of an order that has arrived for other variants "
                                      "of the same products.",
    "modify_user_address": "Update the home address saved on a customer's account; existing orders keep "
                           "the address they had.",
}

DOMAIN = Domain(
    name="retail",
    policy=Path(__file__).with_name("policy.md").read_text(encoding="utf-8"),
    tools=TOOLS,
    build_db=build_db,
    generate_tasks=generate_tasks,
    default_renames=_RENAMES,
    paraphrases=_PARAPHRASES,
    controlled=25,
)
