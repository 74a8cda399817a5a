"""Hosted and local models a user can trust: the endpoint check before the first episode, the
stop after repeated errors that retrying cannot fix, a cost limit that holds with episodes in
flight, and an episode deadline on threads."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from rsigym.cli import main
from rsigym.records.jsonl import read_records
from rsigym.runner import RECORDS_FILE, run_scenario
from rsigym.scenario import parse_scenario

from ..agents.fake_openai import Behaviour, FakeOpenAI, tool_call
from ..conftest import write_scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from concurrency import battery  # noqa: E402
from fake_provider import FakeProvider  # noqa: E402

FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0, "max_retries": 1}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


def llm_scenario(tmp_path: Path, api_base: str, **changes) -> Path:
    agent = {"id": "llm", "kind": "llm", "model": "openai/fake-model",
             "params": {"api_base": api_base, "tool_mode": "tools", **FAST}}
    return write_scenario(tmp_path / "s.yaml", agents=[agent], conditions=["none"], **changes)


def run_cli(capsys, tmp_path: Path, path: Path, *extra: str) -> tuple[int, str, str]:
    status = main(["run", str(path), "--out", str(tmp_path / "out"), "--workers", "0", "--no-progress", *extra])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("behaviour, words", [
    (Behaviour(status=401, message="Incorrect API key provided: sk-test-***-key."),
     "(auth): Incorrect API key provided"),
    (Behaviour(status=404, message="The model `fake-model` does not exist or you do not have access to it."),
     "(not_found): The model `fake-model` does not exist"),
], ids=["401", "404-model"])
def test_a_refusing_endpoint_exits_2_before_any_episode_with_the_providers_words(
        capsys, tmp_path, behaviour, words):
    with FakeOpenAI(default=lambda request: behaviour) as server:
        status, out, err = run_cli(capsys, tmp_path, llm_scenario(tmp_path, server.api_base))
        assert len(server.requests) == 1  # the one check call; no episode asked anything
    assert status == 2
    assert err.count("\n") == 1 and "agents[0].model: openai/fake-model at http://127.0.0.1" in err
    assert words in err and "--no-endpoint-check" in err
    assert not (tmp_path / "out").exists()  # nothing written, nothing run


@pytest.mark.parametrize("api_base, words", [
    ("notaurl", "(bad_url): Connection error: Request URL is missing an 'http://' or 'https://' protocol"),
    ("http://127.0.0.1:{port}/v1", "(connection): Connection error: [Errno 111] Connection refused"),
], ids=["bad-url", "connection-refused"])
def test_an_unreachable_endpoint_exits_2_before_any_episode(capsys, tmp_path, api_base, words):
    path = llm_scenario(tmp_path, api_base.format(port=free_port()))
    status, out, err = run_cli(capsys, tmp_path, path)
    assert status == 2 and err.count("\n") == 1 and words in err
    assert not (tmp_path / "out").exists()


def test_the_check_can_be_skipped_and_offline_models_need_none(capsys, tmp_path):
    with FakeOpenAI(default=lambda request: tool_call("act", {"guess": 50})) as server:
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 1}, seeds=[0])
        status, out, err = run_cli(capsys, tmp_path, path, "--no-endpoint-check")
        assert status == 0 and "endpoint check" not in err
        status, out, err = run_cli(capsys, tmp_path / "again", path)
        assert status == 0 and "endpoint check: 1 endpoint answered before the first episode (1 calls" in err
    offline = write_scenario(tmp_path / "offline.yaml", conditions=["none"], seeds=[0],
                             agents=[{"id": "r", "kind": "llm", "model": "rsigym/random"}])
    status, out, err = run_cli(capsys, tmp_path / "offline", offline)
    assert status == 0 and "endpoint check" not in err


def test_five_identical_400s_stop_the_run_with_the_error_in_full(capsys, tmp_path):
    message = "Invalid value for 'tool_choice': this model does not support tools. " + "x" * 300
    with FakeOpenAI(default=lambda request: Behaviour(status=400, message=message)) as server:
        server.script(Behaviour(content="OK"))  # the endpoint check passes; every episode then fails
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 6}, seeds=[0, 1])
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "1")
    assert status == 1
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert len(records) == 5 and all(r.termination == "infra_error" for r in records)  # 12 selected, 7 not started
    assert "5 episodes in a row failed with the same error, which retrying cannot fix" in err
    assert f"provider error (not retried): BadRequestError: {message}" in err  # in full, not cut
    assert "7 episodes not started or not recorded. Next: fix the cause, then run the same command again" in err
    assert "--max-infra-errors" not in err  # one next step, not two
    assert not (tmp_path / "out" / "infra_errors.jsonl").exists()


def test_the_same_400_at_32_x_2_in_flight_stops_early_and_resume_runs_the_rest(capsys, tmp_path):
    """Every real call refused with the same 400 (the endpoint check passed), 2 workers x 32 in
    flight: once 50 of 64 episodes were recorded as infra errors. Now the episodes in flight when the
    run stops are cancelled, not recorded; exit 1 with one next step; resume runs everything."""
    refuse = [True]

    def provider(request):
        if refuse[0]:
            return Behaviour(status=400, message="Invalid value for 'tool_choice': not supported by this model.")
        return tool_call("act", {"guess": 50})

    with FakeOpenAI(default=provider) as server:
        server.script(Behaviour(content="OK"))
        # two guesses an episode: what is checked is the stop and the resume, not the play
        env = {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local", "low": 0, "high": 100, "max_guesses": 2}}
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 32}, seeds=[0, 1], env=env)
        status = main(["run", str(path), "--out", str(tmp_path / "out"), "--workers", "2", "--concurrency", "32",
                       "--no-progress"])
        err = capsys.readouterr().err
        records = read_records(tmp_path / "out" / RECORDS_FILE).records
        assert status == 1 and 5 <= len(records) <= 16, (status, len(records), err[-2000:])
        assert "episodes in a row failed with the same error" in err and err.count("Next: fix the cause") == 1
        refuse[0] = False  # the cause fixed: the same command again runs the rest
        status = main(["run", str(path), "--out", str(tmp_path / "out"), "--workers", "2", "--concurrency", "32",
                       "--no-progress"])
        capsys.readouterr()
    final = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert status == 0 and len({r.episode_key for r in final}) == 64
    assert not any(r.termination == "infra_error" for r in final)


def test_errors_that_differ_or_pass_do_not_stop_the_run(capsys, tmp_path):
    replies = iter(range(10_000))

    def alternating(request):  # a 400 with a new message each time: never five identical in a row
        return Behaviour(status=400, message=f"bad request number {next(replies)}")

    with FakeOpenAI(default=alternating) as server:
        server.script(Behaviour(content="OK"))
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 3}, seeds=[0, 1])
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "1", "--max-infra-errors", "6")
    assert status == 0 and len(read_records(tmp_path / "out" / RECORDS_FILE)) == 6


def test_the_cost_limit_holds_with_two_workers_times_16_in_flight(tmp_path):
    """gpt-4o-mini's prices, 100 + 20 tokens per reply from the fake provider: ~8e-5 USD an episode."""
    limit_usd = 0.001
    with FakeProvider(latency_s=0.05) as provider:
        raw = battery(provider.api_base, 64, tasks=8)
        raw["agents"][0]["model"] = "openai/gpt-4o-mini"
        summary = run_scenario(parse_scenario(raw), tmp_path, workers=2, concurrency=16, progress=False,
                               report=False, cost_limit_usd=limit_usd)
    records = read_records(tmp_path / RECORDS_FILE).records
    costs = [r.usage.cost_usd for r in records]
    spent = sum(costs)
    assert min(costs) > 0 and summary.stopped and "cost limit" in summary.stopped
    assert 0 < len(records) < 64 and summary.not_run == 64 - len(records)
    assert spent == pytest.approx(summary.cost_usd)
    assert spent <= limit_usd + 2 * max(costs)  # the bound: one episode's cost per worker


