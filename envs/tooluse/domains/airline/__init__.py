"""The airline domain of rsigym/ToolUse-v0: members book, change and cancel flights under a policy.

``DOMAIN`` bundles the policy, the tools (``tools.TOOLS``), the seeded database builder
(``data_model.build_db``) and the task generator (``tasks.generate_tasks``).
"""

from __future__ import annotations

from pathlib import Path

from ...domain import Domain
from .data_model import build_db
from .tasks import generate_tasks
from .tools import TOOLS

__all__ = ["DOMAIN"]

DOMAIN = Domain(
    name="airline",
    policy=(Path(__file__).parent / "policy.md").read_text(encoding="utf-8"),
    tools=TOOLS,
    build_db=build_db,
    generate_tasks=generate_tasks,
    default_renames={"cancel_reservation": "void_booking",
                     "update_reservation_baggages": "modify_checked_luggage",
                     "send_certificate": "issue_travel_voucher"},
    paraphrases={
        "get_user_details": "Look up a member by user id and return their profile, membership tier, saved "
                            "travellers, payment methods with balances, and reservation ids.",
        "get_reservation_details": "Fetch one booking by its six-character code: route, trip type, cabin, each "
                                   "flight with status and fare paid, travellers, bags, insurance and payments.",
        "search_direct_flight": "Find nonstop flights open for booking between two airports on one day, showing "
                                "seats left and the fare in each cabin.",
        "search_onestop_flight": "Find itineraries with a single connection between two airports on one day; "
                                 "every result is a pair of consecutive flights.",
        "list_all_airports": "Return the codes and cities of all airports in the network.",
        "get_flight_status": "Report whether a given flight on a given day is available, delayed, cancelled or "
                             "has landed, with its schedule.",
        "calculate": "Work out a plain arithmetic expression (numbers, + - * / and brackets), rounded to cents.",
        "book_reservation": "Create and pay for a new booking for a member; all flights share one cabin and the "
                            "payments must sum to the total fare.",
        "cancel_reservation": "Void an entire booking and return every payment to the method it was made with.",
        "update_reservation_flights": "Replace a booking's flights and/or cabin, charging or refunding the fare "
                                      "difference on one card or gift card.",
        "update_reservation_passengers": "Fix travellers' names or birth dates on a booking without changing how "
                                         "many travellers there are.",
        "update_reservation_baggages": "Increase the number of checked bags on a booking; bags over the free "
                                       "allowance are billed at 50 dollars each.",
        "send_certificate": "Give an eligible member a travel voucher as compensation for a cancelled or delayed "
                            "flight on one of their bookings.",
        "transfer_to_human_agents": "Pass the conversation to a human representative, with a short summary of "
                                    "the issue.",
    },
    controlled=0,
)
