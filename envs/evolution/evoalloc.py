"""EvoAlloc: an LLM allocator that revises its own textual policy from accumulated experience.

Per candidate the LLM reads the incumbent policy, a summary of its experience (supporting and
refuting cases) and the observation, and decides discard, partial or full. Every outcome goes to
an experience store: the candidate, the decisions, and the real result, counterfactual ones
included (the env fully evaluates a turned-away candidate with probability ``explore_p``). After
every ``revise_after_full`` new full results (the agent's full evaluations plus counterfactual
ones) the LLM proposes a new policy from that experience. The challenger then shadows the
incumbent for ``trial_candidates`` candidates (its decisions are asked, never executed) and
replaces it only under the acceptance rule (``accept_challenger``): on the candidates where the
two disagree, fewer *expected* missed new bests (an unobserved counterfactual outcome is not
"no miss": explored outcomes are weighted by 1/``explore_p``), or as many and a lower cost, and
by more than a challenger with the same policy and other sampling noise shows by chance (a
role-swap test over the disagreements).

Each policy event (proposal, acceptance, rejection and why) is written into the rationale of the
next action as a ``[policy] ...`` line, so the record carries the policy history. A path the
challenger would have taken but that was not observed (it wanted a partial evaluation, the
incumbent did not run one) is charged conservatively as a partial evaluation then a full one.
Offline, ``rsigym/evoalloc_heuristic`` plays both LLM parts.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rsigym.agent import register_agent
from rsigym.agents.llm_messages import extract_json
from rsigym.llm import LLMError, RetryPolicy, complete
from rsigym.records import AgentSpec, Usage
from rsigym.spaces import invalid_action

from .allocation_policy import ALLOCATOR_PREAMBLE, DEFAULT_POLICY, policy_text

SCORE_BOUND = 1e6  # ProgramEvolution-v0 shows -SCORE_BOUND as its best score before any full evaluation

__all__ = ["EvoAllocAgent", "Case", "Verdict", "accept_challenger", "path_cost", "summarise_experience",
           "prior_new_best_rate", "missed_new_bests_estimate",
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
    """The acceptance rule's verdict on one trial (see ``accept_challenger``)."""

    accepted: bool
    disagreements: int
    misses_incumbent: float      # expected new bests the incumbent misses on the disagreements
    misses_challenger: float     # expected new bests the challenger misses on the disagreements
    cost_incumbent: float
    cost_challenger: float
    reason: str
    only_incumbent_full: int = 0   # disagreements only the incumbent evaluates fully (outcomes observed)
    only_challenger_full: int = 0  # disagreements only the challenger would evaluate fully
    observed_only_challenger_full: int = 0  # ... of which exploration revealed the outcome
    new_bests_seen: tuple[int, int] = (0, 0)  # new bests observed in those two classes
    p_value: float = 1.0  # role-swap test: chance of so large an advantage from an equivalent challenger
    prefers_challenger: bool = False  # the point estimates favour the challenger (before the noise test)


def prior_new_best_rate(cases: list[Case], explore_p: float) -> float:
    """The run's new-best rate per decided candidate, counterfactual outcomes weighted by 1/``explore_p``.

    A turned-away candidate's outcome is seen only when exploration (probability ``explore_p``)
    evaluated it, so each explored new best stands for 1/``explore_p`` turned-away candidates
    (inverse-propensity weighting). Laplace-smoothed, so it is never 0 or 1.
    """
    weight = 1.0 / explore_p if explore_p > 0 else 0.0
    found = sum(bool(c.new_best) * (1.0 if evaluates_fully(c.incumbent) else weight * c.counterfactual)
                for c in cases)
    return min((found + 1.0) / (len(cases) + 2.0), 1.0)


