import json
import numpy as np
from sklearn.ensemble import RandomForestRegressor
from sklearn.inspection import permutation_importance

data = np.genfromtxt("data.csv", delimiter=",", names=True)
cols = [c for c in data.dtype.names if c != "y"]
X = np.column_stack([data[c] for c in cols])
y = data["y"]
fit_rows, eval_rows = slice(0, None, 2), slice(1, None, 2)
forest = RandomForestRegressor(n_estimators=200, min_samples_leaf=3, random_state=1).fit(X[fit_rows], y[fit_rows])
imp = permutation_importance(forest, X[eval_rows], y[eval_rows], n_repeats=10, random_state=2)
out = [c for c, m, s in zip(cols, imp.importances_mean, imp.importances_std) if m < 2 * s + 0.01]
json.dump({"irrelevant_features": sorted(out), "method": "random forest, held-out permutation importance"},
          open("results.json", "w"))
