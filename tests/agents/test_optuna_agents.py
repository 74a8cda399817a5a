import statistics

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

import rsigym.envs  # noqa: F401
from rsigym.agents import make_agent
from rsigym.agents.optuna_agents import RandomSearchAgent, TPEAgent
from rsigym.agents.optuna_space import action_from_params, optuna_distributions
from rsigym.envs import JsonActions
from rsigym.errors import UserError
from rsigym.records.jsonl import read_records
from rsigym.records import AgentSpec, EnvRef
from rsigym.runner import RECORDS_FILE, run_episode, run_scenario
from rsigym.scenario import EpisodeSpec, NamedSpec, expand, parse_scenario


def blackbox(**kwargs):
    return gym.make("rsigym/BlackBox-v0", **kwargs).unwrapped


def task_info(env):
    return {"action_space": env.action_space, "action_schema": env.action_schema}


# -- search space -------------------------------------------------------------------------

def test_blackbox_space_maps_to_log_float_int_and_categorical():
    env = blackbox()
    assert optuna_distributions(env.action_space, env.action_schema) == {
        "learning_rate": FloatDistribution(1e-5, 0.1, log=True),
        "momentum": FloatDistribution(0.0, 0.99, log=False),
        "layers": IntDistribution(1, 6),
        "optimizer": CategoricalDistribution((0, 1, 2)),
    }
    # Without the schema nothing says "log" or "enum": plain uniform ranges.
    plain = optuna_distributions(env.action_space, None)
    assert plain["learning_rate"] == FloatDistribution(1e-5, 0.1) and plain["optimizer"] == IntDistribution(0, 2)


def test_format_log_integer_boxes_and_schema_bounds():
    space = spaces.Dict({
        "decay": spaces.Box(1e-6, 1.0, shape=(1,)),
        "width": spaces.Box(8, 512, shape=(), dtype=np.int64),
        "depth": spaces.Discrete(10, start=-2),
    })
    schema = {"type": "object", "properties": {
        "decay": {"type": "array", "format": "log"},
        "width": {"type": "integer", "x-log": True},
        "depth": {"type": "integer", "minimum": 0, "maximum": 4.5},
    }}
    distributions = optuna_distributions(space, schema)
    assert distributions["decay"].log and distributions["decay"].low == pytest.approx(1e-6)
    assert distributions["width"] == IntDistribution(8, 512, log=True)
    assert distributions["depth"] == IntDistribution(0, 4)  # narrowed by the schema, floored
    action = action_from_params({"decay": 1e-3, "width": 64, "depth": 4}, space, schema)
    assert action["decay"].shape == (1,) and action["decay"].dtype == np.float32
    assert action["width"].dtype == np.int64 and action["depth"] == 4 and type(action["depth"]) is int
    assert space.contains(action)


@pytest.mark.parametrize("space, schema, error, message", [
    (spaces.Dict({"inner": spaces.Dict({"x": spaces.Discrete(2)})}), None, TypeError, "'inner': nested Dict"),
    (spaces.Dict({"grid": spaces.Box(0, 1, shape=(2, 2))}), None, ValueError, "'grid': only scalar Box"),
    (spaces.Dict({"note": spaces.Text(10)}), None, TypeError, "'note': Text spaces have no Optuna"),
    (spaces.Dict({"lr": spaces.Box(0.0, 1.0, shape=())}), {"properties": {"lr": {"x-log": True}}},
     ValueError, "'lr': a log scale needs a positive lower bound"),
    (spaces.Dict({"x": spaces.Box(-np.inf, 1.0, shape=())}), None, ValueError, "'x': Optuna needs finite bounds"),
    (spaces.Dict({"k": spaces.Discrete(3)}), {"properties": {"k": {"enum": [0, 7]}}},
     ValueError, "'k': enum value 7 is not in the action space"),
    (spaces.Dict({"k": spaces.Discrete(3)}), {"properties": {"k": {"enum": ["adam"]}}},
     ValueError, "'k': enum value 'adam'"),
    (spaces.Dict({"k": spaces.Discrete(3)}), {"required": ["k", "m"]}, ValueError, "requires key 'm'"),
    (spaces.Discrete(3), None, TypeError, "need a Dict action space"),
])
def test_unsupported_spaces_fail_with_the_key_named(space, schema, error, message):
    with pytest.raises(error, match=message):
        optuna_distributions(space, schema)


def test_float32_bounds_are_kept_inside_the_schema():
    # float32(1e-5) < 1e-5: a plain cast of the lower bound would break the schema's minimum.
    space = spaces.Dict({"lr": spaces.Box(1e-5, 1e-1, shape=(), dtype=np.float32)})
    schema = {"type": "object", "properties": {"lr": {"type": "number", "minimum": 1e-5, "maximum": 1e-1}}}
    assert float(np.float32(1e-5)) < 1e-5
    action = action_from_params({"lr": 1e-5}, space, schema)
    assert space.contains(action) and JsonActions(schema).parse(action)[1] is None


# -- agents -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["random_search", "tpe"])
def test_actions_are_valid_for_space_and_schema_and_seeded(kind):
    env = blackbox(max_trials=25)
    actions = JsonActions(env.action_schema)

    def episode(seed):
        agent = make_agent({"kind": kind})
        observation, _ = env.reset(seed=seed, options={"task_id": "bb-031"})
        agent.reset(task_info(env), seed)
        played = []
        for _ in range(25):
            action = agent.act(observation)
            assert env.action_space.contains(action), action
            assert actions.parse(action)[1] is None
            observation, reward, _, _, info = env.step(action)
            agent.observe(reward, observation, info)
            played.append(actions.parse(action)[0])
        assert [t.value for t in agent.study.trials] == [t["value"] for t in env.snapshot()["trials"]]
        return played

    first = episode(0)
    assert episode(0) == first and episode(1) != first
    assert len({a["optimizer"] for a in first}) == 3 and len({a["layers"] for a in first}) >= 3


