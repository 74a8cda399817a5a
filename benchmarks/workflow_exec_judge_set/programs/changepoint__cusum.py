import json
import numpy as np

v = np.genfromtxt("data.csv", delimiter=",", names=True)["value"]
s = np.cumsum(v - v.mean())
t = int(np.argmax(np.abs(s))) + 1
json.dump({"changepoint_index": t, "method": "CUSUM maximum"}, open("results.json", "w"))