def test_episode_timeout_works_with_episodes_in_flight_on_threads(capsys, tmp_path):
    """A model that hangs far past the deadline, 4 episodes in flight on threads of this process:
    each is stopped at its deadline (the request's timeout is capped to the time left)."""
    with FakeOpenAI(default=lambda request: Behaviour(hang_s=30.0)) as server:
        server.script(Behaviour(content="OK"))
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 2}, seeds=[0, 1])
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "4", "--episode-timeout", "1.5")
    assert status == 1 and "infra error x4: timeout: the episode ran past its wall clock of 1.5 s" in out
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert len(records) == 4 and all(r.error.startswith("timeout:") for r in records)


def test_a_spinning_agent_on_a_thread_is_stopped_at_its_deadline(tmp_path):
    from rsigym.runner.inflight import run_in_process
    from rsigym.records import AgentSpec, EnvRef
    from rsigym.scenario import EpisodeSpec, NamedSpec

    from .test_costs import HangingAgent  # noqa: F401 - registers test-hang

    specs = [EpisodeSpec(f"{i:032d}", EnvRef("rsigym/Probe-v0", {"sandbox": "local"}, "probe-100"),
                         AgentSpec("hang", "test-hang", params={"spin": True}), i, 0, 20,
                         (NamedSpec("probe_answer"),), timeout_s=1.0) for i in range(3)]
    records = []
    run_in_process(specs, records.append, concurrency=3)
    assert len(records) == 3 and all(r.termination == "infra_error" and r.error.startswith("timeout:")
                                     for r in records)