def test_tpe_starts_with_random_searchs_trials_then_departs():
    env = blackbox()
    info = task_info(env)

    def actions(kind, **params):
        agent = make_agent({"kind": kind, "params": params})
        agent.reset(info, 5)
        out = []
        for _ in range(8):
            out.append(JsonActions(env.action_schema).parse(agent.act({}))[0])
            agent.observe(-float(len(out)), {}, {})
        return out

    random, tpe = actions("random_search"), actions("tpe", n_startup_trials=4)
    assert tpe[:4] == random[:4]  # the start-up trials share the sampler seed
    assert tpe[4:] != random[4:]  # n_startup_trials reached the sampler


def test_observe_tells_values_failures_and_objective_key():
    env = blackbox()
    agent = make_agent({"kind": "tpe", "params": {"direction": "minimize", "objective_key": "loss"}})
    agent.reset(task_info(env), 0)
    agent.act({})
    agent.observe(5.0, {}, {"loss": 0.25})
    agent.act({})
    agent.observe(0.0, {}, {"error": "invalid action at layers: 9 is greater than the maximum of 6"})
    agent.act({})
    agent.observe(0.0, {}, {"loss": float("nan")})
    trials = agent.study.trials
    assert [(t.state, t.value) for t in trials] == [
        (TrialState.COMPLETE, 0.25), (TrialState.FAIL, None), (TrialState.FAIL, None)]
    assert agent.study.direction.name == "MINIMIZE"
    agent.act({})
    with pytest.raises(KeyError, match="objective_key 'loss' is not in the step info"):
        agent.observe(1.0, {}, {"objective": 1.0})
    assert agent.study.trials[-1].state == TrialState.FAIL
    agent.act({})
    with pytest.raises(RuntimeError, match="before observe"):
        agent.act({})


def test_bad_params_are_user_errors():
    assert isinstance(make_agent({"kind": "random_search"}), RandomSearchAgent)
    assert isinstance(make_agent({"kind": "tpe", "params": {"multivariate": False}}), TPEAgent)
    with pytest.raises(UserError, match="rejects params.*n_startup_trials"):
        make_agent({"kind": "random_search", "params": {"n_startup_trials": 3}})
    with pytest.raises(UserError, match="direction must be 'maximize' or 'minimize'"):
        make_agent({"kind": "tpe", "params": {"direction": "up"}})


# -- end to end -------------------------------------------------------------------------------

SEEDS = range(7)
TASKS = ("bb-030", "bb-031", "bb-032")
BUDGET = 30


def best_values(kind):
    values = []
    for task in TASKS:
        env = EnvRef("rsigym/BlackBox-v0", {"max_trials": BUDGET}, task, None)
        for seed in SEEDS:
            spec = EpisodeSpec("0" * 32, env, AgentSpec(kind, kind), seed, 0, None, (NamedSpec("blackbox_best"),))
            record = run_episode(spec)
            assert record.termination == "budget_exhausted" and len(record.steps) == BUDGET, record.error
            values.append(record.grade("blackbox_best").details["best_value"])
    return values


def test_tpe_beats_random_search_on_the_synthetic_objective():
    random, tpe = best_values("random_search"), best_values("tpe")
    numbers = (f"median best value over {len(tpe)} episodes ({len(SEEDS)} seeds x {len(TASKS)} tasks, "
               f"{BUDGET} trials): tpe {statistics.median(tpe):.4f}, random-search {statistics.median(random):.4f}")
    assert statistics.median(tpe) > statistics.median(random), numbers
    # Paired by seed and task (common random numbers), TPE should win most episodes, not just the median.
    wins = sum(t > r for t, r in zip(tpe, random))
    assert wins >= 0.7 * len(tpe), f"tpe won {wins}/{len(tpe)} paired episodes; {numbers}"


def test_scenario_with_optuna_agents_expands_and_runs(tmp_path):
    scenario = parse_scenario({
        "name": "blackbox-optuna-test",
        "env": {"id": "rsigym/BlackBox-v0", "kwargs": {"max_trials": 8}},
        "tasks": {"split": "test", "limit": 2},
        "agents": [{"kind": "random_search"},
                   {"id": "tpe-fast", "kind": "tpe", "params": {"n_startup_trials": 3}}],
        "seeds": [0, 1],
        "graders": ["blackbox_best"],
    })
    assert len(expand(scenario)) == 2 * 2 * 2
    summary = run_scenario(scenario, tmp_path / "out", workers=0, progress=False)
    assert (summary.total, summary.ran, summary.infra_errors) == (8, 8, 0)
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert {r.agent.id for r in records} == {"random_search", "tpe-fast"}
    assert all(r.termination == "budget_exhausted" and len(r.steps) == 8 for r in records)
    assert all(0.0 < r.grade("blackbox_best").score <= 1.0 for r in records)
    assert "tpe-fast" in (tmp_path / "out" / "report.md").read_text()


def test_named_discrete_choices_map_to_their_names():
    from rsigym.envs.hpo.space import ACTION_SCHEMA, LOSSES, OPTIMIZERS, action_space

    distributions = optuna_distributions(action_space(), ACTION_SCHEMA)
    assert distributions["optimizer"].choices == OPTIMIZERS and distributions["loss"].choices == LOSSES
    assert distributions["learning_rate"].log
    action = action_from_params({"learning_rate": 1e-3, "optimizer": "adamw", "loss": "huber"},
                                action_space(), ACTION_SCHEMA)
    assert action["optimizer"] == "adamw" and action["loss"] == "huber"
