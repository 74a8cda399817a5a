import json
import math

vals = [float(line.split(",")[1]) for line in open("data.csv").read().splitlines()[1:] if line]
n = len(vals)
prefix = [0.0]
for x in vals:
    prefix.append(prefix[-1] + x)
best, best_stat = None, -1.0
for k in range(8, n - 8):
    left = prefix[k] / k
    right = (prefix[n] - prefix[k]) / (n - k)
    stat = abs(right - left) * math.sqrt(k * (n - k) / n)
    if stat > best_stat:
        best, best_stat = k, stat
json.dump({"changepoint_index": best, "method": "maximal two-sample mean statistic over all splits"}, open("results.json", "w"))
