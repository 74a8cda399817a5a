"""The five research-task families: data with a planted truth, and two ways to analyse it.

Each family generates a small data set (numpy only, seconds at most) with a hidden answer key,
states a question, fixes the ``results.json`` schema, scores an answer against the key, and
ships two analysis programs that run in the sandbox (python3 + numpy): a ``robust`` one that
finds the planted truth (held-out permutation importance, cross-validation, a two-segment
least-squares fit, Welch tests with Bonferroni, Mahalanobis distances) and a ``naive`` one that
a hurried analyst writes and that the planted data defeats (a correlation threshold, training
error, the largest jump, a raw effect threshold, per-column z-scores). The offline scripted
roles choose between them; an LLM writes its own.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["Family", "FAMILIES"]


@dataclass(frozen=True)
class Family:
    """One research-task family. ``generate(rng) -> (files, key)``; ``score(results, key) -> [0, 1]``."""

    name: str
    question: str
    result_schema: dict[str, Any]
    generate: Callable[[np.random.Generator], tuple[dict[str, str], dict[str, Any]]]
    score: Callable[[dict[str, Any], dict[str, Any]], float]
    code: dict[str, str]  # "robust" / "naive" -> program writing results.json


def _csv(header: list[str], rows: np.ndarray, fmt: str = "%.5f") -> str:
    buffer = io.StringIO()
    np.savetxt(buffer, rows, delimiter=",", header=",".join(header), comments="", fmt=fmt)
    return buffer.getvalue()


def _set_score(reported: Any, truth: list[Any]) -> float:
    """1.0 for the exact set; partial credit of half the Jaccard index otherwise."""
    got, want = set(reported or []), set(truth)
    if got == want:
        return 1.0
    union = got | want
    return 0.5 * len(got & want) / len(union) if union else 0.0


_LOAD = "import json\nimport numpy as np\nD = np.genfromtxt('data.csv', delimiter=',', names=True)\n"


# -- 1. irrelevant features ------------------------------------------------------------------
def _features_generate(rng: np.random.Generator) -> tuple[dict[str, str], dict[str, Any]]:
    n, p = 300, 8
    X = rng.normal(size=(n, p))
    linear, quadratic, absolute = (int(i) for i in rng.permutation(p)[:3])
    y = (1.0 * X[:, linear] + 1.2 * (X[:, quadratic] ** 2 - 1) + 1.5 * (np.abs(X[:, absolute]) - 0.8)
         + 0.5 * rng.normal(size=n))
    names = [f"x{j}" for j in range(p)]
    irrelevant = sorted(names[j] for j in range(p) if j not in (linear, quadratic, absolute))
    return {"data.csv": _csv(names + ["y"], np.column_stack([X, y]))}, {"irrelevant_features": irrelevant}


_FEATURES_ROBUST = _LOAD + """\
names = [n for n in D.dtype.names if n != 'y']
X = np.column_stack([D[n] for n in names]); y = D['y']
def design(X):
    return np.column_stack([np.ones(len(X)), X, X ** 2])
train, test = slice(0, 200), slice(200, None)
coef = np.linalg.lstsq(design(X[train]), y[train], rcond=None)[0]
base = np.mean((design(X[test]) @ coef - y[test]) ** 2)
rng = np.random.default_rng(0)
importance = {}
for j, name in enumerate(names):
    drops = []
    for _ in range(5):
        Xp = X[test].copy(); Xp[:, j] = rng.permutation(Xp[:, j])
        drops.append(np.mean((design(Xp) @ coef - y[test]) ** 2) - base)
    importance[name] = float(np.mean(drops) / np.var(y))
irrelevant = sorted(n for n in names if importance[n] < 0.02)
json.dump({'irrelevant_features': irrelevant, 'method': 'held-out permutation importance',
           'importance': importance}, open('results.json', 'w'), indent=1)
