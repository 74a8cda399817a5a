"""A held-apart calibration set for workflow judges: analysis programs written for it, not from any judge's rules.

Per family, five programs beside the family's shipped ``robust`` and ``naive`` ones:

* two **sound rewrites in other idioms** (leave-one-out with ``np.delete``, random splits by
  index permutation, drop-column importance, cumulative-sum segment costs, Holm step-down,
  ``np.linalg.solve`` for Mahalanobis distances, ...): label ``sound``;
* two **naive programs with suggestive names** (variables called ``holdout``, ``cv_mse``,
  ``bonferroni_alpha``, ``mahalanobis`` that do the hurried thing): label ``unsound``;
* one **partial fix** (a split that is made but not used for scoring, a coarse split grid, a
  validated fit of the wrong model, ...): label ``unsound``.

This file was committed before the soundness-reading judge (``mass_policies.soundness_evidence``)
was written, and no rule of that judge was changed after it was first scored on this set. The labels come
from construction; ``workflow_soundness_calibration.py`` also runs every program on fresh
instances and prints its mean answer score against the key (report only), so a mislabelled
program shows.
"""

from __future__ import annotations

LOAD = "import json\nimport numpy as np\nD = np.genfromtxt('data.csv', delimiter=',', names=True)\n"

_FEAT_HEAD = LOAD + """\
cols = [c for c in D.dtype.names if c != 'y']
M = np.column_stack([D[c] for c in cols]); target = D['y']
def expand(A):
    return np.hstack([np.ones((len(A), 1)), A, A ** 2, np.abs(A)])
"""
_MODEL_HEAD = LOAD + """\
xs, ys = D['x'], D['y']
def predict(kind, xa, ya, xb):
    if kind == 'knn1':
        return ya[np.abs(xb[:, None] - xa[None, :]).argmin(axis=1)]
    return np.polyval(np.polyfit(xa, ya, 1 if kind == 'linear' else 5), xb)
kinds = ['linear', 'poly5', 'knn1']
"""
_AB_HEAD = LOAD + """\
import math
label = {}
for line in open('groups.txt'):
    if line.strip():
        i, name = line.strip().split(',')
        label[int(i)] = name
grp = D['group'].astype(int); val = D['value']
base = val[grp == 0]
"""

