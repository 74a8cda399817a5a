import json
from collections import defaultdict
from scipy.stats import mannwhitneyu

values = defaultdict(list)
for line in open("data.csv").read().splitlines()[1:]:
    g, v = line.split(",")
    values[int(float(g))].append(float(v))
names = {}
for line in open("groups.txt"):
    if line.strip():
        i, n = line.strip().split(",")
        names[int(i)] = n
tests = [i for i in names if i != 0]
hits = [names[i] for i in tests if mannwhitneyu(values[i], values[0]).pvalue * len(tests) < 0.05]
json.dump({"significant_variants": sorted(hits), "method": "Mann-Whitney U, Bonferroni"}, open("results.json", "w"))