"""
_FEATURES_NAIVE = _LOAD + """\
names = [n for n in D.dtype.names if n != 'y']
corr = {n: float(np.corrcoef(D[n], D['y'])[0, 1]) for n in names}
irrelevant = sorted(n for n in names if abs(corr[n]) < 0.1)
json.dump({'irrelevant_features': irrelevant, 'method': 'correlation threshold 0.1',
           'correlation': corr}, open('results.json', 'w'), indent=1)
"""


# -- 2. model comparison ---------------------------------------------------------------------
MODELS = ("linear", "poly5", "knn1")


def _fit_predict(model: str, x: np.ndarray, y: np.ndarray, x_new: np.ndarray) -> np.ndarray:
    if model == "knn1":
        return y[np.abs(x_new[:, None] - x[None, :]).argmin(axis=1)]
    degree = 1 if model == "linear" else 5
    return np.polyval(np.polyfit(x, y, degree), x_new)


def _models_generate(rng: np.random.Generator) -> tuple[dict[str, str], dict[str, Any]]:
    # Three regimes drawn per task, so no single model is the answer of the family: a noisy line
    # (linear wins), a smooth curve with moderate noise (poly5 wins), a fast wiggle with little
    # noise (knn1 wins). The key is whichever truly predicts best on fresh data.
    regime = int(rng.integers(3))
    slope = float(rng.uniform(0.5, 1.5)) * float(rng.choice([-1.0, 1.0]))
    frequency = float(rng.uniform(0.8, 1.2) if regime == 1 else rng.uniform(3.0, 4.0))
    noise = (1.0, 0.4, 0.05)[regime]

    def truth(x: np.ndarray) -> np.ndarray:
        if regime == 0:
            return slope * x
        return 2.0 * np.sin(frequency * x) if regime == 1 else np.sin(frequency * x)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.uniform(-3, 3, size=n)
        return x, truth(x) + noise * rng.normal(size=n)

    x, y = draw(80)
    x_test, y_test = draw(5000)  # the key: error on fresh data, which the agent never sees
    errors = {m: float(np.mean((_fit_predict(m, x, y, x_test) - y_test) ** 2)) for m in MODELS}
    return ({"data.csv": _csv(["x", "y"], np.column_stack([x, y]))},
            {"best_model": min(errors, key=errors.__getitem__), "test_mse": errors})


_MODELS_COMMON = _LOAD + """\
x, y = D['x'], D['y']
def fit_predict(model, x, y, x_new):
    if model == 'knn1':
        return y[np.abs(x_new[:, None] - x[None, :]).argmin(axis=1)]
    return np.polyval(np.polyfit(x, y, 1 if model == 'linear' else 5), x_new)
models = ['linear', 'poly5', 'knn1']
"""
_MODELS_ROBUST = _MODELS_COMMON + """\
folds = np.arange(len(x)) % 5
cv = {m: float(np.mean([np.mean((fit_predict(m, x[folds != k], y[folds != k], x[folds == k]) - y[folds == k]) ** 2)
                        for k in range(5)])) for m in models}
json.dump({'best_model': min(cv, key=cv.get), 'method': '5-fold cross-validation', 'cv_mse': cv},
          open('results.json', 'w'), indent=1)
"""
_MODELS_NAIVE = _MODELS_COMMON + """\
train = {m: float(np.mean((fit_predict(m, x, y, x) - y) ** 2)) for m in models}
json.dump({'best_model': min(train, key=train.get), 'method': 'training error', 'train_mse': train},
          open('results.json', 'w'), indent=1)
