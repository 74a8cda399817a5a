import json
import math
import numpy as np

D = np.genfromtxt("data.csv", delimiter=",", names=True)
names = dict(line.strip().split(",") for line in open("groups.txt") if line.strip())
g, v = D["group"].astype(int), D["value"]
c = v[g == 0]
sig = []
for k, name in names.items():
    if k == "0":
        continue
    s = v[g == int(k)]
    pooled = ((len(s) - 1) * s.var(ddof=1) + (len(c) - 1) * c.var(ddof=1)) / (len(s) + len(c) - 2)
    t = (s.mean() - c.mean()) / math.sqrt(pooled * (1 / len(s) + 1 / len(c)))
    p = math.erfc(abs(t) / math.sqrt(2))
    if p < 0.05:
        sig.append(name)
json.dump({"significant_variants": sorted(sig), "method": "two-sample t-test"}, open("results.json", "w"))
