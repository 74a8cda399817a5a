import json
import numpy as np

D = np.genfromtxt("data.csv", delimiter=",", names=True)
g, v = D["group"].astype(int), D["value"]
labels = dict(line.strip().split(",") for line in open("groups.txt") if line.strip())
rng = np.random.default_rng(5)
pvals = {}
for key, name in labels.items():
    k = int(key)
    if k == 0:
        continue
    a, b = v[g == k], v[g == 0]
    obs = abs(a.mean() - b.mean())
    pool = np.concatenate([a, b])
    hits = 0
    for _ in range(2000):
        rng.shuffle(pool)
        hits += abs(pool[:len(a)].mean() - pool[len(a):].mean()) >= obs
    pvals[name] = (hits + 1) / 2001
m = len(pvals)
order = sorted(pvals, key=pvals.get)
sig = []
for i, name in enumerate(order):
    if pvals[name] > 0.05 / (m - i):
        break
    sig.append(name)
json.dump({"significant_variants": sorted(sig), "method": "permutation test, Holm"}, open("results.json", "w"))
