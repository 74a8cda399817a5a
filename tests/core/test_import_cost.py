"""Importing the packages a user starts from loads no heavy library: scipy.stats, scikit-learn,
torch, pandas and LiteLLM load when first used (`import rsigym.graders` once paid 0.4 s for
scipy.stats at module level)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy.stats", "sklearn", "torch", "pandas", "litellm", "matplotlib", "optuna")


def test_importing_envs_agents_and_graders_loads_no_heavy_library():
    code = ("import json, sys; import rsigym.envs, rsigym.agents, rsigym.graders; "
            f"print(json.dumps(sorted(m for m in {list(HEAVY)!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_lazy_scipy_stats_still_computes():
    from rsigym.stats import minimum_detectable_difference, spearman

    assert spearman([1, 2, 3], [2, 4, 9]) == 1.0
    assert minimum_detectable_difference(1.0, 16) > 0
