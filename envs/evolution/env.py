"""``rsigym/ProgramEvolution-v0``: decide how much evaluation each candidate program gets."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rsigym.llm import LLMError
from rsigym.records import Usage
from rsigym.sandbox import Sandbox, SandboxLimits, open_sandbox

from rsigym.spaces import JsonActions, text_space
from .program_archive import Archive, Program
from .evaluator import SandboxEvaluator
from .render import TEXT_LENGTH, observation_text
from .sources import CandidateSource, make_source
from .tasks import EvalResult, EvolutionTask, make_task, task_names

__all__ = ["ProgramEvolutionEnv", "DECISIONS", "SCORE_BOUND", "EVOLUTION_LIMITS"]

DECISIONS = ("discard", "partial", "full")
SCORE_BOUND = 1e6  # scores shown are clipped to this; -SCORE_BOUND means "unknown"
# Every env shares one warm container pool: same image, same limits.
EVOLUTION_LIMITS = SandboxLimits(memory_mb=512, pids=64, file_size_mb=16, output_bytes=2_000_000)


class ProgramEvolutionEnv(gym.Env[dict, dict]):
    """Allocate an evaluation budget over the candidates of a program-evolution run.

    ## Description
    The env runs an evolutionary search (archive, tournament parent selection, a candidate
    source: offline ``mutate`` or an ``llm``) on a task with a real evaluator
    (``circle_packing_26``, ``bin_packing_online``). Each step shows one candidate program and
    the agent decides its evaluation: ``discard``, ``partial`` (a cheaper subset, where the
    task has one) or ``full``. Evaluations run in the sandbox (Docker by default: pooled
    containers, timeouts, memory and process limits); a failing candidate is scored failed with
    a reason. After a partial evaluation the same candidate is shown again with its partial
    score (``stage`` 1): ``full`` completes the evaluation at the remaining cost, ``discard``
    (or ``partial``) stops there. Only fully evaluated programs become parents.

    Counterfactual exploration: with probability ``explore_p`` a discarded candidate (or one
    stopped after a partial evaluation) is fully evaluated anyway; the result is shown in the
    next observation and in ``info["counterfactual"]``, costs nothing from the agent's budget
    and is reported apart (``info["exploration"]``; ``info["explore_p"]`` gives the probability, and
    the snapshot's curve carries the exploration cost so far, so reports can count it). It never
    enters the search.

    ## Observation
    ``Dict(text, budget_left, stage, partial_available, best_score, parent_score, partial_score,
    reference_partial, sibling_best, sibling_failure_rate)``; unknown scores are
    ``-SCORE_BOUND``. ``text`` shows the candidate's code, its parent's score, its siblings'
    results and the budget.

    ## Action
    ``Dict(decision=Discrete(3))`` (0 discard, 1 partial, 2 full), or JSON
    ``{"decision": "discard" | "partial" | "full", "rationale": optional text}`` (``action_schema``). ``partial`` on a task
    without partial evaluation, or an unparseable action, is an error observation that costs no
    budget, up to ``max_invalid_actions``.

    ## Reward
    The rise of the best full score (0 when it does not rise).

    ## Episode End
    Terminated when the full-evaluation equivalents spent reach ``budget`` (the last evaluation
    may overdraw it). Truncation only by the ``TimeLimit`` wrapper (discards cost no budget).

    ## Arguments
    ``task`` (default task), ``task_params`` ({task name: params}), ``source`` (``"mutate"``,
    ``{"kind": "llm", "model": ...}`` or a source object), ``budget`` (100), ``explore_p``
    (0.1), ``sandbox`` (``auto``, ``docker``, ``local`` or an open Sandbox, not closed by the
    env), ``tournament_size`` (3), ``timeout_s`` (overrides the task's), ``max_invalid_actions``,
    ``cache_evaluations`` (True: deterministic results are cached on disk, on the docker provider only; see
    SandboxEvaluator), ``dedup`` (``"code"``: a candidate whose code is already archived is
    redrawn; ``"behaviour"``: also, a candidate whose partial result equals, instance by instance,
    that of a program already evaluated on those instances is a behavioural duplicate: it stops
    after the partial evaluation (status ``duplicate``, with a note naming the twin) and is never
    fully evaluated or explored).

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": []}

    def __init__(self, task: str = "bin_packing_online", task_params: dict[str, dict[str, Any]] | None = None,
                 source: str | dict[str, Any] | CandidateSource = "mutate", budget: float = 100.0,
                 explore_p: float = 0.1, sandbox: str | Sandbox = "auto", tournament_size: int = 3,
                 timeout_s: float | None = None, max_invalid_actions: int = 3, cache_evaluations: bool = True,
                 dedup: str = "code", render_mode: str | None = None) -> None:
        if task not in task_names():
            raise ValueError(f"unknown program-evolution task {task!r}; known: {', '.join(task_names())}")
        if not budget > 0:
            raise ValueError(f"budget must be > 0, got {budget}")
        if not 0.0 <= explore_p <= 1.0:
            raise ValueError(f"explore_p must be in [0, 1], got {explore_p}")
        if dedup not in ("code", "behaviour"):
            raise ValueError(f"dedup must be 'code' or 'behaviour', got {dedup!r}")
        self.dedup = dedup
        unknown = set(task_params or {}) - set(task_names())
        if unknown:
            raise ValueError(f"task_params names unknown tasks {sorted(unknown)}; known: {', '.join(task_names())}")
        self.default_task, self.task_params = task, dict(task_params or {})
        self.source = make_source(source)
        self.budget, self.explore_p = float(budget), float(explore_p)
        self.tournament_size, self.timeout_s = int(tournament_size), timeout_s
        self.cache_evaluations = bool(cache_evaluations)
        self.max_invalid_actions = int(max_invalid_actions)
        self.render_mode = render_mode
        self._sandbox_arg = sandbox
        self._sandbox: Sandbox | None = sandbox if not isinstance(sandbox, str) else None
        self._tasks: dict[str, EvolutionTask] = {}

        score = spaces.Box(-SCORE_BOUND, SCORE_BOUND, shape=(), dtype=np.float64)
        self.observation_space = spaces.Dict({
            "text": text_space(TEXT_LENGTH),
            "budget_left": spaces.Box(0.0, self.budget, shape=(), dtype=np.float64),
            "stage": spaces.Discrete(2),
            "partial_available": spaces.Discrete(2),
            "best_score": score, "parent_score": score, "partial_score": score, "reference_partial": score,
            "sibling_best": score,
            "sibling_failure_rate": spaces.Box(0.0, 1.0, shape=(), dtype=np.float64),
        })
        self.action_space = spaces.Dict({"decision": spaces.Discrete(len(DECISIONS))})
        self.action_schema: dict[str, Any] = {
            "type": "object",
            "properties": {"decision": {"enum": [*DECISIONS, 0, 1, 2],
                                        "description": "discard (0), partial (1) or full (2) evaluation"},
                           "rationale": {"type": "string", "maxLength": 2000,
                                         "description": "optional: why (kept in the record)"}},
            "required": ["decision"], "additionalProperties": False,
        }
        self._actions = JsonActions(self.action_schema)
        # valid actions, as the prompt asks for them (the conformance test checks them against the schema)
        self.example_actions: list[dict[str, Any]] = [
            {"decision": "full", "rationale": "its parent scored well"}, {"decision": "discard"}, {"decision": 2}]
        self._task: EvolutionTask | None = None
        self._llm_usage = Usage()

    # -- catalogue and sandbox ----------------------------------------------------------------
    def list_tasks(self, split: str | None = None) -> list[str]:
        if split not in (None, "all"):
            raise ValueError(f"ProgramEvolution-v0 has one split, all; got {split!r}")
        return task_names()

    @property
    def llm_usage(self) -> dict[str, Usage]:
        """LLM usage of this episode by role (the candidate source's), for the runner's record."""
        return {"candidate_source": self._llm_usage} if self._llm_usage.model_calls else {}

    def _get_task(self, name: str) -> EvolutionTask:
        if name not in self._tasks:
            self._tasks[name] = make_task(name, **self.task_params.get(name, {}))
        return self._tasks[name]

    @property
    def sandbox_info(self) -> dict[str, Any] | None:
        return self._sandbox.info if self._sandbox is not None else None

    # -- gymnasium protocol -------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        name = (options or {}).get("task_id") or self.default_task
        self._task = task = self._get_task(name)
        seeds = self.np_random.integers(2**63, size=2)
        self._gen_rng, self._explore_rng = np.random.default_rng(int(seeds[0])), np.random.default_rng(int(seeds[1]))
        if self._sandbox is None:
            assert isinstance(self._sandbox_arg, str)
            self._sandbox = open_sandbox(self._sandbox_arg, EVOLUTION_LIMITS)
        self._evaluator = SandboxEvaluator(task, self._sandbox, self.timeout_s, cache=self.cache_evaluations)
        self.archive = Archive(self.tournament_size)
        self._spent = 0.0
        self._counts = {"full": 0, "partial": 0, "rest": 0, "discard": 0, "failed": 0, "duplicate": 0}
        self._exploration = {"evaluations": 0, "cost": 0.0, "missed_new_bests": 0}
        self._tokens = {"prompt": 0, "completion": 0}
        self._llm_usage = Usage()
        self._invalid = 0
        self._notes: list[str] = []
        self._curve: list[dict[str, Any]] = []
        seed_program = self.archive.add(Program(0, task.seed_program, None, 0, "seed"))
        result = self._evaluator.evaluate(task.seed_program, "full")
        if not result.ok:
            raise RuntimeError(f"the seed program of {task.name} failed: {result.reason}")
        self._record(seed_program, result)
        self.seed_score = result.score
        self._point()
        self._stage = 0
        self._candidate = self._propose()
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        if self._spent >= self.budget:
            raise RuntimeError("the evaluation budget is spent; call reset()")
        value, error = self._actions.parse(action)
        decision = None if value is None else value["decision"]
        decision = DECISIONS[decision] if isinstance(decision, int) else decision
        if error is None and decision == "partial" and self._stage == 0 and not self._task.has_partial:
            error = f"{self._task.name} has no partial evaluation; choose discard or full"
        if error is not None or decision is None:
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            return (self._observation(error), 0.0, over, False,
                    self._info(error=error, termination="agent_error" if over else None))
        best_before = self._best_score()
        self._notes, counterfactual = [], None
        program = self._candidate
        if self._stage == 0 and decision == "full":
            self._evaluate(program, "full")
        elif self._stage == 0 and decision == "partial":
            result = self._evaluate(program, "partial")
            self._stage = 1 if result.ok else 0
            twin = self._behavioural_twin(program) if result.ok and self.dedup == "behaviour" else None
            if twin is not None:
                program.status, program.reason = "duplicate", f"same partial results as #{twin.id}"
                self._counts["duplicate"] += 1
                self._notes.append(f"Candidate #{program.id} behaves like #{twin.id} on the partial instances "
                                   "(a behavioural duplicate): not evaluated further.")
                self._stage = 0
        elif self._stage == 1 and decision == "full":
            self._evaluate(program, "rest")
            self._stage = 0
        else:  # discard, or stop after a partial evaluation
            if self._stage == 0:
                program.status = "discarded"
                self._counts["discard"] += 1
            self._stage = 0
            if self._explore_rng.random() < self.explore_p:
                counterfactual = self._explore(program, best_before)
        if self._stage == 0:
            self._candidate = self._propose()
        best_after = self._best_score()
        done = self._spent >= self.budget - 1e-9
        reward = float(best_after - best_before) if best_after is not None and best_before is not None else 0.0
        info = self._info(termination="budget_exhausted" if done else None, counterfactual=counterfactual,
                          decided=program, decision=decision)
        return self._observation(), reward, done, False, info

    def close(self) -> None:
        if self._sandbox is not None and isinstance(self._sandbox_arg, str):
            self._sandbox.close()
            self._sandbox = None
        super().close()

    # -- evaluation ---------------------------------------------------------------------------
    def _evaluate(self, program: Program, kind: str) -> EvalResult:
        assert self._task is not None
        result = self._evaluator.evaluate(program.code, kind)
        self._spent += result.cost
        self._counts[kind] += 1
        if kind == "rest":
            partial = EvalResult("partial", program.partial_score, "", 0.0, program.details)
            result = self._task.merge(partial, result)
        self._record(program, result)
        self._point()
        return result

    def _record(self, program: Program, result: EvalResult) -> None:
        if not result.ok:
            program.status, program.reason = "failed", result.reason
            self._counts["failed"] += 1
            self._notes.append(f"Candidate #{program.id} failed ({result.kind}): {result.reason}")
            return
        best = self._best_score()
        program.details = dict(result.details)
        if result.kind == "partial":
            program.status, program.partial_score = "partial", result.score
            self._notes.append(f"Candidate #{program.id}: partial score {result.score:.6g}.")
            return
        program.status, program.score = "full", result.score
        new_best = best is not None and result.score is not None and result.score > best
        self._notes.append(f"Candidate #{program.id}: full score {result.score:.6g}"
                           f"{' (new best)' if new_best else ''}.")

    def _explore(self, program: Program, best_before: float | None) -> dict[str, Any]:
        """Fully evaluate a program the agent turned away; it never enters the search."""
        assert self._task is not None
        if program.status == "partial":
            rest = self._evaluator.evaluate(program.code, "rest")
            result = self._task.merge(EvalResult("partial", program.partial_score, "", 0.0, program.details), rest)
            cost = rest.cost
        else:
            result = self._evaluator.evaluate(program.code, "full")
            cost = result.cost
        self._exploration["evaluations"] += 1
        self._exploration["cost"] += cost
        missed = bool(result.ok and best_before is not None and result.score > best_before)  # type: ignore[operator]
        self._exploration["missed_new_bests"] += missed
        program.counterfactual_score = result.score
        self._notes.append(f"Counterfactual: turned-away candidate #{program.id} would have scored "
                           f"{'failed (' + result.reason + ')' if not result.ok else format(result.score, '.6g')}"
                           f"{' -- a new best, missed' if missed else ''}.")
        return {"program_id": program.id, "score": result.score, "reason": result.reason, "new_best": missed,
                "cost": cost}

    def _behavioural_twin(self, program: Program) -> Program | None:
        """An evaluated program whose per-instance partial results equal ``program``'s, if any."""
        mine = program.details.get("excess_pct")
        if mine is None:
            return None
        for other in self.archive.programs:
            theirs = other.details.get("excess_pct") if other is not program else None
            if theirs is not None and other.status in ("full", "partial") and list(theirs[:len(mine)]) == list(mine):
                return other
        return None

    def _propose(self) -> Program:
        assert self._task is not None
        parent = self.archive.select_parent(self._gen_rng)
        partner = self.archive.select_partner(parent, self._gen_rng)
        proposal = None
        for _ in range(5):  # a copy of an archived program teaches nothing: draw again
            try:
                proposal = self.source.propose(parent.code, float(parent.score or 0.0),
                                               partner.code if partner else None,
                                               self._task.library, self._task.description, self._gen_rng)
            except LLMError as exc:  # counted, then the episode ends as infra_error
                self._llm_usage = self._llm_usage + exc.usage
                raise
            if proposal.usage is not None:
                self._llm_usage = self._llm_usage + proposal.usage
            self._tokens["prompt"] += proposal.prompt_tokens
            self._tokens["completion"] += proposal.completion_tokens
            if proposal.code not in self.archive.codes:
                break
        assert proposal is not None
        program = Program(len(self.archive.programs), proposal.code, parent.id, parent.generation + 1,
                          proposal.operator)
        return self.archive.add(program)

    # -- views --------------------------------------------------------------------------------
    def _best_score(self) -> float | None:
        best = self.archive.best()
        return best.score if best else None

    def _reference_partial(self) -> float | None:
        """The best partial-comparable score: partial scores, and full ones on the partial subset."""
        assert self._task is not None
        if not self._task.has_partial:
            return None
        k = getattr(self._task, "partial_instances", 0)
        values = [p.partial_score for p in self.archive.programs if p.partial_score is not None]
        values += [-float(np.mean(p.details["excess_pct"][:k])) for p in self.archive.evaluated()
                   if "excess_pct" in p.details]
        return max(values) if values else None

    def _point(self) -> None:
        self._curve.append({"full_evaluations": self._counts["full"] + self._counts["rest"],
                            "full_equivalents": round(self._spent, 9),
                            "exploration_cost": round(self._exploration["cost"], 9),
                            "tokens": self._tokens["prompt"] + self._tokens["completion"],
                            "best_score": self._best_score()})

    def _siblings(self, program: Program) -> tuple[list[str], float | None, int, int]:
        siblings = [p for p in self.archive.children(program.parent_id or 0) if p.id != program.id and p.status != "pending"]
        shown = []
        for p in siblings[-8:]:
            if p.status == "full":
                shown.append(f"#{p.id} full {p.score:.6g}")
            elif p.status == "partial":
                shown.append(f"#{p.id} partial {p.partial_score:.6g}")
            else:
                shown.append(f"#{p.id} {p.status}")
        scores = [p.score for p in siblings if p.score is not None]
        failures = sum(p.status == "failed" for p in siblings)
        tried = sum(p.status in ("full", "partial", "failed") for p in siblings)
        return shown, (max(scores) if scores else None), failures, tried

    def _observation(self, error: str | None = None) -> dict[str, Any]:
        assert self._task is not None
        program = self._candidate
        parent = self.archive.programs[program.parent_id or 0]
        shown, sibling_best, failures, tried = self._siblings(program)
        best, reference = self._best_score(), self._reference_partial()
        view = {"task": self._task.name, "description": self._task.description, "budget": self.budget,
                "budget_left": max(self.budget - self._spent, 0.0), "partial_cost": self._task.partial_cost,
                "partial_available": self._task.has_partial, "best_score": best, "id": program.id,
                "generation": program.generation, "operator": program.operator, "parent_id": parent.id,
                "parent_score": parent.score, "siblings": shown, "sibling_failures": (failures, tried),
                "stage": self._stage,
                "partial_score": program.partial_score, "reference_partial": reference,
                "rest_cost": 1.0 - self._task.partial_cost, "notes": self._notes, "error": error,
                "code": program.code}

        def number(value: float | None) -> np.ndarray:
            return np.array(-SCORE_BOUND if value is None else float(np.clip(value, -SCORE_BOUND, SCORE_BOUND)))

        return {"text": observation_text(view),
                "budget_left": np.array(min(max(self.budget - self._spent, 0.0), self.budget)),
                "stage": np.int64(self._stage), "partial_available": np.int64(self._task.has_partial),
                "best_score": number(best), "parent_score": number(parent.score),
                "partial_score": number(program.partial_score if self._stage == 1 else None),
                "reference_partial": number(reference), "sibling_best": number(sibling_best),
                "sibling_failure_rate": np.array(failures / tried if tried else 0.0)}

    def _info(self, error: str | None = None, termination: str | None = None,
              counterfactual: dict[str, Any] | None = None, decided: Program | None = None,
              decision: str | None = None) -> dict[str, Any]:
        assert self._task is not None
        info: dict[str, Any] = {
            "task_id": self._task.name, "best_score": self._best_score(), "seed_score": self.seed_score,
            "partial_cost": self._task.partial_cost if self._task.has_partial else None,
            "budget": {"full_equivalents_spent": round(self._spent, 9),
                       "full_equivalents_left": round(max(self.budget - self._spent, 0.0), 9),
                       "full_evaluations": self._counts["full"] + self._counts["rest"],
                       "partial_evaluations": self._counts["partial"], "discards": self._counts["discard"],
                       "failed_evaluations": self._counts["failed"]},
            "exploration": dict(self._exploration), "explore_p": self.explore_p,
            "tokens": dict(self._tokens), "invalid_actions": self._invalid,
            "candidate": {"id": self._candidate.id, "parent_id": self._candidate.parent_id,
                          "generation": self._candidate.generation, "operator": self._candidate.operator,
                          "stage": self._stage},
        }
        if decided is not None:
            info["decided"] = {"id": decided.id, "decision": decision, "status": decided.status,
                               "score": decided.score, "partial_score": decided.partial_score,
                               "reason": decided.reason, "parent_id": decided.parent_id}
        if counterfactual is not None:
            info["counterfactual"] = counterfactual
        if error is not None:
            info["error"] = error
        if termination is not None:
            info["termination"] = termination
        return info

    def snapshot(self) -> dict[str, Any]:
        """The end state graders and analyses read: the curve, every program, the best code."""
        assert self._task is not None, "snapshot() before reset()"
        best = self.archive.best()
        return {"task_id": self._task.name, "task": self._task.spec(), "source": self.source.name,
                "budget": self.budget, "explore_p": self.explore_p, "seed_score": self.seed_score,
                "best_score": best.score if best else None, "best_program": best.code if best else None,
                "full_equivalents_spent": round(self._spent, 9), "counts": dict(self._counts),
                "exploration": dict(self._exploration), "tokens": dict(self._tokens),
                "curve": list(self._curve), "programs": [p.summary() for p in self.archive.programs]}
