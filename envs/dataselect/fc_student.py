"""The function-calling student: a 2-layer transformer encoder with action, function, question
and argument-pointer heads, trained with one fixed recipe.

Items are flattened into words (``[cls] domain [tools] names... [user] ... [request] ...``). A
word of the fixed vocabulary keeps its id; any other word is a value (an id, a code, a date) and
is embedded by its shape (``<order_id>``, ``<date>``, ...), so the student never memorises
values. Each argument is a pointer to the input position that holds its value (the last
occurrence: the current request comes last), and is decoded back to that word. Predictions are
judged by exact match of action type, function and normalised arguments.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from .fc_pool import NO_CALL_TEXT, VAGUE
from .fc_tools import ASK_TEXT, FILLERS, FIRST_NAMES, LAST_NAMES, fc_tools

__all__ = ["FcRecipe", "FcEncoded", "encode_items", "FcStudent", "train_student", "predict", "item_correct",
           "label_losses", "ACTIONS"]

ACTIONS = ("call", "ask", "no_call")
MAX_LEN = 96
_SPECIAL = ("<pad>", "<unk>", "[cls]", "[tools]", "[user]", "[assistant]", "[tool]", "[request]", "call")
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((name, re.compile(pattern)) for name, pattern in (
    ("<order_id>", r"^#W\d+$"), ("<email>", r"@"), ("<user_id>", r"^[a-z]+_[a-z]+_\d+$"),
    ("<payment>", r"^(credit_card|gift_card|paypal|certificate)_\d+$"), ("<reservation>", r"^[A-Z]{3}\d{3}$"),
    ("<flight>", r"^HAT\d+$"), ("<date>", r"^\d{4}-\d\d-\d\d$"), ("<airport>", r"^[A-Z]{3}$"),
    ("<zip>", r"^\d{5}$"), ("<product>", r"^\d{10}$"), ("<num>", r"^\d{1,4}$")))
_NAMES = frozenset(FIRST_NAMES + LAST_NAMES)


@lru_cache(maxsize=1)
def _vocab() -> dict[str, int]:
    words: list[str] = list(_SPECIAL) + [s for s, _ in _SHAPES] + ["<name>", "retail", "airline"]
    texts = [p for t in fc_tools() for p in t.phrasings] + list(VAGUE.values()) + list(FILLERS)
    texts += [NO_CALL_TEXT, ASK_TEXT, "sorry , my mistake , it is", "ok , done", "error : not found",
              "error : no such record", "error : invalid id"]
    names = sorted({t.name for t in fc_tools()} | {p for t in fc_tools() for p in t.params})
    for text in texts:
        words += [w.lower() for w in re.sub(r"\{\w+\}", " ", text).split()]
    words += names
    vocab: dict[str, int] = {}
    for w in words:
        vocab.setdefault(w, len(vocab))
    return vocab


@lru_cache(maxsize=1)
def _heads() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(function names, parameter names), in a fixed order."""
    functions = tuple(sorted({t.name for t in fc_tools()}))
    params = tuple(sorted({p for t in fc_tools() for p in t.params}))
    return functions, params


def _word_id(word: str, vocab: dict[str, int]) -> int:
    if word.lower() in vocab and word.lower() not in _NAMES:
        return vocab[word.lower()]
    if word in _NAMES:
        return vocab["<name>"]
    for shape, pattern in _SHAPES:
        if pattern.search(word):
            return vocab[shape]
    return vocab["<unk>"]


def flatten(item: dict[str, Any]) -> list[str]:
    """The words the student reads, in order."""
    words = ["[cls]", item["domain"], "[tools]", *item["tools"]]
    for turn in item["history"]:
        if turn["role"] == "assistant":
            call = turn["tool_call"]
            words += ["[assistant]", "call", call["name"]]
            for k, v in call["arguments"].items():
                words += [k, str(v)]
        else:
            words += ["[user]" if turn["role"] == "user" else "[tool]", *turn["content"].split()]
    return (words + ["[request]", *item["request"].split()])[:MAX_LEN]


@dataclass(frozen=True)
class FcEncoded:
    """Items as padded arrays. ``pointers[i, p]``: position of param p's value, -100 if absent
    or not an argument of the target."""

    tokens: np.ndarray     # (N, T) int64
    words: list[list[str]]
    actions: np.ndarray    # (N,)
    functions: np.ndarray  # (N,) -100 unless a call
    asks: np.ndarray       # (N,) -100 unless a question
    pointers: np.ndarray   # (N, P)


