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
incumbent did not run one) is an *unobserved partial*: not a full evaluation, and left out of the
comparison with the candidates where only the incumbent started with a partial.
Offline, ``rsigym/evoalloc_heuristic`` plays both LLM parts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from rsigym.agent import register_agent
from rsigym.agents.llm_messages import extract_json
from rsigym.llm import LLMError, RetryPolicy, complete
from rsigym.records import AgentSpec, Usage
from rsigym.records.redact import redacted_excerpt
from rsigym.spaces import invalid_action

from .acceptance import (UNOBSERVED_PARTIAL, Case, Verdict, accept_challenger, evaluates_fully,
                         missed_new_bests_estimate, path_cost, prior_new_best_rate)
from .allocation_policy import ALLOCATOR_PREAMBLE, DEFAULT_POLICY, policy_text

SCORE_BOUND = 1e6  # ProgramEvolution-v0 shows -SCORE_BOUND as its best score before any full evaluation

__all__ = ["EvoAllocAgent", "DEFAULT_TRIAL_CANDIDATES", "Case", "Verdict", "accept_challenger", "path_cost",
           "summarise_experience",
           "prior_new_best_rate", "missed_new_bests_estimate",
           "REVISE_MARKER", "DECIDE_MARKER"]

REVISE_MARKER = "[evoalloc:revise]"
DECIDE_MARKER = "[evoalloc:decide]"
PATHS = ("discard", "partial", "full", "partial+full", UNOBSERVED_PARTIAL)
NEAR = 0.01  # a turned-away candidate within 1% of the best counts as a near miss in summaries


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
        # never asked past the partial: not a full evaluation (it would count as catching every
        # new best); the acceptance rule compares only candidates observed alike under both policies
        return UNOBSERVED_PARTIAL
    return "partial+full" if decisions[1] == "full" else "partial"


POLICY_EVENT = "[policy] "  # the prefix of policy-history lines in action rationales
# The smallest trial that meets every acceptance target on simulated trials (equivalent and worse
# challengers accepted <= 5%, a 20% cheaper one >= 80%; benchmarks/evoalloc_trials.py, results in
# benchmarks/results/evoalloc_trials.json): at 10, 30 and 100 candidates the rule has no such power.
DEFAULT_TRIAL_CANDIDATES = 400


class EvoAllocAgent:
    """The EvoAlloc allocator (see the module docstring).

    Params:
        revise_after_full: New full results (own and counterfactual) between policy proposals.
        trial_candidates: Candidates a challenger shadows the incumbent before the verdict (default
            ``DEFAULT_TRIAL_CANDIDATES``, 400: the smallest trial with the power the README's table shows).
        miss_tolerance, prior_strength, acceptance_alpha: the acceptance rule's (``accept_challenger``;
            ``acceptance_alpha`` is its ``alpha``, the level of the role-swap test).
        experience_in_prompt: Show the experience summary in every decision prompt (default True).
        temperature, max_tokens, api_base, litellm_kwargs: LLM call parameters.
        max_retries, backoff_base_s, backoff_max_s, timeout_s: Provider-error retries and the
            per-request timeout (see ``rsigym.llm.client.RetryPolicy``).
    """

    def __init__(self, spec: AgentSpec) -> None:
        params = dict(spec.params)
        self.revise_after_full = int(params.pop("revise_after_full", 6))
        self.trial_candidates = int(params.pop("trial_candidates", DEFAULT_TRIAL_CANDIDATES))
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
            params = redacted_excerpt(proposal.strip().splitlines()[-1], 300)
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
        return {"decision": decision, "rationale": redacted_excerpt("\n".join(lines), 2000)}

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
