import json
import numpy as np

D = np.genfromtxt("data.csv", delimiter=",", names=True)
names = [n for n in D.dtype.names if n != "y"]
train, test = slice(0, 200), slice(200, None)
irrelevant = []
for n in names:
    r_train = np.corrcoef(D[n][train], D["y"][train])[0, 1]
    r_test = np.corrcoef(D[n][test], D["y"][test])[0, 1]
    print(n, "train r", round(r_train, 3), "test r", round(r_test, 3))
    if abs(r_train) < 0.15 and abs(r_test) < 0.15:   # irrelevant on both train and test folds
        irrelevant.append(n)
json.dump({"irrelevant_features": sorted(irrelevant), "method": "correlation, validated on a held-out test split"},
          open("results.json", "w"))
