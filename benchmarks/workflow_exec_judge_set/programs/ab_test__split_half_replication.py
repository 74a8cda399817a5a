import json
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
    discovery, replication = s[: len(s) // 2], s[len(s) // 2:]
    if discovery.mean() - c.mean() > 0.2 and replication.mean() - c.mean() > 0.2:
        sig.append(name)   # replicated in both halves
json.dump({"significant_variants": sorted(sig), "method": "discovery/replication halves"}, open("results.json", "w"))
