"""``rsigym/CodeRepair-v0``: pick which of 4 candidate programs to execute, over a stream of problems."""

from __future__ import annotations

import json
import zlib
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rsigym.conditions import Condition, ConditionRegistry
from rsigym.sandbox import Sandbox, open_sandbox
from rsigym.spaces import JsonActions, clean_text, text_space

from .checks import run_checks
from .coders import ORIGINS, Candidate, LLMCoder, MixtureCoder, build_catalogue
from .execution import CODEREPAIR_LIMITS, Job
from .features import candidate_features
from .memo import ExecMemo, memo_enabled, run_jobs_memo
from .mutation import canonical_form
from .problems import Problem, build_suite

__all__ = ["CodeRepairEnv", "CODEREPAIR_CONDITIONS", "TASKS"]

TASKS = ("humaneval",)
CODE_CHARS = 6000
CODEREPAIR_CONDITIONS: ConditionRegistry[dict[str, Any]] = ConditionRegistry("coderepair")


@CODEREPAIR_CONDITIONS.register("identity")
def _identity() -> dict[str, Any]:
    """No change (the baseline of a paired comparison)."""
    return {"feedback_to_coder": True}


@CODEREPAIR_CONDITIONS.register("no_feedback")
def _no_feedback() -> dict[str, Any]:
    """The coder never sees the failing public tests (repairs are blind)."""
    return {"feedback_to_coder": False}


