"""In-process smoke runs of the training scripts and the two benchmarks, with tiny budgets."""

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from rsigym.agents.train import grpo, opd, sft

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from posttrain_verdicts import LABELS  # noqa: E402


def test_sft_smoke_and_cache(tmp_path):
    args = sft.Args(steps=5, eval_size=20, cache_dir=str(tmp_path))
    metrics = sft.main(args)
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["steps"] == 5
    assert len(list(tmp_path.glob("sft-*.pt"))) == 1
    _, cached = sft.warm_start(args)
    assert cached == metrics


@pytest.mark.parametrize("name", ["none", "dropout", "drop_no_recentre", "random_drop"])
def test_grpo_smoke(tmp_path, name):
    out = grpo.main(grpo.Args(filter=name, steps=2, prompts_per_step=3, group_size=4, sft_steps=5, eval_every=1,
                              eval_size=10, sample_k=2, kl_coef=0.1, log_dir=str(tmp_path)))
    lines = [json.loads(line) for line in (tmp_path / f"grpo_{name}_w0_s0.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]
    for record in lines:
        assert {"reward", "accuracy", "entropy", "rollouts_used", "rollouts_used_informative", "distinct_share",
                "drops_with_copy", "kl", "eval_accuracy"} <= set(record)
        assert 0 < record["rollouts_used"] <= 4
    assert (tmp_path / f"grpo_{name}_w0_s0.png").stat().st_size > 0
    assert 0.0 <= out["final_accuracy"] <= 1.0


@pytest.mark.parametrize("name", ["all", "top_signal", "dial", "random", "swap_low_low", "swap_random"])
def test_opd_smoke(tmp_path, name):
    out = opd.main(opd.Args(selector=name, steps=2, prompts_per_step=4, student_sft_steps=5, teacher_sft_steps=5,
                            eval_every=1, eval_size=10, sample_k=2, length=4, log_dir=str(tmp_path)))
    lines = [json.loads(line) for line in (tmp_path / f"{out['log_name']}.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    # 0.4 of 4 responses x 4 tokens = 6.4 -> 6 tokens, not a per-response ceiling of 2 of 4 (0.5)
    assert lines[0]["selected_share"] == pytest.approx(1.0 if name == "all" else 6 / 16)
    for key in ("initial_in_distribution", "final_in_distribution", "teacher_in_distribution"):
        assert 0.0 <= out[key]["mean_at_k"] <= 1.0
    assert (tmp_path / f"{out['log_name']}.png").stat().st_size > 0
    assert 0.0 <= out["final_accuracy"] <= 1.0


def _quick(module, tmp_path, name, **changes):
    args = dataclasses.replace(module.PRESETS["quick"], blocks=(0,), out_dir=str(tmp_path / name),
                               results=str(tmp_path / f"{name}.json"), **changes)
    return module.main(args), (tmp_path / f"{name}.json").read_text()


@pytest.mark.parametrize("module_name", ["grpo_dropout", "dial_opd"])
def test_benchmark_command_run_twice_writes_identical_results(tmp_path, capsys, module_name):
    """Fresh folders (no cache shared), the same settings: the same bytes."""
    module = __import__(module_name)
    results, first = _quick(module, tmp_path, "one")
    _, second = _quick(module, tmp_path, "two")
    assert first == second
    assert set(results["stability"]) == set(module.PRESETS["quick"].variants)
    assert results["claims"] and all(c["verdict"] in LABELS for c in results["claims"])
    assert {a["arm"] for a in results["power"]} == {"positive control", "null"}
    regime = results["blocks"]["A"]["regime"]
    assert regime["held_out_overlap"] == 0 and regime["held_out_targets"] > 0
    assert "Claims:" in capsys.readouterr().out
    assert results["settings"]["threads"] == 1  # the tables' thread count, recorded (2 threads sum differently)


def test_benchmarks_refuse_a_grid_without_their_baseline():
    import dial_opd
    import grpo_dropout

    with pytest.raises(ValueError, match="none"):
        grpo_dropout.main(dataclasses.replace(grpo_dropout.PRESETS["quick"], variants=("dropout",)))
    with pytest.raises(ValueError, match="all"):
        dial_opd.main(dataclasses.replace(dial_opd.PRESETS["quick"], variants=("dial_b0.5",)))


def test_runs_are_cached_by_their_arguments(tmp_path):
    import dial_opd

    args = dataclasses.replace(dial_opd.PRESETS["quick"], blocks=(0,), variants=("all", "top_signal"),
                               out_dir=str(tmp_path), results="", power_blocks=0)
    results = dial_opd.main(args)
    cached = sorted((tmp_path / "run-cache").glob("opd-*.json"))
    assert len(cached) == 2 * 3  # 2 variants x 3 warm starts x 1 seed
    stamps = [p.stat().st_mtime_ns for p in cached]
    assert dial_opd.main(args) == results and [p.stat().st_mtime_ns for p in cached] == stamps


def test_grpo_benchmark_runs_with_the_baseline_alone_from_the_command_line(tmp_path, capsys):
    """``--variants none`` used to crash in the table printer (KeyError 'dropout_drops') after the runs."""
    import grpo_dropout
    from posttrain_grid import parse_preset_args

    args = parse_preset_args("grpo", grpo_dropout.PRESETS, [
        "--preset", "quick", "--variants", "none", "--blocks", "0", "--out-dir", str(tmp_path / "runs"),
        "--results", str(tmp_path / "none.json")])
    results = grpo_dropout.main(dataclasses.replace(args, power_blocks=0))
    assert list(results["stability"]) == ["none"] and results["claims"] == [] and results["power"] == []
    assert results["tolerance"] is None  # no power blocks: no rerun spread measured
    out = capsys.readouterr().out
    assert "drops per run (share with a surviving twin)" in out and "| `none` |" in out
    assert json.loads((tmp_path / "none.json").read_text())["stability"] == results["stability"]


def test_the_power_study_grows_by_its_missing_blocks_and_gives_what_a_full_run_gives(tmp_path):
    """A power store keeps each block's per-run metrics: a later, longer study runs only the new blocks (its
    run cache may be gone) and its summary equals one computed from scratch; --power-only replaces the power
    study in the results file and nothing else; a store of another design is refused."""
    import grpo_dropout

    quick = dataclasses.replace(grpo_dropout.PRESETS["quick"], blocks=(0,), variants=("none", "kl_strong"))
    store = str(tmp_path / "power.json")
    first = grpo_dropout.main(dataclasses.replace(quick, out_dir=str(tmp_path / "a"), results=str(tmp_path / "a.json"),
                                                  power_blocks=2, power_store=store))
    assert list(json.loads(Path(store).read_text())["blocks"]) == ["A", "B"]
    # a fresh run cache: only block C runs (the power arms' variants x 3 warm starts)
    grown = grpo_dropout.main(dataclasses.replace(quick, out_dir=str(tmp_path / "b"), results=str(tmp_path / "a.json"),
                                                  power_blocks=3, power_store=store, power_only=True))
    arm_variants = {a["variant"] for a in grpo_dropout.POWER_ARMS} | {"none"}
    assert len(arm_variants) == 4  # none, kl_strong, train_on_held_out, none_reseed
    assert len(list((tmp_path / "b" / "run-cache").glob("*.json"))) == len(arm_variants) * 3
    assert list(json.loads(Path(store).read_text())["blocks"]) == ["A", "B", "C"]
    scratch = grpo_dropout.main(dataclasses.replace(quick, out_dir=str(tmp_path / "c"), results="", power_blocks=3))
    assert json.dumps(grown) == json.dumps(scratch)  # the tables as they were, the power study of 3 blocks
    assert grown["power"] != first["power"] and grown["settings"]["power_blocks"] == 3
    tables = [json.dumps({k: v for k, v in r.items() if k not in ("power", "tolerance", "settings")}) for r in (grown, first)]
    assert tables[0] == tables[1]
    with pytest.raises(ValueError, match="another design"):
        grpo_dropout.main(dataclasses.replace(quick, out_dir=str(tmp_path / "b"), results="", power_blocks=3,
                                              power_store=store, steps=4))
