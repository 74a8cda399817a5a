"""``rsigym/Probe-v0``: the kernel's own test fixture, a number-guessing task checked in a sandbox."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rsigym.errors import InfraError
from rsigym.sandbox import Sandbox, open_sandbox

from rsigym.conditions import Condition, ConditionRegistry
from rsigym.spaces import JsonActions, clean_text, text_space
from .tasks import ProbeTask, make_task, task_ids

__all__ = ["ProbeEnv", "PROBE_CONDITIONS", "check_with_source", "run_oracle", "write_oracle"]

FEEDBACK = ("none", "higher", "lower", "correct")

# A condition maps the oracle's true answer to the word the agent is shown.
PROBE_CONDITIONS: ConditionRegistry[Callable[[str], str]] = ConditionRegistry("probe")


@PROBE_CONDITIONS.register("reverse_hints")
def _reverse_hints() -> Callable[[str], str]:
    """Swap higher and lower: misleading feedback, a positive control for feedback use."""
    return lambda word: {"higher": "lower", "lower": "higher"}.get(word, word)


# The check runs oracle.py (unchanged, so its sha256 in old records still matches), then prints
# DONE: output without it as its last line was lost by the harness, not produced by the oracle.
DONE = "rsigym-probe-check-done"
_CHECK = ("import sys; sys.argv[0] = 'oracle.py'; "
          "exec(compile(open('oracle.py').read(), 'oracle.py', 'exec'), {'__name__': '__main__'}); "
          f"print({DONE!r})")
CHECK_ATTEMPTS = 3  # a check whose output was lost is run again, this many times in all


# The same check for a docker sandbox's exec server, which runs it in a fork of its pristine
# interpreter (``run_python``: as ``python3 -I -S -c``): the guesses come on stdin, so the program
# is one text, compiled once per server.
_CHECK_FORKED = ("import sys; sys.argv[:] = ['oracle.py', *sys.stdin.read().split()]; "
                 "exec(compile(open('oracle.py').read(), 'oracle.py', 'exec'), {'__name__': '__main__'}); "
                 f"print({DONE!r})")


# Writes oracle.py (its source on stdin) then runs the check, in one sandbox exec: a grader that
# leases a fresh sandbox for one check pays one engine exec, not two (a write and a check).
_WRITE_AND_CHECK = ("import sys; guesses, source = sys.stdin.read().split('\\n', 1); "
                    "open('oracle.py', 'w').write(source); sys.argv[:] = ['oracle.py', *guesses.split()]; "
                    "exec(compile(open('oracle.py').read(), 'oracle.py', 'exec'), {'__name__': '__main__'}); "
                    f"print({DONE!r})")
# Writes oracle.py through a docker sandbox's exec server (as the user, in the work dir): the env
# then checks every guess through the same server, so its lease pays one engine exec (the
# server's start) instead of two.
_WRITE_FORKED = "import sys; open('oracle.py', 'w').write(sys.stdin.read())"


def write_oracle(sandbox: Sandbox, source: str) -> None:
    """Write ``oracle.py`` into the work dir: through the exec server where the sandbox has one
    (the env's checks start it anyway), else with ``write_files``. A server write that did not
    succeed falls back to ``write_files`` (which raises SandboxError on failure)."""
    open_server = getattr(sandbox, "exec_server", None)
    if callable(open_server):
        result = open_server().run_python(_WRITE_FORKED, stdin=source, timeout=30.0)
        if result.ok:
            return
    sandbox.write_files({"oracle.py": source})


def check_with_source(sandbox: Sandbox, source: str, guesses: list[int], *, timeout_s: float = 10.0) -> list[str]:
    """Write ``source`` as ``oracle.py`` and run it on guesses, in one sandbox exec (retried as
    ``run_oracle`` is); the grader's check in a fresh sandbox. A docker sandbox runs it through
    its exec server, which the last lease's reset kept (else one engine exec starts it) and which
    does this lease's wipe too (``ExecServer.wipe``): no engine exec per check after a container's
    first lease, against two (the check and the wipe) before."""
    payload = " ".join(str(int(g)) for g in guesses) + "\n" + source
    open_server = getattr(sandbox, "exec_server", None)
    for attempt in range(1, CHECK_ATTEMPTS + 1):
        try:
            if callable(open_server):
                result = open_server().run_python(_WRITE_AND_CHECK, stdin=payload, timeout=timeout_s)
            else:
                result = sandbox.exec(["python3", "-S", "-c", _WRITE_AND_CHECK], stdin=payload, timeout=timeout_s)
            return _words(result, guesses)
        except InfraError:
            if attempt == CHECK_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def run_oracle(sandbox: Sandbox, guesses: list[int], *, timeout_s: float = 10.0, server: bool = False) -> list[str]:
    """Run the task's oracle (already written to ``oracle.py``) on guesses, in one sandbox exec.

    ``-S`` skips site-packages: the oracle needs none, and it halves interpreter start-up. With
    ``server`` and a sandbox that has an exec server (docker), the check runs through it: the
    same user identity, work dir, timeout and end-of-command kill of every user process, about
    2 ms instead of a docker exec and an interpreter start (the server's own start is paid once
    per lease, so an env that checks many guesses asks for it; a single check does not). The
    oracle is a pure function, so a check that failed for the harness (output lost or cut, a
    sandbox error, a timeout of a program that needs milliseconds) is run again, up to
    ``CHECK_ATTEMPTS`` times; then InfraError. Never an answer from output the oracle did not print.
    """
    for attempt in range(1, CHECK_ATTEMPTS + 1):
        try:
            return _check_once(sandbox, guesses, timeout_s, server)
        except InfraError:
            if attempt == CHECK_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _check_once(sandbox: Sandbox, guesses: list[int], timeout_s: float, server: bool = False) -> list[str]:
    args = [str(int(g)) for g in guesses]
    open_server = getattr(sandbox, "exec_server", None) if server else None
    if callable(open_server):
        result = open_server().run_python(_CHECK_FORKED, stdin=" ".join(args), timeout=timeout_s)
    else:
        result = sandbox.exec(["python3", "-S", "-c", _CHECK, *args], timeout=timeout_s)
    return _words(result, guesses)


def _words(result: Any, guesses: list[int]) -> list[str]:
    """The oracle's answers from a check's result, or InfraError when its output is not whole."""
    words = result.stdout.split()
    whole = result.ok and not result.output_truncated and words[-1:] == [DONE]
    words = words[:-1]
    if not whole or len(words) != len(guesses) or not set(words) <= set(FEEDBACK[1:]):
        raise InfraError(f"probe oracle failed (exit {result.exit_code}, timed out {result.timed_out}, "
                         f"end line {'seen' if whole else 'missing'}): "
                         f"{result.stderr.strip()[-200:] or result.stdout[:80]!r}")
    return words


class ProbeEnv(gym.Env[dict, dict]):
    """Guess a secret integer; each guess is checked by an oracle program run in a sandbox.

    This env is a **test fixture of the kernel**: small enough to run hundreds of episodes in
    tests, real enough to exercise the runner, resume, the sandbox and regrading end to end.

    ## Description
    A task (``probe-NNN``) defines a secret integer in ``[low, high]`` by a tiny Python oracle.
    The agent guesses; the oracle, executed in the sandbox, answers higher, lower or correct.

    ## Observation
    ``Dict(text, last_guess, feedback, guesses_left)``; ``last_guess`` is ``low - 1`` before the
    first guess; ``feedback`` indexes ``("none", "higher", "lower", "correct")``.

    ## Action
    ``Dict(guess=Discrete(high - low + 1, start=low))``, or the JSON ``{"guess": int}``
    (``action_schema``). An invalid action returns an error observation and costs no guess;
    after ``max_invalid_actions`` of them the episode ends with ``agent_error``.

    ## Reward
    1.0 for the correct guess, 0 otherwise.

    ## Episode End
    Terminated when the guess is correct (``agent_stop``) or the guesses are spent
    (``budget_exhausted``). Truncation only by the ``TimeLimit`` wrapper.

    ## Arguments
    ``sandbox`` ("auto", "docker", "local" or a Sandbox instance, which the env then does not
    close), ``low``, ``high``, ``max_guesses``, ``max_invalid_actions``, ``condition``
    (``reverse_hints`` or None).

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        sandbox: str | Sandbox = "auto",
        low: int = 0,
        high: int = 100,
        max_guesses: int = 10,
        max_invalid_actions: int = 3,
        condition: Condition | dict[str, Any] | str | None = None,
        render_mode: str | None = None,
    ) -> None:
        for name, value, least in (("low", low, None), ("high", high, None), ("max_guesses", max_guesses, 1),
                                   ("max_invalid_actions", max_invalid_actions, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
            if least is not None and value < least:
                raise ValueError(f"{name} must be >= {least}, got {value}")
        if not low < high:
            raise ValueError(f"need low < high, got low={low}, high={high}")
        self.low, self.high = int(low), int(high)
        self.max_guesses = int(max_guesses)
        self.max_invalid_actions = int(max_invalid_actions)
        self.condition = Condition.parse(condition)
        self._shown = PROBE_CONDITIONS.build(self.condition) if self.condition else (lambda w: w)
        self._sandbox_arg = sandbox
        self._sandbox: Sandbox | None = sandbox if not isinstance(sandbox, str) else None
        self.render_mode = render_mode

        self.observation_space = spaces.Dict({
            "text": text_space(2048),
            "last_guess": spaces.Discrete(self.high - self.low + 2, start=self.low - 1),
            "feedback": spaces.Discrete(len(FEEDBACK)),
            "guesses_left": spaces.Discrete(self.max_guesses + 1),
        })
        self.action_space = spaces.Dict({"guess": spaces.Discrete(self.high - self.low + 1, start=self.low)})
        self.action_schema = {
            "type": "object",
            "properties": {"guess": {"type": "integer", "minimum": self.low, "maximum": self.high,
                                     "description": "your next guess of the secret number"}},
            "required": ["guess"],
            "additionalProperties": False,
        }
        self._actions = JsonActions(self.action_schema)
        # valid actions, as the prompt asks for them (the conformance test checks them against the schema)
        self.example_actions: list[dict[str, Any]] = [{"guess": (self.low + self.high) // 2}]
        self._task: ProbeTask | None = None

    # -- task catalogue --------------------------------------------------------------------
    def list_tasks(self, split: str | None = None) -> list[str]:
        return task_ids(split)

    @property
    def sandbox_info(self) -> dict[str, Any] | None:
        return self._sandbox.info if self._sandbox is not None else None

    # -- gymnasium protocol -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id")
        if task_id is None:  # no task named: draw one from the train split with the env's rng
            ids = task_ids("train")
            task_id = ids[int(self.np_random.integers(len(ids)))]
        self._task = make_task(task_id, self.low, self.high)
        if self._sandbox is None:
            assert isinstance(self._sandbox_arg, str)
            self._sandbox = open_sandbox(self._sandbox_arg)
        write_oracle(self._sandbox, self._task.oracle_source)
        self._guesses: list[int] = []
        self._feedback: list[str] = []
        self._invalid = 0
        self._solved = False
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._task is None or self._sandbox is None:
            raise RuntimeError("call reset() before step()")
        value, error = self._actions.parse(action)
        if value is None or error is not None:  # a bad agent output is an observation
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            info = self._info(error=error, termination="agent_error" if over else None)
            return self._observation(error=error), 0.0, over, False, info
        guess = value["guess"]
        truth, = run_oracle(self._sandbox, [guess], server=True)
        shown = self._shown(truth)
        self._guesses.append(guess)
        self._feedback.append(shown)
        self._solved = truth == "correct"
        termination = ("agent_stop" if self._solved
                       else "budget_exhausted" if len(self._guesses) >= self.max_guesses else None)
        reward = 1.0 if self._solved else 0.0
        return self._observation(), reward, termination is not None, False, self._info(termination=termination)

    def snapshot(self) -> dict[str, Any]:
        """The end state graders read: guesses, shown feedback, and which oracle was used."""
        assert self._task is not None, "snapshot() before reset()"
        return {
            "task_id": self._task.task_id, "low": self.low, "high": self.high,
            "guesses": list(self._guesses), "feedback": list(self._feedback),
            "final_guess": self._guesses[-1] if self._guesses else None,
            "solved": self._solved, "oracle_sha256": self._task.oracle_sha256,
            "max_guesses": self.max_guesses,
        }

    def close(self) -> None:
        if self._sandbox is not None and isinstance(self._sandbox_arg, str):
            self._sandbox.close()
            self._sandbox = None
        super().close()

    # -- views ------------------------------------------------------------------------------
    def _observation(self, error: str | None = None) -> dict[str, Any]:
        last = self._guesses[-1] if self._guesses else self.low - 1
        shown = self._feedback[-1] if self._feedback else "none"
        left = self.max_guesses - len(self._guesses)
        lines = [f"Guess the secret integer between {self.low} and {self.high} (inclusive).",
                 f"You have {left} guesses left."]
        lines += [f"Guess {i + 1}: {g} -> {f}" for i, (g, f) in enumerate(zip(self._guesses, self._feedback))]
        if error:
            lines.append(clean_text(f"Error: {error}", 500))  # it may quote the agent's output
        lines.append('Reply with {"guess": <integer>}.')
        return {
            "text": "\n".join(lines)[:2048],
            "last_guess": np.int64(last),
            "feedback": np.int64(FEEDBACK.index(shown)),
            "guesses_left": np.int64(left),
        }

    def _info(self, error: str | None = None, termination: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self._task.task_id if self._task else None,
            "budget": {"guesses_used": len(self._guesses),
                       "guesses_left": self.max_guesses - len(self._guesses)},
            "invalid_actions": self._invalid,
        }
        if error is not None:
            info["error"] = error
        if termination is not None:
            info["termination"] = termination
        return info
