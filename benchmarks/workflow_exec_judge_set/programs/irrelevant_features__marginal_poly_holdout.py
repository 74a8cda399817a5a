import csv
import json
import numpy as np

with open("data.csv") as fh:
    rows = list(csv.DictReader(fh))
names = [k for k in rows[0] if k != "y"]
y = np.array([float(r["y"]) for r in rows])
odd, even = np.arange(len(y)) % 2 == 1, np.arange(len(y)) % 2 == 0
result = []
for k in names:
    x = np.array([float(r[k]) for r in rows])
    basis = np.column_stack([np.ones_like(x), x, np.square(x), x ** 3, np.abs(x)])
    beta, *_ = np.linalg.lstsq(basis[odd], y[odd], rcond=None)
    resid = y[even] - basis[even] @ beta
    r2 = 1 - resid.var() / y[even].var()
    if r2 < 0.02:
        result.append(k)
json.dump({"irrelevant_features": sorted(result), "method": "per-feature polynomial fit, R2 on alternate rows"},
          open("results.json", "w"))
