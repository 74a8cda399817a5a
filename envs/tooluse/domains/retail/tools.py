"""The retail domain's tools: READ lookups here, WRITE actions in ``order_tools``; ``TOOLS`` lists both."""

from __future__ import annotations

import ast
import math
import operator
import sqlite3
from typing import Any, Callable

from ...toolkit import Tool, ToolError, tool
from .order_tools import (cancel_pending_order, exchange_delivered_order_items, modify_pending_order_address,
                          modify_pending_order_items, modify_pending_order_payment, modify_user_address,
                          return_delivered_order_items)
from .row_views import order_view, product_view, user_view

__all__ = ["TOOLS", "find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details", "get_order_details",
           "get_product_details", "list_product_types", "calculate", "transfer_to_human_agents"]


@tool("read")
def find_user_id_by_email(db: sqlite3.Connection, email: str) -> str:
    """Find a user's id from their email address (case does not matter).

    Args:
        email: The user's email, like "sara.doe1234@example.com".
    """
    row = db.execute("SELECT user_id FROM users WHERE email = ? COLLATE NOCASE", (email.strip(),)).fetchone()
    if row is None:
        raise ToolError(f"no user with email {email!r}")
    return str(row[0])


@tool("read")
def find_user_id_by_name_zip(db: sqlite3.Connection, first_name: str, last_name: str, zip: str) -> str:
    """Find a user's id from their first name, last name and the zip code of their address.

    Args:
        first_name: The user's first name, like "Sara".
        last_name: The user's last name, like "Doe".
        zip: The 5-digit zip code of the user's default address.
    """
    row = db.execute("SELECT user_id FROM users WHERE first_name = ? COLLATE NOCASE "
                     "AND last_name = ? COLLATE NOCASE AND zip = ?",
                     (first_name.strip(), last_name.strip(), zip.strip())).fetchone()
    if row is None:
        raise ToolError(f"no user named {first_name} {last_name} with zip {zip!r}")
    return str(row[0])


@tool("read")
def get_user_details(db: sqlite3.Connection, user_id: str) -> dict[str, Any]:
    """Get a user's profile: name, email, default address, payment methods (with gift card balances) and order ids.

    Args:
        user_id: The user id, like "sara_doe_1234".
    """
    return user_view(db, user_id)


@tool("read")
def get_order_details(db: sqlite3.Connection, order_id: str) -> dict[str, Any]:
    """Get an order: owner, status, shipping address, items with prices, total and payment history.

    Args:
        order_id: The order id, like "#W1234567" (with the leading "#").
    """
    return order_view(db, order_id)


@tool("read")
def get_product_details(db: sqlite3.Connection, product_id: str) -> dict[str, Any]:
    """Get a product and all its variants: item id, options, price and whether it is available.

    Args:
        product_id: The product id (10 digits); an order's items carry their product id.
    """
    return product_view(db, product_id)


@tool("read")
def list_product_types(db: sqlite3.Connection) -> dict[str, str]:
    """List every product the store sells, as {product name: product id}."""
    return {name: product_id for name, product_id in db.execute("SELECT name, product_id FROM products ORDER BY name")}


# Arithmetic by walking the syntax tree: ``eval`` would run any Python the agent writes.
_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_MAX_EXPRESSION_CHARS = 200  # bounds the size of integers a product of literals can reach


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ToolError(f"only numbers, + - * / and parentheses are allowed, found {ast.dump(node)[:60]}")


@tool("read")
def calculate(db: sqlite3.Connection, expression: str) -> float:
    """Evaluate an arithmetic expression and round the result to two decimals.

    Args:
        expression: Numbers, + - * / and parentheses, like "(54.20 + 19.99) * 2".
    """
    if len(expression) > _MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression is longer than {_MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        raise ToolError(f"cannot parse expression {expression!r}") from None
    try:
        result = float(_evaluate(tree))
    except ZeroDivisionError:
        raise ToolError(f"division by zero in {expression!r}") from None
    except OverflowError:
        raise ToolError(f"the result of {expression!r} is too large") from None
    if not math.isfinite(result):  # 1e308 * 10 is inf, inf - inf is nan: no JSON number says so
        raise ToolError(f"the result of {expression!r} is too large")
    return round(result, 2)


@tool("read")
def transfer_to_human_agents(db: sqlite3.Connection, summary: str) -> str:
    """Hand the conversation to a human agent, with a summary of the user's issue.

    Only for requests the policy and the tools cannot handle, or when the user insists on a human.
    It changes no data, hence a READ tool.

    Args:
        summary: What the user wants and what has been done so far.
    """
    if not summary.strip():
        raise ToolError("summary must describe the user's issue")
    return "Transfer successful: a human agent will take over this conversation."


TOOLS: tuple[Tool, ...] = (
    find_user_id_by_email, find_user_id_by_name_zip, get_user_details, get_order_details, get_product_details,
    list_product_types, calculate, transfer_to_human_agents,
    cancel_pending_order, modify_pending_order_address, modify_pending_order_payment, modify_pending_order_items,
    return_delivered_order_items, exchange_delivered_order_items, modify_user_address,
)