def encode_items(items: Sequence[dict[str, Any]]) -> FcEncoded:
    vocab = _vocab()
    functions, params = _heads()
    n = len(items)
    tokens = np.zeros((n, MAX_LEN), dtype=np.int64)
    actions = np.zeros(n, dtype=np.int64)
    function_ids = np.full(n, -100, dtype=np.int64)
    asks = np.full(n, -100, dtype=np.int64)
    pointers = np.full((n, len(params)), -100, dtype=np.int64)
    all_words = []
    for i, item in enumerate(items):
        words = flatten(item)
        all_words.append(words)
        tokens[i, :len(words)] = [_word_id(w, vocab) for w in words]
        target = item["target"]
        actions[i] = ACTIONS.index(target["type"])
        if target["type"] == "call":
            function_ids[i] = functions.index(target["name"])
            for name, value in target["arguments"].items():
                where = [j for j, w in enumerate(words) if w == value and j > 3]
                if where and name in params:
                    pointers[i, params.index(name)] = where[-1]
        elif target["type"] == "ask":
            asks[i] = params.index(target["missing"])
    return FcEncoded(tokens, all_words, actions, function_ids, asks, pointers)


@dataclass(frozen=True)
class FcRecipe:
    """The one fixed training recipe (part of every cache key)."""

    d_model: int = 64
    layers: int = 2
    heads: int = 4
    epochs: int = 12
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.01

    def key(self) -> dict[str, Any]:
        return {"student": "fc-transformer/1", **asdict(self)}


class FcStudent(nn.Module):
    """Encoder with heads for the action type, the function, the asked parameter and pointers."""

    def __init__(self, recipe: FcRecipe) -> None:
        super().__init__()
        functions, params = _heads()
        d = recipe.d_model
        self.embed = nn.Embedding(len(_vocab()), d, padding_idx=0)
        self.position = nn.Embedding(MAX_LEN, d)
        layer = nn.TransformerEncoderLayer(d, recipe.heads, 2 * d, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, recipe.layers, enable_nested_tensor=False)
        self.action_head = nn.Linear(d, len(ACTIONS))
        self.function_head = nn.Linear(d, len(functions))
        self.ask_head = nn.Linear(d, len(params))
        self.param_queries = nn.Parameter(torch.randn(len(params), d) * 0.1)
        self.pointer_proj = nn.Linear(d, d)

    def forward(self, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
        pad = tokens == 0                                                      # (B, T)
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden = self.encoder(self.embed(tokens) + self.position(positions), src_key_padding_mask=pad)  # (B, T, d)
        cls = hidden[:, 0]                                                     # (B, d)
        # Pointer logits per parameter over input positions, conditioned on the item: (B, P, T)
        queries = self.param_queries[None] + cls[:, None]
        pointers = torch.einsum("bpd,btd->bpt", queries, self.pointer_proj(hidden))
        pointers = pointers.masked_fill(pad[:, None], -1e4)
        return {"action": self.action_head(cls), "function": self.function_head(cls),
                "ask": self.ask_head(cls), "pointers": pointers, "cls": cls}


def _losses(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor], reduce: bool = True) -> torch.Tensor:
    reduction = "mean" if reduce else "none"
    ce = nn.functional.cross_entropy
    loss = ce(out["action"], batch["actions"], reduction=reduction)
    if reduce:
        for head, key in (("function", "functions"), ("ask", "asks")):
            if (batch[key] != -100).any():
                loss = loss + ce(out[head], batch[key], ignore_index=-100)
        mask = batch["pointers"] != -100
        if mask.any():
            loss = loss + ce(out["pointers"][mask], batch["pointers"][mask])
        return loss
    per_item = loss
    per_item = per_item + ce(out["function"], batch["functions"].clamp(min=0), reduction="none") * (batch["functions"] != -100)
    per_item = per_item + ce(out["ask"], batch["asks"].clamp(min=0), reduction="none") * (batch["asks"] != -100)
    B, P, T = out["pointers"].shape
    pointer_ce = ce(out["pointers"].reshape(B * P, T), batch["pointers"].reshape(-1).clamp(min=0), reduction="none")
    return per_item + (pointer_ce.reshape(B, P) * (batch["pointers"] != -100)).sum(1)


def _tensors(encoded: FcEncoded, rows: np.ndarray) -> dict[str, torch.Tensor]:
    length = max(1, int((encoded.tokens[rows] != 0).sum(1).max()))
    return {"tokens": torch.from_numpy(encoded.tokens[rows, :length]),
            "actions": torch.from_numpy(encoded.actions[rows]), "functions": torch.from_numpy(encoded.functions[rows]),
            "asks": torch.from_numpy(encoded.asks[rows]),
            "pointers": torch.from_numpy(np.where(encoded.pointers[rows] < length, encoded.pointers[rows], -100))}


