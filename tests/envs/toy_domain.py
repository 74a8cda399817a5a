"""A four-tool domain for fast tests of the tool-use machinery (not shipped)."""

from __future__ import annotations

import sqlite3

from rsigym.envs.tooluse import Domain, TaskDraft, ToolError, register_domain, tool


def build_db(seed: int) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE TABLE orders (order_id TEXT PRIMARY KEY, user_id TEXT, status TEXT, total REAL)")
    rows = [(f"#T{i:03d}", f"user_{i % 4}", ("pending", "delivered")[(i + seed) % 2], 10.0 + i) for i in range(12)]
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", rows)
    db.commit()
    return db


@tool("read")
def get_order(db: sqlite3.Connection, order_id: str) -> dict:
    """Look up one order by its id.

    Args:
        order_id: The order id, like "#T001".
    """
    row = db.execute("SELECT order_id, user_id, status, total FROM orders WHERE order_id = ?", (order_id,)).fetchone()
    if row is None:
        raise ToolError(f"no order {order_id}")
    return dict(zip(("order_id", "user_id", "status", "total"), row))


@tool("read")
def list_orders(db: sqlite3.Connection, user_id: str) -> list:
    """List the order ids of a user.

    Args:
        user_id: The user id.
    """
    return [r[0] for r in db.execute("SELECT order_id FROM orders WHERE user_id = ? ORDER BY order_id", (user_id,))]


@tool("write")
def cancel_order(db: sqlite3.Connection, order_id: str) -> dict:
    """Cancel a pending order; the refund goes to the original payment.

    Args:
        order_id: The order to cancel.
    """
    order = get_order.fn(db, order_id)
    if order["status"] != "pending":
        raise ToolError(f"only pending orders can be cancelled; {order_id} is {order['status']}")
    db.execute("UPDATE orders SET status = 'cancelled' WHERE order_id = ?", (order_id,))
    return {"order_id": order_id, "status": "cancelled", "refund": order["total"]}


@tool("write")
def return_order(db: sqlite3.Connection, order_id: str) -> dict:
    """Return a delivered order for a refund.

    Args:
        order_id: The order to return.
    """
    order = get_order.fn(db, order_id)
    if order["status"] != "delivered":
        raise ToolError(f"only delivered orders can be returned; {order_id} is {order['status']}")
    db.execute("UPDATE orders SET status = 'returned' WHERE order_id = ?", (order_id,))
    return {"order_id": order_id, "status": "returned", "refund": order["total"]}


def generate_tasks(db: sqlite3.Connection, seed: int) -> list[TaskDraft]:
    drafts = []
    for order_id, status, total in db.execute("SELECT order_id, status, total FROM orders ORDER BY order_id"):
        write = "cancel_order" if status == "pending" else "return_order"
        drafts.append(TaskDraft(
            template=write, instructions={"request": f"Please {write.split('_')[0]} my order {order_id}.",
                                          "answers": {"confirm": "yes"}, "intent": write},
            gold_actions=({"tool": "get_order", "arguments": {"order_id": order_id}},
                          {"tool": write, "arguments": {"order_id": order_id}}),
            required_outputs=(f"{total:.2f}",)))
    return drafts


DOMAIN = Domain(name="toy", policy="# Toy policy\n\nCancel pending orders; return delivered ones.",
                tools=(get_order, list_orders, cancel_order, return_order), build_db=build_db,
                generate_tasks=generate_tasks, default_renames={"cancel_order": "void_order"},
                paraphrases={"get_order": "Fetch an order's details.", "list_orders": "Show a user's orders.",
                             "cancel_order": "Stop an order that has not shipped.",
                             "return_order": "Send back an order that arrived."},
                controlled=6)
register_domain(DOMAIN)
