import json

import pytest

from rsigym.envs.tooluse.domain import (DB_SEED, TASK_SEED, InvalidTask, TaskDraft, build_tasks, copy_db,
                                        db_sha256, replay, template_db)
from rsigym.envs.tooluse.domains.retail import DOMAIN
from rsigym.envs.tooluse.toolkit import call_tool


@pytest.fixture
def db():
    return copy_db(template_db(DOMAIN))


def run(db, name, **arguments):
    return call_tool(DOMAIN.tool(name), db, arguments)


def first_order(db, status, where="1"):
    row = db.execute(f"SELECT order_id, user_id FROM orders WHERE status = ? AND {where} ORDER BY id",
                     (status,)).fetchone()
    assert row is not None, status
    return row


def test_build_db_is_deterministic_and_large_enough():
    first, again, other = DOMAIN.build_db(DB_SEED), DOMAIN.build_db(DB_SEED), DOMAIN.build_db(DB_SEED + 1)
    assert db_sha256(first) == db_sha256(again) != db_sha256(other)
    count = lambda table: first.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: E731
    assert count("users") >= 200 and count("orders") >= 500 and count("products") >= 50
    assert first.execute("SELECT MIN(n) FROM (SELECT COUNT(*) n FROM items GROUP BY product_id)").fetchone()[0] >= 4
    gift_cards = first.execute("SELECT COUNT(*), SUM(balance_cents > 0) FROM payment_methods "
                               "WHERE source = 'gift_card'").fetchone()
    assert gift_cards[0] >= 50 and gift_cards[1] >= 50
    statuses = {r[0] for r in first.execute("SELECT DISTINCT status FROM orders")}
    assert statuses == {"pending", "processed", "delivered", "cancelled", "return requested", "exchange requested"}


def test_tools_have_descriptions_schemas_and_both_kinds():
    assert 12 <= len(DOMAIN.tools) <= 16
    assert len({t.name for t in DOMAIN.tools}) == len(DOMAIN.tools)
    assert {t.kind for t in DOMAIN.tools} == {"read", "write"}
    for t in DOMAIN.tools:
        assert t.description and t.parameters["type"] == "object"
        for name, prop in t.parameters["properties"].items():
            assert prop.get("description"), (t.name, name)
    assert set(DOMAIN.paraphrases) == {t.name for t in DOMAIN.tools}
    assert all(DOMAIN.paraphrases[t.name] != t.description for t in DOMAIN.tools)
    assert {DOMAIN.tool(n).kind for n in DOMAIN.default_renames} == {"write"}
    assert not set(DOMAIN.default_renames.values()) & {t.name for t in DOMAIN.tools}
    for rule in ("Authenticate the user", "no longer needed", "ordered by mistake", "explicit\n  confirmation",
                 "Only a **pending** order", "Only a **delivered** order", "**same product**"):
        assert rule in DOMAIN.policy, rule


def test_lookups_find_users_by_email_and_name_zip(db):
    user_id, email, first, last, zip_code = db.execute(
        "SELECT user_id, email, first_name, last_name, zip FROM users ORDER BY id LIMIT 1").fetchone()
    assert run(db, "find_user_id_by_email", email=email.upper()) == (user_id, None)
    assert run(db, "find_user_id_by_name_zip", first_name=first, last_name=last, zip=zip_code) == (user_id, None)
    assert run(db, "find_user_id_by_email", email="nobody@example.com")[1] == "no user with email 'nobody@example.com'"


def test_cancel_delivered_order_is_refused_and_changes_nothing(db):
    order_id, _ = first_order(db, "delivered")
    before = db_sha256(db)
    result, error = run(db, "cancel_pending_order", order_id=order_id, reason="no longer needed")
    assert result is None and error == f"order {order_id} is 'delivered': only pending orders can be cancelled"
    assert db_sha256(db) == before


def test_cancel_pending_order_refunds_to_gift_card_at_once(db):
    order_id, _ = first_order(db, "pending", "order_id IN (SELECT order_id FROM payments "
                                             "WHERE payment_method_id LIKE 'gift_card_%')")
    (method, paid_cents), = db.execute("SELECT payment_method_id, amount_cents FROM payments WHERE order_id = ?",
                                       (order_id,)).fetchall()
    balance = db.execute("SELECT balance_cents FROM payment_methods WHERE payment_method_id = ?",
                         (method,)).fetchone()[0]
    result, error = run(db, "cancel_pending_order", order_id=order_id, reason="ordered by mistake")
    assert error is None and result["status"] == "cancelled" and result["refund_total"] == round(paid_cents / 100, 2)
    assert result["payment_history"][-1] == {"kind": "refund", "payment_method_id": method,
                                             "amount": round(paid_cents / 100, 2)}
    assert db.execute("SELECT balance_cents FROM payment_methods WHERE payment_method_id = ?",
                      (method,)).fetchone()[0] == balance + paid_cents
    again = run(db, "cancel_pending_order", order_id=order_id, reason="ordered by mistake")
    assert again == (None, f"order {order_id} is 'cancelled': only pending orders can be cancelled")


