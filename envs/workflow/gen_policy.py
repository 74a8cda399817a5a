"""A next generation that is trained, not scripted: a small torch policy fitted on self-judged SFT data.

``GenerationPolicy`` is a retrieval/classifier policy over actions with three heads, one per
part MASS has the model play, each a two-layer MLP over hashed bag-of-words features
(scikit-learn's ``HashingVectorizer``; no vocabulary to download):

* executor: from a role call's conversation (its first user turn with the workflow text
  stripped, its last user turn, and the ops it took so far) to a distribution over the actions
  seen in the SFT data (``{"op": ...}`` JSON). At inference only actions the role may take are
  scored (its tools and callees, as its brief lists them) and one is *sampled* from the softmax
  at ``temperature`` with the request's generator (0: the most likely one), so its episodes are
  its own, not a replay of generation 1's.
* judge: from the difference of the two rendered workspaces' features to first / second / tie,
  trained on the gen-1 judge's own verdicts (both orders).
* optimiser: a scorer of edits (hashed bag-of-words of the edit's JSON) fitted on gen-1's
  accepted against its rejected edits (logistic regression, scikit-learn); it proposes by drawing
  a pool of untried edits from the generic operator set (``operators``) and sampling one from
  the softmax of their scores, so it never replays a stored edit (one may recur only as a fresh
  draw from the operator set).

``serve(name)`` registers it as the offline model ``rsigym/<name>``, so it is used through the
same interface as the scripted policies; a LiteLLM model name can take its place.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from sklearn.feature_extraction.text import HashingVectorizer
from torch import nn

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy

from .operators import edit_pool
from .sft_export import strip_workflow_prompt

__all__ = ["GenerationPolicy", "TrainConfig", "executor_features", "judge_features"]

_FEATURES = 2 ** 12
_VECTORIZER = HashingVectorizer(n_features=_FEATURES, alternate_sign=False, ngram_range=(1, 2), norm="l2",
                                token_pattern=r"[A-Za-z_][A-Za-z0-9_.]+|\d+|[=*/<>%]+")
_BLOCK = re.compile(r"=== Workspace (first|second) ===\n(.*?)(?=\n\n=== Workspace|\n\nWhich workspace)", re.DOTALL)
_TOOLS = re.compile(r"^Tools: (.*?); you may call: (.*?)\.$", re.MULTILINE)
WINNERS = ("first", "second", "tie")


@dataclass
class TrainConfig:
    """Training settings of every head."""

    hidden: int = 64          # MLP width
    epochs: int = 200         # full-batch Adam steps
    lr: float = 0.01
    weight_decay: float = 1e-4
    seed: int = 0
    temperature: float = 1.0  # sampling temperature of the executor and optimiser (0: greedy)
    edit_pool: int = 24       # untried edits drawn per optimiser proposal


def _hash(texts: list[str]) -> np.ndarray:
    return _VECTORIZER.transform(texts).toarray().astype(np.float32)  # (N, F)


def _ops(messages: list[dict[str, Any]]) -> str:
    ops = []
    for m in messages:
        if m.get("role") == "assistant":
            try:
                ops.append(str(json.loads(str(m.get("content")))["op"]))
            except (ValueError, KeyError, TypeError):
                ops.append("invalid")
    return " ".join(f"did_{op}" for op in ops) + f" turns_{len(ops)}"


def executor_features(messages: list[dict[str, Any]]) -> np.ndarray:
    """(3F,) features of a role call so far: stripped first user turn, last user turn, ops taken."""
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    first, last = strip_workflow_prompt(users[0] if users else ""), users[-1] if users else ""
    return np.concatenate(_hash([first, last, _ops(messages)]), axis=0).reshape(-1)


def judge_features(prompt: str) -> np.ndarray:
    """(F,) first workspace's features minus the second's."""
    blocks = dict(_BLOCK.findall(prompt))
    first, second = _hash([blocks.get("first", ""), blocks.get("second", "")])
    return first - second


def _mlp(inputs: int, hidden: int, outputs: int) -> nn.Module:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, outputs))


def _fit(x: np.ndarray, y: np.ndarray, classes: int, config: TrainConfig) -> tuple[nn.Module, float]:
    """Full-batch cross-entropy training; returns the model and its final training accuracy."""
    torch.manual_seed(config.seed)
    model = _mlp(x.shape[1], config.hidden, classes)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    inputs, targets = torch.from_numpy(x), torch.from_numpy(y).long()   # (N, D), (N,)
    for _ in range(config.epochs):
        optimiser.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        accuracy = float((model(inputs).argmax(dim=1) == targets).float().mean())
    return model.eval(), accuracy


def _allowed(action: dict[str, Any], brief: str) -> bool:
    """Whether the role whose brief this is may take ``action`` (its tools, callees, finish/return)."""
    match = _TOOLS.search(brief)
    tools = {t.strip() for t in match.group(1).split(",")} if match else set()
    callees = {c.strip() for c in match.group(2).split(",")} if match else set()
    leads = "End the workflow with" in brief
    op = action.get("op")
    if op == "delegate":
        return action.get("role") in callees
    if op in ("write_file", "run_python", "read_file"):
        return op in tools
    return (op == "finish") == leads if op in ("finish", "return") else False


class GenerationPolicy:
    """The trained next generation; see the module docstring."""

    def __init__(self, config: TrainConfig | None = None) -> None:
        self.config = config or TrainConfig()
        self.actions: list[str] = []
        self.edit_scorer: Any = None          # sklearn LogisticRegression over hashed edit text, or None
        self.edit_centroid: np.ndarray | None = None
        self.executor: nn.Module | None = None
        self.judge: nn.Module | None = None
        self.train_accuracy: dict[str, float] = {}

    # -- training -----------------------------------------------------------------------------
    def fit_executor(self, examples: list[dict[str, Any]]) -> int:
        """Fit on TRL chat examples: one sample per assistant turn. Returns the number of samples."""
        rows, labels = [], []
        for example in examples:
            messages = example["messages"]
            for index, message in enumerate(messages):
                if message["role"] != "assistant":
                    continue
                try:
                    action = json.loads(message["content"])
                except ValueError:
                    continue
                text = json.dumps(action, sort_keys=True)
                if text not in self.actions:
                    self.actions.append(text)
                rows.append(executor_features(messages[:index]))
                labels.append(self.actions.index(text))
        if not rows:
            raise ValueError("no assistant action to learn from in the SFT examples")
        self.executor, self.train_accuracy["executor"] = _fit(np.stack(rows), np.array(labels), len(self.actions),
                                                              self.config)
        return len(rows)

    def fit_judge(self, verdicts: list[tuple[str, str]]) -> int:
        """Fit on (judge prompt, winner) pairs, e.g. the gen-1 judge's own answers."""
        rows = [judge_features(prompt) for prompt, _ in verdicts]
        labels = [WINNERS.index(w) for _, w in verdicts]
        if not rows:
            raise ValueError("no verdict to learn from")
        self.judge, self.train_accuracy["judge"] = _fit(np.stack(rows), np.array(labels), len(WINNERS), self.config)
        return len(rows)

    def fit_optimizer(self, accepted_edits: Sequence[dict[str, Any]],
                      rejected_edits: Sequence[dict[str, Any]] = ()) -> int:
        """Fit the edit scorer on accepted (1) against rejected (0) edits; with one class only, score
        by similarity to the accepted ones. Returns the number of edits learned from."""
        from sklearn.linear_model import LogisticRegression

        accepted, rejected = list(accepted_edits), list(rejected_edits)
        if accepted and rejected:
            x = _hash([json.dumps(e, sort_keys=True) for e in accepted + rejected])
            y = np.array([1] * len(accepted) + [0] * len(rejected))
            self.edit_scorer = LogisticRegression(C=1.0, max_iter=500).fit(x, y)
        elif accepted:
            self.edit_centroid = _hash([json.dumps(e, sort_keys=True) for e in accepted]).mean(axis=0)
        return len(accepted) + len(rejected)

    def edit_scores(self, edits: list[dict[str, Any]]) -> np.ndarray:
        """(E,) the optimiser's preference of each edit (log-odds of acceptance, or similarity)."""
        x = _hash([json.dumps(e, sort_keys=True) for e in edits])
        if self.edit_scorer is not None:
            return np.asarray(self.edit_scorer.decision_function(x), dtype=float)
        if self.edit_centroid is not None:
            return x @ self.edit_centroid * 4.0
        return np.zeros(len(edits))

    # -- acting -------------------------------------------------------------------------------
    def act(self, request: OfflineRequest) -> OfflineReply:
        system = str(request.messages[0].get("content") or "") if request.messages else ""
        if system.startswith("[workflow:judge]"):
            return OfflineReply(action=self._judge(str(request.messages[-1].get("content") or "")))
        if system.startswith("[workflow:optimize]"):
            return OfflineReply(action=self._optimize(str(request.messages[-1].get("content") or ""), request.rng))
        return OfflineReply(action=self._execute(request.messages, request.rng))

    def _sample(self, scores: np.ndarray, rng: np.random.Generator) -> int:
        """An index drawn from softmax(scores / temperature); the argmax at temperature 0."""
        if self.config.temperature <= 0:
            return int(np.argmax(scores))
        z = (scores - scores.max()) / self.config.temperature
        probs = np.exp(z) / np.exp(z).sum()
        return int(rng.choice(len(scores), p=probs))

    def _execute(self, messages: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Any]:
        if self.executor is None:
            raise RuntimeError("the executor head is not trained")
        brief = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
        with torch.no_grad():
            logits = self.executor(torch.from_numpy(executor_features(messages)[None]))[0].numpy()   # (V,)
        allowed = [i for i, text in enumerate(self.actions) if _allowed(json.loads(text), brief)]
        if not allowed:
            return {"op": "finish", "summary": "no action fits"} if "End the workflow with" in brief else \
                {"op": "return", "result": {}}
        return json.loads(self.actions[allowed[self._sample(logits[allowed].astype(float), rng)]])

    def _judge(self, prompt: str) -> dict[str, Any]:
        if self.judge is None:
            raise RuntimeError("the judge head is not trained")
        with torch.no_grad():
            winner = WINNERS[int(self.judge(torch.from_numpy(judge_features(prompt)[None]))[0].argmax())]
        return {"winner": winner, "reason": "trained judge"}

    def _optimize(self, prompt: str, rng: np.random.Generator) -> dict[str, Any]:
        spec = json.loads(prompt.split("Current workflow:\n", 1)[-1].split("\n\nFeedback:\n", 1)[0])
        tried = set(spec.get("edit_log", [])) | set(re.findall(r"edit ([0-9a-f]{16})", prompt))
        pool = edit_pool(spec, rng, tried, self.config.edit_pool)
        if not pool:
            return {"op": "reorder_calls", "order": spec["call_order"]}  # refused as a no-op
        return pool[self._sample(self.edit_scores(pool), rng)]

    def serve(self, name: str) -> str:
        """Register as the offline model ``rsigym/<name>``; returns the model string."""
        register_offline_policy(name)(self.act)
        return f"rsigym/{name}"
