"""Coders: where a round's 4 candidate programs come from.

* ``MixtureCoder`` (offline): draws each candidate from a per-problem **catalogue** of correct
  rewrites, single-site mutants (``mutation.OPERATORS``) and crash bugs (``mutation.CRASHES``).
  The catalogue is executed once in the sandbox against the public and hidden tests (one exec for
  all uncached problems, cached on disk), so each entry is known to be ``correct``,
  ``sneaky`` (passes the public tests, fails hidden ones), ``wrong`` or ``crash``; the coder then
  mixes those kinds with rates that depend on a per-problem difficulty, the round (repairs after
  feedback are likelier to be right) and an optional drift point in the stream (after it the mix
  shifts: fewer correct candidates and runtime rather than static crashes), so that a world model
  fitted early goes off later. The labels are the simulator's; the env still executes every
  chosen candidate for real.
* ``LLMCoder``: asks a model (through ``rsigym.llm.client``) for each candidate, with the previous
  round's failing public tests in the prompt.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key
from rsigym.llm import RetryPolicy, complete
from rsigym.records import Usage
from rsigym.sandbox import Sandbox

from .execution import Job, run_jobs
from .mutation import CRASHES, OPERATORS, canonical_form, crash, mutate, rewrite
from .problems import Problem

__all__ = ["Candidate", "CatalogueEntry", "MixtureCoder", "LLMCoder", "build_catalogue", "difficulty",
           "CATALOGUE_VERSION", "ORIGINS"]

CATALOGUE_VERSION = 3
_MUTANTS_PER_OPERATOR = 5
_STATIC_CRASHES = ("name_error", "syntax_error")
_RUNTIME_CRASHES = ("none_subscript", "zero_division", "endless_loop")
# every origin a catalogue entry can have: the names a mutation mix may weight
ORIGINS = ("rewrite:rename", "rewrite:restyle", *(f"mutant:{o}" for o in OPERATORS), *(f"crash:{c}" for c in CRASHES))


@dataclass(frozen=True)
class Candidate:
    """One candidate program; ``kind`` is the simulator's label (``llm`` for model-written ones)."""

    code: str
    kind: str
    origin: str  # operator, crash kind, rewrite style, or "llm"
    failure: str | None = None  # the catalogue's failure type on the hidden tests (simulator only)


@dataclass(frozen=True)
class CatalogueEntry:
    code: str
    origin: str
    kind: str               # correct | sneaky | wrong | crash
    failure: str | None     # failure type on the hidden tests (None when they pass)


def difficulty(problem_id: str) -> float:
    """A fixed per-problem difficulty in (0, 1) (Beta(2, 2), seeded by the problem id)."""
    return float(np.random.default_rng(zlib.crc32(problem_id.encode())).beta(2.0, 2.0))


def _generate(problem: Problem) -> list[tuple[str, str, str]]:
    """(code, origin, family) triples: rewrites, mutants, crashes; deduplicated by canonical form."""
    rng = np.random.default_rng(zlib.crc32(("catalogue-" + problem.problem_id).encode()))
    out: list[tuple[str, str, str]] = []
    for style in ("rename", "rename", "restyle"):
        out.append((rewrite(problem.reference, problem.entry, rng, style), f"rewrite:{style}", "rewrite"))
    seen = {canonical_form(problem.reference, problem.entry)}
    for operator in OPERATORS:
        for _ in range(_MUTANTS_PER_OPERATOR):
            code = mutate(problem.reference, problem.entry, operator, rng)
            form = canonical_form(code, problem.entry) if code else None
            if code is not None and form not in seen:
                seen.add(form)
                out.append((rewrite(code, problem.entry, rng), f"mutant:{operator}", "mutant"))
    for kind in CRASHES:
        out.append((crash(problem.reference, problem.entry, kind, rng), f"crash:{kind}", "crash"))
    return out


