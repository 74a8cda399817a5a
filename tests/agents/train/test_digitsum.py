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


def test_held_out_targets_never_enter_training_and_are_what_evaluation_draws():
    task = DigitSumTask(5, held_out_every=3)
    train, held = set(task.train_targets()), set(task.held_out_targets())
    assert train & held == set() and train | held == set(range(46)) and len(held) == 15
    drawn = set(task.sample_problems(4000, torch.Generator().manual_seed(0))[:, 0].tolist())
    assert drawn == train  # every training target, no held-out one
    demos = task.demonstrations(task.sample_problems(64, torch.Generator().manual_seed(1)), torch.Generator())
    assert demos.shape == (64, 5)
    evaluation = task.eval_problems(30)[:, 0].tolist()
    assert set(evaluation) == held and all(evaluation.count(t) == 2 for t in held)  # each held-out target equally
    with pytest.raises(ValueError, match="held_out_every"):
        DigitSumTask(5, held_out_every=1)


def test_per_target_favoured_answers_are_fixed_valid_and_differ_between_targets():
    task = DigitSumTask(5, canonical_share=1.0, favoured="per_target")
    answers = {t: task.favoured_answer(t) for t in range(46)}
    assert answers == {t: task.favoured_answer(t) for t in range(46)}  # a fixed answer per target value
    assert all(sum(a) == t for t, a in answers.items())
    middle = [tuple(answers[t]) for t in range(10, 36)]
    assert len({tuple(a[:2]) for a in middle}) > 10  # no shared rule such as nines first
    demos = task.demonstrations(torch.tensor([[17], [17]]), torch.Generator().manual_seed(0))
    assert demos.tolist() == [answers[17], answers[17]]
    with pytest.raises(ValueError, match="favoured"):
        DigitSumTask(5, favoured="bogus")


def test_a_larger_base_widens_the_vocabulary_and_the_verifier():
    task = DigitSumTask(3, base=16)
    assert task.tokenizer.vocab_size == 18 and task.top == 45 and task.prompt_length == 3
    responses = torch.tensor([task.tokenizer.encode(s) for s in ("ff0", "a50")])
    assert task.score(responses, torch.tensor([[30], [15]])).tolist() == [1.0, 1.0]  # f+f+0 = 30, a+5+0 = 15
    assert task.valid_answers(45) == 1 and task.valid_answers(1) == 3
    with pytest.raises(ValueError, match="base"):
        DigitSumTask(3, base=1)


def test_completable_marks_the_first_mistake_and_everything_after_it():
    task = DigitSumTask(3)
    responses = torch.tensor([task.tokenizer.encode(s) for s in ("900", "990", "090", "0+9")])
    problems = torch.tensor([[9], [9], [18], [9]])
    assert task.completable(responses, problems).tolist() == [
        [True, True, True],     # 9 + 0 + 0 = 9
        [True, False, False],   # 9 + 9 overshoots 9
        [True, True, False],    # 0 + 9 leaves 9 for the last digit: fine; 0 then misses it
        [True, False, False],   # '+' is no digit
    ]


def test_in_distribution_problems_are_the_training_targets_in_turn():
    task = DigitSumTask(3, 0.2, 16, "canonical", 3)
    problems = task.in_distribution_problems(62)[:, 0].tolist()
    assert problems == task.train_targets() * 2
    assert not set(problems) & set(task.held_out_targets())
