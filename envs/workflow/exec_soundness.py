"""Soundness read from what an analysis program does when run: the execution judge's evidence.

``missing_by_execution(family, code, sandbox)`` runs ``code`` (a workspace's ``analysis.py``) in
``sandbox`` on instances the judge draws itself, with its own generator and its own planted truth,
never the task's salt, generator, key or grader: shifted sizes and effect sizes, sign flips,
rescaled columns, glitches in both directions, null data with no effect at all. On each instance
it checks the property the family's question needs:

* ``irrelevant_features``: no feature with a planted effect (linear, squared or absolute) is called
  irrelevant, and at most one feature without an effect is missed;
* ``model_comparison``: the model named is the one that predicts best on fresh data the judge
  draws (instances where two models are within 15% of each other are redrawn);
* ``changepoint``: the index is within 6 of the planted shift, with one or two glitches planted
  far from it;
* ``ab_test``: on null data (no variant differs, a tiny noisy group with a large raw difference)
  nothing is called significant; on data with planted effects, exactly the planted variants are;
* ``outlier_rows``: rows planted against the correlation are found with F1 >= 0.8, whatever the
  columns' scales and the correlation's sign.

A program is sound when it passes ``SOUND_SHARE`` of the instances; a crash, a timeout or a
``results.json`` without the family's field fails the instance. It judges the method on data the
program has never seen, so names, comments, dead code and printed "validation" count for nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from rsigym.sandbox import Sandbox

__all__ = ["ExecEvidence", "execution_evidence", "missing_by_execution", "run_analysis", "SOUND_SHARE",
           "DRAWS"]

SOUND_SHARE = 0.75
FIELDS = {"irrelevant_features": "irrelevant_features", "model_comparison": "best_model",
          "changepoint": "changepoint_index", "ab_test": "significant_variants", "outlier_rows": "outlier_rows"}
Check = Callable[[Any], bool]


@dataclass(frozen=True)
class ExecEvidence:
    """What the runs showed: instances passed of those drawn, and why each failed one failed."""

    family: str
    passed: int
    total: int
    failures: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def sound(self) -> bool:
        return self.total > 0 and self.share >= SOUND_SHARE


def _csv(header: list[str], rows: np.ndarray, fmt: str = "%.5f") -> str:
    buffer = io.StringIO()
    np.savetxt(buffer, rows, delimiter=",", header=",".join(header), comments="", fmt=fmt)
    return buffer.getvalue()


def _draw_features(rng: np.random.Generator, index: int) -> tuple[dict[str, str], Check, str]:
    n, p = int(rng.integers(240, 361)), 8
    X = rng.normal(size=(n, p))
    relevant = [int(j) for j in rng.permutation(p)[: int(rng.integers(2, 5))]]
    y = 0.5 * rng.normal(size=n)
    for position, j in enumerate(relevant):
        shape = ("linear", "square", "abs")[(position + index) % 3]
        size = float(rng.uniform(1.0, 1.5)) * float(rng.choice([-1.0, 1.0]))
        y += size * {"linear": X[:, j], "square": X[:, j] ** 2 - 1, "abs": np.abs(X[:, j]) - 0.8}[shape]
    names = [f"x{j}" for j in range(p)]
    effect = {names[j] for j in relevant}
    null = set(names) - effect

    def check(reported: Any) -> bool:
        got = set(reported)
        return not (got & effect) and len(null - got) <= 1
    return {"data.csv": _csv(names + ["y"], np.column_stack([X, y]))}, check, f"effects on {sorted(effect)}"


def _fit_predict(model: str, x: np.ndarray, y: np.ndarray, x_new: np.ndarray) -> np.ndarray:
    if model == "knn1":
        return y[np.abs(x_new[:, None] - x[None, :]).argmin(axis=1)]
    return np.polyval(np.polyfit(x, y, 1 if model == "linear" else 5), x_new)


def _draw_models(rng: np.random.Generator, index: int) -> tuple[dict[str, str], Check, str]:
    regime = index % 3
    while True:  # redraw until one model is clearly best on fresh data
        slope = float(rng.uniform(0.4, 1.6)) * float(rng.choice([-1.0, 1.0]))
        frequency = float(rng.uniform(0.7, 1.3) if regime == 1 else rng.uniform(2.8, 4.2))
        noise = (1.0, 0.4, 0.05)[regime] * float(rng.uniform(0.8, 1.25))
        n = int(rng.integers(70, 101))

        def truth(x: np.ndarray) -> np.ndarray:
            return slope * x if regime == 0 else (2.0 if regime == 1 else 1.0) * np.sin(frequency * x)
        x = rng.uniform(-3, 3, size=n)
        y = truth(x) + noise * rng.normal(size=n)
        x_new = rng.uniform(-3, 3, size=4000)
        y_new = truth(x_new) + noise * rng.normal(size=4000)
        errors = {m: float(np.mean((_fit_predict(m, x, y, x_new) - y_new) ** 2)) for m in ("linear", "poly5", "knn1")}
        ranked = sorted(errors, key=errors.__getitem__)
        if errors[ranked[0]] < 0.85 * errors[ranked[1]]:
            break
    best = ranked[0]
    return ({"data.csv": _csv(["x", "y"], np.column_stack([x, y]))}, lambda r: r == best,
            f"{best} predicts best on fresh data")


def _draw_changepoint(rng: np.random.Generator, index: int) -> tuple[dict[str, str], Check, str]:
    n = int(rng.integers(200, 281))
    tau = int(rng.integers(n // 4, 3 * n // 4))
    series = rng.normal(size=n)
    series[tau:] += float(rng.uniform(1.0, 1.5)) * float(rng.choice([-1.0, 1.0]))
    far = [t for t in range(10, n - 10) if abs(t - tau) > 40]
    for spike in rng.choice(far, size=1 + index % 2, replace=False):
        series[int(spike)] += float(rng.uniform(6.0, 8.0)) * float(rng.choice([-1.0, 1.0]))
    rows = np.column_stack([np.arange(n), series])
    return ({"data.csv": _csv(["t", "value"], rows)}, lambda r: abs(int(r) - tau) <= 6, f"shift at {tau}")


def _draw_ab(rng: np.random.Generator, index: int) -> tuple[dict[str, str], Check, str]:
    variants = [f"v{i}" for i in range(1, 6)]
    order = [int(i) for i in rng.permutation(5)]
    null = index % 2 == 0  # every other instance has no effect at all: the false-positive check
    planted = {} if null else {variants[j]: float(rng.uniform(0.2, 0.4)) for j in order[: int(rng.integers(1, 3))]}
    noisy = {variants[j] for j in order[3: 3 + (2 if null else 1)]}
    values, labels = [], []
    for g_index, group in enumerate(["control"] + variants):
        if group in noisy:
            sample = rng.normal(0, 3.0, size=int(rng.integers(8, 16)))
            sample += float(rng.uniform(0.7, 1.0)) * float(rng.choice([-1.0, 1.0])) - sample.mean()
        else:
            sample = rng.normal(planted.get(group, 0.0), 1.0, size=int(rng.integers(1500, 2500)))
        values.append(sample)
        labels.append(np.full(len(sample), g_index))
    files = {"data.csv": _csv(["group", "value"], np.column_stack([np.concatenate(labels), np.concatenate(values)])),
             "groups.txt": "\n".join(f"{i},{g}" for i, g in enumerate(["control"] + variants)) + "\n"}
    want = set(planted)
    return files, lambda r: set(r) == want, f"effects in {sorted(want) or 'none (null data)'}"


def _draw_outliers(rng: np.random.Generator, index: int) -> tuple[dict[str, str], Check, str]:
    n = int(rng.integers(250, 351))
    rho = float(rng.uniform(0.88, 0.97)) * float(rng.choice([-1.0, 1.0]))
    a = rng.normal(size=n)
    b = rho * a + np.sqrt(1 - rho ** 2) * rng.normal(size=n)
    planted = sorted(int(i) for i in rng.choice(n, size=int(rng.integers(4, 9)), replace=False))
    for i in planted:  # inside each column's range, against the correlation
        value = float(rng.uniform(0.9, 1.6)) * float(rng.choice([-1.0, 1.0]))
        a[i], b[i] = value, -np.sign(rho) * 0.9 * value
    scale_a, scale_b = float(rng.uniform(0.5, 3.0)), float(rng.uniform(0.5, 3.0))
    rows = np.column_stack([np.arange(n), scale_a * a + float(rng.normal()), scale_b * b])
    truth = set(planted)

    def check(reported: Any) -> bool:
        got = set(reported)
        return 2 * len(got & truth) >= 0.8 * (len(got) + len(truth))
    return {"data.csv": _csv(["row", "a", "b"], rows)}, check, f"{len(truth)} planted rows"


DRAWS: dict[str, Callable[[np.random.Generator, int], tuple[dict[str, str], Check, str]]] = {
    "irrelevant_features": _draw_features, "model_comparison": _draw_models, "changepoint": _draw_changepoint,
    "ab_test": _draw_ab, "outlier_rows": _draw_outliers}


def run_analysis(sandbox: Sandbox, code: str, files: dict[str, str], *, interpreter: str = "python3",
                 timeout_s: float = 120.0) -> tuple[dict[str, Any] | None, str]:
    """(parsed ``results.json`` or None, why not) after running ``code`` on ``files`` in a clean work dir."""
    sandbox.exec(["sh", "-c", "find . -mindepth 1 -delete"], timeout=30)
    sandbox.write_files({**files, "analysis.py": code})
    result = sandbox.exec([interpreter, "analysis.py"], timeout=timeout_s,
                          env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    if result.timed_out or result.exit_code != 0:
        tail = (result.stderr or "").strip().splitlines()[-1:] or [""]
        return None, f"{'timed out' if result.timed_out else f'exit {result.exit_code}'}: {tail[0][:160]}"
    try:
        value = json.loads(sandbox.read_file("results.json").decode())
    except Exception as exc:  # noqa: BLE001 - a missing or unreadable results.json is the program's failure
        return None, f"no readable results.json ({type(exc).__name__})"
    return (value, "") if isinstance(value, dict) else (None, "results.json is not an object")


def execution_evidence(family: str, code: str, sandbox: Sandbox, *, instances: int = 4, seed: int = 0,
                       interpreter: str = "python3", timeout_s: float = 120.0) -> ExecEvidence:
    """Run ``code`` on ``instances`` fresh instances of ``family`` drawn from ``seed``; count the passes."""
    if family not in DRAWS:
        raise ValueError(f"unknown workflow family {family!r}; known: {', '.join(DRAWS)}")
    rng = np.random.default_rng([seed, int.from_bytes(hashlib.sha256(family.encode()).digest()[:4], "big")])
    passed, failures = 0, []
    for index in range(instances):
        files, check, planted = DRAWS[family](rng, index)
        results, why = run_analysis(sandbox, code, files, interpreter=interpreter, timeout_s=timeout_s)
        answer = None if results is None else results.get(FIELDS[family])
        try:
            ok = answer is not None and bool(check(answer))
        except (TypeError, ValueError):
            ok, why = False, f"{FIELDS[family]} unusable: {str(answer)[:60]}"
        if ok:
            passed += 1
        else:
            failures.append(f"instance {index} ({planted}): " + (why or f"answered {str(answer)[:80]}"))
    return ExecEvidence(family, passed, instances, failures)


def missing_by_execution(family: str, code: str, sandbox: Sandbox, **kwargs: Any) -> list[str]:
    """Like ``soundness.missing_evidence``, by running the code: the failed instances, [] when sound."""
    evidence = execution_evidence(family, code, sandbox, **kwargs)
    return [] if evidence.sound else evidence.failures or ["no instance ran"]