def build_catalogue(problems: Sequence[Problem], sandbox: Sandbox) -> dict[str, list[CatalogueEntry]]:
    """Each problem's labelled catalogue; uncached problems are executed together in one exec."""
    out: dict[str, list[CatalogueEntry]] = {}
    todo: dict[str, tuple[Problem, list[tuple[str, str, str]]]] = {}
    for problem in problems:
        path = cache_dir("coderepair") / f"catalogue-{cache_key(CATALOGUE_VERSION, problem.problem_id, problem.reference, problem.public, problem.hidden)}.json"
        if path.exists():
            out[problem.problem_id] = [CatalogueEntry(**e) for e in json.loads(path.read_text())]
        else:
            todo[problem.problem_id] = (problem, _generate(problem))
    jobs = [Job(f"{pid}#{i}", code, p.entry, [*p.public, *p.hidden], prelude=p.prelude, timeout_s=1.0,
                helpers=p.helpers)
            for pid, (p, items) in todo.items() for i, (code, _, _) in enumerate(items)]
    results = run_jobs(sandbox, jobs, trusted=True)  # generated from the references
    for pid, (problem, items) in todo.items():
        entries = []
        n_public = len(problem.public)
        for i, (code, origin, family) in enumerate(items):
            result = results[f"{pid}#{i}"]
            passed = result.passed
            public_ok, hidden_ok = all(passed[:n_public]), all(passed[n_public:]) and bool(passed)
            failure = None if hidden_ok else result.failure_type()
            if hidden_ok and public_ok:
                kind = "correct"
            elif failure is not None and failure != "wrong":
                kind = "crash" if family == "crash" or not public_ok else "sneaky"
            else:
                kind = "sneaky" if public_ok else "wrong"
            entries.append(CatalogueEntry(code, origin, kind, failure))
        out[pid] = entries
        path = cache_dir("coderepair") / f"catalogue-{cache_key(CATALOGUE_VERSION, pid, problem.reference, problem.public, problem.hidden)}.json"
        atomic_write_bytes(path, json.dumps([asdict(e) for e in entries]).encode())
    return out


class MixtureCoder:
    """Offline coder fitted to realistic rates (see the module docstring).

    Args:
        p_correct: Share of correct candidates at difficulty 0.5 in round 1.
        difficulty_slope: How much harder problems lower that share (times ``difficulty - 0.5``).
        repair_gain: Added share of correct candidates per round after feedback (0 without feedback).
        p_crash: Share of crash bugs.
        p_sneaky: Share of candidates drawn from the mutants that pass the public tests only.
        drift_at: Fraction of the stream after which the mix drifts (None: never).
        drift_correct: Change of ``p_correct`` after the drift.
        drift_echo: After the drift, the probability that a round's wrong candidates are all one
            program (re-printed): the coder collapses onto a favourite wrong answer, so candidates
            that agree with each other stop being the likely-right ones. A world model that learned
            "agreement means right" before the drift is misled; the relation is learnable again
            from the rounds after it.
    """

    name = "mixture"

    def __init__(self, p_correct: float = 0.25, difficulty_slope: float = 0.6, repair_gain: float = 0.05,
                 p_crash: float = 0.25, p_sneaky: float = 0.15, drift_at: float | None = None,
                 drift_correct: float = -0.12, drift_echo: float = 0.8) -> None:
        self.p_correct, self.difficulty_slope, self.repair_gain = p_correct, difficulty_slope, repair_gain
        self.p_crash, self.p_sneaky, self.drift_at, self.drift_correct = p_crash, p_sneaky, drift_at, drift_correct
        self.drift_echo = drift_echo
        self.usage = Usage()
        # the policy's mutation mix: origin -> weight ("*": default); None or all equal is the coder as
        # shipped (the same draws as without a mix, so agents that never set one see the same candidates)
        self.origin_weights: dict[str, float] | None = None
        self.last_origin_mass: dict[str, float] = {}   # B(o) of the last proposal (see coder_mix)

    def drifted(self, progress: float) -> bool:
        """Whether the mix has drifted at this point of the stream."""
        return self.drift_at is not None and progress >= self.drift_at

    def rates(self, problem_id: str, round_index: int, progress: float, feedback: bool) -> dict[str, float]:
        drifted = self.drifted(progress)
        correct = self.p_correct - self.difficulty_slope * (difficulty(problem_id) - 0.5)
        correct += (self.repair_gain * round_index if feedback else 0.0) + (self.drift_correct if drifted else 0.0)
        correct = float(np.clip(correct, 0.02, 0.9))
        return {"correct": correct, "crash": self.p_crash, "sneaky": self.p_sneaky,
                "wrong": max(0.0, 1.0 - correct - self.p_crash - self.p_sneaky), "drifted": float(drifted)}

    def propose(self, problem: Problem, catalogue: list[CatalogueEntry], *, round_index: int, progress: float,
                feedback: str | None, n: int, rng: np.random.Generator) -> list[Candidate]:
        rates = self.rates(problem.problem_id, round_index, progress, feedback is not None)
        crash_kinds = _RUNTIME_CRASHES if rates["drifted"] else _STATIC_CRASHES
        pools = {"correct": [e for e in catalogue if e.kind == "correct"],
                 "sneaky": [e for e in catalogue if e.kind == "sneaky"],
                 "wrong": [e for e in catalogue if e.kind == "wrong"],
                 "crash": [e for e in catalogue if e.origin.split(":")[1] in crash_kinds and e.kind != "correct"]}
        kinds = ["correct", "crash", "sneaky", "wrong"]
        weights = np.array([rates[k] for k in kinds])
        entries, base = self._entry_masses(pools, kinds, weights / weights.sum())
        mix = self.origin_weights or {}
        default = float(mix.get("*", 1.0))
        origin_weight = np.array([float(mix.get(e.origin, default)) for e in entries])
        mixed = base * origin_weight
        reachable = origin_weight[base > 0]
        uniform = reachable.size == 0 or float(np.ptp(reachable)) == 0.0
        out = []
        echo = bool(rates["drifted"]) and rng.random() < self.drift_echo
        favourite: CatalogueEntry | None = None
        for _ in range(n):
            if uniform:  # the shipped draw: a kind by its rate, then an entry of its pool
                kind = kinds[int(rng.choice(4, p=weights / weights.sum()))]
                pool = pools[kind] or pools["wrong"] or pools["crash"] or pools["correct"]
                entry = pool[int(rng.integers(len(pool)))]
            else:
                entry = entries[int(rng.choice(len(entries), p=mixed / mixed.sum()))]
            if echo and entry.kind == "wrong":  # the collapsed coder repeats its favourite wrong program
                favourite = favourite or entry
                entry = favourite
            code = rewrite(entry.code, problem.entry, rng) if entry.origin != "crash:syntax_error" else entry.code
            out.append(Candidate(code, entry.kind, entry.origin, entry.failure))
        return out

    def _entry_masses(self, pools: dict[str, list[CatalogueEntry]], kinds: list[str], shares: np.ndarray
                      ) -> tuple[list[CatalogueEntry], np.ndarray]:
        """Every entry the shipped draw can reach with its probability; ``last_origin_mass`` set to B(o)."""
        entries: list[CatalogueEntry] = []
        masses: list[float] = []
        for kind, share in zip(kinds, shares):
            pool = pools[kind] or pools["wrong"] or pools["crash"] or pools["correct"]
            for entry in pool:
                entries.append(entry)
                masses.append(float(share) / len(pool))
        mass: dict[str, float] = {}
        for entry, m in zip(entries, masses):
            mass[entry.origin] = mass.get(entry.origin, 0.0) + m
        self.last_origin_mass = {o: round(m, 6) for o, m in sorted(mass.items())}
        return entries, np.array(masses)


