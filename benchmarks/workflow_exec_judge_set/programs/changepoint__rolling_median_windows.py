import json
import numpy as np
import pandas as pd

s = pd.read_csv("data.csv")["value"]
w = 25
before = s.rolling(w).median()                     # median of s[t-w+1 .. t]
after = s[::-1].rolling(w).median()[::-1]          # median of s[t .. t+w-1]
gap = (after - before.shift(1)).abs()
t = int(gap.idxmax())
json.dump({"changepoint_index": t, "method": "largest gap between rolling medians before and after"}, open("results.json", "w"))