def _advantage(inc_full: np.ndarray, ch_full: np.ndarray, known: np.ndarray, new_best: np.ndarray,
               cost_inc: np.ndarray, cost_ch: np.ndarray, prior_rate: float, prior_strength: float,
               miss_tolerance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rule's quantities for each row of role assignments: arrays of shape (S, D), S role
    swaps of D disagreements (True: incumbent and challenger swapped on that candidate).

    Returns (miss key, cost key, expected misses challenger, incumbent, cost challenger,
    incumbent), each of shape (S,); the keys order the challenger's advantage lexicographically:
    fewer expected misses beyond ``miss_tolerance`` first, then lower cost.
    """
    only_inc = inc_full & ~ch_full  # (S, D)
    only_ch = ch_full & ~inc_full

    def misses(cls: np.ndarray) -> np.ndarray:
        size, seen, found = cls.sum(1), (cls & known).sum(1), (cls & new_best).sum(1)
        return size * (found + prior_strength * prior_rate) / (seen + prior_strength)

    misses_new, misses_old = misses(only_inc), misses(only_ch)
    cost_new, cost_old = cost_ch.sum(1), cost_inc.sum(1)
    diff = misses_old - misses_new
    beyond = np.abs(diff) > miss_tolerance
    return (np.where(beyond, diff, 0.0), np.where(beyond, 0.0, cost_old - cost_new), misses_new, misses_old,
            cost_new, cost_old)


def accept_challenger(cases: list[Case], partial_cost: float, *, explore_p: float = 0.1, prior_rate: float = 0.1,
                      prior_strength: float = 10.0, miss_tolerance: float = 0.25, alpha: float = 0.05,
                      seed: int = 0) -> Verdict:
    """The acceptance rule: fewer expected missed new bests on the disagreements, then lower cost,
    by more than an equivalent challenger would show by chance.

    Only disagreements where exactly one policy evaluates fully can differ in misses. Where only
    the incumbent evaluates fully the outcome is observed; where only the challenger would, the
    outcome is seen only when exploration evaluated the turned-away candidate (probability
    ``explore_p``): an unobserved outcome is *not* "no miss". Each class's new-best rate is
    estimated by its posterior mean (explored outcomes stand for the whole class: 1/``explore_p``
    weighting; a Beta prior of mean ``prior_rate``, the run's weighted rate, and strength
    ``prior_strength``), and a policy's expected misses are the class size times that rate.
    Expected misses decide when they differ by more than ``miss_tolerance``; otherwise the
    cheaper policy (full-evaluation equivalents) is preferred, and a tie keeps the incumbent.

    A challenger that follows the same policy with other sampling noise disagrees at random, and
    the rule above prefers it about half the time. So the preference must also survive the
    role-swap test: if the two policies were equivalent, swapping which one made each
    disagreeing decision would be as likely as the trial seen; ``p_value`` is the share of the
    2^D swaps (D disagreements; 4,096 seeded draws beyond 12) whose advantage is at least the
    observed one. Accepted only when the challenger is preferred and ``p_value < alpha``; a
    trial with fewer than five disagreements can never reach 0.05 (1/16 at four).
    """
    if (not 0.0 <= explore_p <= 1.0 or not 0.0 <= prior_rate <= 1.0 or prior_strength <= 0 or miss_tolerance < 0
            or not 0.0 < alpha <= 1.0):
        raise ValueError(f"bad acceptance-rule parameters: explore_p={explore_p}, prior_rate={prior_rate}, "
                         f"prior_strength={prior_strength}, miss_tolerance={miss_tolerance}, alpha={alpha}")
    split = [c for c in cases if c.incumbent != c.challenger]
    inc_full = np.array([evaluates_fully(c.incumbent) for c in split], dtype=bool)
    ch_full = np.array([evaluates_fully(c.challenger) for c in split], dtype=bool)
    known = np.array([c.new_best is not None for c in split], dtype=bool)
    found = np.array([bool(c.new_best) for c in split], dtype=bool)
    cost_inc = np.array([path_cost(c.incumbent, partial_cost) for c in split], dtype=float)
    cost_ch = np.array([path_cost(c.challenger, partial_cost) for c in split], dtype=float)
    d = len(split)
    if d <= 12:  # every swap: (2^d, d)
        swaps = ((np.arange(2 ** d)[:, None] >> np.arange(d)[None, :]) & 1).astype(bool)
    else:
        swaps = np.random.default_rng(seed).random((4096, d)) < 0.5
        swaps[0] = False
    keys = _advantage(np.where(swaps, ch_full, inc_full), np.where(swaps, inc_full, ch_full), known[None, :],
                      found[None, :], np.where(swaps, cost_ch, cost_inc), np.where(swaps, cost_inc, cost_ch),
                      prior_rate, prior_strength, miss_tolerance)
    miss_key, cost_key, misses_new_all, misses_old_all, cost_new_all, cost_old_all = keys
    misses_new, misses_old = float(misses_new_all[0]), float(misses_old_all[0])
    cost_new, cost_old = float(cost_new_all[0]), float(cost_old_all[0])
    eps = 1e-9
    at_least = (miss_key > miss_key[0] + eps) | ((np.abs(miss_key - miss_key[0]) <= eps) & (cost_key >= cost_key[0] - eps))
    p_value = float(at_least.mean()) if d else 1.0
    only_inc, only_ch = inc_full & ~ch_full, ch_full & ~inc_full
    k_inc, k_ch = int((only_inc & found).sum()), int((only_ch & found).sum())
    seen_ch = int((only_ch & known).sum())
    if not split:
        prefers, reason = False, "the policies never disagreed"
    elif abs(misses_new - misses_old) > miss_tolerance:
        prefers = misses_new < misses_old
        reason = (f"expected misses {misses_new:.2f} vs {misses_old:.2f} (challenger vs incumbent; "
                  f"{int(only_inc.sum())} candidates only the incumbent evaluates, {k_inc} new bests; "
                  f"{int(only_ch.sum())} only the challenger would, {seen_ch} explored, {k_ch} new bests)")
    else:
        prefers = cost_new < cost_old - 1e-12
        reason = (f"expected misses {misses_new:.2f} vs {misses_old:.2f} within {miss_tolerance:g}; "
                  f"cost {cost_new:.3g} vs {cost_old:.3g}")
    accepted = prefers and p_value < alpha
    if split:
        reason += f"; role-swap p={p_value:.3g} over {d} disagreements" + (
            f" (not below {alpha:g}: within what an equivalent challenger shows)" if prefers and not accepted else "")
    return Verdict(accepted, d, misses_old, misses_new, cost_old, cost_new, reason, int(only_inc.sum()),
                   int(only_ch.sum()), seen_ch, (k_inc, k_ch), p_value, prefers)


def missed_new_bests_estimate(turned_away: int, explored: int, found: int,
                              confidence: float = 0.95) -> tuple[float, float, float]:
    """New bests among ``turned_away`` candidates, from ``found`` of ``explored`` counterfactual ones.

    Exploration evaluates a uniform random subset of the turned-away candidates, so the count is
    ``turned_away * found / explored`` (each explored candidate stands for 1/``explore_p``), with a
    Clopper-Pearson interval on the rate. With nothing explored the interval is [0, turned_away].
    """
    if not 0 <= found <= explored <= turned_away:
        raise ValueError(f"need 0 <= found <= explored <= turned_away, got {found}, {explored}, {turned_away}")
    if explored == 0:
        return (0.0 if turned_away == 0 else math.nan), 0.0, float(turned_away)
    from scipy.stats import beta

    alpha = 1.0 - confidence
    low = 0.0 if found == 0 else float(beta.ppf(alpha / 2, found, explored - found + 1))
    high = 1.0 if found == explored else float(beta.ppf(1 - alpha / 2, found + 1, explored - found))
    return turned_away * found / explored, turned_away * low, turned_away * high


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


POLICY_EVENT = "[policy] "  # the prefix of policy-history lines in action rationales


class EvoAllocAgent:
    """The EvoAlloc allocator (see the module docstring).

    Params:
        revise_after_full: New full results (own and counterfactual) between policy proposals.
        trial_candidates: Candidates a challenger shadows the incumbent before the verdict.
        miss_tolerance, prior_strength, acceptance_alpha: the acceptance rule's (``accept_challenger``;
            ``acceptance_alpha`` is its ``alpha``, the level of the role-swap test).
        experience_in_prompt: Show the experience summary in every decision prompt (default True).
        temperature, max_tokens, api_base, litellm_kwargs: LLM call parameters.
        max_retries, backoff_base_s, backoff_max_s, timeout_s: Provider-error retries and the
            per-request timeout (see ``rsigym.llm.RetryPolicy``).
    """

    def __init__(self, spec: AgentSpec) -> None:
        params = dict(spec.params)
        self.revise_after_full = int(params.pop("revise_after_full", 6))
        self.trial_candidates = int(params.pop("trial_candidates", 10))
        self.miss_tolerance = float(params.pop("miss_tolerance", 0.25))
        self.prior_strength = float(params.pop("prior_strength", 10.0))
        self.acceptance_alpha = float(params.pop("acceptance_alpha", 0.05))
        self.experience_in_prompt = bool(params.pop("experience_in_prompt", True))
        self.temperature = params.pop("temperature", 0.0)
        self.max_tokens = params.pop("max_tokens", None)
        self.api_base = params.pop("api_base", None)
        self.litellm_kwargs = dict(params.pop("litellm_kwargs", None) or {})
        self.retry = RetryPolicy(int(params.pop("max_retries", 4)), float(params.pop("backoff_base_s", 1.0)),
                                 float(params.pop("backoff_max_s", 30.0)))
        self.timeout_s = float(params.pop("timeout_s", 120.0))
        if params:
            raise TypeError(f"evoalloc got unknown params {sorted(params)}")
        if self.revise_after_full < 1 or self.trial_candidates < 1:
            raise TypeError("revise_after_full and trial_candidates must be >= 1")
        if self.miss_tolerance < 0 or self.prior_strength <= 0 or not 0 < self.acceptance_alpha <= 1:
            raise TypeError("miss_tolerance must be >= 0, prior_strength > 0 and acceptance_alpha in (0, 1]")
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
        self._unannounced: list[str] = []
        self._pending: _Pending | None = None
        self._decided = 0
        self._full_results = 0
        self._full_at_revision = 0
        self._partial_cost = 1.0
        self._explore_p = 0.1
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
        experience = ""
        if self.experience_in_prompt and self.experience:
            experience = ("\n\nExperience so far (candidates decided in this run, counterfactual outcomes "
                          f"included):\n{summarise_experience(self.experience[-40:])}")
        system = (f"{DECIDE_MARKER} {ALLOCATOR_PREAMBLE}\n\nFollow this policy:\n{policy}{experience}\n\n"
                  'Answer with one JSON object: {"decision": "discard" | "partial" | "full"}.')
        reply = self._complete([{"role": "system", "content": system}, {"role": "user", "content": text}])
        try:
            decision = extract_json(reply).get("decision")
        except (ValueError, AttributeError):
            return None
        return decision if decision in ("discard", "partial", "full") else None

    def _event(self, entry: dict[str, Any], line: str) -> None:
        self.history.append(entry)
        self._unannounced.append(POLICY_EVENT + line)

    def _revise(self) -> None:
        summary = summarise_experience(self.experience[-40:])
        system = (f"{REVISE_MARKER} You maintain the evaluation-allocation policy of a program-evolution run. "
                  "Given the current policy and a summary of supporting and refuting cases, write an improved "
                  "policy in the same form. Answer with the policy text only.")
        user = f"Current policy:\n{self.incumbent}\n\nExperience:\n{summary}"
        proposal = self._complete([{"role": "system", "content": system}, {"role": "user", "content": user}]).strip()
        self._full_at_revision = self._full_results
        if proposal and proposal != self.incumbent:
            self.challenger, self.trial = proposal, []
            params = proposal.strip().splitlines()[-1][:300]
            self._event({"version": self.version + 1, "event": "proposed", "at_candidate": self._decided,
                         "full_results": self._full_results, "policy": proposal},
                        f"challenger v{self.version + 1} proposed at candidate {self._decided} after "
                        f"{self._full_results} full results: {params}")

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
        note = f"policy v{self.version}" + (f"; challenger v{self.version + 1} on trial" if self.challenger else "")
        lines, self._unannounced = [note, *self._unannounced], []
        return {"decision": decision, "rationale": "\n".join(lines)[:2000]}

    def observe(self, reward: float, observation: dict[str, Any], info: dict[str, Any]) -> None:
        decided, pending = info.get("decided"), self._pending
        if decided is None or pending is None:
            return  # an invalid action: nothing was decided
        if observation is not None and int(observation["partial_available"]):
            self._partial_cost = float(info.get("partial_cost", self._partial_cost))
        if info.get("explore_p") is not None:
            self._explore_p = float(info["explore_p"])
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
        failed_partial = decided["status"] in ("failed", "duplicate") and pending.incumbent[0] == "partial"

        def path(decisions: list[str]) -> str:  # a failed partial evaluation ends every path there
            return "partial" if failed_partial and decisions[0] == "partial" else _path(decisions)

        incumbent_path = path(pending.incumbent)
        case = Case(incumbent_path, path(pending.challenger) if pending.challenger else incumbent_path,
                    new_best, score, pending.best_before, counterfactual is not None)
        self.experience.append(case)
        self._decided += 1
        self._full_results += int(decided["status"] == "full" or counterfactual is not None)
        self._pending = None
        if self.challenger is not None:
            self.trial.append(case)
            if len(self.trial) >= self.trial_candidates:
                verdict = accept_challenger(self.trial, self._partial_cost, explore_p=self._explore_p,
                                            prior_rate=prior_new_best_rate(self.experience, self._explore_p),
                                            prior_strength=self.prior_strength, miss_tolerance=self.miss_tolerance,
                                            alpha=self.acceptance_alpha)
                challenger_version = self.version + 1
                if verdict.accepted:
                    self.incumbent, self.version = self.challenger, self.version + 1
                outcome = "accepted" if verdict.accepted else "rejected"
                self._event({"version": challenger_version, "event": outcome, "at_candidate": self._decided,
                             "disagreements": verdict.disagreements, "reason": verdict.reason},
                            f"challenger v{challenger_version} {outcome} at candidate {self._decided}: "
                            f"{verdict.disagreements} disagreements of {len(self.trial)}; {verdict.reason}")
                self.challenger, self.trial = None, []
        elif self._full_results - self._full_at_revision >= self.revise_after_full:
            self._revise()


register_agent("evoalloc")(EvoAllocAgent)