"""


# -- 3. change point -------------------------------------------------------------------------
def _changepoint_generate(rng: np.random.Generator) -> tuple[dict[str, str], dict[str, Any]]:
    n = 240
    tau = int(rng.integers(60, 180))
    series = rng.normal(size=n)
    series[tau:] += 1.2
    spike = int(rng.choice([t for t in range(10, n - 10) if abs(t - tau) > 40]))
    series[spike] += 7.0  # one glitch: the largest jump, not the change
    rows = np.column_stack([np.arange(n), series])
    return {"data.csv": _csv(["t", "value"], rows, fmt="%.5f")}, {"changepoint_index": tau}


def _changepoint_score(results: dict[str, Any], key: dict[str, Any]) -> float:
    error = abs(int(results["changepoint_index"]) - int(key["changepoint_index"]))
    return float(max(0.0, 1.0 - max(0, error - 3) / 20.0))


_CHANGEPOINT_ROBUST = _LOAD + """\
v = D['value']; n = len(v)
def sse(t):
    return float(((v[:t] - v[:t].mean()) ** 2).sum() + ((v[t:] - v[t:].mean()) ** 2).sum())
best = min(range(10, n - 10), key=sse)
json.dump({'changepoint_index': int(best), 'method': 'two-segment least squares (all splits)'},
          open('results.json', 'w'), indent=1)
"""
_CHANGEPOINT_NAIVE = _LOAD + """\
v = D['value']
best = int(np.argmax(np.abs(np.diff(v)))) + 1
json.dump({'changepoint_index': best, 'method': 'largest jump'}, open('results.json', 'w'), indent=1)
"""


# -- 4. A/B test ------------------------------------------------------------------------------
def _ab_generate(rng: np.random.Generator) -> tuple[dict[str, str], dict[str, Any]]:
    variants = [f"v{i}" for i in range(1, 6)]
    order = [int(i) for i in rng.permutation(5)]
    effects = {variants[order[0]]: 0.25, variants[order[1]]: 0.35}
    noisy = variants[order[2]]
    groups = ["control"] + variants
    values, labels = [], []
    for g_index, group in enumerate(groups):
        if group == noisy:
            sample = rng.normal(0, 3.0, size=12)
            sample += 0.9 - sample.mean()  # planted: a large raw difference from a tiny, noisy group
        else:
            sample = rng.normal(effects.get(group, 0.0), 1.0, size=2000)
        values.append(sample)
        labels.append(np.full(len(sample), g_index))
    rows = np.column_stack([np.concatenate(labels), np.concatenate(values)])
    files = {"data.csv": _csv(["group", "value"], rows, fmt="%.5f"),
             "groups.txt": "\n".join(f"{i},{g}" for i, g in enumerate(groups)) + "\n"}
    return files, {"significant_variants": sorted(effects)}


_AB_COMMON = _LOAD + """\
import math
names = dict(line.strip().split(',') for line in open('groups.txt') if line.strip())
g = D['group'].astype(int); v = D['value']
control = v[g == 0]
stats = {}
for index, name in sorted(names.items()):
    if int(index) == 0:
        continue
    s = v[g == int(index)]
    diff = float(s.mean() - control.mean())
    se = math.sqrt(s.var(ddof=1) / len(s) + control.var(ddof=1) / len(control))
    p = math.erfc(abs(diff / se) / math.sqrt(2))
    stats[name] = {'diff': diff, 'p': p, 'n': int(len(s))}
"""
_AB_ROBUST = _AB_COMMON + """\
alpha = 0.05 / len(stats)
sig = sorted(k for k, s in stats.items() if s['p'] < alpha)
json.dump({'significant_variants': sig, 'method': 'Welch z-test, Bonferroni-corrected', 'stats': stats},
          open('results.json', 'w'), indent=1)
"""
_AB_NAIVE = _AB_COMMON + """\
sig = sorted(k for k, s in stats.items() if abs(s['diff']) > 0.5)
json.dump({'significant_variants': sig, 'method': 'raw difference above 0.5', 'stats': stats},
          open('results.json', 'w'), indent=1)
