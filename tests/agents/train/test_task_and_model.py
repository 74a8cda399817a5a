"""The addition task's format and verifier, and token log-probabilities of the model."""

import torch
import torch.nn.functional as F

from rsigym.agents.train.arithmetic import AdditionTask, CharTokenizer
from rsigym.agents.train.model import GPT, GPTConfig
from rsigym.agents.train.rollouts import generate, token_log_probs


def test_format_and_verifier():
    task = AdditionTask(3)
    assert task.prompt_text(47, 285) == "047+285=" and task.answer_text(47, 285) == "2330"
    assert task.answer_text(999, 999) == "8991"  # 1998 reversed
    operands = torch.tensor([[47, 285], [999, 999]])
    answers = task.answers(operands)
    assert CharTokenizer().decode(answers[0]) == "2330"
    wrong = answers.clone()
    wrong[1, 2] = (wrong[1, 2] + 1) % 10
    assert task.rewards(answers, answers).tolist() == [1.0, 1.0]
    assert task.rewards(wrong, answers).tolist() == [1.0, 0.0]
    assert task.prompts(operands).shape == (2, task.prompt_length)


def test_token_log_probs_match_the_logits_and_generation_has_the_right_shape():
    torch.manual_seed(0)
    task = AdditionTask(2)
    model = GPT(GPTConfig(vocab_size=12, block_size=task.prompt_length + task.response_length, n_embd=32))
    prompts = task.prompts(task.sample_operands(5, torch.Generator().manual_seed(0)))
    sequences = generate(model, prompts, task.response_length, torch.Generator().manual_seed(1))
    assert sequences.shape == (5, task.prompt_length + task.response_length)
    assert torch.equal(sequences[:, :task.prompt_length], prompts)
    log_probs, entropy = token_log_probs(model, sequences, task.prompt_length)
    P = task.prompt_length
    for t in range(task.response_length):
        expected = F.log_softmax(model(sequences[:, :P + t])[:, -1], -1).gather(1, sequences[:, P + t:P + t + 1])
        assert torch.allclose(log_probs[:, t], expected.squeeze(1), atol=1e-5)
    assert (entropy > 0).all() and (entropy <= torch.log(torch.tensor(12.0)) + 1e-5).all()
