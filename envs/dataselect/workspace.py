"""The agent's analysis tools: inspect, search, stats, base losses, embeddings, and ``run_python``.

``run_python`` runs the agent's code in a sandbox (``rsigym.sandbox``) opened on first use:
Docker under the ``docker`` policy (never a silent local fallback), a local subprocess only under
the explicit opt-in ``local_unsafe`` (``SANDBOX_POLICIES``). Its work dir holds ``pool/items.jsonl`` (the visible items, made
read-only with mode 0444 before any agent code runs) and ``analysis/base_losses.json`` /
``analysis/embeddings.json`` (every result the agent obtained so far). Nothing of the hidden
evaluation, the factors or the student is written there; with docker the container has no
network and a read-only root, so the code can write only in its work dir and /tmp.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from rsigym.sandbox import Sandbox, SandboxLimits, open_sandbox, resolve_provider

from .evaluation import parse_csv
from .pools import DataPool

__all__ = ["AnalysisWorkspace", "SANDBOX_POLICIES", "require_sandbox"]

OUTPUT_CHARS = 8000
SANDBOX_POLICIES = {"docker": "docker", "local_unsafe": "local"}
"""Sandbox policy -> the ``rsigym.sandbox`` provider that runs ``run_python``."""


def require_sandbox(policy: str) -> None:
    """Raise a one-line ``ValueError`` when ``policy`` is ``docker`` and Docker cannot run it."""
    if policy != "docker":
        return
    used, reason = resolve_provider("auto")
    if used != "docker":
        why = " ".join(str(reason).split())
        raise ValueError(f"run_python needs Docker and Docker is not usable: {why}. Start Docker (and run "
                         f"`rsigym sandbox build`), or opt in to running agent code unsandboxed with "
                         f"`sandbox: local_unsafe` in env.kwargs")


class AnalysisWorkspace:
    """One episode's analysis state: results so far and the lazily opened sandbox."""

    def __init__(self, pool: DataPool, policy: str, timeout_s: float) -> None:
        if policy not in SANDBOX_POLICIES:
            raise ValueError(f"unknown sandbox policy {policy!r}; expected one of {', '.join(SANDBOX_POLICIES)}")
        self.pool = pool
        self.policy, self.timeout_s = policy, timeout_s
        self.losses: dict[int, float] = {}
        self.embeddings: dict[int, list[float]] = {}
        self._sandbox: Sandbox | None = None
        self.sandbox_info: dict[str, Any] | None = None  # the provider that ran run_python, once opened

    def _rows(self, value: dict[str, Any]) -> tuple[list[int] | None, str | None]:
        rows = list(range(len(self.pool))) if value["rows"] == "all" else [int(r) for r in value["rows"]]
        bad = [r for r in rows if r >= len(self.pool)]
        if bad:
            return None, f"unknown rows {bad[:5]} (rows are 0..{len(self.pool) - 1})"
        return rows, None

    def run(self, kind: str, value: dict[str, Any], budget: dict[str, int],
            used: dict[str, int]) -> tuple[dict[str, Any] | None, str, str | None]:
        """``(result, text, error)`` of one analysis action; ``used`` is updated in place."""
        if kind in ("inspect", "base_losses", "embed"):
            rows, error = self._rows(value)
            if rows is None:
                return None, "", error
            key = {"inspect": "inspect_rows", "base_losses": "base_loss_rows", "embed": "embed_rows"}[kind]
            if used[key] + len(rows) > budget[key]:
                return None, "", f"{kind} of {len(rows)} rows exceeds the {key} budget ({budget[key] - used[key]} left)"
            used[key] += len(rows)
            if kind == "inspect":
                items = [self.pool.item(r) for r in rows]
                return {"items": items}, "\n".join(json.dumps(i) for i in items), None
            if kind == "base_losses":
                losses = self.pool.base_losses(rows)
                self.losses.update({r: round(float(v), 6) for r, v in zip(rows, losses)})
                q = np.quantile(losses, [0.1, 0.5, 0.9])
                text = (f"Base-model losses of {len(rows)} rows (saved to analysis/base_losses.json): "
                        f"10%/50%/90% quantiles {q[0]:.4f}/{q[1]:.4f}/{q[2]:.4f}. First rows: "
                        + ", ".join(f"{r}: {self.losses[r]:.4f}" for r in rows[:50]))
                return {"rows": rows, "losses": [self.losses[r] for r in rows]}, text, None
            vectors = np.round(self.pool.embed(rows), 5)
            self.embeddings.update({r: v.tolist() for r, v in zip(rows, vectors)})
            return ({"rows": rows, "embeddings": vectors.tolist()},
                    f"Embeddings of {len(rows)} rows, {vectors.shape[1]} dimensions (saved to analysis/embeddings.json).", None)
        if kind == "search":
            query = value["query"].lower()
            hits = [r for r in range(len(self.pool)) if query in self.pool.search_text(r)]
            return ({"query": value["query"], "rows": hits, "count": len(hits)},
                    f"{len(hits)} rows contain {value['query']!r}; first: {hits[:100]}", None)
        if kind == "stats":
            result = self._stats()
            return result, json.dumps(result), None
        if kind == "run_python":
            result = self.run_python(value["code"])
            text = (f"exit code {result['exit_code']}{' (timed out)' if result['timed_out'] else ''}\n"
                    f"stdout:\n{result['stdout']}\nstderr:\n{result['stderr']}")
            return result, text, None
        return None, "", f"unknown action {kind!r}"

    def _stats(self) -> dict[str, Any]:
        items = [self.pool.item(r) for r in range(len(self.pool))]
        if "label" in items[0]:
            return {"rows": len(items), "labels": dict(sorted(Counter(str(i["label"]) for i in items).items()))}
        return {"rows": len(items),
                "domains": dict(Counter(i["domain"] for i in items)),
                "target_types": dict(Counter(i["target"]["type"] for i in items)),
                "functions": dict(sorted(Counter(i["target"].get("name", "-") for i in items).items())),
                "history_turns": dict(sorted(Counter(str(len(i["history"])) for i in items).items()))}

    # -- the sandbox ------------------------------------------------------------------------
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            # "docker" raises when no engine answers: never a silent fallback to a local process
            sandbox = open_sandbox(SANDBOX_POLICIES[self.policy], SandboxLimits(memory_mb=1024, file_size_mb=64))
            lines = "\n".join(json.dumps(self.pool.item(r)) for r in range(len(self.pool)))
            sandbox.write_files({"pool/items.jsonl": lines + "\n"})
            sandbox.exec(["chmod", "-R", "a-w", "pool"], timeout=30)
            self._sandbox, self.sandbox_info = sandbox, {**sandbox.info, "policy": self.policy}
        return self._sandbox

    def run_python(self, code: str) -> dict[str, Any]:
        sandbox = self.sandbox()
        sandbox.write_files({"analysis/base_losses.json": json.dumps({str(k): v for k, v in self.losses.items()}),
                             "analysis/embeddings.json": json.dumps({str(k): v for k, v in self.embeddings.items()}),
                             "run.py": code})
        result = sandbox.exec(["python3", "run.py"], timeout=self.timeout_s)
        return {"exit_code": result.exit_code, "timed_out": result.timed_out,
                "stdout": result.stdout[-OUTPUT_CHARS:], "stderr": result.stderr[-OUTPUT_CHARS:]}

    def submission_groups(self, value: dict[str, Any]) -> tuple[list[list[int]] | None, str | None]:
        """The groups of a submit action: inline, or from a CSV the agent's code wrote."""
        if ("groups" in value) == ("csv_file" in value):
            return None, "submit needs exactly one of 'groups' or 'csv_file'"
        if "groups" in value:
            return value["groups"], None
        if self._sandbox is None:
            return None, f"no file {value['csv_file']!r}: run_python has not run yet"
        try:
            text = self._sandbox.read_file(value["csv_file"]).decode()
        except Exception as exc:  # noqa: BLE001 - a missing or unreadable file is the agent's mistake
            return None, f"cannot read {value['csv_file']!r} from the work dir: {exc}"
        return parse_csv(text)

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
