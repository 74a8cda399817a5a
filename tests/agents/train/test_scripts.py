"""In-process smoke runs of the training scripts and the two benchmarks, with tiny budgets."""

import json
import sys
from pathlib import Path

import pytest

from rsigym.agents.train import grpo, opd, sft

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


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
    lines = [json.loads(line) for line in (tmp_path / f"grpo_{name}_s0.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]
    for record in lines:
        assert {"reward", "accuracy", "entropy", "rollouts_used", "rollouts_used_informative", "distinct_share",
                "drops_with_copy", "kl", "eval_accuracy"} <= set(record)
        assert 0 < record["rollouts_used"] <= 4
    assert (tmp_path / f"grpo_{name}_s0.png").stat().st_size > 0
    assert 0.0 <= out["final_accuracy"] <= 1.0


@pytest.mark.parametrize("name", ["all", "top_signal", "dial", "random", "swap_low_low", "swap_random"])
def test_opd_smoke(tmp_path, name):
    out = opd.main(opd.Args(selector=name, steps=2, prompts_per_step=4, student_sft_steps=5, teacher_sft_steps=5,
                            eval_every=1, eval_size=10, sample_k=2, length=4, log_dir=str(tmp_path)))
    lines = [json.loads(line) for line in (tmp_path / f"{out['log_name']}.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    # 0.4 of 4 responses x 4 tokens = 6.4 -> 6 tokens, not a per-response ceiling of 2 of 4 (0.5)
    assert lines[0]["selected_share"] == pytest.approx(1.0 if name == "all" else 6 / 16)
    assert (tmp_path / f"{out['log_name']}.png").stat().st_size > 0
    assert 0.0 <= out["final_accuracy"] <= 1.0


def test_grpo_dropout_benchmark_smoke(tmp_path, capsys):
    import grpo_dropout

    results = grpo_dropout.main(grpo_dropout.Args(seeds=(0, 1), steps=2, prompts_per_step=2, group_size=4, sft_steps=5,
                                                  eval_size=6, out_dir=str(tmp_path),
                                                  results=str(tmp_path / "grpo.json")))
    assert set(results["variants"]) == set(grpo_dropout.VARIANTS)
    assert (tmp_path / "grpo.json").read_text() == json.dumps(results, indent=1) + "\n"  # NaN-safe comparison
    none = results["variants"]["none"]["vs_none"]["mean_at_8"]
    assert none["deltas"] == [0.0, 0.0] and none["ci"] == [0.0, 0.0]  # vanilla against itself
    assert "rollouts/prompt" in capsys.readouterr().out and (tmp_path / "grpo_dropout.png").exists()
    with pytest.raises(ValueError, match="none"):
        grpo_dropout.main(grpo_dropout.Args(variants=("dropout",)))


def test_dial_opd_benchmark_smoke(tmp_path, capsys):
    import dial_opd

    results = dial_opd.main(dial_opd.Args(seeds=(0,), steps=2, prompts_per_step=4, student_sft_steps=5,
                                          teacher_sft_steps=5, eval_size=6, out_dir=str(tmp_path),
                                          results=str(tmp_path / "dial.json")))
    assert set(results["variants"]) == set(dial_opd.VARIANTS)
    for name, entry in results["variants"].items():
        assert entry["mean"]["selected_share"] == pytest.approx(1.0 if name == "all" else 0.4), name
    assert "Mean@8" in capsys.readouterr().out
    # every run is cached by its arguments: a second call (a resumed or spread-out benchmark) reruns nothing
    cached = sorted((tmp_path / "run-cache").glob("opd-*.json"))
    assert len(cached) == len(dial_opd.VARIANTS)
    stamps = [p.stat().st_mtime_ns for p in cached]
    again = dial_opd.main(dial_opd.Args(seeds=(0,), steps=2, prompts_per_step=4, student_sft_steps=5,
                                        teacher_sft_steps=5, eval_size=6, out_dir=str(tmp_path),
                                        results=str(tmp_path / "dial.json")))
    assert again == json.loads(json.dumps(results)) and [p.stat().st_mtime_ns for p in cached] == stamps


def test_regime_script_smoke(tmp_path, capsys):
    import posttrain_regime

    results = posttrain_regime.main(posttrain_regime.Args(
        steps=2, before_sft_steps=5, before_teacher_sft_steps=5, after_sft_steps=5, after_teacher_sft_steps=5,
        eval_size=6, out_dir=str(tmp_path), results=str(tmp_path / "regime.json")))
    assert len(results["regimes"]) == 2
    for regime in results["regimes"].values():
        assert 0 < regime["distinct_share"] <= 1 and 0 <= regime["low_low_share"] <= 1
    assert "distinct rollouts" in capsys.readouterr().out