def test_cancel_reason_and_order_id_format_are_checked(db):
    order_id, _ = first_order(db, "pending")
    assert "is not one of" in run(db, "cancel_pending_order", order_id=order_id, reason="found it cheaper")[1]
    assert "must look like '#W1234567'" in run(db, "get_order_details", order_id=order_id.lstrip("#"))[1]


def test_return_pending_order_is_refused(db):
    order_id, user_id = first_order(db, "pending")
    item_id, method = db.execute("SELECT o.item_id, p.payment_method_id FROM order_items o JOIN payments p "
                                 "USING (order_id) WHERE order_id = ?", (order_id,)).fetchone()
    before = db_sha256(db)
    error = run(db, "return_delivered_order_items", order_id=order_id, item_ids=[item_id], payment_method_id=method)[1]
    assert error == f"order {order_id} is 'pending': only delivered orders can be returned"
    assert db_sha256(db) == before


def test_refund_to_a_foreign_payment_method_is_refused(db):
    order_id, user_id = first_order(db, "delivered")
    item_id = db.execute("SELECT item_id FROM order_items WHERE order_id = ?", (order_id,)).fetchone()[0]
    foreign = db.execute("SELECT payment_method_id FROM payment_methods WHERE user_id != ? ORDER BY id",
                         (user_id,)).fetchone()[0]
    before = db_sha256(db)
    error = run(db, "return_delivered_order_items", order_id=order_id, item_ids=[item_id], payment_method_id=foreign)[1]
    assert error == f"payment method {foreign!r} does not belong to user {user_id!r}"
    own_card = db.execute("SELECT payment_method_id FROM payment_methods WHERE user_id = ? AND source != 'gift_card' "
                          "AND payment_method_id NOT IN (SELECT payment_method_id FROM payments WHERE order_id = ?)",
                          (user_id, order_id)).fetchone()
    if own_card is not None:  # the user's own card is still not where the money came from
        error = run(db, "return_delivered_order_items", order_id=order_id, item_ids=[item_id],
                    payment_method_id=own_card[0])[1]
        assert error.startswith("a refund goes to the original payment method")
    assert db_sha256(db) == before


def test_exchange_needs_same_product_and_marks_the_order(db):
    order_id, user_id = first_order(db, "delivered", "order_id IN (SELECT order_id FROM payments "
                                                     "WHERE payment_method_id LIKE 'credit_card_%')")
    item_id, product_id = db.execute("SELECT o.item_id, i.product_id FROM order_items o JOIN items i USING (item_id) "
                                     "WHERE o.order_id = ? ORDER BY o.id", (order_id,)).fetchone()
    method = db.execute("SELECT payment_method_id FROM payments WHERE order_id = ?", (order_id,)).fetchone()[0]
    other = db.execute("SELECT item_id FROM items WHERE product_id != ? AND available = 1 ORDER BY id",
                       (product_id,)).fetchone()[0]
    before = db_sha256(db)
    error = run(db, "exchange_delivered_order_items", order_id=order_id, item_ids=[item_id], new_item_ids=[other],
                payment_method_id=method)[1]
    assert "can only be swapped for another variant of the same product" in error and db_sha256(db) == before
    sibling, sibling_cents = db.execute("SELECT item_id, price_cents FROM items WHERE product_id = ? AND item_id != ? "
                                        "AND available = 1 ORDER BY id", (product_id, item_id)).fetchone()
    paid_cents = db.execute("SELECT price_cents FROM order_items WHERE order_id = ? AND item_id = ?",
                            (order_id, item_id)).fetchone()[0]
    result, error = run(db, "exchange_delivered_order_items", order_id=order_id, item_ids=[item_id],
                        new_item_ids=[sibling], payment_method_id=method)
    assert error is None and result["status"] == "exchange requested"
    assert result["price_difference"] == round((sibling_cents - paid_cents) / 100, 2)
    assert result["items"][0] | {"request": "exchange", "new_item_id": sibling} == result["items"][0]


def test_items_of_a_pending_order_change_only_once(db):
    order_id, _ = first_order(db, "pending", "order_id IN (SELECT order_id FROM payments "
                                             "WHERE payment_method_id LIKE 'credit_card_%')")
    item_id, product_id = db.execute("SELECT o.item_id, i.product_id FROM order_items o JOIN items i USING (item_id) "
                                     "WHERE o.order_id = ? ORDER BY o.id", (order_id,)).fetchone()
    method = db.execute("SELECT payment_method_id FROM payments WHERE order_id = ?", (order_id,)).fetchone()[0]
    sibling = db.execute("SELECT item_id FROM items WHERE product_id = ? AND item_id != ? AND available = 1",
                         (product_id, item_id)).fetchone()[0]
    result, error = run(db, "modify_pending_order_items", order_id=order_id, item_ids=[item_id],
                        new_item_ids=[sibling], payment_method_id=method)
    assert error is None and result["items_modified"] and result["items"][0]["item_id"] == sibling
    error = run(db, "modify_pending_order_items", order_id=order_id, item_ids=[sibling], new_item_ids=[item_id],
                payment_method_id=method)[1]
    assert "already modified once" in error


