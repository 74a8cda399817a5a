import json
import pandas as pd
from sklearn.covariance import EllipticEnvelope

df = pd.read_csv("data.csv")
env = EllipticEnvelope(support_fraction=0.9, random_state=0).fit(df[["a", "b"]])
d2 = env.mahalanobis(df[["a", "b"]])
bad = df.loc[d2 > 16.0, "row"].astype(int).tolist()
json.dump({"outlier_rows": bad, "method": "elliptic envelope, robust distance"}, open("results.json", "w"))
