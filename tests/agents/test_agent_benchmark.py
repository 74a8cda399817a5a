import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_agent_overhead_benchmark_smoke_run(capsys):
    import agent_overhead

    results = agent_overhead.main(steps=3, episodes=1)
    assert set(results) == {"tools", "json"}
    assert all(r["act"] >= r["model"] >= 0 for r in results.values())
    assert "overhead ms" in capsys.readouterr().out
