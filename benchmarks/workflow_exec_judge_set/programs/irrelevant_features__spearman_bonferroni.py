import json
import numpy as np
from scipy.stats import spearmanr

D = np.genfromtxt("data.csv", delimiter=",", names=True)
names = [n for n in D.dtype.names if n != "y"]
alpha = 0.05 / len(names)
pvals = {n: float(spearmanr(D[n], D["y"]).pvalue) for n in names}
irrelevant = sorted(n for n in names if pvals[n] > alpha)
json.dump({"irrelevant_features": irrelevant, "method": "Spearman test, Bonferroni", "p": pvals},
          open("results.json", "w"))
