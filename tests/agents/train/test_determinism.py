"""The deterministic block pins threads and algorithms and gives the process its settings back."""

import pytest
import torch

from rsigym.agents.train import sft
from rsigym.agents.train.determinism import deterministic


def test_settings_hold_inside_and_are_restored_after():
    before = (torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())
    with deterministic(1):
        assert torch.are_deterministic_algorithms_enabled() and torch.get_num_threads() == 1
    assert (torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()) == before
    with pytest.raises(ValueError, match="threads"):
        with deterministic(0):
            pass


def test_the_same_training_twice_gives_the_same_bits():
    args = sft.Args(steps=8, batch_size=16, eval_size=10, favoured="per_target", held_out_every=3)
    (first, a), (second, b) = sft.train(args), sft.train(args)
    assert a["loss"] == b["loss"]
    assert all(torch.equal(x, y) for x, y in zip(first.state_dict().values(), second.state_dict().values()))
