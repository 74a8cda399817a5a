"""Post-training algorithms on small verifiable tasks: GRPO with rollout filters and entropy controls,
on-policy distillation with token selectors.

The scripts (``sft``, ``grpo``, ``opd``) each take an ``Args`` dataclass in ``main(args)``; the plug-in
points are ``RolloutFilter`` (``filter(group) -> FilterResult``), ``TokenSelector`` and ``VerifiableTask``;
``ConfigEnvTask`` makes a ``VerifiableTask`` of a Gymnasium env, in-process or served (``rsigym.remote``).
"""

from .arithmetic import AdditionTask, CharTokenizer
from .digitsum import DigitSumTask
from .env_task import ConfigEnvTask
from .entropy_control import clip_cov_mask, kl_cov_mask, token_covariance
from .filters import (
    FilterResult, GRPODropout, NoFilter, RandomDrop, RolloutFilter, RolloutGroup, entropy_effect, group_advantages,
    make_filter, recentre)
from .model import GPT, GPTConfig
from .rollouts import generate, greedy_accuracy, sampled_metrics, token_log_probs
from .selectors import (
    DIAL, AllTokens, LowLowSwap, RandomSwap, RandomTokens, TokenSelector, TopSignal, dial_scores, keep_counts,
    log_mean, low_low, make_selector, top_share)
from .tasks import VerifiableTask, make_task

__all__ = [
    "DIAL", "GPT", "AdditionTask", "AllTokens", "CharTokenizer", "ConfigEnvTask", "DigitSumTask", "FilterResult", "GPTConfig",
    "GRPODropout", "LowLowSwap", "NoFilter", "RandomDrop", "RandomSwap", "RandomTokens", "RolloutFilter",
    "RolloutGroup", "TokenSelector", "TopSignal", "VerifiableTask", "clip_cov_mask", "dial_scores", "entropy_effect",
    "generate", "greedy_accuracy", "group_advantages", "keep_counts", "kl_cov_mask", "log_mean", "low_low",
    "make_filter", "make_selector", "make_task", "recentre", "sampled_metrics", "token_covariance",
    "token_log_probs", "top_share",
]
