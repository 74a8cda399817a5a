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
                              eval_size=10, kl_coef=0.1, log_dir=str(tmp_path)))
    lines = [json.loads(line) for line in (tmp_path / f"grpo_{name}_s0.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]
    for record in lines:
        assert {"reward", "accuracy", "entropy", "rollouts_used", "kl", "eval_accuracy"} <= set(record)
        assert 0 < record["rollouts_used"] <= 4
    assert (tmp_path / f"grpo_{name}_s0.png").stat().st_size > 0
    assert 0.0 <= out["final_accuracy"] <= 1.0


@pytest.mark.parametrize("name", ["all", "top_signal", "dial", "random"])
def test_opd_smoke(tmp_path, name):
    out = opd.main(opd.Args(selector=name, steps=2, prompts_per_step=4, student_sft_steps=5, teacher_sft_steps=5,
                            eval_every=1, eval_size=10, log_dir=str(tmp_path)))
    lines = [json.loads(line) for line in (tmp_path / f"{out['log_name']}.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    assert lines[0]["selected_share"] == pytest.approx(1.0 if name == "all" else 0.5)  # ceil(0.4 * 4) = 2 of 4
    assert (tmp_path / f"{out['log_name']}.png").stat().st_size > 0
    assert 0.0 <= out["final_accuracy"] <= 1.0


def test_grpo_dropout_benchmark_smoke(tmp_path, capsys):
    import grpo_dropout

    results = grpo_dropout.main(grpo_dropout.Args(seeds=(0,), steps=2, prompts_per_step=2, group_size=4, sft_steps=5,
                                                  eval_size=10, out_dir=str(tmp_path)))
    assert set(results["variants"]) == {"none", "dropout", "drop_no_recentre", "random_drop"}
    out = capsys.readouterr().out
    assert "rollouts used" in out and (tmp_path / "grpo_dropout.png").exists()


def test_dial_opd_benchmark_smoke(tmp_path, capsys):
    import dial_opd

    results = dial_opd.main(dial_opd.Args(seeds=(0,), steps=2, prompts_per_step=4, student_sft_steps=5,
                                          teacher_sft_steps=5, eval_size=10, out_dir=str(tmp_path)))
    assert set(results["variants"]) == {"all", "top_signal", "dial beta=0.5", "dial beta=1", "random"}
    assert "student accuracy" in capsys.readouterr().out
