"""Attacks on the remote client (``rsigym.remote.make`` / ``make_async``) by a hostile server
(``hostile_remote_server``): replies far over the cap, a permessage-deflate bomb, trickled replies,
malformed replies. The client must answer each with one ``RemoteEnvError`` line, within its
deadline, without reading the reply whole (peak RSS measured in a child process)."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("websockets", reason="needs the 'serve' extra")
pytest.importorskip("httpx", reason="needs the 'serve' extra")

import rsigym.remote as remote  # noqa: E402
from tests.security.hostile_remote_server import (ABOUT, OBSERVATION, STATE, HostileServer, Plan,  # noqa: E402
                                                  http_body, http_gzip_bomb, http_json, http_stream, http_trickle,
                                                  measure_client, ws_deflate_bomb, ws_stream, ws_text, ws_trickle)

OFFERED_BYTES = 128 << 20  # far over the default cap (16 MiB), cheap to stream on loopback
GROWTH_LIMIT_MB = 64  # the client may hold up to its cap, never what was offered
DEADLINE_S = 3.0
SLACK_S = 2.0  # thread wake-ups on a busy machine, never another interval of the trickle
MODES = ["sync", "async"]


def _attempt(url: str, mode: str, *calls: str, **kwargs) -> None:
    """``make`` (or ``make_async``), then each of ``calls`` (``reset``, ``step``, ``state``), then close."""
    def step_args(name: str) -> tuple:
        return ({"guess": 1},) if name == "step" else ()

    if mode == "sync":
        with remote.make(url, **kwargs) as env:
            for name in calls:
                getattr(env, name)(*step_args(name))
        return

    async def play() -> None:
        env = await remote.make_async(url, **kwargs)
        try:
            for name in calls:
                await getattr(env, name)(*step_args(name))
        finally:
            await env.close()

    asyncio.run(play())


def _one_line(error: BaseException | str) -> str:
    text = str(error)
    assert text and "\n" not in text and len(text) <= 400, text
    return text


def _refused_small(result: dict, *words: str) -> None:
    assert result["error"].startswith("RemoteEnvError: "), result
    _one_line(result["error"])
    assert all(w in result["error"] for w in words), result
    assert result["growth_mb"] < GROWTH_LIMIT_MB, result


@pytest.mark.parametrize("declare_length", [False, True], ids=["streamed", "declared"])
def test_a_description_far_over_the_cap_is_refused_without_reading_it(declare_length):
    with HostileServer(Plan(about=http_stream(OFFERED_BYTES, declare_length=declare_length))) as url:
        _refused_small(measure_client(url), "over the client's cap")


def test_a_gzip_bomb_description_is_refused_without_inflating_it():
    with HostileServer(Plan(about=http_gzip_bomb(OFFERED_BYTES))) as url:
        _refused_small(measure_client(url), "gzip")


@pytest.mark.parametrize("mode", MODES)
def test_a_websocket_reply_far_over_the_cap_is_refused_without_reading_it(mode):
    # 1 MiB fragments: no one frame is large, the message is
    with HostileServer(Plan(ws_replies=[ws_stream(OFFERED_BYTES)])) as url:
        _refused_small(measure_client(url, mode=mode), "over the client's cap")


@pytest.mark.parametrize("mode", MODES)
def test_a_deflate_bomb_stops_inflating_at_the_cap(mode):
    # about 130 kB on the wire, 128 MiB inflated: the cap counts bytes after decompression
    with HostileServer(Plan(ws_replies=[ws_deflate_bomb(OFFERED_BYTES)], deflate=True)) as url:
        _refused_small(measure_client(url, mode=mode), "over the client's cap")


@pytest.mark.parametrize("mode", MODES)
def test_a_trickled_description_ends_at_the_deadline(mode):
    with HostileServer(Plan(about=http_trickle(interval_s=0.5, total_s=20))) as url:
        start = time.monotonic()
        with pytest.raises(remote.RemoteEnvError) as raised:
            _attempt(url, mode, timeout_s=DEADLINE_S)
        elapsed_s = time.monotonic() - start
    assert "within 3 s" in _one_line(raised.value)
    assert DEADLINE_S - 0.1 <= elapsed_s < DEADLINE_S + SLACK_S


@pytest.mark.parametrize("mode", MODES)
def test_a_trickled_reply_ends_at_the_deadline_and_never_answers_the_next_call(mode):
    # the reset's reply is whole only after 5 s; every later message is answered at once
    plan = Plan(ws_replies=[ws_trickle(OBSERVATION, interval_s=1.0, trickled_bytes=5), ws_text(OBSERVATION)])
    outcomes: list[tuple[str, float]] = []

    async def timed(reset) -> None:
        start = time.monotonic()
        try:
            await reset()
            outcomes.append(("answered", time.monotonic() - start))
        except remote.RemoteEnvError as exc:
            outcomes.append((_one_line(exc), time.monotonic() - start))

    async def play(url: str) -> None:
        if mode == "sync":
            env = await asyncio.to_thread(remote.make, url, timeout_s=DEADLINE_S)
            reset, close = (lambda: asyncio.to_thread(env.reset)), (lambda: asyncio.to_thread(env.close))
        else:
            env = await remote.make_async(url, timeout_s=DEADLINE_S)
            reset, close = env.reset, env.close
        try:
            await timed(reset)
            await asyncio.sleep(3)  # the late reply has come in by now
            await timed(reset)
        finally:
            await close()

    with HostileServer(plan) as url:
        asyncio.run(play(url))
    (first, first_s), (second, _) = outcomes
    assert "within 3 s" in first and DEADLINE_S - 0.1 <= first_s < DEADLINE_S + SLACK_S, outcomes
    # the first reply arrived late: it must not pass for the answer to the second reset
    assert second != "answered" and "closed" in second, outcomes


def _about(**changes):
    about = {**ABOUT, **changes}
    return {k: v for k, v in about.items() if v is not ...}


def _reply(**data):
    return {"type": "observation", "data": {**OBSERVATION["data"], **data}}


MALFORMED_DESCRIPTIONS = {
    "not JSON": http_body(b"{'env_id': nope"),
    "a JSON list": http_json([ABOUT]),
    "no env_id": http_json(_about(env_id=...)),
    "env_id a number": http_json(_about(env_id=7)),
    "no observation_space": http_json(_about(observation_space=...)),
    "an unknown space": http_json(_about(observation_space={"type": "Blob"})),
    "a Box with bounds unlike its shape": http_json(_about(observation_space={
        "type": "Box", "low": 0, "high": 1, "shape": [10**6, 10**6], "dtype": "float32"})),
    "a Dict space without spaces": http_json(_about(observation_space={"type": "Dict"})),
    "example_actions an object": http_json(_about(example_actions={"a": 1})),
    "not UTF-8": http_body(b'{"env_id": "\xff\xfe"}'),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(MALFORMED_DESCRIPTIONS))
def test_a_malformed_description_is_one_remote_env_error(case, mode):
    with HostileServer(Plan(about=MALFORMED_DESCRIPTIONS[case])) as url:
        with pytest.raises(remote.RemoteEnvError) as raised:
            _attempt(url, mode, timeout_s=30)
    _one_line(raised.value)


MALFORMED_REPLIES = {  # call -> the replies the session gets, the last one malformed
    "reset: not JSON": ("reset", [ws_text("{not json")]),
    "reset: invalid UTF-8": ("reset", [ws_text(b'{"type": "observation", "data": "\xff"}', binary=True)]),
    "reset: a JSON list": ("reset", [ws_text([OBSERVATION])]),
    "reset: no data": ("reset", [ws_text({"type": "observation"})]),
    "reset: data a number": ("reset", [ws_text({"type": "observation", "data": 5})]),
    "reset: observation a string": ("reset", [ws_text(_reply(observation="text"))]),
    "reset: observation a list": ("reset", [ws_text(_reply(observation=[1, 2]))]),
    "reset: info a number": ("reset", [ws_text(_reply(observation={"text": "a", "info": 5}))]),
    "reset: error without data": ("reset", [ws_text({"type": "error", "data": "no\nsuch"})]),
    "reset: tools not a list": ("reset", [ws_text(OBSERVATION), ws_text({"type": "state", "data": {"tools": 3}})]),
    "step: reward a string": ("step", [ws_text(OBSERVATION), ws_text(STATE), ws_text(_reply(reward="many"))]),
    "step: no observation": ("step", [ws_text(OBSERVATION), ws_text(STATE), ws_text(_reply(observation=None))]),
    "state: a bare string": ("state", [ws_text('"state"')]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(MALFORMED_REPLIES))
def test_a_malformed_reply_is_one_remote_env_error(case, mode):
    call, replies = MALFORMED_REPLIES[case]
    calls = {"reset": ("reset",), "step": ("reset", "step"), "state": ("state",)}[call]
    with HostileServer(Plan(ws_replies=replies)) as url:
        with pytest.raises(remote.RemoteEnvError) as raised:
            _attempt(url, mode, *calls, timeout_s=30)
    _one_line(raised.value)


def test_a_description_cannot_lift_the_reply_cap_past_its_bound():
    about = {**ABOUT, "max_message_bytes": 1 << 40}
    with HostileServer(Plan(about=http_json(about))) as url, remote.make(url, timeout_s=30) as env:
        assert env.max_reply_bytes == 64 << 20
        assert env.reset()[0] == {"text": "abc"}  # and the env still works within it


def test_a_well_behaved_reply_still_comes_through_both_clients():
    """The control: the same server, well-behaved, is played without an error (sync and async)."""
    plan = Plan(ws_replies=[ws_text(OBSERVATION), ws_text(STATE), ws_text(_reply(reward=1.5))])
    with HostileServer(plan) as url:
        with remote.make(url, timeout_s=30) as env:
            assert env.reset()[0] == {"text": "abc"} and env.step({"guess": 1})[1] == 1.5
        _attempt(url, "async", "reset", "step", timeout_s=30)


def test_the_benchmark_runs_small_and_passes():
    """``benchmarks/remote_client_walls.py`` at small sizes: every row a RemoteEnvError in time."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import remote_client_walls

    rows = remote_client_walls.main(["sync"], huge_bytes=OFFERED_BYTES // 4, bomb_bytes=OFFERED_BYTES // 4,
                                    interval_s=1.0, trickle_timeout_s=2.0)
    table = remote_client_walls.render(rows)
    assert len(rows) == 5 and table.endswith("with a peak RSS under 300 MB") and "PASS" in table, table