def echo_the_schema(request):
    """A small model behind a server that ignores response_format: it echoes the schema it was shown."""
    schema = (request.get("response_format") or {}).get("json_schema", {}).get("schema") or {"type": "object"}
    return Behaviour(content=json.dumps(schema))


def test_a_model_that_echoes_the_schema_shows_100_percent_invalid_in_summary_and_headline(capsys, tmp_path):
    with FakeOpenAI(default=echo_the_schema) as server:
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 2}, seeds=[0])
        yaml_text = path.read_text().replace("tool_mode: tools", "tool_mode: json")
        path.write_text(yaml_text)
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "1")
    assert status == 0  # no infra error: the failure is the model's, and now it is in the headline
    assert "replies: agent llm (agent, tool mode json_schema): " in out and "invalid (100%)" in out
    assert "rsigym: warning: agent llm (agent, json_schema): 100% of" in err and "failed the reply format" in err
    report = (tmp_path / "out" / "report.md").read_text()
    headline = report.split("## ", 1)[0]
    assert "> **Warning:** agent llm (agent, json_schema): 100% of" in headline
    assert "invalid replies: llm (agent) 100% of" in report and "WARNING: above 20%" in report
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert {r.tool_mode for r in records} == {"json_schema"}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["tool_modes"] == {"llm": "json_schema"}


def test_text_only_replies_in_tools_mode_are_counted_and_warned_about(capsys, tmp_path):
    with FakeOpenAI(default=lambda request: Behaviour(content='{"guess": 50}')) as server:
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 1}, seeds=[0])
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "1")
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    [record] = records
    calls = record.usage_by_role["agent"].model_calls
    assert record.tool_mode == "tools" and record.usage_by_role["agent"].text_replies == calls > 0
    assert f"{calls} replies, 0 invalid (0%), {calls} text-only (100%)" in out
    assert "replies were text without the tool call" in err


def test_good_replies_raise_no_warning(capsys, tmp_path):
    with FakeOpenAI(default=lambda request: tool_call("act", {"guess": 50})) as server:
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 1}, seeds=[0])
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "1")
    assert status == 0 and "0 invalid (0%), 0 text-only (0%)" in out and "warning" not in err
    assert "> **Warning:**" not in (tmp_path / "out" / "report.md").read_text()


def test_the_guard_reserves_the_dearest_episode_seen_by_hand():
    from rsigym.records import AgentSpec, EnvRef, Trajectory, Usage
    from rsigym.runner.guard import RunGuard
    from rsigym.scenario import EpisodeSpec

    def spec(i: int) -> EpisodeSpec:
        return EpisodeSpec(f"{i:032d}", EnvRef("rsigym/Probe-v0"), AgentSpec("a", "llm", "m"), i, 0, 5)

    def done(i: int, cost: float) -> Trajectory:
        return Trajectory(f"{i:032d}", EnvRef("rsigym/Probe-v0"), AgentSpec("a", "llm", "m"), i, 0,
                          usage=Usage(cost_usd=cost))

    def cap(admitted: EpisodeSpec | None) -> float | None:
        assert admitted is not None
        return admitted.spend_cap_usd

    guard = RunGuard(cost_limit_usd=1.0, unknown_cost_slots=2)
    # cost unknown: one per worker (2), each with an equal share of the limit as its cap
    assert cap(guard.admit(spec(0))) == pytest.approx(0.5) and cap(guard.admit(spec(1))) == pytest.approx(0.5)
    assert guard.admit(spec(2)) is None and not guard.stop()  # a third must wait, the run goes on
    guard.finished(done(0, 0.3))                     # dearest 0.3; 1 still in flight holding 0.5
    assert guard.admit(spec(2)) is None               # 0.3 spent + 0.5 reserved leaves 0.2 < 0.3
    guard.finished(done(1, 0.2))                      # spent 0.5, nothing in flight
    assert cap(guard.admit(spec(2))) == pytest.approx(0.5)  # min(room 0.5, HEADROOM 2 x 0.3)
    assert guard.admit(spec(3)) is None               # nothing left that no one holds
    guard.finished(done(2, 0.3))                      # spent 0.8
    assert guard.admit(spec(3)) is None and guard.stop()  # 0.8 + 0.3 > 1.0 with nothing in flight: over
    assert guard.spent_usd == pytest.approx(0.8)


def test_provider_messages_lose_litellms_prefixes_and_keep_the_reason():
    from rsigym.llm.provider_errors import provider_message

    class Wrapped(Exception):
        pass

    inner = ConnectionRefusedError(111, "Connection refused")
    outer = Wrapped("litellm.InternalServerError: InternalServerError: OpenAIException - Connection error.")
    outer.__cause__ = inner
    assert provider_message(outer) == "Connection error: [Errno 111] Connection refused"
    body = Wrapped("litellm.AuthenticationError: AuthenticationError: OpenAIException - Error code: 401 - "
                   "{'error': {'message': 'Incorrect API key provided: sk-***.', 'type': 'invalid_request_error'}}")
    assert provider_message(body) == "Incorrect API key provided: sk-***."


