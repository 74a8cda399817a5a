"""Seeding of the post-training blocks: each GRPO warm start has its own rollout stream, and a power store of one
seeding scheme is never read into a study of another."""

import dataclasses
import json
import sys
from pathlib import Path

import pytest
import torch

from rsigym.agents.train import grpo
from rsigym.agents.train.digitsum import DigitSumTask

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import grpo_dropout  # noqa: E402
import posttrain_grid as grid  # noqa: E402
from posttrain_verdicts import run_key, warm_start_of  # noqa: E402


def _first_problems(args: grpo.Args, steps: int = 3) -> list[list[int]]:
    """The training targets of a run's first steps, drawn as ``grpo._main`` draws them from its seed."""
    task = DigitSumTask(args.length, args.canonical_share, args.base, args.favoured, args.held_out_every)
    generator = torch.Generator().manual_seed(args.seed)
    return [task.sample_problems(args.prompts_per_step, generator).view(-1).tolist() for _ in range(steps)]


def test_two_warm_starts_of_a_block_get_different_rollout_streams():
    args = grpo_dropout.Args()
    assert args.seeding == "unit"
    units = grid.block_units(4, args.warm_starts, args.seeds, args.seeding)
    assert [w for w, _ in units] == [12, 13, 14]
    runs = [grpo_dropout.run_args(args, "none", w, s) for w, s in units]
    assert len({r.seed for r in runs}) == len(runs)
    streams = [_first_problems(r) for r in runs]
    assert streams[0] != streams[1] != streams[2] != streams[0]
    # the variants of one warm start still share its stream (the pairing), the reseeded null does not
    assert grpo_dropout.run_args(args, "dropout_every_copy", *units[0]).seed == runs[0].seed
    assert grpo_dropout.run_args(args, "none_reseed", *units[0]).seed not in {r.seed for r in runs}
    # the old scheme gave the block's warm starts one stream: the dependence the calibration measured
    block = [grpo_dropout.run_args(args, "none", w, s) for w, s in grid.block_units(4, 3, 1, "block")]
    assert len({r.seed for r in block}) == 1 and _first_problems(block[0]) == _first_problems(block[1])


def test_unit_seeds_and_their_shifts_never_meet_across_the_power_study():
    seeds: dict[int, int] = {}
    for block in range(len(grid.BLOCK_NAMES)):
        for warm_start, seed in grid.block_units(block, 3, 2, "unit"):
            # a run draws from seed, seed + 1, seed + 2; the reseeded null adds RESEED to seed
            for drawn in (seed + d + shift for d in (0, 1, 2) for shift in (0, grpo_dropout.RESEED)):
                assert seeds.setdefault(drawn, warm_start) == warm_start, (block, warm_start, drawn)
    with pytest.raises(ValueError, match="seeding"):
        grid.block_units(0, 3, 1, "shared")


def test_a_store_of_another_seeding_scheme_is_refused_and_an_unnamed_one_is_block_seeded(tmp_path):
    store = str(tmp_path / "power.json")
    block_seeded = dataclasses.replace(grpo_dropout.PRESETS["quick"], seeding="block")
    grid.write_power_store(store, block_seeded, {"A": {"none": {"w0_s100": {"mean_at_k": 0.1}}}})
    assert json.loads(Path(store).read_text())["design"]["seeding"] == "block"
    assert list(grid.read_power_store(store, block_seeded)) == ["A"]
    with pytest.raises(ValueError, match="differs in seeding"):
        grid.read_power_store(store, grpo_dropout.PRESETS["quick"])
    # a store written before the schemes had names holds block-seeded blocks
    data = json.loads(Path(store).read_text())
    del data["design"]["seeding"]
    Path(store).write_text(json.dumps(data))
    assert list(grid.read_power_store(store, block_seeded)) == ["A"]
    with pytest.raises(ValueError, match="differs in seeding"):
        grid.read_power_store(store, grpo_dropout.PRESETS["quick"])


def test_the_committed_grpo_power_store_is_unit_seeded_throughout():
    store = json.loads((ROOT / "benchmarks" / "results" / "grpo_dropout_power.json").read_text())
    assert store["design"]["seeding"] == "unit"
    for name, block in store["blocks"].items():
        index = grid.BLOCK_NAMES.index(name)
        expected = {run_key(w, s) for w, s in grid.block_units(index, store["design"]["warm_starts"],
                                                                     store["design"]["seeds"], "unit")}
        for variant, runs in block.items():
            assert set(runs) == expected, (name, variant)
        assert len({warm_start_of(k) for k in expected}) == store["design"]["warm_starts"]


def test_the_held_out_control_trains_on_the_held_out_targets_and_the_method_never_does(monkeypatch):
    drawn: list[int] = []  # the warm start's and GRPO's training targets
    control: list[int] = []  # the control's GRPO targets
    sample, held = DigitSumTask.sample_problems, grpo.held_out_problems

    def recording(self, count, generator):
        problems = sample(self, count, generator)
        drawn.extend(problems.view(-1).tolist())
        return problems

    def recording_held(task, count, generator):
        problems = held(task, count, generator)
        control.extend(problems.view(-1).tolist())
        return problems

    monkeypatch.setattr(DigitSumTask, "sample_problems", recording)
    monkeypatch.setattr(grpo, "held_out_problems", recording_held)
    small = dict(steps=4, prompts_per_step=16, group_size=2, sft_steps=2, eval_size=15, sample_k=2, length=3,
                 favoured="per_target", canonical_share=0.5, held_out_every=3, eval_every=4)
    task = DigitSumTask(3, 0.5, 10, "per_target", 3)
    held_out = set(task.held_out_targets())
    grpo.main(grpo.Args(**small))
    assert len(drawn) > 4 * 16 and not held_out & set(drawn) and not control
    drawn.clear()
    grpo.main(grpo.Args(**small, train_held_out=True))
    assert len(control) == 4 * 16 and set(control) <= held_out and len(set(control)) > 1
    assert not held_out & set(drawn)  # the warm start still never sees a held-out target
    with pytest.raises(ValueError, match="held-out targets"):
        grpo.main(grpo.Args(**{**small, "held_out_every": 0}, train_held_out=True))
    # the control's draws: uniform on the held-out targets, from the run's generator
    draws = grpo.held_out_problems(task, 3000, torch.Generator().manual_seed(0)).view(-1).tolist()
    assert set(draws) == held_out and min(draws.count(t) for t in held_out) > 3000 / len(held_out) / 2