def _length_buckets(order: np.ndarray, lengths: np.ndarray, batch_size: int,
                    rng: np.random.Generator) -> list[np.ndarray]:
    """Batches of similar length (less padding: long-context items are 3x longer), in random order."""
    batches: list[np.ndarray] = []
    span = batch_size * 8
    for start in range(0, len(order), span):
        chunk = order[start:start + span]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def train_student(encoded: FcEncoded, rows: Sequence[int], seed: int, recipe: FcRecipe,
                  init: dict[str, torch.Tensor] | None = None) -> FcStudent:
    """Train a student on ``rows`` of ``encoded`` with the fixed recipe: from ``init`` (a state
    dict, e.g. the base model's: fine-tuning the probed model) or from scratch when None."""
    torch.manual_seed(seed)
    model = FcStudent(recipe)
    if init is not None:
        model.load_state_dict(init)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, weight_decay=recipe.weight_decay)
    rows_array = np.asarray(rows, dtype=np.int64)
    rng = np.random.default_rng(seed)
    steps = recipe.epochs * max(1, -(-len(rows_array) // recipe.batch_size))
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, recipe.learning_rate, total_steps=steps)
    model.train()
    lengths = (encoded.tokens != 0).sum(1)
    for _ in range(recipe.epochs):
        for chunk in _length_buckets(rng.permutation(rows_array), lengths, recipe.batch_size, rng):
            batch = _tensors(encoded, chunk)
            loss = _losses(model(batch["tokens"]), batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
    model.eval()
    return model


@torch.no_grad()
def predict(model: FcStudent, encoded: FcEncoded, rows: Sequence[int] | None = None,
            batch_size: int = 256) -> list[dict[str, Any]]:
    """The student's target for each row: ``{"type", "name"?, "arguments"?, "missing"?}``."""
    functions, params = _heads()
    by_name = {t.name: t.params for t in fc_tools()}
    rows_array = np.arange(len(encoded.tokens)) if rows is None else np.asarray(rows)
    out_targets: list[dict[str, Any]] = []
    for start in range(0, len(rows_array), batch_size):
        chunk = rows_array[start:start + batch_size]
        out = model(_tensors(encoded, chunk)["tokens"])
        action = out["action"].argmax(1).tolist()
        function = out["function"].argmax(1).tolist()
        ask = out["ask"].argmax(1).tolist()
        pointer = out["pointers"].argmax(2).tolist()  # (B, P)
        for b, row in enumerate(chunk):
            kind = ACTIONS[action[b]]
            if kind == "call":
                name = functions[function[b]]
                words = encoded.words[int(row)]
                arguments = {p: words[min(pointer[b][params.index(p)], len(words) - 1)] for p in by_name[name]}
                out_targets.append({"type": "call", "name": name, "arguments": arguments})
            elif kind == "ask":
                out_targets.append({"type": "ask", "missing": params[ask[b]]})
            else:
                out_targets.append({"type": "no_call"})
    return out_targets


def _normal(value: Any) -> str:
    return str(value).strip().lower()


def item_correct(predicted: dict[str, Any], target: dict[str, Any]) -> bool:
    """AST-style exact match: action type, then function and normalised arguments, or the asked parameter."""
    if predicted["type"] != target["type"]:
        return False
    if target["type"] == "call":
        return (predicted["name"] == target["name"]
                and {k: _normal(v) for k, v in predicted["arguments"].items()}
                == {k: _normal(v) for k, v in target["arguments"].items()})
    if target["type"] == "ask":
        return bool(predicted["missing"] == target["missing"])
    return True


@torch.no_grad()
def label_losses(model: FcStudent, encoded: FcEncoded, rows: Sequence[int], batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Per-row loss of the given label under ``model`` and the model's CLS embedding (N, d)."""
    rows_array = np.asarray(rows, dtype=np.int64)
    losses, embeddings = [], []
    for start in range(0, len(rows_array), batch_size):
        batch = _tensors(encoded, rows_array[start:start + batch_size])
        out = model(batch["tokens"])
        losses.append(_losses(out, batch, reduce=False).numpy())
        embeddings.append(out["cls"].numpy())
    if not losses:
        return np.zeros(0), np.zeros((0, 0))
    return np.concatenate(losses), np.concatenate(embeddings)