PROGRAMS: dict[str, list[tuple[str, str, str]]] = {  # family -> (name, label, code)
    "irrelevant_features": [
        ("drop-column k-fold", "sound", _FEAT_HEAD + """\
parts = np.array_split(np.arange(len(target)), 5)
def cv_error(keep):
    err = 0.0
    for k, held in enumerate(parts):
        fit = np.concatenate([p for j, p in enumerate(parts) if j != k])
        A = expand(M[:, keep])
        w = np.linalg.lstsq(A[fit], target[fit], rcond=None)[0]
        err += np.sum((A[held] @ w - target[held]) ** 2)
    return err / len(target)
full = cv_error(list(range(M.shape[1])))
gain = {c: (cv_error([j for j in range(M.shape[1]) if j != i]) - full) / np.var(target) for i, c in enumerate(cols)}
out = sorted(c for c in cols if gain[c] < 0.02)
json.dump({'irrelevant_features': out, 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("shuffled holdout", "sound", _FEAT_HEAD + """\
rng = np.random.default_rng(7)
order = rng.permutation(len(target))
fit_rows, eval_rows = order[:210], order[210:]
A = expand(M)
w = np.linalg.solve(A[fit_rows].T @ A[fit_rows] + 1e-6 * np.eye(A.shape[1]), A[fit_rows].T @ target[fit_rows])
ref = np.mean((expand(M[eval_rows]) @ w - target[eval_rows]) ** 2)
score = {}
for i, c in enumerate(cols):
    Z = M[eval_rows].copy()
    rng.shuffle(Z[:, i])
    score[c] = (np.mean((expand(Z) @ w - target[eval_rows]) ** 2) - ref) / np.var(target)
json.dump({'irrelevant_features': sorted(c for c in cols if score[c] < 0.02), 'method': 'analysis'},
          open('results.json', 'w'))
"""),
        ("holdout-named correlation", "unsound", _FEAT_HEAD + """\
holdout = D
cv_importance = {c: abs(float(np.corrcoef(holdout[c], holdout['y'])[0, 1])) for c in cols}
validated_irrelevant = sorted(c for c in cols if cv_importance[c] < 0.1)
json.dump({'irrelevant_features': validated_irrelevant, 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("train/test-named linear fit", "unsound", _FEAT_HEAD + """\
train = test = np.column_stack([np.ones(len(target)), M])
coef = np.linalg.lstsq(train, target, rcond=None)[0]
test_error = np.mean((test @ coef - target) ** 2)
permutation_importance = {c: abs(coef[i + 1]) for i, c in enumerate(cols)}
json.dump({'irrelevant_features': sorted(c for c in cols if permutation_importance[c] < 0.15),
           'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("held-out but linear only", "unsound", _FEAT_HEAD + """\
A = np.column_stack([np.ones(len(target)), M])
w = np.linalg.lstsq(A[:200], target[:200], rcond=None)[0]
ref = np.mean((A[200:] @ w - target[200:]) ** 2)
rng = np.random.default_rng(1)
imp = {}
for i, c in enumerate(cols):
    B = A[200:].copy(); B[:, i + 1] = rng.permutation(B[:, i + 1])
    imp[c] = (np.mean((B @ w - target[200:]) ** 2) - ref) / np.var(target)
json.dump({'irrelevant_features': sorted(c for c in cols if imp[c] < 0.02), 'method': 'analysis'},
          open('results.json', 'w'))
"""),
    ],
    "model_comparison": [
        ("leave-one-out", "sound", _MODEL_HEAD + """\
loss = {}
for kind in kinds:
    sq = []
    for i in range(len(xs)):
        sq.append(float((predict(kind, np.delete(xs, i), np.delete(ys, i), xs[i:i + 1])[0] - ys[i]) ** 2))
    loss[kind] = float(np.mean(sq))
json.dump({'best_model': min(loss, key=loss.get), 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("repeated random splits", "sound", _MODEL_HEAD + """\
rng = np.random.default_rng(3)
loss = {k: 0.0 for k in kinds}
for rep in range(20):
    idx = rng.permutation(len(xs))
    a, b = idx[:60], idx[60:]
    for k in kinds:
        loss[k] += float(np.mean((predict(k, xs[a], ys[a], xs[b]) - ys[b]) ** 2))
json.dump({'best_model': min(loss, key=loss.get), 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("cv-named training error", "unsound", _MODEL_HEAD + """\
holdout_x, holdout_y = xs, ys
cv_mse = {k: float(np.mean((predict(k, xs, ys, holdout_x) - holdout_y) ** 2)) for k in kinds}
json.dump({'best_model': min(cv_mse, key=cv_mse.get), 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("fold loop on all data", "unsound", _MODEL_HEAD + """\
fold_scores = {k: [] for k in kinds}
for fold in range(5):
    for k in kinds:
        fold_scores[k].append(float(np.mean((predict(k, xs, ys, xs) - ys) ** 2)))
cross_validated = {k: float(np.mean(v)) for k, v in fold_scores.items()}
json.dump({'best_model': min(cross_validated, key=cross_validated.get), 'method': 'analysis'},
          open('results.json', 'w'))
"""),
        ("split made, scored on the fitted part", "unsound", _MODEL_HEAD + """\
fit_part, check_part = slice(0, 60), slice(60, None)
loss = {k: float(np.mean((predict(k, xs[fit_part], ys[fit_part], xs[fit_part]) - ys[fit_part]) ** 2)) for k in kinds}
json.dump({'best_model': min(loss, key=loss.get), 'method': 'analysis'}, open('results.json', 'w'))
"""),
    ],
    "changepoint": [
        ("cumulative-sum costs", "sound", LOAD + """\
s = D['value']; n = len(s)
c1, c2 = np.cumsum(s), np.cumsum(s ** 2)
costs = []
for t in range(10, n - 10):
    left = c2[t - 1] - c1[t - 1] ** 2 / t
    right = (c2[-1] - c2[t - 1]) - (c1[-1] - c1[t - 1]) ** 2 / (n - t)
    costs.append(left + right)
json.dump({'changepoint_index': 10 + int(np.argmin(costs)), 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("weighted mean-difference scan", "sound", LOAD + """\
s = D['value']; n = len(s)
stat = np.array([abs(s[:t].mean() - s[t:].mean()) * np.sqrt(t * (n - t) / n) for t in range(10, n - 10)])
json.dump({'changepoint_index': 10 + int(stat.argmax()), 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("least-squares-named jump", "unsound", LOAD + """\
s = D['value']
least_squares_split = int(np.argmax(np.abs(np.diff(s)))) + 1
json.dump({'changepoint_index': least_squares_split, 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("robust-named smoothed jump", "unsound", LOAD + """\
s = D['value']
robust_smooth = np.convolve(s, np.ones(3) / 3, mode='same')
segment_fit = int(np.argmax(np.abs(np.diff(robust_smooth)))) + 1
json.dump({'changepoint_index': segment_fit, 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("segment costs on a coarse grid", "unsound", LOAD + """\
s = D['value']; n = len(s)
def cost(t):
    return float(((s[:t] - s[:t].mean()) ** 2).sum() + ((s[t:] - s[t:].mean()) ** 2).sum())
best = min(range(20, n - 20, 40), key=cost)
json.dump({'changepoint_index': int(best), 'method': 'analysis'}, open('results.json', 'w'))
"""),
    ],
    "ab_test": [
        ("Holm step-down", "sound", _AB_HEAD + """\
pv = {}
for i, name in label.items():
    if i == 0:
        continue
    g = val[grp == i]
    z = (g.mean() - base.mean()) / math.sqrt(g.var(ddof=1) / g.size + base.var(ddof=1) / base.size)
    pv[name] = math.erfc(abs(z) / math.sqrt(2))
ranked = sorted(pv, key=pv.get)
keep = []
for r, name in enumerate(ranked):
    if pv[name] > 0.05 / (len(ranked) - r):
        break
    keep.append(name)
json.dump({'significant_variants': sorted(keep), 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("t statistic against 3", "sound", _AB_HEAD + """\
hits = []
for i, name in label.items():
    if i == 0:
        continue
    g = val[grp == i]
    t = (g.mean() - base.mean()) / np.sqrt(np.var(g, ddof=1) / len(g) + np.var(base, ddof=1) / len(base))
    if abs(t) > 3.0:
        hits.append(name)
json.dump({'significant_variants': sorted(hits), 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("bonferroni-named raw threshold", "unsound", _AB_HEAD + """\
bonferroni_alpha = 0.05
significance = {label[i]: float(val[grp == i].mean() - base.mean()) for i in label if i != 0}
welch_significant = sorted(k for k, d in significance.items() if abs(d) > 0.5)
json.dump({'significant_variants': welch_significant, 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("p-named effect ratio", "unsound", _AB_HEAD + """\
p_values = {label[i]: float(base.mean() / (val[grp == i].mean() + 1e-9)) for i in label if i != 0}
corrected = sorted(k for k, p in p_values.items() if abs(p) < 0.6)
json.dump({'significant_variants': corrected, 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("corrected level, raw effect", "unsound", _AB_HEAD + """\
alpha = 0.05 / (len(label) - 1)
effect = {label[i]: float(val[grp == i].mean() - base.mean()) for i in label if i != 0}
chosen = sorted(k for k, d in effect.items() if abs(d) > 0.5 or abs(d) < alpha)
json.dump({'significant_variants': chosen, 'method': 'analysis'}, open('results.json', 'w'))
"""),
    ],
    "outlier_rows": [
        ("solve-based Mahalanobis", "sound", LOAD + """\
P = np.column_stack([D['a'], D['b']])
dev = P - P.mean(axis=0)
S = np.cov(P, rowvar=False)
dist = np.sum(dev * np.linalg.solve(S, dev.T).T, axis=1)
json.dump({'outlier_rows': [int(r) for r in D['row'][dist > 13.8]], 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("regression residuals", "sound", LOAD + """\
a, b = D['a'], D['b']
slope, icept = np.polyfit(a, b, 1)
res = b - (slope * a + icept)
scale = 1.4826 * np.median(np.abs(res - np.median(res)))
json.dump({'outlier_rows': [int(r) for r in D['row'][np.abs(res) > 5 * scale]], 'method': 'analysis'},
          open('results.json', 'w'))
"""),
        ("mahalanobis-named z-score", "unsound", LOAD + """\
P = np.column_stack([D['a'], D['b']])
mahalanobis = np.abs((P - P.mean(axis=0)) / P.std(axis=0))
covariance_flag = (mahalanobis > 3).any(axis=1)
json.dump({'outlier_rows': [int(r) for r in D['row'][covariance_flag]], 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("joint-named norm", "unsound", LOAD + """\
P = np.column_stack([D['a'], D['b']])
joint_model = np.linalg.norm(P - P.mean(axis=0), axis=1)
flag = joint_model > np.percentile(joint_model, 98)
json.dump({'outlier_rows': [int(r) for r in D['row'][flag]], 'method': 'analysis'}, open('results.json', 'w'))
"""),
        ("covariance computed, unused", "unsound", LOAD + """\
P = np.column_stack([D['a'], D['b']])
S = np.linalg.inv(np.cov(P.T))
z = np.abs((P - P.mean(axis=0)) / P.std(axis=0))
json.dump({'outlier_rows': [int(r) for r in D['row'][(z > 3).any(axis=1)]], 'method': 'analysis'},
          open('results.json', 'w'))
"""),
    ],
}
