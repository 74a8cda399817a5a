"""The FNO, the nRMSE, pretraining and the cached fine-tuning trials of HyperparamSearch-v0.

Everything runs at the ``tiny`` preset (32 cells, 21 times, 48 training trajectories) on
advection conditions, whose data take well under a second to generate.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rsigym.envs.hpo import training
from rsigym.envs.hpo.adaptations import ADAPTATIONS, SOURCES
from rsigym.envs.hpo.env import NRMSE_CAP, HyperparamSearchEnv
from rsigym.envs.hpo.fno import FNO1d, SpectralConv1d, rollout
from rsigym.envs.hpo.space import Config
from rsigym.envs.hpo.training import TrialConfig, TrialRunner, nrmse, source_model

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

ADAPTATION = "adv0.4->adv1.0"
ADAM = TrialConfig(1e-2, "adam", "mse")


# -- conditions ---------------------------------------------------------------------------------

def test_twelve_conditions_from_two_sources():
    assert len(ADAPTATIONS) == 12 and len(SOURCES) == 2
    assert {c.source for c in ADAPTATIONS.values()} == set(SOURCES)
    assert all(name == c.name and c.source != c.target for name, c in ADAPTATIONS.items())
    # the ids scenarios and analyses use
    assert {"adv0.4->adv0.1", "adv0.4->adv4.0", "burg0.01->burg0.001", "adv0.4->burg0.01",
            "burg0.01->adv1.0"} <= set(ADAPTATIONS)
    assert ADAPTATIONS["burg0.01->adv1.0"].target.key == "advection(beta=1)"


# -- the FNO --------------------------------------------------------------------------------------

def test_fno_maps_a_history_to_the_next_state():
    model = FNO1d(modes=4, width=8, layers=2, input_steps=10)
    assert model(torch.randn(3, 10, 32)).shape == (3, 32)
    with pytest.raises(ValueError, match="10 input steps"):
        model(torch.randn(3, 9, 32))


def test_fno_parameters_come_from_the_generator_only():
    def params(seed):
        return torch.cat([p.flatten() for p in FNO1d(4, 8, 2, 10, torch.Generator().manual_seed(seed)).parameters()])

    torch.manual_seed(123)  # the global generator must not matter
    first = params(0)
    torch.manual_seed(456)
    assert torch.equal(first, params(0)) and not torch.equal(first, params(1))


def test_spectral_conv_with_one_mode_multiplies_it_by_the_complex_weight():
    # u = cos(2 pi k n / N) has rfft N/2 at mode k; the weight a + ib turns it into
    # Re((a + ib) e^{i theta}) = a cos(theta) - b sin(theta), and every other mode is dropped.
    cells, k, a, b = 16, 3, 0.5, -2.0
    layer = SpectralConv1d(1, 1, modes=k + 1)
    with torch.no_grad():
        layer.weight.zero_()
        layer.weight[0, 0, k] = torch.tensor([a, b])
    theta = 2 * math.pi * k * torch.arange(cells, dtype=torch.float64) / cells
    u = torch.cos(theta) + 0.7 * torch.cos(2 * math.pi * 5 * torch.arange(cells) / cells)  # mode 5 is cut
    out = layer(u.float()[None, None])[0, 0].double()
    assert torch.allclose(out, a * torch.cos(theta) - b * torch.sin(theta), atol=1e-5)


def test_spectral_conv_is_translation_equivariant():
    layer = SpectralConv1d(3, 4, modes=5)
    layer.reset_parameters(torch.Generator().manual_seed(0))
    x = torch.randn(2, 3, 32, generator=torch.Generator().manual_seed(1))
    shifted = layer(torch.roll(x, 7, dims=-1))
    assert torch.allclose(shifted, torch.roll(layer(x), 7, dims=-1), atol=1e-5)
    assert not torch.allclose(shifted, layer(x), atol=1e-3)


def test_rollout_reads_the_first_steps_and_feeds_predictions_back():
    model = FNO1d(4, 8, 2, input_steps=5, generator=torch.Generator().manual_seed(0))
    u = torch.randn(3, 12, 32, generator=torch.Generator().manual_seed(1))
    pred = rollout(model, u, 5)
    assert pred.shape == (3, 7, 32) and not pred.requires_grad
    changed = u.clone()
    changed[:, 5:] = 0.0  # the future is never read
    assert torch.equal(rollout(model, changed, 5), pred)
    with torch.no_grad():
        assert torch.allclose(pred[:, 0], model(u[:, :5]), atol=1e-6)
        assert torch.allclose(pred[:, 1], model(torch.cat((u[:, 1:5], pred[:, :1]), dim=1)), atol=1e-6)
    assert rollout(model, u, 5, n_steps=2).shape == (3, 2, 32)
    assert torch.allclose(rollout(model, u, 5, batch_size=2), pred, atol=1e-6)  # chunking changes nothing


# -- nRMSE and configurations -------------------------------------------------------------------------

def test_nrmse_is_the_mean_per_step_relative_l2_error():
    true = np.array([[[3.0, 4.0], [1.0, 0.0]]])          # (1 sample, 2 steps, 2 cells); norms 5 and 1
    pred = np.array([[[3.0, 9.0], [1.0, 0.5]]])          # errors 5 and 0.5: ratios 1 and 0.5
    assert nrmse(pred, true) == pytest.approx(0.75)
    assert nrmse(torch.tensor(pred), torch.tensor(true)) == pytest.approx(0.75)
    assert nrmse(true, true) == 0.0
    # the floor replaces a norm below it: a zero state with floor 2 and error 1 counts 0.5
    assert nrmse(np.array([[[0.0, 1.0]]]), np.array([[[0.0, 0.0]]]), floor=2.0) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="equal shapes"):
        nrmse(pred, true[:, :1])


@pytest.mark.parametrize("fields, name", [
    ((0.0, "adam", "mse"), "learning_rate"), ((-1e-3, "adam", "mse"), "learning_rate"),
    ((float("nan"), "adam", "mse"), "learning_rate"), (("1e-3", "adam", "mse"), "learning_rate"),
    ((1e-3, "sgd", "mse"), "optimizer"), ((1e-3, "adam", "l2"), "loss"),
])
def test_bad_configs_raise_naming_the_field(fields, name):
    with pytest.raises(ValueError, match=name):
        TrialConfig(*fields)


def test_config_coercion_and_key():
    assert TrialConfig.coerce(Config(1e-3, "adamw", "l1")) == TrialConfig(1e-3, "adamw", "l1")
    assert TrialConfig.coerce({"learning_rate": np.float32(0.5), "optimizer": "adam", "loss": "mse"}).learning_rate == 0.5
    # learning rates equal to 12 significant digits share a cache key
    assert TrialConfig(1e-3 * (1 + 1e-14), "adam", "mse").key() == TrialConfig(1e-3, "adam", "mse").key()


# -- pretraining and trials -----------------------------------------------------------------------------

def test_source_model_is_trained_once_and_identified_by_its_bytes(monkeypatch):
    source = ADAPTATIONS[ADAPTATION].source
    other_state, other_sha = source_model(source, "tiny", seed=1)
    state, sha = source_model(source, "tiny")
    assert len(sha) == 64 and sha != other_sha

    def no_training(*args):
        raise AssertionError("pretrained again")

    monkeypatch.setattr(training, "_pretrain", no_training)
    assert source_model(source, "tiny")[1] == sha                  # in-process cache
    monkeypatch.setattr(training, "_SOURCE_MODELS", {})
    again, again_sha = source_model(source, "tiny")                 # on-disk cache
    assert again_sha == sha and all(torch.equal(again[k], state[k]) for k in state)
    again[next(iter(again))].add_(1.0)                               # a caller's copy is private
    assert torch.equal(source_model(source, "tiny")[0][next(iter(state))], state[next(iter(state))])


def test_fine_tuning_is_deterministic_and_depends_on_the_config():
    first = training.fine_tune(ADAPTATION, 0, ADAM, "tiny")
    assert first == training.fine_tune(ADAPTATION, 0, ADAM, "tiny")
    assert math.isfinite(first.val_nrmse) and first.train_loss_final > 0 and first.state is not None
    others = [training.fine_tune(ADAPTATION, 0, c, "tiny").val_nrmse
              for c in (TrialConfig(1e-3, "adam", "mse"), TrialConfig(1e-2, "adam", "l1"),
                        TrialConfig(1e-2, "rmsprop", "mse"))]
    assert len({first.val_nrmse, *others}) == 4


def test_trial_runner_caches_in_process_and_on_disk():
    runner = TrialRunner("tiny")
    first = runner.run(ADAPTATION, 0, Config(3e-3, "adamw", "huber"))   # the env's config type
    assert not first.cached and (runner.train_calls, runner.misses, runner.hits) == (1, 1, 0)
    second = runner.run(ADAPTATION, 0, TrialConfig(3e-3, "adamw", "huber"))
    assert second.cached and (runner.train_calls, runner.hits) == (1, 1)
    assert (second.val_nrmse, second.train_loss_final, second.checkpoint_sha256) == \
        (first.val_nrmse, first.train_loss_final, first.checkpoint_sha256)
    fresh = TrialRunner("tiny")                                      # a new process would read the disk
    assert fresh.run(ADAPTATION, 0, Config(3e-3, "adamw", "huber")).val_nrmse == first.val_nrmse
    assert (fresh.train_calls, fresh.hits) == (0, 1)
    other_seed = runner.run(ADAPTATION, 1, TrialConfig(3e-3, "adamw", "huber"))
    assert not other_seed.cached and other_seed.val_nrmse != first.val_nrmse and runner.train_calls == 2


def test_test_split_is_scored_only_on_request_and_once():
    runner = TrialRunner("tiny")
    config = TrialConfig(2e-3, "adam", "relative_l2")
    result = runner.run(ADAPTATION, 0, config)
    assert runner.test_calls == 0 and runner.train_calls == 1          # training scores validation only
    test = runner.test(ADAPTATION, 0, config)
    assert (runner.test_calls, runner.train_calls) == (1, 1)           # the kept weights, no retraining
    (expected,) = training.evaluate(result.state, ADAPTATIONS[ADAPTATION].target, "tiny", 0, splits=("test",))
    assert test == expected and 0 < test < NRMSE_CAP and test != result.val_nrmse
    assert runner.test(ADAPTATION, 0, config) == test and runner.test_calls == 1   # cached
    fresh = TrialRunner("tiny")                                      # another process: read from disk
    assert fresh.test(ADAPTATION, 0, config) == test and (fresh.train_calls, fresh.test_calls) == (0, 0)
    forgetful = TrialRunner("tiny", keep_states=0)                    # weights gone: retrain once, same score
    other = TrialConfig(2e-3, "adam", "l1")
    forgetful.run(ADAPTATION, 0, other)
    assert forgetful.test(ADAPTATION, 0, other) == pytest.approx(
        training.evaluate(training.fine_tune(ADAPTATION, 0, other, "tiny").state, ADAPTATIONS[ADAPTATION].target,
                          "tiny", 0, splits=("test",))[0])
    assert (forgetful.train_calls, forgetful.test_calls) == (2, 1)


def test_runner_rejects_bad_configs_and_unknown_adaptations():
    runner = TrialRunner("tiny")
    with pytest.raises(ValueError, match="learning_rate"):
        runner.run(ADAPTATION, 0, {"learning_rate": -1.0, "optimizer": "adam", "loss": "mse"})
    with pytest.raises(ValueError, match="unknown adaptation "):
        runner.run("adv0.4->adv9.9", 0, ADAM)
    assert runner.train_calls == 0


def test_huge_learning_rate_gives_the_finite_cap():
    result = TrialRunner("tiny").run(ADAPTATION, 0, TrialConfig(1e3, "sgd_momentum", "mse"))
    assert result.val_nrmse == NRMSE_CAP and result.diverged and result.state is None
    assert TrialRunner("tiny").test(ADAPTATION, 0, TrialConfig(1e3, "sgd_momentum", "mse")) == NRMSE_CAP
    cached = TrialRunner("tiny").run(ADAPTATION, 0, TrialConfig(1e3, "sgd_momentum", "mse"))
    assert cached.cached and cached.diverged and math.isnan(cached.train_loss_final)


def test_fine_tuning_beats_the_zero_shot_source_model():
    runner = TrialRunner("tiny")
    zero_val, zero_test = runner.zero_shot(ADAPTATION, 0)
    assert runner.zero_shot(ADAPTATION, 0) == (zero_val, zero_test) and runner.train_calls == 0
    # advection at speed 1.0 instead of 0.4: the source model moves the profile too slowly
    best = min(runner.run(ADAPTATION, 0, TrialConfig(lr, "adam", "mse")).val_nrmse for lr in (1e-3, 1e-2))
    assert best < 0.8 * zero_val


def test_env_runs_real_trials_at_the_tiny_preset():
    env = HyperparamSearchEnv(preset="tiny", budget=2)
    env.reset(seed=0, options={"task_id": ADAPTATION})
    _, reward, _, _, _ = env.step({"learning_rate": 1e-2, "optimizer": "adam", "loss": "mse"})
    _, _, terminated, _, info = env.step({"learning_rate": 1e-4, "optimizer": "adam", "loss": "mse"})
    assert terminated and reward < 0 and 0 < info["test_nrmse"] <= NRMSE_CAP
    assert env.snapshot()["checkpoint_sha256"] == source_model(ADAPTATIONS[ADAPTATION].source, "tiny")[1]


def test_benchmark_smoke_run(capsys):
    import hpo_trial

    results = hpo_trial.main(hpo_trial.Args(preset="tiny", configs=2, skip_paper=True, estimate_steps=2,
                                            adaptations=(ADAPTATION,), learning_rates=(1e-2,)))
    assert results["timing"]["tiny/1"] > 0 and results["timing"]["tiny/estimated"] > 0
    assert set(results["adaptation"]) == {ADAPTATION} and set(results["sources"]) == {s.key for s in SOURCES}
    out = capsys.readouterr().out
    assert "seconds per fine-tuning trial" in out and "Zero-shot vs fine-tuned" in out
