import json
import numpy as np
from scipy.stats import chi2
from sklearn.covariance import MinCovDet

D = np.genfromtxt("data.csv", delimiter=",", names=True)
Z = np.column_stack([D["a"], D["b"]])
mcd = MinCovDet(random_state=0).fit(Z)
d2 = mcd.mahalanobis(Z)
rows = [int(r) for r in D["row"][d2 > chi2.ppf(0.999, df=2)]]
json.dump({"outlier_rows": rows, "method": "robust (MCD) Mahalanobis distance"}, open("results.json", "w"))
