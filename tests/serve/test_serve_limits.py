"""The served run's writers and limits: the step cap in force (flag, env spec, default), a folder
the server owns is reopened, and a bad token is one line that never shows the token."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")

import rsigym.remote as remote  # noqa: E402
from rsigym.records.jsonl import read_records  # noqa: E402
from rsigym.serve import ServeConfig, ServerThread  # noqa: E402
from rsigym.serve.config import DEFAULT_MAX_STEPS  # noqa: E402

PROBE = ("rsigym/Probe-v0", {"sandbox": "local"})


@pytest.fixture
def capped_env_id():
    env_id = "rsigym-test/CappedProbe-v0"
    gym.register(id=env_id, entry_point="rsigym.envs.probe.env:ProbeEnv", max_episode_steps=7)
    yield env_id
    del gym.registry[env_id]


def test_the_step_cap_is_the_flag_else_the_env_specs_own_else_the_default(capped_env_id):
    assert DEFAULT_MAX_STEPS == 1000  # as docs/serve.md and `rsigym serve --help` say
    assert ServeConfig(*PROBE).step_cap == DEFAULT_MAX_STEPS
    assert ServeConfig(*PROBE, max_steps=5).step_cap == 5
    assert ServeConfig(capped_env_id, {"sandbox": "local"}).step_cap == 7
    assert ServeConfig(capped_env_id, {"sandbox": "local"}, max_steps=3).step_cap == 3
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        ServeConfig(*PROBE, max_steps=0)


def test_an_episode_past_the_cap_is_truncated_as_max_steps(tmp_path):
    with ServerThread(ServeConfig(*PROBE, run_dir=tmp_path / "served", port=0, max_steps=3)) as server:
        with remote.make(server.url) as env:
            assert env.spec is not None and env.spec.max_episode_steps == 3
            env.reset(seed=1, options={"task_id": "probe-001"})
            flags = [env.step({"guess": 0})[2:4] for _ in range(3)]  # low guesses: never right
    assert flags == [(False, False), (False, False), (False, True)]
    record, = read_records(tmp_path / "served" / "records.jsonl").records
    assert (record.termination, len(record.steps)) == ("max_steps", 3)


def test_a_server_reopens_the_folder_it_wrote_and_counts_on(tmp_path):
    config = ServeConfig(*PROBE, run_dir=tmp_path / "served", port=0)
    for _ in range(2):
        with ServerThread(config) as server, remote.make(server.url, agent_id="a") as env:
            env.reset(seed=4, options={"task_id": "probe-001"})
            while not any(env.step({"guess": 50})[2:4]):
                pass
    assert [r.rep for r in read_records(tmp_path / "served" / "records.jsonl").records] == [0, 1]


@pytest.mark.parametrize("token", ["", "two words", "caf\u00e9", "tab\there"])
def test_a_bad_token_is_one_line_that_does_not_show_it(tmp_path, capsys, token):
    with pytest.raises(ValueError) as caught:
        ServeConfig(*PROBE, token=token)
    assert token not in str(caught.value) or not token
    from rsigym.cli import main

    status = main(["serve", "rsigym/Probe-v0", "--set", "sandbox=local", "--token", token,
                   "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert status == 2 and "token must be" in err and len(err.strip().splitlines()) == 1
    assert not token or token not in err
    assert not (tmp_path / "x").exists()