"""


# -- 5. outlier rows --------------------------------------------------------------------------
def _outliers_generate(rng: np.random.Generator) -> tuple[dict[str, str], dict[str, Any]]:
    n = 300
    a = rng.normal(size=n)
    b = 0.95 * a + np.sqrt(1 - 0.95 ** 2) * rng.normal(size=n)
    planted = sorted(int(i) for i in rng.choice(n, size=6, replace=False))
    for i in planted:  # inside each column's range, against the correlation
        value = float(rng.uniform(0.9, 1.6)) * (1 if rng.random() < 0.5 else -1)
        a[i], b[i] = value, -0.9 * value
    rows = np.column_stack([np.arange(n), a, b])
    return {"data.csv": _csv(["row", "a", "b"], rows)}, {"outlier_rows": planted}


def _f1(reported: Any, truth: list[int]) -> float:
    got, want = set(reported or []), set(truth)
    hits = len(got & want)
    return 2 * hits / (len(got) + len(want)) if got or want else 1.0


_OUTLIERS_ROBUST = _LOAD + """\
Z = np.column_stack([D['a'], D['b']])
centred = Z - Z.mean(axis=0)
d2 = np.einsum('ij,jk,ik->i', centred, np.linalg.inv(np.cov(Z.T)), centred)
rows = [int(r) for r in D['row'][d2 > 13.8]]  # chi-square, 2 dof, p < 0.001
json.dump({'outlier_rows': rows, 'method': 'Mahalanobis distance, chi-square 0.999'},
          open('results.json', 'w'), indent=1)
"""
_OUTLIERS_NAIVE = _LOAD + """\
Z = np.column_stack([D['a'], D['b']])
z = np.abs((Z - Z.mean(axis=0)) / Z.std(axis=0))
rows = [int(r) for r in D['row'][(z > 3).any(axis=1)]]
json.dump({'outlier_rows': rows, 'method': 'per-column z-score above 3'}, open('results.json', 'w'), indent=1)
"""

_NAMES = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
_INTS = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}


def _schema(field: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": [field, "method"],
            "properties": {field: value, "method": {"type": "string"}}}


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("irrelevant_features",
           "data.csv has features x0..x7 and a target y. Which features are irrelevant to y (no effect "
           "at all, linear or not)? Put their names in results.json as irrelevant_features.",
           _schema("irrelevant_features", _NAMES), _features_generate,
           lambda r, k: _set_score(r["irrelevant_features"], k["irrelevant_features"]),
           {"robust": _FEATURES_ROBUST, "naive": _FEATURES_NAIVE}),
    Family("model_comparison",
           "data.csv has x and y. Which of the models linear, poly5 (degree-5 polynomial) and knn1 "
           "(1-nearest neighbour) predicts y best on new data? Put it in results.json as best_model.",
           _schema("best_model", {"enum": list(MODELS)}), _models_generate,
           lambda r, k: float(r["best_model"] == k["best_model"]),
           {"robust": _MODELS_ROBUST, "naive": _MODELS_NAIVE}),
    Family("changepoint",
           "data.csv is a time series (t, value) whose mean shifts once. At which t does the new mean "
           "start? Put it in results.json as changepoint_index.",
           _schema("changepoint_index", {"type": "integer"}), _changepoint_generate, _changepoint_score,
           {"robust": _CHANGEPOINT_ROBUST, "naive": _CHANGEPOINT_NAIVE}),
    Family("ab_test",
           "data.csv has (group, value) rows; groups.txt names the groups (0 is control). Which variants "
           "truly differ from control? Put their names in results.json as significant_variants.",
           _schema("significant_variants", _NAMES), _ab_generate,
           lambda r, k: _set_score(r["significant_variants"], k["significant_variants"]),
           {"robust": _AB_ROBUST, "naive": _AB_NAIVE}),
    Family("outlier_rows",
           "data.csv has rows (row, a, b). A few rows were corrupted. Which? Put their row numbers in "
           "results.json as outlier_rows.",
           _schema("outlier_rows", _INTS), _outliers_generate,
           lambda r, k: _f1(r["outlier_rows"], k["outlier_rows"]),
           {"robust": _OUTLIERS_ROBUST, "naive": _OUTLIERS_NAIVE}),
]}