def test_calculate_does_arithmetic_only(db):
    assert run(db, "calculate", expression="(54.20 + 19.99) * 2 - 10 / 4") == (145.88, None)
    assert run(db, "calculate", expression="-3 + +2") == (-1.0, None)
    assert "only numbers" in run(db, "calculate", expression="__import__('os').getcwd()")[1]
    assert "only numbers" in run(db, "calculate", expression="2 ** 1000")[1]
    assert "division by zero" in run(db, "calculate", expression="1 / (2 - 2)")[1]
    assert "cannot parse" in run(db, "calculate", expression="2 +")[1]


def test_task_catalogue_is_valid_and_deterministic():
    tasks = build_tasks(DOMAIN)  # replays every gold action: any policy violation raises
    splits = [t.split for t in tasks]
    assert len(tasks) >= 120 and splits.count("controlled") == 25 == DOMAIN.controlled
    assert splits.count("train") > 0 and splits.count("test") > 0
    assert set(splits[:25]) == {"controlled"}
    templates = {t.template for t in tasks}
    assert {"cancel_pending_order", "return_delivered_items", "exchange_delivered_items", "modify_order_items",
            "modify_order_address", "modify_order_payment", "modify_user_address", "multi_intent"} <= templates
    write_tools = {t.name for t in DOMAIN.tools if t.kind == "write"}
    for task in tasks:
        kinds = [DOMAIN.tool(a["tool"]).kind for a in task.gold_actions]
        assert kinds[0] == "read" and task.instructions["request"] and task.instructions["answers"]["confirm"]
        if task.must_refuse:
            assert set(kinds) == {"read"}, task.task_id
        else:
            assert "write" in kinds, task.task_id
        if task.template == "multi_intent":
            assert sum(a["tool"] in write_tools for a in task.gold_actions) == 2
    first = DOMAIN.generate_tasks(copy_db(template_db(DOMAIN)), TASK_SEED)
    second = DOMAIN.generate_tasks(DOMAIN.build_db(DB_SEED), TASK_SEED)
    assert repr(first) == repr(second)
    assert json.dumps([d.instructions for d in first]) == json.dumps([d.instructions for d in second])


def test_controlled_split_mix():
    controlled = [t for t in build_tasks(DOMAIN) if t.split == "controlled"]
    counts = {name: sum(t.template == name for t in controlled) for name in {t.template for t in controlled}}
    assert counts["cancel_pending_order"] == 8 and counts["return_delivered_items"] == 6
    assert counts["modify_order_address"] + counts["modify_order_payment"] == 4
    assert counts["exchange_delivered_items"] + counts["modify_order_items"] == 4
    assert sum(t.must_refuse for t in controlled) == 3


def test_required_amounts_appear_in_the_gold_results():
    base = template_db(DOMAIN)
    for task in build_tasks(DOMAIN):
        results = replay(DOMAIN, copy_db(base), task.gold_actions)
        numbers = set()

        def collect(value):
            if isinstance(value, dict):
                for v in value.values():
                    collect(v)
            elif isinstance(value, list):
                for v in value:
                    collect(v)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                numbers.add(f"{abs(value):.2f}")
            elif isinstance(value, str):
                numbers.add(value)

        collect(results)
        for output in task.required_outputs:
            assert output in numbers, (task.task_id, output)


def test_policy_violating_gold_fails_validation():
    db = copy_db(template_db(DOMAIN))
    order_id, user_id = first_order(db, "delivered")
    email = db.execute("SELECT email FROM users WHERE user_id = ?", (user_id,)).fetchone()[0]
    draft = TaskDraft("bad_cancel", {"request": f"cancel {order_id}"},
                      ({"tool": "find_user_id_by_email", "arguments": {"email": email}},
                       {"tool": "cancel_pending_order",
                        "arguments": {"order_id": order_id, "reason": "no longer needed"}}))
    with pytest.raises(InvalidTask, match="only pending orders can be cancelled"):
        replay(DOMAIN, db, draft.gold_actions)


def test_default_renames_move_a_known_share_of_the_controlled_split():
    controlled = [t for t in build_tasks(DOMAIN) if t.split == "controlled"]
    renamed = set(DOMAIN.default_renames)
    share = sum(any(a["tool"] in renamed for a in t.gold_actions) for t in controlled) / len(controlled)
    assert share == 12 / 25
    assert 0 < share < 1


def test_gold_actions_earn_full_reward_in_the_env():
    import gymnasium as gym

    import rsigym.envs  # noqa: F401  (registers rsigym/ToolUse-v0)

    env = gym.make("rsigym/ToolUse-v0", domain="retail").unwrapped
    for task in build_tasks(DOMAIN):
        env.reset(seed=0, options={"task_id": task.task_id})
        for action in task.gold_actions:
            obs, _, _, _, info = env.step(action)
            assert "error" not in info, (task.task_id, obs["text"][:200])
        _, reward, terminated, _, _ = env.step({"message": "Done: " + ", ".join(task.required_outputs) + "."})
        assert terminated and reward == 1.0, task.task_id
