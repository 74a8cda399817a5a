import json
import numpy as np
from sklearn.inspection import permutation_importance
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split

D = np.genfromtxt("data.csv", delimiter=",", names=True)
names = [n for n in D.dtype.names if n != "y"]
X = np.column_stack([D[n] for n in names]); y = D["y"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
model = Ridge(alpha=1.0).fit(X_train, y_train)
imp = permutation_importance(model, X_test, y_test, n_repeats=20, random_state=0)
irrelevant = sorted(n for n, m in zip(names, imp.importances_mean) if m < 0.01)
json.dump({"irrelevant_features": irrelevant, "method": "held-out permutation importance"}, open("results.json", "w"))
