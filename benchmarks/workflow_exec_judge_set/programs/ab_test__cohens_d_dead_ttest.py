import json
import numpy as np
from scipy import stats

D = np.genfromtxt("data.csv", delimiter=",", names=True)
names = dict(line.strip().split(",") for line in open("groups.txt") if line.strip())
g, v = D["group"].astype(int), D["value"]
control = v[g == 0]
result = []
for k, name in names.items():
    if int(k) == 0:
        continue
    sample = v[g == int(k)]
    t, p = stats.ttest_ind(sample, control, equal_var=False)
    d = (sample.mean() - control.mean()) / control.std()
    if abs(d) > 0.2:
        result.append(name)
json.dump({"significant_variants": sorted(result), "method": "Welch t-test and effect size"}, open("results.json", "w"))
