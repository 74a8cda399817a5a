"""The digit-sum task: its verifier, its count of valid answers and its demonstrations."""

import itertools

import pytest
import torch

from rsigym.agents.train.digitsum import DigitSumTask
from rsigym.agents.train.tasks import make_task


def test_verifier_accepts_any_digits_with_the_right_sum():
    task = DigitSumTask(5)
    problems = torch.tensor([[17], [17], [17], [17], [0]])
    responses = torch.tensor([task.tokenizer.encode(s) for s in ("98000", "35414", "00890", "98001", "00000")])
    assert task.score(responses, problems).tolist() == [1.0, 1.0, 1.0, 0.0, 1.0]
    with_symbol = torch.tensor([task.tokenizer.encode("9800+")])  # '+' is token 10: never a digit, even if 10 fits
    assert task.score(with_symbol, torch.tensor([[27]])).tolist() == [0.0]
    assert task.prompts(torch.tensor([[7], [45]])).tolist() == [task.tokenizer.encode("07="),
                                                               task.tokenizer.encode("45=")]


def test_count_of_valid_answers_by_enumeration():
    task = DigitSumTask(3)
    for target in (0, 1, 9, 13, 27, 28):
        expected = sum(1 for d in itertools.product(range(10), repeat=3) if sum(d) == target)
        assert task.valid_answers(target) == expected
    assert DigitSumTask(5).valid_answers(22) == 6000  # the middle target: thousands of right answers


def test_demonstrations_are_valid_and_mix_the_canonical_path_with_many_others():
    task = DigitSumTask(5)
    generator = torch.Generator().manual_seed(0)
    problems = torch.full((400, 1), 20)
    demos = task.demonstrations(problems, generator)
    assert task.score(demos, problems).all()
    rows = [tuple(r) for r in demos.tolist()]
    canonical = tuple(task.canonical(20))
    assert canonical == (9, 9, 2, 0, 0)
    share = sum(r == canonical for r in rows) / len(rows)
    assert 0.12 < share < 0.28  # canonical_share 0.2 (a uniform draw hits it with chance 1 / 4,246)
    assert len(set(rows)) > 150  # the rest is spread over many distinct answers
    uniform = [tuple(task.uniform_answer(2, generator)) for _ in range(600)]
    assert set(uniform) == {p for p in itertools.product(range(10), repeat=5) if sum(p) == 2}  # all 15 reachable


def test_bad_settings_and_names_fail_clearly():
    with pytest.raises(ValueError, match="length"):
        DigitSumTask(12)
    with pytest.raises(ValueError, match="canonical_share"):
        DigitSumTask(5, canonical_share=1.5)
    with pytest.raises(ValueError, match="bogus"):
        make_task("bogus")
    assert make_task("addition").name == "addition" and make_task("digitsum", length=4).response_length == 4
