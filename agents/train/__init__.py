"""Post-training algorithms on a small verifiable task: GRPO with rollout filters, on-policy distillation
with token selectors.

The scripts (``sft``, ``grpo``, ``opd``) each take an ``Args`` dataclass in ``main(args)``; the plug-in
points are ``RolloutFilter`` (``filter(group) -> FilterResult``) and ``TokenSelector``.
"""

from .arithmetic import AdditionTask, CharTokenizer
from .filters import (
    FilterResult, GRPODropout, NoFilter, RandomDrop, RolloutFilter, RolloutGroup, entropy_effect, group_advantages,
    make_filter, recentre)
from .model import GPT, GPTConfig
from .rollouts import generate, greedy_accuracy, token_log_probs
from .selectors import (
    DIAL, AllTokens, RandomTokens, TokenSelector, TopSignal, dial_scores, log_mean, make_selector, top_share)

__all__ = [
    "DIAL", "GPT", "AdditionTask", "AllTokens", "CharTokenizer", "FilterResult", "GPTConfig", "GRPODropout",
    "NoFilter", "RandomDrop", "RandomTokens", "RolloutFilter", "RolloutGroup", "TokenSelector", "TopSignal",
    "dial_scores", "entropy_effect", "generate", "greedy_accuracy", "group_advantages", "log_mean", "make_filter",
    "make_selector", "recentre", "token_log_probs", "top_share",
]
