import json
import numpy as np

d = np.genfromtxt("data.csv", delimiter=",", names=True)
x, y = d["x"], d["y"]

def fp(m, xa, ya, xb):
    if m == "knn1":
        return ya[np.abs(xb[:, None] - xa[None, :]).argmin(1)]
    return np.polyval(np.polyfit(xa, ya, {"linear": 1, "poly5": 5}[m]), xb)

halves = [(x[::2], y[::2], x[1::2], y[1::2]), (x[1::2], y[1::2], x[::2], y[::2])]
err = {m: np.mean([np.mean(np.square(fp(m, a, b, c) - e)) for a, b, c, e in halves]) for m in ("linear", "poly5", "knn1")}
json.dump({"best_model": min(err, key=err.get), "method": "two-fold (even/odd rows), both directions"}, open("results.json", "w"))