_CODE_BLOCK = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)


class LLMCoder:
    """Candidates written by a model through ``rsigym.llm.client``; one request per candidate.

    The prompt holds the problem and, after round 1, the previous round's executed program and its
    failing public tests. An answer without a code block is a candidate that does not parse.
    """

    name = "llm"

    def __init__(self, model: str, temperature: float = 0.8, max_tokens: int = 1024, api_base: str | None = None,
                 max_retries: int = 4, timeout_s: float = 120.0, litellm_kwargs: dict[str, Any] | None = None) -> None:
        self.model, self.temperature, self.max_tokens, self.api_base = model, temperature, max_tokens, api_base
        self.retry, self.timeout_s = RetryPolicy(max_retries), timeout_s
        self.litellm_kwargs = dict(litellm_kwargs or {})
        self.usage = Usage()

    def messages(self, problem: Problem, feedback: str | None) -> list[dict[str, str]]:
        parts = [f"Complete this Python function. Answer with the whole function in one ```python block.\n\n"
                 f"```python\n{problem.prompt}```"]
        if feedback:
            parts.append(f"Your previous attempt failed these public tests:\n{feedback}\nFix it.")
        return [{"role": "system", "content": "You write correct, self-contained Python functions."},
                {"role": "user", "content": "\n\n".join(parts)}]

    def propose(self, problem: Problem, catalogue: list[CatalogueEntry] | None, *, round_index: int, progress: float,
                feedback: str | None, n: int, rng: np.random.Generator) -> list[Candidate]:
        out = []
        for _ in range(n):
            seed = int(rng.integers(2**31))
            params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": seed,
                                      **self.litellm_kwargs}
            reply = complete(self.messages(problem, feedback), model=self.model, role="candidate_source",
                             api_base=self.api_base, params=params, retry=self.retry, timeout_s=self.timeout_s,
                             rng=random.Random(seed))
            self.usage = self.usage + reply.usage
            blocks = _CODE_BLOCK.findall(reply.text or "")
            code = max(blocks, key=len) if blocks else "# the model's answer held no code block\n(\n"
            if f"def {problem.entry}" not in code:  # a bare body: complete the prompt with it
                code = problem.prompt + code
            out.append(Candidate(code, "llm", "llm"))
        return out