class CodeRepairEnv(gym.Env[dict, dict]):
    """Code repair with a world model choosing which candidate gets the one online execution.

    ## Description
    An episode is a stream of HumanEval problems (``problems`` of them, in an order shuffled by
    the seed). Per problem, up to ``rounds`` rounds: a coder proposes ``candidates`` programs;
    the agent picks one; the env executes it against the **public** tests in the sandbox (one
    online test call) and shows the outcome. The problem ends when the public tests pass or the
    rounds are spent; the last executed program is final and is judged on the **hidden** tests
    after the stream is over.

    ## Observation
    ``Dict(text, problem, candidates=Tuple(Text x C), feedback, round, problem_index)``;
    ``round`` is 1-based (0 once the stream is over); ``feedback`` lists the failing public tests
    of the previous round of this problem (empty in round 1). ``info["executed"]``: the executed
    candidate's index, public outcome and failure type; once its problem is over also
    ``finished_rounds``, per round the executed candidate's origin, the mix in force and the
    coder's base mass per origin. Nothing about a candidate that was not executed is told
    (``leakcheck`` tests it).

    ## Action
    ``Dict(candidate=Discrete(C))`` or JSON ``{"candidate": i}``; a world-model agent may add
    ``predictions`` (one probability per candidate), ``propensity`` (the probability with which
    it chose ``i``), ``audit`` (a randomised audit pick), ``wm_version`` and ``decisions`` (its
    protocol's audit log since its last action); the env records them untouched. An invalid
    action is an error observation and costs nothing (``agent_error`` after
    ``max_invalid_actions``).

    ## Reward
    When a problem ends: 1.0 if its final program passes every public test, else 0. The hidden
    outcome (``hidden_pass`` per problem in the final state, for graders) is computed only once
    the stream is over, each final program run alone: nothing hidden reaches the sandbox while a
    round is live. A truncated episode leaves ``hidden_pass`` None (the graders re-execute).

    ## Episode End
    Terminated after the last problem (``budget_exhausted``); truncation by ``TimeLimit`` only.

    ## Arguments
    ``coder`` (``mixture`` or ``llm``), ``coder_params`` (``MixtureCoder`` / ``LLMCoder``
    arguments; ``llm`` needs ``model``), ``problems`` (a count from the start of the dataset, or a
    list of ids ``he-NNN``), ``shuffle``, ``rounds``, ``candidates``, ``sandbox``,
    ``max_invalid_actions``, ``condition`` (``identity`` or ``no_feedback``), ``memo`` (the
    execution memo, ``memo.py``: None = on for the mixture coder, off for ``llm``, whose programs
    may be nondeterministic; ``RSIGYM_CODEREPAIR_MEMO=off`` turns it off everywhere).

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": []}

    def __init__(self, coder: str = "mixture", coder_params: dict[str, Any] | None = None,
                 problems: int | list[str] | None = None, shuffle: bool = True, rounds: int = 3,
                 candidates: int = 4, sandbox: str | Sandbox = "auto", max_invalid_actions: int = 3,
                 condition: Condition | dict[str, Any] | str | None = None, render_mode: str | None = None,
                 memo: bool | None = None) -> None:
        if coder not in ("mixture", "llm"):
            raise ValueError(f"coder must be 'mixture' or 'llm', got {coder!r}")
        if rounds < 1 or candidates < 2:
            raise ValueError(f"need rounds >= 1 and candidates >= 2, got {rounds}, {candidates}")
        self.coder_name, self.coder_params = coder, dict(coder_params or {})
        self.coder = MixtureCoder(**self.coder_params) if coder == "mixture" else LLMCoder(**self.coder_params)
        self.problems_arg, self.shuffle = problems, bool(shuffle)
        self.rounds, self.n_candidates = int(rounds), int(candidates)
        self.max_invalid_actions = int(max_invalid_actions)
        self.condition = Condition.parse(condition)
        self._effect = CODEREPAIR_CONDITIONS.build(self.condition) if self.condition else {"feedback_to_coder": True}
        self._sandbox_arg = sandbox
        self._sandbox: Sandbox | None = sandbox if not isinstance(sandbox, str) else None
        self.render_mode = render_mode
        # rename-invariant keys only for the simulator's own programs (renamings of one catalogue entry)
        self._memo = (ExecMemo(rename_invariant=coder == "mixture")
                      if memo_enabled(coder == "mixture" if memo is None else bool(memo)) else None)
        count = problems if isinstance(problems, int) else len(problems) if problems else 164
        self.observation_space = spaces.Dict({
            "text": text_space(4 * CODE_CHARS + 12000), "problem": text_space(8000),
            "candidates": spaces.Tuple([text_space(CODE_CHARS)] * self.n_candidates),
            "feedback": text_space(4000), "checks": text_space(8000), "round": spaces.Discrete(self.rounds + 1),
            "problem_index": spaces.Discrete(count + 1)})
        self.action_space = spaces.Dict({"candidate": spaces.Discrete(self.n_candidates)})
        C = self.n_candidates
        self.action_schema = {
            "type": "object",
            "properties": {
                "candidate": {"type": "integer", "minimum": 0, "maximum": C - 1,
                              "description": "index of the candidate program to execute"},
                "predictions": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1},
                                "minItems": C, "maxItems": C},
                "propensity": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "audit": {"type": "boolean"},
                "wm_version": {"type": "string", "maxLength": 64},
                "decisions": {"type": "array", "maxItems": 50, "items": {"type": "object"}},
                "coder_weights": {"type": "object", "propertyNames": {"enum": [*ORIGINS, "*"]},
                                  "additionalProperties": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                                  "description": "the mixture coder's mutation mix (origin -> weight, '*': the "
                                                 "default) from the next proposal on"}},
            "required": ["candidate"], "additionalProperties": False}
        self._actions = JsonActions(self.action_schema)
        self.example_actions: list[dict[str, Any]] = [{"candidate": 0}]
        self._stream: list[Problem] = []

    def list_tasks(self, split: str | None = None) -> list[str]:
        return list(TASKS)

    @property
    def sandbox_info(self) -> dict[str, Any] | None:
        return self._sandbox.info if self._sandbox is not None else None

    @property
    def llm_usage(self) -> dict[str, Any]:
        usage = self.coder.usage
        return {"candidate_source": usage} if usage.model_calls else {}

    # -- gymnasium protocol -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id") or TASKS[0]
        if task_id not in TASKS:
            raise ValueError(f"unknown coderepair task {task_id!r}; known: {', '.join(TASKS)}")
        if self._sandbox is None:
            assert isinstance(self._sandbox_arg, str)
            self._sandbox = open_sandbox(self._sandbox_arg, CODEREPAIR_LIMITS)
        suite = build_suite(self._sandbox)
        self._suite_sha = suite.dataset_sha256
        by_id = suite.by_id()
        if isinstance(self.problems_arg, list):
            unknown = [p for p in self.problems_arg if p not in by_id]
            if unknown:
                raise ValueError(f"unknown problem ids {unknown[:5]}; expected he-000 .. he-163")
            stream = [by_id[p] for p in self.problems_arg]
        else:
            stream = suite.problems[: self.problems_arg or len(suite.problems)]
        if self.shuffle:
            order = self.np_random.permutation(len(stream))
            stream = [stream[int(i)] for i in order]
        self._stream = stream
        self._catalogue = build_catalogue(stream, self._sandbox) if self.coder_name == "mixture" else {}
        if isinstance(self.coder, MixtureCoder):
            self.coder.origin_weights = None  # every episode starts with the coder as shipped
        self._seed = int(seed) if seed is not None else int(self.np_random.integers(2**31))
        self._index, self._invalid, self._online_calls = 0, 0, 0
        self._decisions: list[dict[str, Any]] = []
        self._results: list[dict[str, Any]] = []
        self._start_problem()
        return self._observation(), self._info()

    def step(self, action: Any):
        if not self._stream:
            raise RuntimeError("call reset() before step()")
        value, error = self._actions.parse(action)
        if value is None or error is not None or self._index >= len(self._stream):
            error = error or "the stream is over"
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            return self._observation(error), 0.0, over, False, self._info(error, "agent_error" if over else None)
        if "coder_weights" in value and not isinstance(self.coder, MixtureCoder):
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            error = "coder_weights needs the mixture coder (coder: mixture)"
            return self._observation(error), 0.0, over, False, self._info(error, "agent_error" if over else None)
        if "coder_weights" in value:  # the policy's new mix: it shapes the next proposal, not this round's
            assert isinstance(self.coder, MixtureCoder)
            self.coder.origin_weights = {str(k): float(v) for k, v in value["coder_weights"].items()}
        problem, choice = self._stream[self._index], int(value["candidate"])
        code = self._candidates[choice].code
        assert self._sandbox is not None
        # Only the public tests run while rounds are live; see _grade_hidden for the hidden ones.
        public = run_jobs_memo(self._sandbox, [Job("public", code, problem.entry, problem.public, prelude=problem.prelude,
                                                   helpers=problem.helpers)], self._memo)["public"]
        self._online_calls += 1
        failing = [f"{t} -> {r.get('status')}{': ' + r['detail'] if r.get('detail') else ''}"
                   for t, r in zip(problem.public, public.tests) if r.get("status") != "pass"]
        self._feedback = "\n".join(failing[:3])[:4000]
        form = canonical_form(code, problem.entry)
        if not public.all_pass and form is not None:
            self._failed_forms.add(form)
        round_record: dict[str, Any] = {
            "chosen": choice, "kinds": [c.kind for c in self._candidates], "origins": [c.origin for c in self._candidates],
            "public_pass": public.all_pass, "failure": public.failure_type(),
            # graders and analyses only (the record never reaches the agent): every candidate's kind,
            # origin, features and, from the simulator's catalogue, whether it passes the public tests
            "features": np.round(self._features, 4).tolist(),
            "labels": [None if c.kind == "llm" else c.kind in ("correct", "sneaky") for c in self._candidates],
            # the policy side (coder_mix): the mix in force and each origin's base mass B(o)
            "origin_mass": self._origin_mass, "mix": self._mix_in_force}
        round_record.update({k: value[k] for k in ("predictions", "propensity", "audit", "wm_version") if k in value})
        self._current["rounds"].append(round_record)
        self._decisions += list(value.get("decisions") or [])
        executed = {"problem_id": problem.problem_id, "round": self._round, "candidate": choice,
                    "public_pass": public.all_pass, "failure": public.failure_type()}
        reward = 0.0
        if public.all_pass or self._round >= self.rounds:
            # the problem is over: per round, the EXECUTED candidate's origin (told no earlier: live, it
            # would say which candidate is a rewrite), the mix in force and the base masses B(o) (the
            # coder's distribution, fixed before the draw and the same for every candidate of the
            # round); never the other candidates' origins, which would label outcomes never executed
            executed["finished_rounds"] = [{"candidate": r["chosen"], "origin": r["origins"][r["chosen"]],
                                            "origin_mass": r["origin_mass"], "mix": r["mix"]}
                                           for r in self._current["rounds"]]
            self._current.update(final_program=code, public_passed=public.all_pass, hidden_pass=None,
                                 hidden_failure=None, online_test_calls=len(self._current["rounds"]))
            self._results.append(self._current)
            reward = float(public.all_pass)
            self._index += 1
            if self._index < len(self._stream):
                self._start_problem()
        else:
            self._round += 1
            self._propose()
        done = self._index >= len(self._stream)
        if done:
            self._grade_hidden()
        return self._observation(), reward, done, False, self._info(None, "budget_exhausted" if done else None, executed)

    def snapshot(self) -> dict[str, Any]:
        """Per problem: every round (choice, candidate kinds, public outcome, the agent's predictions),
        the final program and its hidden outcome; plus the agent's protocol decisions."""
        return {"family": "code-repair", "coder": self.coder_name, "coder_params": self.coder_params,
                "condition": self.condition.name if self.condition else None, "rounds": self.rounds,
                "candidates": self.n_candidates, "suite_sha256": getattr(self, "_suite_sha", None),
                "problems": list(self._results), "online_test_calls": self._online_calls,
                "solved": sum(bool(r["hidden_pass"]) for r in self._results), "wm_decisions": list(self._decisions)}

    def close(self) -> None:
        if self._sandbox is not None and isinstance(self._sandbox_arg, str):
            self._sandbox.close()
            self._sandbox = None
        if self._memo is not None:
            self._memo.close()
        super().close()

    # -- internals ---------------------------------------------------------------------------
    def _grade_hidden(self) -> None:
        """Run the final programs against their problems' hidden tests, once no round is live.

        The hidden tests never reach the sandbox while the agent or the coder can still act on
        what a program saw (a program could keep a hidden call's arguments in a file and show them
        in a later round's public feedback); the outcome goes to the record's final state only.
        """
        assert self._sandbox is not None
        by_id = {p.problem_id: p for p in self._stream}
        pending = [row for row in self._results if row.get("hidden_pass") is None]
        # one batch; each test of each program still runs in its own interpreter
        outcome = run_jobs_memo(self._sandbox, [
            Job(f"{i}", row["final_program"], by_id[row["problem_id"]].entry, by_id[row["problem_id"]].hidden,
                prelude=by_id[row["problem_id"]].prelude, helpers=by_id[row["problem_id"]].helpers)
            for i, row in enumerate(pending)], self._memo)
        for i, row in enumerate(pending):
            row.update(hidden_pass=outcome[f"{i}"].all_pass, hidden_failure=outcome[f"{i}"].failure_type())

    def _start_problem(self) -> None:
        problem = self._stream[self._index]
        drifted = isinstance(self.coder, MixtureCoder) and self.coder.drifted(self._index / len(self._stream))
        self._current: dict[str, Any] = {"problem_id": problem.problem_id, "index": self._index, "rounds": [],
                                          "drifted": drifted}
        self._round, self._feedback = 1, ""
        self._failed_forms: set[str] = set()
        self._propose()

    def _propose(self) -> None:
        problem = self._stream[self._index]
        feedback = self._feedback if self._effect["feedback_to_coder"] and self._round > 1 else None
        # same seed, problem, round and feedback: same candidates, whichever agent is playing
        rng = np.random.default_rng([self._seed, zlib.crc32(problem.problem_id.encode()), self._round,
                                     zlib.crc32((feedback or "").encode())])
        self._candidates: list[Candidate] = self.coder.propose(
            problem, self._catalogue.get(problem.problem_id, []), round_index=self._round - 1,
            progress=self._index / len(self._stream), feedback=feedback, n=self.n_candidates, rng=rng)
        if isinstance(self.coder, MixtureCoder):
            self._origin_mass = dict(self.coder.last_origin_mass)
            self._mix_in_force = dict(self.coder.origin_weights or {})
        else:
            self._origin_mass, self._mix_in_force = {}, {}
        assert self._sandbox is not None
        codes = [c.code for c in self._candidates]
        # the mixture coder's programs are the simulator's own (its labelled catalogue, re-printed)
        self._checks = run_checks(self._sandbox, problem, codes, trusted=isinstance(self.coder, MixtureCoder),
                                  memo=self._memo)
        self._features = candidate_features(codes, problem.entry, self._round - 1, self._failed_forms, self._checks)

    def _observation(self, error: str | None = None) -> dict[str, Any]:
        over = self._index >= len(self._stream)
        problem = None if over else self._stream[self._index]
        codes = [""] * self.n_candidates if over else [clean_text(c.code, CODE_CHARS) for c in self._candidates]
        lines = ["The stream of problems is over."] if problem is None else [
            f"Problem {self._index + 1} of {len(self._stream)} ({problem.problem_id}), round {self._round} of {self.rounds}.",
            "Pick the candidate most likely to pass the tests; it is executed against the public tests.",
            f"```python\n{clean_text(problem.prompt, 3000)}```"]
        lines += [f"Candidate {i}:\n```python\n{code}```" for i, code in enumerate(codes) if problem is not None]
        if problem is not None and self._checks:
            lines.append("Cheap checks (each candidate called on the public and boundary inputs; outputs not compared "
                         "with any expected value): " + clean_text(json.dumps(self._checks, separators=(",", ":")), 3000))
        if self._feedback and problem is not None:
            lines.append("Failing public tests of the previous round:\n" + clean_text(self._feedback, 1500))
        if error:
            lines.append(clean_text(f"Error: {error}", 500))
        lines.append('Reply with {"candidate": <index>}.')
        return {"text": "\n\n".join(lines)[: 4 * CODE_CHARS + 12000],
                "problem": clean_text(problem.prompt, 8000) if problem else "",
                "candidates": tuple(codes), "feedback": clean_text(self._feedback if problem else "", 4000),
                "checks": clean_text("[]" if over else json.dumps(self._checks, separators=(",", ":")), 8000),
                "round": np.int64(0 if over else self._round), "problem_index": np.int64(self._index)}

    def _info(self, error: str | None = None, termination: str | None = None,
              executed: dict[str, Any] | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "problem_id": None if self._index >= len(self._stream) else self._stream[self._index].problem_id,
            "entry": None if self._index >= len(self._stream) else self._stream[self._index].entry,
            "budget": {"online_test_calls": self._online_calls, "problems_done": self._index,
                       "problems_left": len(self._stream) - self._index},
            "invalid_actions": self._invalid}
        if executed is not None:
            info["executed"] = executed
        if error is not None:
            info["error"] = error
        if termination is not None:
            info["termination"] = termination
        return info
