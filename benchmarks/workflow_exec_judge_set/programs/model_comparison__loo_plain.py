import json

rows = [line.split(",") for line in open("data.csv").read().strip().splitlines()[1:]]
xs = [float(r[0]) for r in rows]
ys = [float(r[1]) for r in rows]
import numpy as np

def predict(model, x, y, q):
    if model == "knn1":
        return y[int(np.argmin(np.abs(x - q)))]
    deg = 1 if model == "linear" else 5
    return float(np.polyval(np.polyfit(x, y, deg), q))

x, y = np.array(xs), np.array(ys)
loo = {}
for model in ("linear", "poly5", "knn1"):
    errs = []
    for i in range(len(x)):
        keep = np.delete(np.arange(len(x)), i)
        errs.append((predict(model, x[keep], y[keep], x[i]) - y[i]) ** 2)
    loo[model] = sum(errs) / len(errs)
json.dump({"best_model": min(loo, key=loo.get), "method": "leave-one-out"}, open("results.json", "w"))
