import json
import numpy as np
from scipy.stats import ttest_ind

D = np.loadtxt("data.csv", delimiter=",", skiprows=1)
names = {int(a): b for a, b in (l.strip().split(",") for l in open("groups.txt") if l.strip())}
ctrl = D[D[:, 0] == 0, 1]
variants = [k for k in names if k != 0]
found = []
for k in variants:
    p = ttest_ind(D[D[:, 0] == k, 1], ctrl, equal_var=False).pvalue
    if p < 0.05 / len(variants):
        found.append(names[k])
json.dump({"significant_variants": sorted(found), "method": "Welch t-test, Bonferroni"}, open("results.json", "w"))
