import json
import pandas as pd

df = pd.read_csv("data.csv")
mask = pd.Series(False, index=df.index)
for col in ["a", "b"]:
    q1, q3 = df[col].quantile([0.25, 0.75])
    iqr = q3 - q1
    mask |= (df[col] < q1 - 1.5 * iqr) | (df[col] > q3 + 1.5 * iqr)
json.dump({"outlier_rows": df.loc[mask, "row"].astype(int).tolist(), "method": "Tukey fences"}, open("results.json", "w"))
