"""``rsigym/DataSelection-v0``: pick five ranked training subsets from a pool; students are
trained and evaluated afterwards."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from rsigym.records.action_limits import action_limit_error
from rsigym.json_space import JsonText
from rsigym.spaces import TEXT_CHARSET, JsonActions, text_space
from .workspace import SANDBOX_POLICIES, require_sandbox
from .evaluation import N_GROUPS, PENALTY, random_subsets, score_submission, validate_submission
from .pools import POOL_NAMES, DataPool, PoolSpec, cached_scores, make_pool, warm_scores
from .workspace import AnalysisWorkspace

__all__ = ["DataSelectionEnv", "ACTION_SCHEMA", "DEFAULT_SIZES"]

TEXT_LENGTH = 20_000
INSPECT_PER_CALL = 200
# pool -> (pool size, group size, evaluation items per category)
DEFAULT_SIZES = {"function_calling": (10_000, 1_000, 200), "digits": (1_200, 100, 0)}

_ROWS = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}
ACTION_SCHEMA: dict[str, Any] = {"oneOf": [
    {"type": "object", "required": ["action", "rows"], "additionalProperties": False,
     "properties": {"action": {"const": "inspect"}, "rows": {**_ROWS, "maxItems": INSPECT_PER_CALL}}},
    {"type": "object", "required": ["action", "query"], "additionalProperties": False,
     "properties": {"action": {"const": "search"}, "query": {"type": "string", "minLength": 1}}},
    {"type": "object", "required": ["action"], "additionalProperties": False,
     "properties": {"action": {"const": "stats"}}},
    {"type": "object", "required": ["action", "rows"], "additionalProperties": False,
     "properties": {"action": {"enum": ["base_losses", "embed"]},
                    "rows": {"oneOf": [_ROWS, {"const": "all"}]}}},
    {"type": "object", "required": ["action", "code"], "additionalProperties": False,
     "properties": {"action": {"const": "run_python"}, "code": {"type": "string", "minLength": 1}}},
    {"type": "object", "required": ["action", "order"], "additionalProperties": False,
     "description": "five disjoint groups of equal size, inline or as a CSV 'row,group' written by run_python",
     "properties": {"action": {"const": "submit"},
                    "groups": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
                    "csv_file": {"type": "string", "minLength": 1},
                    "order": {"type": "array", "items": {"type": "integer"},
                              "description": "group indices, predicted best first"}}},
]}


class DataSelectionEnv(gym.Env[dict, Any]):
    """Select five disjoint, equal-size training subsets from a pool and predict their order.

    ## Description
    A pool (``function_calling``: BFCL-like items over the retail and airline tools;
    ``digits``: scikit-learn's digits) hides a quality factor per row. The agent analyses it
    with a budget of actions, then submits five groups and their predicted order. Each group
    fine-tunes the base model (the one ``base_losses``/``embed`` probe; ``student_seeds`` seeds,
    one fixed recipe) and the students are scored on hidden evaluation items the agent never sees
    (function calling: held-out templates and paraphrases, see ``fc_eval``); a random reference
    of ``n_random`` random subsets is trained with the same seeds (see ``evaluation``).

    ## Observation
    ``Dict(text, actions_left)``; ``text`` says what the last action returned. Structured
    results are in ``info["result"]``.

    ## Action
    JSON (``action_schema``): ``inspect(rows)`` (at most 200 rows a call), ``search(query)``,
    ``stats()``, ``base_losses(rows|"all")`` (loss of each row's label under the frozen base
    model; row-budgeted), ``embed(rows|"all")`` (the base model's features), ``run_python(code)``
    (runs in the sandbox with ``pool/items.jsonl`` read-only and earlier losses/embeddings under
    ``analysis/``; nothing of the evaluation inside), ``submit(groups|csv_file, order)``. Plain
    strings are parsed as JSON. Invalid actions are error observations and cost nothing, up to
    ``max_invalid_actions``.

    ## Reward
    0 per analysis action; on a scored submission the top group's gain over the random
    reference (with a t interval whose coverage is measured, ``evaluation.gain_ci``). An invalid submission returns its errors and allows one retry; a second invalid
    one is scored by ``evaluation.PENALTY`` (gain -1.0).

    ## Episode End
    Terminated after a scored or penalised submission (metrics in ``info["metrics"]``), or after
    too many invalid actions (``agent_error``).

    ## Arguments
    ``pool``, ``pool_size``, ``group_size``, ``eval_per_category`` (defaults ``DEFAULT_SIZES``),
    ``student_seeds`` (3), ``n_random`` (10, at least 2), ``max_actions`` (30), ``base_loss_rows`` /
    ``inspect_rows`` (row budgets, default the pool size), ``sandbox`` (``docker``; see below),
    ``data_seed``, ``eval_workers`` (1: processes that train the students after a submission).

    ## Sandbox
    ``run_python`` runs agent code. With ``sandbox: docker`` (the default) it runs only in the
    Docker sandbox, and the env refuses to be made when no engine answers or the image is missing
    (so a battery stops before any episode, with one line naming Docker and the opt-in). Running
    agent code as a local subprocess (which can import rsigym and read the hidden evaluation) needs
    the explicit opt-in ``sandbox: local_unsafe``. The provider that ran is in ``sandbox_info``,
    the episode record and the report.

    ## Version History
    v0: initial version.
    """

    # CPU-heavy steps (training in the worker): the runner keeps one episode in flight per core.
    metadata = {"render_modes": [], "rsigym.cpu_heavy": True}

    def __init__(self, pool: str = "function_calling", pool_size: int | None = None, group_size: int | None = None,
                 eval_per_category: int | None = None, student_seeds: int = 3, n_random: int = 10,
                 max_actions: int = 30, base_loss_rows: int | None = None, inspect_rows: int | None = None,
                 sandbox: str = "docker", data_seed: int = 0, max_invalid_actions: int = 5,
                 python_timeout_s: float = 120.0, eval_workers: int = 1, render_mode: str | None = None) -> None:
        if pool not in POOL_NAMES:
            raise ValueError(f"unknown pool {pool!r}; expected one of {', '.join(POOL_NAMES)}")
        # The kwargs' sizes apply to ``pool``; a task naming the other pool uses its defaults.
        self._specs = {name: PoolSpec(name, *sizes, int(data_seed)) for name, sizes in DEFAULT_SIZES.items()}
        size, group, per_category = DEFAULT_SIZES[pool]
        self._specs[pool] = PoolSpec(pool, int(pool_size or size), int(group_size or group),
                                     int(eval_per_category or per_category), int(data_seed))
        self.spec_pool = self._specs[pool]
        if N_GROUPS * self.spec_pool.group_size > self.spec_pool.size:
            raise ValueError(f"{N_GROUPS} groups of {self.spec_pool.group_size} exceed the pool of {self.spec_pool.size}")
        if student_seeds < 1 or n_random < 2:
            raise ValueError(f"student_seeds must be >= 1 and n_random >= 2 (the gain CI needs the spread of "
                             f"the random draws), got {student_seeds}, {n_random}")
        if sandbox not in SANDBOX_POLICIES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_POLICIES)} (run_python runs agent code; "
                             f"'local_unsafe' is the explicit opt-in to running it unsandboxed), got {sandbox!r}")
        require_sandbox(sandbox)
        self.student_seeds, self.n_random = int(student_seeds), int(n_random)
        self.max_actions, self.max_invalid_actions = int(max_actions), int(max_invalid_actions)
        self.base_loss_rows = base_loss_rows
        self.inspect_rows = inspect_rows
        self.sandbox_provider, self.python_timeout_s = sandbox, float(python_timeout_s)
        self.eval_workers = int(eval_workers)
        self.render_mode = render_mode
        self.action_schema = ACTION_SCHEMA
        self._actions = JsonActions(ACTION_SCHEMA)
        # valid actions, as the prompt asks for them (the conformance test checks them against the schema)
        self.example_actions: list[dict[str, Any]] = [
            {"action": "stats"}, {"action": "inspect", "rows": [0, 1, 2]}, {"action": "search", "query": "the"}]
        self.observation_space = spaces.Dict({"text": text_space(TEXT_LENGTH),
                                              "actions_left": spaces.Discrete(self.max_actions + 1)})
        # a JSON action as text (LLM agents send dicts); samples are valid actions, not noise
        self.action_space = JsonText(ACTION_SCHEMA, 4000, TEXT_CHARSET)
        self._pool: DataPool | None = None
        self._workspace: AnalysisWorkspace | None = None

    @property
    def pool(self) -> DataPool:
        if self._pool is None:
            self._pool = make_pool(self.spec_pool)
        return self._pool

    def list_tasks(self, split: str | None = None) -> list[str]:
        """Tasks are pools: ``function_calling`` and ``digits``."""
        return list(POOL_NAMES)

    # -- gymnasium protocol -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.close()
        task_id = (options or {}).get("task_id") or self.spec_pool.name
        if task_id not in self._specs:
            raise ValueError(f"unknown DataSelection task {task_id!r}; expected one of {', '.join(POOL_NAMES)}")
        if self._specs[task_id] != self.spec_pool:
            self.spec_pool, self._pool = self._specs[task_id], None
        n = len(self.pool)
        self._budget = {"actions": self.max_actions, "base_loss_rows": int(self.base_loss_rows or n),
                        "inspect_rows": int(self.inspect_rows or n), "embed_rows": int(self.base_loss_rows or n)}
        self._used = {k: 0 for k in self._budget}
        self._invalid, self._invalid_submissions = 0, 0
        self._metrics: dict[str, Any] | None = None
        self._submission: dict[str, Any] | None = None
        self._workspace = AnalysisWorkspace(self.pool, self.sandbox_provider, self.python_timeout_s)
        return self._observation(self._intro()), self._info()

    def step(self, action: Any):
        if self._workspace is None:
            raise RuntimeError("call reset() before step()")
        if self._metrics is not None:
            raise RuntimeError("the episode has ended; call reset()")
        if isinstance(action, str):
            limit_error = action_limit_error(action)  # before json.loads reads megabytes
            if limit_error is not None:
                return self._invalid_action(f"invalid action: {limit_error}")
            try:
                action = json.loads(action)
            except json.JSONDecodeError as exc:
                return self._invalid_action(f"the action is not JSON: {exc}")
            except RecursionError:  # "[[[[...": json recurses once per level
                return self._invalid_action("the action is not JSON: nested too deep")
        value, error = self._actions.parse(action)
        if value is None or error is not None:
            return self._invalid_action(error or "invalid action")
        kind = value["action"]
        if kind == "submit":
            return self._submit(value)
        if self._used["actions"] >= self._budget["actions"]:
            return self._invalid_action("the analysis budget is spent; submit now")
        result, text, error = self._workspace.run(kind, value, self._budget, self._used)
        if error is not None:
            return self._invalid_action(error)
        self._used["actions"] += 1
        return self._observation(text), 0.0, False, False, self._info(result=result)

    def _invalid_action(self, error: str):
        self._invalid += 1
        over = self._invalid > self.max_invalid_actions
        info = self._info(error=error, termination="agent_error" if over else None)
        if over:
            self.close()
        return self._observation(f"Error: {error}"), 0.0, over, False, info

    def _submit(self, value: dict[str, Any]):
        assert self._workspace is not None
        groups, error = self._workspace.submission_groups(value)
        errors = [error] if error else validate_submission(groups, value["order"], len(self.pool), self.spec_pool.group_size)
        if errors:
            self._invalid_submissions += 1
            if self._invalid_submissions == 1:  # one retry
                text = "Invalid submission (one retry left):\n- " + "\n- ".join(errors)
                return self._observation(text), 0.0, False, False, self._info(submission_errors=errors)
            self._metrics = dict(PENALTY)
            self.close()
            text = "Second invalid submission: penalised (gain -1.0).\n- " + "\n- ".join(errors)
            return (self._observation(text), PENALTY["gain"], True, False,
                    self._info(submission_errors=errors, termination="agent_stop"))
        assert groups is not None
        self._submission = {"groups": [sorted(g) for g in groups], "order": list(value["order"])}
        self.close()
        pool = self.pool
        randoms = random_subsets(len(pool), self.spec_pool.group_size, self.n_random, self.spec_pool.data_seed)
        spec = self.spec_pool
        self._metrics = score_submission(
            groups, value["order"], list(range(self.student_seeds)), randoms,
            lambda rows, seed: cached_scores(pool, rows, seed),
            prefetch=(lambda jobs: warm_scores(spec, jobs, self.eval_workers)) if self.eval_workers > 1 else None)
        m = self._metrics
        text = (f"Submission scored. Group scores (mean over {self.student_seeds} student seeds): "
                + ", ".join(f"{g}: {s:.4f}" for g, s in enumerate(m["group_scores"]))
                + f". Top group {m['top_group']} scored {m['top_score']:.4f}; random reference {m['random_mean']:.4f}; "
                f"gain {m['gain']:+.4f} (95% CI {m['gain_ci'][0]:+.4f}..{m['gain_ci'][1]:+.4f}); Spearman {m['spearman']:.2f}.")
        return self._observation(text), float(m["gain"]), True, False, self._info(termination="agent_stop")

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()

    @property
    def sandbox_info(self) -> dict[str, Any] | None:
        """Which sandbox ran ``run_python`` this episode (kept after the workspace closes), or None."""
        opened = self._workspace.sandbox_info if self._workspace is not None else None
        return {"policy": self.sandbox_provider, "opened": opened is not None, **(opened or {})}

    def snapshot(self) -> dict[str, Any]:
        """The end state graders read: the pool spec, the submission and its metrics."""
        return {"pool": self.spec_pool.key() | {"group_size": self.spec_pool.group_size},
                "student_seeds": self.student_seeds, "n_random": self.n_random,
                "submission": self._submission, "metrics": self._metrics, "sandbox": self.sandbox_info,
                "invalid_submissions": self._invalid_submissions, "used": dict(self._used)}

    # -- views ------------------------------------------------------------------------------
    def _intro(self) -> str:
        p = self.spec_pool
        kind = ("function-calling examples (tools offered, history, request, target)" if p.name == "function_calling"
                else "8x8 digit images with labels")
        return (f"A pool of {len(self.pool)} {kind}, rows 0..{len(self.pool) - 1}. Some rows are worse training "
                f"data than others. Choose {N_GROUPS} disjoint groups of exactly {p.group_size} rows and predict "
                f"their order, best first: each group will train a fresh student, scored on hidden tasks against "
                f"random subsets of the same size. Actions: inspect(rows), search(query), stats(), "
                f"base_losses(rows|'all'), embed(rows|'all'), run_python(code) (the pool is pool/items.jsonl, "
                f"earlier results are in analysis/), submit(groups or csv_file, order). Budget: "
                f"{self.max_actions} analysis actions.")

    def _observation(self, text: str) -> dict[str, Any]:
        clean = "".join(c if c in TEXT_CHARSET else "?" for c in text)
        if len(clean) > TEXT_LENGTH:
            clean = clean[:TEXT_LENGTH - 40] + "\n... (cut; full result in info)"
        return {"text": clean, "actions_left": self._budget["actions"] - self._used["actions"]}

    def _info(self, **extra: Any) -> dict[str, Any]:
        info: dict[str, Any] = {
            "pool": self.spec_pool.name,
            "budget": {k: {"used": self._used[k], "left": self._budget[k] - self._used[k]} for k in self._budget},
            "invalid_actions": self._invalid, "invalid_submissions": self._invalid_submissions,
        }
        if self._metrics is not None:
            info["metrics"] = self._metrics
        info.update({k: v for k, v in extra.items() if v is not None})
        return info
