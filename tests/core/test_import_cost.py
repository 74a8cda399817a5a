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
    from rsigym.report.stats import minimum_detectable_difference, spearman

    assert spearman([1, 2, 3], [2, 4, 9]) == 1.0
    assert minimum_detectable_difference(1.0, 16) > 0


def test_a_bad_run_flag_is_refused_before_any_heavy_import():
    """`--concurrency 0`, `--limit 0` and the like are refused before the runner, LiteLLM, torch,
    numpy or gymnasium load (once 1.4 s quiet and 26-31 s under load; `--version` costs 0.1 s)."""
    code = ("import json, sys\nfrom rsigym.cli import main\n"
            "codes = []\n"
            "for flags in (['--concurrency', '0'], ['--limit', '0'], ['--workers', '-1'], ['--cost-limit', 'nan']):\n"
            "    try:\n        codes.append(main(['run', 'probe_smoke', *flags]))\n"
            "    except SystemExit as exc:\n        codes.append(exc.code)\n"
            "print(json.dumps([codes, sorted(m for m in ('litellm', 'torch', 'numpy', 'gymnasium', 'scipy', 'httpx', "
            "'rsigym.runner', 'rsigym.scenario.spec') if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    codes, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(c not in (0, None) for c in codes), (codes, out.stderr)
    assert out.stderr.count("rsigym: error: --") == 4, out.stderr
    assert loaded == [], loaded


def test_missing_extra_messages_work_from_a_checkout_and_from_an_index(monkeypatch):
    """`pip install 'rsigym[export]'` alone fails from a checkout (rsigym is not on an index)."""
    import pytest

    from rsigym.errors import UserError
    from rsigym.report.export import records_frame

    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(UserError) as caught:
        records_frame([])
    message = str(caught.value)
    assert "pip install pandas" in message and "pip install -e '.[export]'" in message and "'rsigym[export]'" in message
