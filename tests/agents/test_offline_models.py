"""Offline models: the LLMAgent code path with no key and no network."""

import json
import shutil
import subprocess
import sys
import textwrap

import jsonschema
import numpy as np
import pytest

from rsigym.agents import LLMAgent, OfflineReply, offline_policies, register_offline_policy
from rsigym.agents.schema_sampling import sample_instance
from rsigym.records.jsonl import read_records

from ..conftest import write_scenario

SCHEMA = {
    "type": "object", "required": ["lr", "layers", "opt", "flags", "name"], "additionalProperties": False,
    "properties": {
        "lr": {"type": "number", "minimum": 1e-5, "maximum": 1e-1, "x-log": True},
        "layers": {"type": "integer", "minimum": 1, "maximum": 6},
        "opt": {"enum": ["adam", "sgd"]},
        "flags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
        "name": {"type": "string", "maxLength": 12},
    },
}


def test_schema_sampler_draws_valid_instances_deterministically():
    rng = np.random.default_rng(0)
    draws = [sample_instance(SCHEMA, rng) for _ in range(200)]
    for draw in draws:
        jsonschema.validate(draw, SCHEMA)
    assert sample_instance(SCHEMA, np.random.default_rng(0)) == draws[0]  # seeded
    assert len({json.dumps(d, sort_keys=True) for d in draws}) > 150  # and really random
    lrs = np.log10([d["lr"] for d in draws])
    assert lrs.min() < -4 and lrs.max() > -2  # log-uniform, not crowded at the top


@pytest.mark.parametrize("mode", ["tools", "json"])
def test_rsigym_random_runs_the_llm_code_path(mode):
    agent = LLMAgent("rsigym/random", tool_mode=mode)
    agent.reset({"env_id": "test", "action_schema": SCHEMA}, seed=3)
    actions = [agent.act({"text": f"turn {i}"}) for i in range(3)]
    for action in actions:
        jsonschema.validate(action, SCHEMA)
    assert agent.last_usage.prompt_tokens > 0 and agent.last_usage.cost_usd == 0.0
    again = LLMAgent("rsigym/random", tool_mode=mode)
    again.reset({"env_id": "test", "action_schema": SCHEMA}, seed=3)
    assert [again.act({"text": f"turn {i}"}) for i in range(3)] == actions  # seeded


def test_env_families_add_offline_policies():
    @register_offline_policy("always-seven")
    def seven(request):
        return OfflineReply(action={"guess": 7})

    assert "always-seven" in offline_policies()
    agent = LLMAgent("rsigym/always-seven")
    agent.reset({"env_id": "test", "action_schema": {"type": "object"}}, seed=0)
    assert agent.mode == "tools"  # registered with LiteLLM as supporting function calling
    assert agent.act({"text": "go"}) == {"guess": 7}


GUARD = textwrap.dedent("""
    import socket, sys
    # Allow only loopback and unix sockets: any other connection attempt fails loudly.
    _connect = socket.socket.connect
    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"network blocked by test: {address}")
        return _connect(self, address)
    socket.socket.connect = connect
    _getaddrinfo = socket.getaddrinfo
    def getaddrinfo(host, *args, **kwargs):
        if host not in (None, "localhost", "127.0.0.1", "::1"):
            raise socket.gaierror(f"network blocked by test: {host}")
        return _getaddrinfo(host, *args, **kwargs)
    socket.getaddrinfo = getaddrinfo
    from rsigym.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _isolated_prefix() -> list[str]:
    """``unshare -n`` (a network namespace with only loopback) where the kernel allows it."""
    if shutil.which("unshare") is None:
        return []
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=30)
    return ["unshare", "-n"] if probe.returncode == 0 else []


def test_model_override_runs_offline_with_network_blocked(tmp_path):
    path = write_scenario(tmp_path / "s.yaml", agents=[{"id": "llm", "kind": "llm", "model": "openai/gpt-4o-mini"}],
                          tasks={"split": "test", "limit": 2})
    out = tmp_path / "out"
    argv = [*_isolated_prefix(), sys.executable, "-c", GUARD, "run", str(path), "--out", str(out),
            "--model", "rsigym/random", "--workers", "0"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "8 episodes: 0 already recorded, 8 run now, 0 infra errors" in proc.stdout
    assert "network blocked" not in proc.stderr and "remote model cost map" not in proc.stderr
    records = read_records(out / "records.jsonl").records
    assert {r.agent.model for r in records} == {"rsigym/random"}
    assert all(r.usage.model_calls > 0 and r.termination in ("agent_stop", "budget_exhausted") for r in records)
    assert "model: rsigym/random" in (out / "scenario.yaml").read_text()  # the run says what ran


def test_model_override_reaches_every_agent_that_names_a_model(tmp_path):
    from rsigym.cli.run_command import _override_llm_agents
    from rsigym.errors import UserError
    from rsigym.scenario import load_scenario

    agents = [{"id": "llm", "kind": "llm", "model": "openai/gpt-4o-mini"},
              {"id": "evo", "kind": "evoalloc", "model": "rsigym/evoalloc_heuristic", "params": {"revise_after_full": 4}},
              {"id": "full", "kind": "always_full"}]
    path = write_scenario(tmp_path / "s.yaml", agents=agents)
    overridden = _override_llm_agents(load_scenario(path), "openai/other", "http://127.0.0.1:9/v1")
    by_id = {a["id"]: a for a in overridden.raw["agents"]}
    assert by_id["llm"]["model"] == by_id["evo"]["model"] == "openai/other"
    assert by_id["evo"]["params"] == {"revise_after_full": 4, "api_base": "http://127.0.0.1:9/v1"}
    assert by_id["full"] == {"id": "full", "kind": "always_full"}  # no model: untouched
    with pytest.raises(UserError, match="no agent that uses a model"):
        _override_llm_agents(load_scenario(write_scenario(tmp_path / "t.yaml", agents=agents[2:])), "x/y", None)
