import json
import numpy as np

D = np.genfromtxt("data.csv", delimiter=",", names=True)
a, b = D["a"], D["b"]
slope, icept = np.polyfit(a, b, 1)
res = b - (slope * a + icept)
mad = np.median(np.abs(res - np.median(res))) * 1.4826
flag = np.abs(res - np.median(res)) / mad > 4.5
json.dump({"outlier_rows": [int(x) for x in D["row"][flag]], "method": "regression residual, MAD scale"}, open("results.json", "w"))
