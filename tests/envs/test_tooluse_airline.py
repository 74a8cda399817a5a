"""The airline domain of ToolUse-v0: database, tools and their policy checks, task catalogue."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rsigym.envs.tooluse.domain import (DB_SEED, TASK_SEED, InvalidTask, TaskDraft, build_tasks, copy_db,
                                        db_sha256, open_episode_db, replay, state_sha256)
from rsigym.envs.tooluse.domains.airline import DOMAIN
from rsigym.envs.tooluse.domains.airline.data_model import build_db
from rsigym.envs.tooluse.domains.airline.drafting import Snapshot
from rsigym.envs.tooluse.domains.airline.tasks import generate_tasks
from rsigym.envs.tooluse.toolkit import call_tool


@pytest.fixture(scope="module")
def base():
    return build_db(DB_SEED)


@pytest.fixture(scope="module")
def snap(base):
    return Snapshot.of(base)


def run(db, name, **arguments):
    return call_tool(DOMAIN.tool(name), db, arguments)


def first(items, predicate):
    return next(item for item in items if predicate(item))


def payment(user, kind):
    return first(user["payment_methods"].items(), lambda m: m[1]["kind"] == kind)[0]


# --- database ---------------------------------------------------------------------------------

def test_build_db_is_deterministic_in_the_seed(base):
    assert db_sha256(build_db(DB_SEED)) == db_sha256(base)
    assert db_sha256(build_db(DB_SEED + 1)) != db_sha256(base)


def test_build_db_sizes(base):
    count = lambda sql: base.execute(sql).fetchone()[0]  # noqa: E731
    assert count("SELECT COUNT(*) FROM users") >= 200
    assert count("SELECT COUNT(*) FROM reservations") >= 300
    assert count("SELECT COUNT(*) FROM flights") >= 40
    assert count("SELECT COUNT(*) FROM flight_dates WHERE economy_seats > 0 AND business_seats > 0") > 500
    assert count("SELECT COUNT(*) FROM payment_methods WHERE kind = 'gift_card' AND balance_cents > 0") >= 50
    statuses = {s for (s,) in base.execute("SELECT DISTINCT status FROM flight_dates")}
    assert statuses == {"available", "delayed", "cancelled", "landed"}


# --- tools ------------------------------------------------------------------------------------

def test_tools_have_schemas_and_both_kinds():
    assert 12 <= len(DOMAIN.tools) <= 16
    assert {t.kind for t in DOMAIN.tools} == {"read", "write"}
    for t in DOMAIN.tools:
        assert t.description and t.parameters["type"] == "object"
        assert all("description" in p for p in t.parameters["properties"].values()), t.name
    assert set(DOMAIN.paraphrases) == {t.name for t in DOMAIN.tools}
    assert all(DOMAIN.tool(name).kind == "write" for name in DOMAIN.default_renames)


def test_calculate_is_arithmetic_only(base):
    assert run(base, "calculate", expression="(120 + 80) * 2 - 15.5") == (384.5, None)
    assert run(base, "calculate", expression="-3 / 4") == (-0.75, None)
    for bad in ("__import__('os')", "2 ** 10", "1 / 0", "x + 1"):
        result, error = run(base, "calculate", expression=bad)
        assert result is None and error


def test_basic_economy_flights_cannot_change(base, snap):
    res = first(snap.open_reservations(), lambda r: r["cabin"] == "basic_economy" and r["flight_type"] == "one_way"
                and len(r["flights"]) == 1 and r["flights"][0]["status"] == "available")
    leg = res["flights"][0]
    other = base.execute("SELECT date FROM flight_dates WHERE flight_number = ? AND date > ? AND status = 'available'",
                         (leg["flight_number"], leg["date"])).fetchone()[0]
    db = copy_db(base)
    before = db_sha256(db)
    card = payment(snap.users[res["user_id"]], "credit_card")
    result, error = run(db, "update_reservation_flights", reservation_id=res["reservation_id"], cabin="basic_economy",
                        flights=[{"flight_number": leg["flight_number"], "date": other}], payment_id=card)
    assert result is None and "basic economy" in error and "cannot be changed" in error
    assert db_sha256(db) == before
    # its cabin may still be upgraded on the same flights
    seats = base.execute("SELECT economy_seats FROM flight_dates WHERE flight_number = ? AND date = ?",
                         (leg["flight_number"], leg["date"])).fetchone()[0]
    if seats >= res["pax"]:
        result, error = run(db, "update_reservation_flights", reservation_id=res["reservation_id"], cabin="economy",
                            flights=[{"flight_number": leg["flight_number"], "date": leg["date"]}], payment_id=card)
        assert error is None and result["price_difference"] > 0


def test_ineligible_cancellation_is_refused(base, snap):
    res = first(snap.open_reservations(), lambda r: r["cabin"] != "business" and r["insurance"] == "no"
                and r["created_at"] < "2024-05-14 15:00:00" and all(f["status"] != "cancelled" for f in r["flights"]))
    db = copy_db(base)
    before = db_sha256(db)
    result, error = run(db, "cancel_reservation", reservation_id=res["reservation_id"], reason="change_of_plan")
    assert result is None and "cannot be cancelled" in error and "more than 24 hours ago" in error
    result, error = run(db, "cancel_reservation", reservation_id=res["reservation_id"],
                        reason="airline_cancelled_flight")
    assert result is None and "no flight" in error
    assert db_sha256(db) == before


def test_departed_reservation_cannot_be_cancelled(base, snap):
    res = first(snap.reservations, lambda r: r["status"] == "active" and r["departed"] and r["cabin"] == "business")
    result, error = run(copy_db(base), "cancel_reservation", reservation_id=res["reservation_id"], reason="other")
    assert result is None and "already departed" in error


def test_eligible_cancellation_refunds_original_payments(base, snap):
    res = first(snap.open_reservations(), lambda r: r["cabin"] == "business"
                and any(p["payment_id"].startswith("gift_card") for p in r["payment_history"]))
    paid = sum(p["amount"] for p in res["payment_history"])
    gift = res["payment_history"][0]["payment_id"]
    balance = snap.users[res["user_id"]]["payment_methods"][gift]["balance"]
    db = copy_db(base)
    result, error = run(db, "cancel_reservation", reservation_id=res["reservation_id"], reason="change_of_plan")
    assert error is None and result["refund_total"] == paid
    after = run(db, "get_user_details", user_id=res["user_id"])[0]["payment_methods"][gift]["balance"]
    assert after == balance + paid
    assert run(db, "get_reservation_details", reservation_id=res["reservation_id"])[0]["status"] == "cancelled"


def _richest_gift_card(snap):
    """The regular member holding the largest gift card balance, and that card."""
    cards = [(m["balance"], u["user_id"], p) for u in snap.users.values() if u["membership"] == "regular"
             for p, m in u["payment_methods"].items() if m["kind"] == "gift_card"]
    balance, user_id, card = max(cards)
    return snap.users[user_id], card, balance


def _trip(base, clause):
    """A one-way trip on the first bookable flight date matching ``clause``."""
    fn, day, origin, destination = base.execute(
        "SELECT d.flight_number, d.date, f.origin, f.destination FROM flight_dates d JOIN flights f "
        f"USING (flight_number) WHERE d.status = 'available' AND d.date > '2024-05-16' AND {clause} "
        "ORDER BY d.flight_number, d.date").fetchone()
    return {"origin": origin, "destination": destination, "flight_type": "one_way",
            "flights": [{"flight_number": fn, "date": day}]}


def test_overbooking_a_full_cabin_fails(base, snap):
    user, trip = _richest_gift_card(snap)[0], _trip(base, "d.business_seats = 0")
    card = payment(user, "credit_card")
    db = copy_db(base)
    result, error = run(db, "book_reservation", user_id=user["user_id"], cabin="business", **trip,
                        passengers=[{"first_name": "A", "last_name": "B", "dob": "1990-01-01"}],
                        payment_methods=[{"payment_id": card, "amount": 1.0}], total_baggages=0,
                        nonfree_baggages=0, insurance=False)
    assert result is None and "0 business seats left" in error
    assert db_sha256(db) == db_sha256(base)


def test_booking_prices_and_charges_by_hand(base, snap):
    user, gift, balance = _richest_gift_card(snap)
    max_fare_cents = int((balance - 2 * 30 - 50) / 2 * 100)
    trip = _trip(base, f"d.economy_seats >= 2 AND d.economy_price_cents <= {max_fare_cents}")
    flight = trip["flights"][0]
    seats, fare_cents = base.execute(
        "SELECT economy_seats, economy_price_cents FROM flight_dates WHERE flight_number = ? AND date = ?",
        (flight["flight_number"], flight["date"])).fetchone()
    # regular member in economy: 1 free bag per passenger, so 3 bags for 2 passengers -> 1 paid bag
    total = 2 * fare_cents / 100 + 2 * 30 + 1 * 50
    people = [{"first_name": "Ann", "last_name": "Lee", "dob": "1990-02-03"},
              {"first_name": "Bo", "last_name": "Lee", "dob": "1992-04-05"}]
    arguments = dict(user_id=user["user_id"], cabin="economy", **trip, passengers=people, total_baggages=3,
                     insurance=True, payment_methods=[{"payment_id": gift, "amount": total}])
    _, error = run(copy_db(base), "book_reservation", **arguments, nonfree_baggages=0)
    assert "has 1 non-free bags" in error
    _, error = run(copy_db(base), "book_reservation", **{**arguments, "payment_methods": [
        {"payment_id": gift, "amount": total - 1}]}, nonfree_baggages=1)
    assert "total price" in error
    dbs = [copy_db(base), copy_db(base)]
    booked = [run(db, "book_reservation", **arguments, nonfree_baggages=1)[0] for db in dbs]
    assert booked[0]["total_price"] == total and booked[0] == booked[1]  # same actions, same new id
    assert db_sha256(dbs[0]) == db_sha256(dbs[1])
    db = dbs[0]
    assert run(db, "get_user_details", user_id=user["user_id"])[0]["payment_methods"][gift]["balance"] == \
        user["payment_methods"][gift]["balance"] - total
    assert db.execute("SELECT economy_seats FROM flight_dates WHERE flight_number = ? AND date = ?",
                      (flight["flight_number"], flight["date"])).fetchone()[0] == seats - 2
    # bags are added at 50 dollars each beyond the allowance; passengers cannot be added
    rid = booked[0]["reservation_id"]
    card = payment(user, "credit_card")
    result, error = run(db, "update_reservation_baggages", reservation_id=rid, total_baggages=5, nonfree_baggages=3,
                        payment_id=card)
    assert error is None and result["charge"] == 100.0
    _, error = run(db, "update_reservation_passengers", reservation_id=rid, passengers=people + people[:1])
    assert "number of passengers" in error


def test_compensation_follows_the_policy(base, snap):
    res = first(snap.reservations, lambda r: r["status"] == "active" and r["cabin"] == "business"
                and any(f["status"] == "delayed" for f in r["flights"])
                and all(f["status"] != "cancelled" for f in r["flights"]))
    db = copy_db(base)
    _, error = run(db, "send_certificate", user_id=res["user_id"], reservation_id=res["reservation_id"], amount=500.0)
    assert f"{50 * res['pax']:.2f}" in error
    result, error = run(db, "send_certificate", user_id=res["user_id"], reservation_id=res["reservation_id"],
                        amount=50.0 * res["pax"])
    assert error is None and result["amount"] == 50.0 * res["pax"]
    _, error = run(db, "send_certificate", user_id=res["user_id"], reservation_id=res["reservation_id"],
                   amount=50.0 * res["pax"])
    assert "already compensated" in error
    regular = first(snap.reservations, lambda r: r["cabin"] != "business" and r["insurance"] == "no"
                    and snap.users[r["user_id"]]["membership"] == "regular"
                    and any(f["status"] == "delayed" for f in r["flights"]))
    _, error = run(db, "send_certificate", user_id=regular["user_id"], reservation_id=regular["reservation_id"],
                   amount=50.0 * regular["pax"])
    assert "not eligible" in error


# --- tasks ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tasks():
    return build_tasks(DOMAIN)


def test_catalogue_size_and_splits(tasks):
    assert len(tasks) >= 110
    splits = {t.split for t in tasks}
    assert splits == {"train", "test"}
    templates = {t.template for t in tasks}
    assert templates == {t.template for t in tasks if t.split == "test"}  # interleaved: every template in test
    refusals = [t for t in tasks if t.must_refuse]
    assert len(refusals) >= 20
    reads = {t.name for t in DOMAIN.tools if t.kind == "read"}
    assert all(a["tool"] in reads for t in refusals for a in t.gold_actions)
    assert all(any(a["tool"] not in reads for a in t.gold_actions) for t in tasks if not t.must_refuse)
    assert len({t.instructions["request"] for t in tasks}) == len(tasks)


def test_required_outputs_come_from_the_gold_end_state(tasks):
    task = first(tasks, lambda t: t.template == "add_baggage")
    db = open_episode_db(DOMAIN)
    results = replay(DOMAIN, db, task.gold_actions)
    assert task.required_outputs == (str(int(results[-1]["charge"])),)
    assert state_sha256(DOMAIN, db) == task.gold_db_sha256


def test_generation_is_deterministic(base):
    def as_json(drafts):
        return json.dumps([dataclasses.asdict(d) for d in drafts], sort_keys=True)
    assert as_json(generate_tasks(copy_db(base), TASK_SEED)) == as_json(generate_tasks(copy_db(base), TASK_SEED))


def test_policy_violating_gold_fails_validation(base, snap, tasks):
    task = first(tasks, lambda t: t.template == "refuse_change_basic_economy")
    rid = task.gold_actions[1]["arguments"]["reservation_id"]
    res = first(snap.reservations, lambda r: r["reservation_id"] == rid)
    leg = res["flights"][0]
    other = base.execute("SELECT date FROM flight_dates WHERE flight_number = ? AND date > ? AND status = 'available'",
                         (leg["flight_number"], leg["date"])).fetchone()[0]
    flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in res["flights"]]
    flights[0]["date"] = other
    bad = TaskDraft("bad", task.instructions, task.gold_actions + (
        {"tool": "update_reservation_flights", "arguments": {
            "reservation_id": rid, "cabin": "basic_economy", "flights": flights,
            "payment_id": payment(snap.users[res["user_id"]], "credit_card")}},))
    with pytest.raises(InvalidTask, match="basic economy"):
        replay(DOMAIN, copy_db(base), bad.gold_actions)