@pytest.mark.parametrize("calls_tools, chosen, used", [(True, "tools", "tools"), (False, "json", "json_schema")],
                         ids=["answers-with-a-call", "answers-in-text"])
def test_tool_mode_auto_is_decided_by_a_probe_call_and_said(capsys, tmp_path, calls_tools, chosen, used):
    def model(request):  # LiteLLM's map does not know this model: only the probe can tell
        if request.get("tools") and calls_tools:
            probed = "ok" in request["tools"][0]["function"]["parameters"]["properties"]
            return tool_call("act", {"ok": True} if probed else {"guess": 50})
        return Behaviour(content='{"guess": 50}')

    with FakeOpenAI(default=model) as server:
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 1}, seeds=[0])
        path.write_text(path.read_text().replace("tool_mode: tools", "tool_mode: auto"))
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "1")
        probe = server.requests[0]
    assert status == 0 and probe["tools"][0]["function"]["name"] == "act"
    # the answered probe is the check's only call: it shows the endpoint answers
    assert "endpoint check: 1 endpoint answered before the first episode (1 calls" in err
    chose = f"rsigym: agent llm: tool_mode auto chose {used} (probe call)"
    assert chose in err
    # said before the first episode (once only after the run, beside the endpoint check's line)
    assert err.index(chose) < err.index("endpoint check: 1 endpoint answered") and err.count(chose) == 1
    [record] = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert record.tool_mode == used
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["tool_modes"] == {"llm": f"{used} (auto: probe call)"}
    assert [w["lines"] for w in manifest["warnings"]] == [[chose.removeprefix("rsigym: ")]]


def test_tool_mode_auto_at_a_server_that_refuses_tools_falls_back_to_the_ping_and_json(capsys, tmp_path):
    """A probe that fails is followed by the plain call: the endpoint answers it, so it refused the
    tools (JSON); a server that refuses every call is a problem, in the plain call's words."""
    def no_tools(request):
        if request.get("tools"):
            return Behaviour(status=400, message="tools are not supported by this server")
        return Behaviour(content='{"guess": 50}')

    with FakeOpenAI(default=no_tools) as server:
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 1}, seeds=[0])
        path.write_text(path.read_text().replace("tool_mode: tools", "tool_mode: auto"))
        status, out, err = run_cli(capsys, tmp_path, path, "--concurrency", "1")
        first, second = server.requests[:2]
    assert status == 0 and first.get("tools") and not second.get("tools")
    assert "endpoint check: 1 endpoint answered before the first episode (2 calls" in err
    assert "tool_mode auto chose json_schema (probe call)" in err
    [record] = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert record.tool_mode == "json_schema" and record.termination != "infra_error"

    refusing = Behaviour(status=401, message="Incorrect API key provided: sk-test-***-key.")
    with FakeOpenAI(default=lambda request: refusing) as server:
        (tmp_path / "down").mkdir()
        path = llm_scenario(tmp_path / "down", server.api_base)
        path.write_text(path.read_text().replace("tool_mode: tools", "tool_mode: auto"))
        status, out, err = run_cli(capsys, tmp_path / "down", path)
        assert len(server.requests) == 2  # the probe and the plain call; no episode asked anything
    assert status == 2 and err.count("\n") == 1 and "(auth): Incorrect API key provided" in err
    assert not (tmp_path / "down" / "out").exists()


def test_early_warnings_reach_the_caller_before_the_first_episode(tmp_path):
    """run_scenario hands the automatic choices to ``on_warnings`` while no episode has run yet."""
    from rsigym.scenario import load_scenario

    seen: list[tuple[list[str], int]] = []

    def on_warnings(lines: list[str]) -> None:
        path = tmp_path / "out" / RECORDS_FILE
        seen.append((lines, len(read_records(path).records) if path.exists() else 0))

    with FakeOpenAI(default=lambda request: Behaviour(content='{"guess": 50}')) as server:
        path = llm_scenario(tmp_path, server.api_base, tasks={"split": "test", "limit": 1}, seeds=[0])
        path.write_text(path.read_text().replace("tool_mode: tools", "tool_mode: auto"))
        summary = run_scenario(load_scenario(str(path)), tmp_path / "out", workers=0, progress=False, report=False,
                               endpoint_check=True, on_warnings=on_warnings)
    assert summary.ran >= 1
    [(lines, recorded)] = seen
    assert recorded == 0 and any("tool_mode auto chose json_schema" in line for line in lines), lines
