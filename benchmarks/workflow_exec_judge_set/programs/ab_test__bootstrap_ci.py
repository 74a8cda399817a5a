import json
import numpy as np
import pandas as pd

df = pd.read_csv("data.csv")
names = pd.read_csv("groups.txt", header=None, names=["group", "name"]).set_index("group")["name"]
rng = np.random.default_rng(0)
control = df.loc[df.group == 0, "value"].to_numpy()
k = len(names) - 1
lo_q, hi_q = 100 * 0.025 / k, 100 * (1 - 0.025 / k)
sig = []
for gid, name in names.items():
    if gid == 0:
        continue
    x = df.loc[df.group == gid, "value"].to_numpy()
    boots = [rng.choice(x, len(x)).mean() - rng.choice(control, len(control)).mean() for _ in range(2000)]
    lo, hi = np.percentile(boots, [lo_q, hi_q])
    if lo > 0 or hi < 0:
        sig.append(name)
json.dump({"significant_variants": sorted(sig), "method": "bootstrap CI of the difference, Bonferroni level"}, open("results.json", "w"))
