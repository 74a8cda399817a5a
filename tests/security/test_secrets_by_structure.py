"""Secrets the name rules missed (issue 27, item 4), each planted where a user or a provider puts
it: the userinfo and a query value of ``api_base``, three header values in ``extra_headers``
(``Ocp-Apim-Subscription-Key``, ``Cookie``, ``X-Api-Key``), a provider's error message that echoes
them, and a tool's output. None of them may reach any file of the run folder, any export
(jsonl, parquet, inspect), the viewer, or the terminal (the limits line included).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from rsigym.cli import main
from rsigym.records.jsonl import read_records
from rsigym.records.redact import REDACTED, redact, redact_text
from tests.conftest import rsigym_cmd

PASSWORD = "pw-UserinfoSecret-4711"
QUERY_CODE = "QueryCodeSecret-0815"
SUBSCRIPTION_KEY = "OcpApimSubscriptionSecret-1234"
COOKIE = "CookieSessionSecret-5678"
X_API_KEY = "XApiKeySecret-9012"
TOOL_TOKEN = "ToolOutputSecret-3456"  # only ever in a tool's output, inside a URL query
TENANT = "TenantHeaderSecret-7777"    # under a header name that says nothing
PLANTED = [PASSWORD, QUERY_CODE, SUBSCRIPTION_KEY, COOKIE, X_API_KEY, TOOL_TOKEN, TENANT]

# A plug-in loaded with --import: a "tool" env whose output echoes a configured header value and a
# URL with a password and a query token (as a tool that prints its request would), and an agent
# that calls it once.
PLUGIN = textwrap.dedent('''
    import gymnasium as gym
    from gymnasium import spaces
    from rsigym.agent import register_agent
    from rsigym.records import Usage
    from rsigym.registry import ENVS

    class EchoToolEnv(gym.Env):
        action_schema = {"type": "object", "properties": {"tool": {"type": "string"}}, "required": ["tool"]}
        observation_space = spaces.Dict({"text": spaces.Text(5000)})
        action_space = spaces.Dict({"tool": spaces.Text(100)})

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.output = ""
            return {"text": "call the tool"}, {}

        def step(self, action):
            # long enough (40 lines) that the run stores its chunks once, in shared.jsonl
            self.output = "\\n".join("%%d: GET http://alice:%(password)s@api.example/v1?token=%(tool)s "
                                     "-H 'Cookie: session=%(cookie)s' answered 200" %% i for i in range(40))
            return {"text": self.output}, 1.0, True, False, {"tool_output": self.output}

        def snapshot(self):
            return {"last_output": self.output}

    ENVS.register("rsigym_secret_test/EchoTool-v0", EchoToolEnv)

    class ToolCaller:
        def __init__(self, spec):
            self.spec, self.last_usage = spec, Usage()
        def reset(self, task_info, seed):
            pass
        def act(self, observation):
            return {"tool": "fetch"}

    register_agent("test_tool_caller")(ToolCaller)
''') % {"password": PASSWORD, "tool": TOOL_TOKEN, "cookie": COOKIE}


class _EchoingProvider(BaseHTTPRequestHandler):
    """Answers every request 401, its error message echoing the request's path and headers."""

    def do_POST(self):  # noqa: N802 - the http.server hook name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        echoed = {name: self.headers.get(name) for name in
                  ("Ocp-Apim-Subscription-Key", "Cookie", "X-Api-Key", "Authorization")}
        # as Azure does, the bare key first: only its registration from the scenario can catch it
        message = f"invalid subscription key {echoed['Ocp-Apim-Subscription-Key']}; denied {self.path} with headers {echoed}"
        body = json.dumps({"error": {"message": message,
                                     "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def provider():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingProvider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://alice:{PASSWORD}@127.0.0.1:{server.server_address[1]}/v1?code={QUERY_CODE}"
    server.shutdown()
    server.server_close()


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([*rsigym_cmd(), *argv], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def _texts(path: Path) -> list[tuple[str, str]]:
    """(name, text) of a file: compressed formats (parquet, an inspect .eval log) read by their readers."""
    if path.suffix == ".parquet":
        import pandas

        return [(str(path), pandas.read_parquet(path).to_json())]
    if path.suffix == ".eval":
        from inspect_ai.log import read_eval_log

        return [(str(path), read_eval_log(str(path)).model_dump_json())]
    return [(str(path), path.read_bytes().decode("utf-8", "replace"))]


def test_planted_secrets_reach_no_file_export_view_or_terminal(tmp_path, provider, capsys):
    (tmp_path / "issue27_secret_plugin.py").write_text(PLUGIN)
    headers = {"Ocp-Apim-Subscription-Key": SUBSCRIPTION_KEY, "Cookie": f"session={COOKIE}", "X-Api-Key": X_API_KEY,
               "X-Tenant": TENANT}
    agents = [{"id": "llm", "kind": "llm", "model": "openai/secret-test",
               "params": {"api_base": provider, "max_retries": 0, "tool_mode": "json",
                          "litellm_kwargs": {"extra_headers": headers}}},
              {"id": "caller", "kind": "test_tool_caller"}]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"name": "secrets", "env": {"id": "rsigym_secret_test/EchoTool-v0"},
                                        "agents": agents, "seeds": [0], "max_steps": 3}))
    run_dir = tmp_path / "out"
    checked = _cli("run", str(scenario), "--out", "out", "--workers", "0", "--import", "issue27_secret_plugin",
                   cwd=tmp_path)  # the endpoint check before any episode meets the provider's answer first
    assert checked.returncode == 2 and "denied" in checked.stderr, checked.stderr[-3000:]
    ran = _cli("run", str(scenario), "--out", "out", "--workers", "0", "--import", "issue27_secret_plugin",
               "--max-infra-errors", "5", "--no-endpoint-check", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    llm = next(r for r in records if r["agent"]["id"] == "llm")
    # the provider really answered, and its message is kept, only without the secrets
    assert llm["termination"] == "infra_error" and "denied" in llm["error"] and REDACTED in llm["error"], llm["error"]
    assert "limits http://[redacted]@127.0.0.1" in ran.stdout, ran.stdout  # the limits line names the provider
    outputs = [checked.stdout, checked.stderr, ran.stdout, ran.stderr]
    # exports and the view in this process (the run above was the CLI's own process)
    for fmt, name in (("jsonl", "e.jsonl"), ("parquet", "e.parquet"), ("inspect", "e_inspect")):
        assert main(["export", str(run_dir), "--format", fmt, "--out", str(tmp_path / name)]) == 0
    assert main(["view", str(run_dir)]) == 0
    outputs += list(capsys.readouterr())
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name not in ("s.yaml", "issue27_secret_plugin.py")
             and p.suffix not in (".png", ".pyc")]
    names = {p.name for p in files}
    assert {"records.jsonl", "shared.jsonl", "manifest.json", "scenario.yaml", "report.md", "view.html",
            "e.jsonl", "e.parquet"} <= names and any(p.parent.name == "e_inspect" and p.suffix == ".eval" for p in files), names
    texts = [t for p in files for t in _texts(p)] + [("terminal", text) for text in outputs]
    leaks = [(where, secret) for where, text in texts for secret in PLANTED if secret in text]
    assert not leaks, leaks
    caller = next(r for r in read_records(run_dir / "records.jsonl").records if r.agent.id == "caller")
    assert "0: GET http://[redacted]@api.example/v1?token=[redacted]" in caller.steps[0].info["tool_output"]


def test_header_mappings_urls_and_config_keys_are_redacted_by_structure():
    params = {"api_base": f"https://bob:{PASSWORD}@gw.example/v1?code={QUERY_CODE}&v=2",
              "extra_headers": {"Ocp-Apim-Subscription-Key": SUBSCRIPTION_KEY, "Cookie": COOKIE, "X-Tenant": TENANT},
              "litellm_kwargs": {"headers": {"X-Api-Key": X_API_KEY}, "auth_code": TOOL_TOKEN, "max_tokens": 64}}
    # the same names outside any header mapping or provider configuration: a step's info
    info = {"session_cookie": COOKIE, "Ocp-Apim-Subscription-Key": SUBSCRIPTION_KEY, "x-goog-signature": TENANT}
    out = redact({"agent": {"id": "a", "params": params}, "episode_key": "k" * 32, "steps": [{"info": info}],
                  "final": {"code": "def f():\n    return 1\n", "exit_code": 0}})
    text = json.dumps(out)
    assert not [s for s in PLANTED if s in text], text
    assert out["agent"]["params"]["api_base"] == "https://[redacted]@gw.example/v1?code=[redacted]&v=[redacted]"
    assert out["agent"]["params"]["extra_headers"] == {"Ocp-Apim-Subscription-Key": REDACTED, "Cookie": REDACTED,
                                                       "X-Tenant": REDACTED}
    assert out["steps"][0]["info"] == {k: REDACTED for k in info}
    assert out["agent"]["params"]["litellm_kwargs"]["max_tokens"] == 64
    # what is not a secret stays: the join key, a program's text, an exit code
    assert out["episode_key"] == "k" * 32 and out["final"] == {"code": "def f():\n    return 1\n", "exit_code": 0}


def test_header_values_in_a_message_are_redacted():
    message = (f"401 from gw: request headers {{'Cookie': 'session={COOKIE}', 'X-Api-Key': '{X_API_KEY}'}}; "
               f'"Ocp-Apim-Subscription-Key": "{SUBSCRIPTION_KEY}"\nAuthorization: Basic YWxpY2U6cGFzc3dvcmQ=')
    text = redact_text(message)
    assert not [s for s in PLANTED + ["YWxpY2U6cGFzc3dvcmQ="] if s in text], text
    assert "'Cookie': '[redacted]'" in text and text.startswith("401 from gw")


def test_limits_line_and_lock_file_name_no_userinfo(tmp_path):
    from rsigym.llm.limits import GateStats, format_stats
    from rsigym.runner.lock import RunFolderLock

    stats = GateStats(provider=f"http://alice:{PASSWORD}@127.0.0.1:1/v1?code={QUERY_CODE}")
    line = redact_text(format_stats(stats))
    assert PASSWORD not in line and QUERY_CODE not in line
    lock = RunFolderLock(tmp_path, command=f"rsigym run s.yaml --api-base http://u:{PASSWORD}@h/v1").acquire()
    try:
        assert PASSWORD not in (tmp_path / ".rsigym.lock").read_text()
    finally:
        lock.release()
