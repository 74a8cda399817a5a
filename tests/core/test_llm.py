"""The one LLM client (``rsigym.llm``): retries, fail-fast, usage, structured output, one caller."""

from __future__ import annotations

import ast
import pickle
import random
from pathlib import Path

import pytest

import rsigym.agents  # noqa: F401  (installs the offline rsigym/... models)
from rsigym.errors import InfraError
from rsigym.llm import LLMError, RetryPolicy, complete
from rsigym.records import Usage

from ..agents.fake_openai import Behaviour, FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("core", "agents", "envs", "graders")
HELLO = [{"role": "user", "content": "hello"}]
SCHEMA = {"type": "object", "required": ["guess"], "properties": {"guess": {"type": "integer"}}}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


class Sleeps(list):
    """A sleeper that records its waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def ask(server: FakeOpenAI, *, sleep=None, retry=RetryPolicy(2, 0.01), **kwargs):
    return complete(HELLO, model=kwargs.pop("model", "openai/fake-model"), role="agent", api_base=server.api_base,
                    retry=retry, sleep=Sleeps() if sleep is None else sleep, timeout_s=5.0, **kwargs)


# -- one caller -----------------------------------------------------------------------------
def completion_calls(source: str) -> list[int]:
    """Lines that call ``<anything>.completion``/``acompletion`` or a bare imported ``completion``."""
    names = {"completion", "acompletion"}
    bare = {alias.asname or alias.name for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("litellm")
            for alias in node.names if alias.name in names}
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in names) or (isinstance(func, ast.Name) and func.id in bare):
                lines.append(node.lineno)
    return lines


def test_the_checker_finds_every_way_of_calling_litellm():
    assert completion_calls("import litellm\nlitellm.completion(model='x')") == [2]
    assert completion_calls("def f(m):\n    return m.completion(model='x')") == [2]
    assert completion_calls("from litellm import completion as c\nc(model='x')") == [2]
    assert completion_calls("import litellm\nawait_me = litellm.acompletion(model='x')") == [2]
    assert completion_calls("def completion(self):\n    pass") == []  # a definition is not a call


def test_exactly_one_module_of_the_package_calls_litellm_completion():
    callers = {}
    for folder in PACKAGE_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")):
            lines = completion_calls(path.read_text())
            if lines:
                callers[str(path.relative_to(REPO))] = lines
    assert list(callers) == ["core/llm/client.py"], callers


def test_the_kernel_client_imports_nothing_above_the_kernel():
    tree = ast.parse((REPO / "core" / "llm" / "client.py").read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith(("rsigym.envs", "rsigym.agents", "rsigym.graders"))]


# -- retries --------------------------------------------------------------------------------
def test_rate_limit_then_success_counts_both_calls_and_waits_the_servers_hint():
    sleeps = Sleeps()
    with FakeOpenAI() as server:
        server.script(Behaviour(status=429, headers={"Retry-After": "3"}), Behaviour(content="hi"))
        reply = ask(server, sleep=sleeps)
    assert reply.text == "hi" and (reply.usage.model_calls, reply.usage.provider_retries) == (2, 1)
    assert reply.usage.prompt_tokens == 17 and sleeps == [3.0]  # the hint, not our 0.01 s
    assert reply.usage.latency_s < 3.0  # waits are not model time


def test_backoff_doubles_with_jitter_until_retries_run_out():
    sleeps = Sleeps()
    with FakeOpenAI(default=lambda request: Behaviour(status=503)) as server:
        with pytest.raises(LLMError, match="provider error after 4 attempts: .*ServiceUnavailable") as caught:
            ask(server, sleep=sleeps, retry=RetryPolicy(3, 1.0, 30.0), rng=random.Random(0))
        assert len(server.requests) == 4
    assert [lo <= s <= hi for s, (lo, hi) in zip(sleeps, [(0.5, 1), (1, 2), (2, 4)])] == [True] * 3
    assert len(set(sleeps)) == 3
    usage = caught.value.usage
    assert (usage.model_calls, usage.provider_retries) == (4, 3)
    assert isinstance(caught.value, InfraError) and caught.value.role == "agent"


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_errors_that_cannot_pass_fail_at_once(status):
    sleeps = Sleeps()
    with FakeOpenAI(default=lambda request: Behaviour(status=status)) as server:
        with pytest.raises(LLMError, match="not retried") as caught:
            ask(server, sleep=sleeps)
        assert len(server.requests) == 1
    assert sleeps == [] and caught.value.usage.model_calls == 1


def test_unknown_models_fail_at_once():
    for model in ("nonexistent-provider/foo", "rsigym/no-such-policy"):
        sleeps = Sleeps()
        with pytest.raises(LLMError, match="not retried") as caught:
            complete(HELLO, model=model, role="judge", sleep=sleeps)
        assert sleeps == [] and caught.value.usage.model_calls == 1 and caught.value.role == "judge"


def test_a_missing_key_fails_before_any_request(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAI() as server:
        with pytest.raises(LLMError, match="user model openai/gpt-4o-mini: no credentials; set OPENAI_API_KEY"):
            complete(HELLO, model="openai/gpt-4o-mini", role="user")
        reply = ask(server)  # a local server (api_base) takes any key
        assert server.requests and reply.text
    assert reply.usage.model_calls == 1


def test_the_error_keeps_its_usage_across_processes():
    error = LLMError("x failed", role="user", model="m", usage=Usage(model_calls=3, provider_retries=2))
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.role, again.usage.model_calls) == ("x failed", "user", 3)
    assert error.with_usage(Usage(model_calls=1, prompt_tokens=9)).usage.model_calls == 4


def test_offline_models_answer_through_the_client():
    reply = complete(HELLO, model="rsigym/random", role="user", params={"seed": 1})
    assert reply.usage.model_calls == 1 and reply.usage.cost_usd == 0.0 and reply.text


# -- structured output ----------------------------------------------------------------------
def test_json_schema_goes_as_response_format_to_a_local_server():
    with FakeOpenAI() as server:
        server.script(Behaviour(content='{"guess": 3}'))
        ask(server, model="openai/local-135m", json_schema=SCHEMA)
        ask(server, model="openai/gpt-3.5-turbo")  # no schema asked: none sent
        structured, plain = server.requests
    assert structured["response_format"]["type"] == "json_schema"
    assert structured["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "response_format" not in plain


def test_models_litellm_says_lack_schemas_get_the_prompt_only():
    with FakeOpenAI() as server:
        ask(server, model="openai/gpt-3.5-turbo", json_schema=SCHEMA)  # in LiteLLM's map: no json_schema
        assert "response_format" not in server.requests[0]


def test_a_server_that_refuses_the_schema_is_asked_prompt_only_from_then_on():
    with FakeOpenAI() as server:
        server.script(Behaviour(status=400), Behaviour(content='{"guess": 3}'))
        reply = ask(server, model="openai/old-server-model", json_schema=SCHEMA)
        ask(server, model="openai/old-server-model", json_schema=SCHEMA)
        first, second, third = server.requests
    assert reply.text == '{"guess": 3}' and reply.usage.model_calls == 2
    assert "response_format" in first and "response_format" not in second and "response_format" not in third
