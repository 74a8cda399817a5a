"""EvoAlloc: an LLM allocator that revises its own textual policy from accumulated experience.

Per candidate the LLM reads the incumbent policy and the observation and decides discard,
partial or full. Every outcome goes to an experience store: the candidate, the decisions, and
the real result, counterfactual ones included (the env fully evaluates some turned-away
candidates). Every ``revise_every`` candidates the store is summarised into supporting and
refuting cases and the LLM proposes a new policy. The challenger then shadows the incumbent
for ``trial_candidates`` candidates (its decisions are asked, never executed) and replaces it
only under the acceptance rule (``accept_challenger``): on the candidates where the two
disagree, judged with the same real evaluation results, it misses fewer new bests, or as many
and spends fewer evaluations (full-evaluation equivalents).

A path the challenger would have taken but that was not observed (it wanted a partial
evaluation, the incumbent did not run one) is charged conservatively: a partial evaluation then
a full one (full cost, no miss). Offline, ``rsigym/evoalloc_heuristic`` plays both LLM parts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from rsigym.agent import register_agent
from rsigym.agents.llm_messages import extract_json
from rsigym.llm import LLMError, RetryPolicy, complete
from rsigym.records import AgentSpec, Usage
from rsigym.spaces import invalid_action

from .allocation_policy import ALLOCATOR_PREAMBLE, DEFAULT_POLICY, policy_text

SCORE_BOUND = 1e6  # ProgramEvolution-v0 shows -SCORE_BOUND as its best score before any full evaluation

__all__ = ["EvoAllocAgent", "Case", "Verdict", "accept_challenger", "path_cost", "summarise_experience",
           "REVISE_MARKER", "DECIDE_MARKER"]

REVISE_MARKER = "[evoalloc:revise]"
DECIDE_MARKER = "[evoalloc:decide]"
PATHS = ("discard", "partial", "full", "partial+full")
NEAR = 0.01  # a turned-away candidate within 1% of the best counts as a near miss in summaries


def path_cost(path: str, partial_cost: float) -> float:
    return {"discard": 0.0, "partial": partial_cost, "full": 1.0, "partial+full": 1.0}[path]


def evaluates_fully(path: str) -> bool:
    return path in ("full", "partial+full")


@dataclass(frozen=True)
class Case:
    """One decided candidate: each policy's path and the shared real outcome.

    ``new_best`` is True/False when a full result is known (the agent's, or counterfactual),
    None when nobody evaluated the candidate fully.
    """

    incumbent: str
    challenger: str
    new_best: bool | None
    score: float | None = None
    best_before: float | None = None
    counterfactual: bool = False


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    disagreements: int
    misses_incumbent: int
    misses_challenger: int
    cost_incumbent: float
    cost_challenger: float
    reason: str


def accept_challenger(cases: list[Case], partial_cost: float) -> Verdict:
    """The acceptance rule: fewer missed new bests on disagreements, then lower evaluation cost."""
    split = [c for c in cases if c.incumbent != c.challenger]
    misses_old = sum(bool(c.new_best) and not evaluates_fully(c.incumbent) for c in split)
    misses_new = sum(bool(c.new_best) and not evaluates_fully(c.challenger) for c in split)
    cost_old = sum(path_cost(c.incumbent, partial_cost) for c in split)
    cost_new = sum(path_cost(c.challenger, partial_cost) for c in split)
    if not split:
        accepted, reason = False, "the policies never disagreed"
    elif misses_new != misses_old:
        accepted = misses_new < misses_old
        reason = f"misses {misses_new} vs {misses_old}"
    else:
        accepted = cost_new < cost_old - 1e-12
        reason = f"equal misses ({misses_new}); cost {cost_new:.3g} vs {cost_old:.3g}"
    return Verdict(accepted, len(split), misses_old, misses_new, cost_old, cost_new, reason)


def summarise_experience(cases: list[Case]) -> str:
    """Supporting and refuting cases of the incumbent policy, counterfactual ones included."""
    def shortfall(c: Case) -> float:
        if c.score is None or c.best_before is None:
            return float("inf")
        return (c.best_before - c.score) / max(abs(c.best_before), 1e-9)

    stingy = [c for c in cases if not evaluates_fully(c.incumbent) and c.score is not None and shortfall(c) <= NEAR]
    wasteful = [c for c in cases if evaluates_fully(c.incumbent) and (c.score is None or shortfall(c) > 0.05)]
    good_spend = [c for c in cases if evaluates_fully(c.incumbent) and c.new_best]
    good_discard = [c for c in cases if c.counterfactual and not evaluates_fully(c.incumbent) and shortfall(c) > 0.05]
    lines = [f"cases: {len(cases)}",
             f"refuting (missed or near-best candidates turned away): {len(stingy)}",
             f"refuting (wasted full evaluations: failed or >5% below the best): {len(wasteful)}",
             f"supporting (full evaluations that found a new best): {len(good_spend)}",
             f"supporting (turned-away candidates that counterfactually were poor): {len(good_discard)}"]
    for c in (stingy + wasteful)[:6]:
        lines.append(f"example: decision {c.incumbent}, score {c.score}, best before {c.best_before}, "
                     f"counterfactual {c.counterfactual}")
    return "\n".join(lines)


@dataclass
class _Pending:
    """Decisions on the candidate being decided, across its stages."""

    best_before: float | None
    incumbent: list[str] = field(default_factory=list)
    challenger: list[str] = field(default_factory=list)


def _path(decisions: list[str]) -> str:
    if decisions[0] != "partial":
        return decisions[0]
    if len(decisions) == 1:
        return "partial+full"  # never observed past the partial: charged in full (conservative)
    return "partial+full" if decisions[1] == "full" else "partial"


class EvoAllocAgent:
    """The EvoAlloc allocator (see the module docstring).

    Params:
        revise_every: Decided candidates between policy proposals.
        trial_candidates: Candidates a challenger shadows the incumbent before the verdict.
        temperature, max_tokens, api_base, litellm_kwargs: LLM call parameters.
        max_retries, backoff_base_s, backoff_max_s, timeout_s: Provider-error retries and the
            per-request timeout (see ``rsigym.llm.RetryPolicy``).
    """

    def __init__(self, spec: AgentSpec) -> None:
        params = dict(spec.params)
        self.revise_every = int(params.pop("revise_every", 12))
        self.trial_candidates = int(params.pop("trial_candidates", 10))
        self.temperature = params.pop("temperature", 0.0)
        self.max_tokens = params.pop("max_tokens", None)
        self.api_base = params.pop("api_base", None)
        self.litellm_kwargs = dict(params.pop("litellm_kwargs", None) or {})
        self.retry = RetryPolicy(int(params.pop("max_retries", 4)), float(params.pop("backoff_base_s", 1.0)),
                                 float(params.pop("backoff_max_s", 30.0)))
        self.timeout_s = float(params.pop("timeout_s", 120.0))
        if params:
            raise TypeError(f"evoalloc got unknown params {sorted(params)}")
        if self.revise_every < 1 or self.trial_candidates < 1:
            raise TypeError("revise_every and trial_candidates must be >= 1")
        self.model = spec.model or "rsigym/evoalloc_heuristic"
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self.seed = seed
        self._rng = random.Random(seed)  # backoff jitter only
        self.incumbent, self.version = policy_text(DEFAULT_POLICY, 1), 1
        self.challenger: str | None = None
        self.experience: list[Case] = []
        self.trial: list[Case] = []
        self.history: list[dict[str, Any]] = [{"version": 1, "event": "initial"}]
        self._pending: _Pending | None = None
        self._decided = 0
        self._partial_cost = 1.0
        self._calls = 0

    # -- LLM parts ------------------------------------------------------------------------
    def _complete(self, messages: list[dict[str, str]]) -> str:
        params: dict[str, Any] = {"temperature": self.temperature, "seed": self.seed + self._calls}
        self._calls += 1
        if self.max_tokens:
            params["max_tokens"] = self.max_tokens
        params.update(self.litellm_kwargs)
        try:
            reply = complete(messages, model=self.model, role="agent", api_base=self.api_base, params=params,
                             retry=self.retry, timeout_s=self.timeout_s, rng=self._rng)
        except LLMError as exc:  # the step's earlier calls count too; the runner records infra_error
            raise exc.with_usage(self.last_usage) from exc
        self.last_usage = self.last_usage + reply.usage
        return reply.text

    def _ask(self, policy: str, text: str) -> str | None:
        system = (f"{DECIDE_MARKER} {ALLOCATOR_PREAMBLE}\n\nFollow this policy:\n{policy}\n\n"
                  'Answer with one JSON object: {"decision": "discard" | "partial" | "full"}.')
        reply = self._complete([{"role": "system", "content": system}, {"role": "user", "content": text}])
        try:
            decision = extract_json(reply).get("decision")
        except (ValueError, AttributeError):
            return None
        return decision if decision in ("discard", "partial", "full") else None

    def _revise(self) -> None:
        summary = summarise_experience(self.experience[-4 * self.revise_every:])
        system = (f"{REVISE_MARKER} You maintain the evaluation-allocation policy of a program-evolution run. "
                  "Given the current policy and a summary of supporting and refuting cases, write an improved "
                  "policy in the same form. Answer with the policy text only.")
        user = f"Current policy:\n{self.incumbent}\n\nExperience:\n{summary}"
        proposal = self._complete([{"role": "system", "content": system}, {"role": "user", "content": user}]).strip()
        if proposal and proposal != self.incumbent:
            self.challenger, self.trial = proposal, []
            self.history.append({"version": self.version + 1, "event": "proposed", "at_candidate": self._decided})

    # -- agent protocol -------------------------------------------------------------------
    def act(self, observation: dict[str, Any]) -> Any:
        self.last_usage = Usage()
        text = str(observation["text"])
        best = float(observation["best_score"])
        stage = int(observation["stage"])
        if stage == 0 or self._pending is None:
            self._pending = _Pending(best if best > -SCORE_BOUND else None)
        decision = self._ask(self.incumbent, text)
        if decision is None:
            return invalid_action("the model gave no valid decision")
        self._pending.incumbent.append(decision)
        if self.challenger is not None and (stage == 0 or self._pending.challenger[:1] == ["partial"]):
            shadow = self._ask(self.challenger, text)
            self._pending.challenger.append(shadow or decision)
        last = self.history[-1]
        note = (f"policy v{self.version}" + (f"; challenger v{self.version + 1} on trial" if self.challenger else "")
                + f"; last policy event: {last['event']} v{last['version']}"
                + (f" ({last['reason']})" if "reason" in last else ""))
        return {"decision": decision, "rationale": note}

    def observe(self, reward: float, observation: dict[str, Any], info: dict[str, Any]) -> None:
        decided, pending = info.get("decided"), self._pending
        if decided is None or pending is None:
            return  # an invalid action: nothing was decided
        if observation is not None and int(observation["partial_available"]):
            self._partial_cost = float(info.get("partial_cost", self._partial_cost))
        still_open = decided["status"] == "partial" and int(observation["stage"]) == 1
        if still_open:
            return
        counterfactual = info.get("counterfactual")
        score = decided["score"]
        if counterfactual is not None and counterfactual["program_id"] == decided["id"]:
            score = counterfactual["score"]
        known = score is not None or decided["status"] == "failed" or counterfactual is not None
        new_best = (bool(score is not None and (pending.best_before is None or score > pending.best_before))
                    if known else None)
        failed_partial = decided["status"] == "failed" and pending.incumbent[0] == "partial"

        def path(decisions: list[str]) -> str:  # a failed partial evaluation ends every path there
            return "partial" if failed_partial and decisions[0] == "partial" else _path(decisions)

        incumbent_path = path(pending.incumbent)
        case = Case(incumbent_path, path(pending.challenger) if pending.challenger else incumbent_path,
                    new_best, score, pending.best_before, counterfactual is not None)
        self.experience.append(case)
        self._decided += 1
        self._pending = None
        if self.challenger is not None:
            self.trial.append(case)
            if len(self.trial) >= self.trial_candidates:
                verdict = accept_challenger(self.trial, self._partial_cost)
                if verdict.accepted:
                    self.incumbent, self.version = self.challenger, self.version + 1
                self.history.append({"version": self.version, "event": "accepted" if verdict.accepted else "rejected",
                                     "at_candidate": self._decided, "reason": verdict.reason})
                self.challenger, self.trial = None, []
        elif self._decided % self.revise_every == 0:
            self._revise()


register_agent("evoalloc")(EvoAllocAgent)
