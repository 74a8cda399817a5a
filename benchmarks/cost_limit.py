"""Does ``--cost-limit`` hold with many episodes in flight? Spending vs the limit, with and without
the per-episode reservation.

A local OpenAI-compatible server (``fake_provider.py``) answers as ``openai/gpt-4o-mini``, so
LiteLLM prices every reply (100 prompt + 20 completion tokens: 2.7e-5 USD a call, 3 calls an
episode). The battery: ToolUse-v0, 16 controlled retail tasks x 4 seeds = 64 episodes, 2 workers x
16 episodes in flight, ``--cost-limit`` 0.001 USD (about 12 episodes' worth). Two runners:

* ``reservation`` (the runner as it is): each episode reserves the dearest episode cost seen of
  its agent before it starts; while that is unknown, one episode per worker is in flight;
* ``check after each record`` (the reference: the runner before the reservation): no episode
  starts once the spending has reached the limit, so everything already in flight finishes.

Each row: episodes run, USD spent, the dearest episode, the bound (limit + workers x dearest
episode), spent / limit and whether the bound held. Run: ``python benchmarks/cost_limit.py
[--repeats 3] [--limit 0.001] [--latency 0.2]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from concurrency import battery  # noqa: E402
from fake_provider import FakeProvider  # noqa: E402

WORKERS, CONCURRENCY, EPISODES = 2, 16, 64


def measure(api_base: str, limit_usd: float, *, reserve: bool) -> dict[str, Any]:
    """One run of the battery under the limit; the reference admits every episode (no reservation)."""
    from rsigym.records.jsonl import read_records
    from rsigym.runner import RECORDS_FILE, run_scenario
    from rsigym.runner.guard import RunGuard
    from rsigym.scenario import parse_scenario

    raw = battery(api_base, EPISODES, name="cost-limit-bench")
    raw["agents"][0]["model"] = "openai/gpt-4o-mini"
    admit = RunGuard.admit
    if not reserve:
        RunGuard.admit = lambda self, spec: not self.stop()  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as out:
            run_scenario(parse_scenario(raw), out, workers=WORKERS, concurrency=CONCURRENCY, progress=False,
                         report=False, cost_limit_usd=limit_usd)
            costs = [r.usage.cost_usd for r in read_records(Path(out) / RECORDS_FILE).records]
    finally:
        RunGuard.admit = admit  # type: ignore[method-assign]
    spent, dearest = sum(costs), max(costs, default=0.0)
    bound = limit_usd + WORKERS * dearest
    return {"episodes": len(costs), "spent": spent, "dearest": dearest, "bound": bound,
            "ratio": spent / limit_usd, "holds": spent <= bound}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=float, default=0.001)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args(argv)
    table = Table(title=f"--cost-limit {args.limit} USD, {WORKERS} workers x {CONCURRENCY} in flight, "
                        f"{EPISODES} episodes, gpt-4o-mini prices")
    for column in ("runner", "run", "episodes", "spent USD", "dearest episode USD", "bound USD",
                   "spent / limit", "within bound"):
        table.add_column(column, justify="left" if column == "runner" else "right")
    with FakeProvider(latency_s=args.latency) as provider:
        for reserve, name in ((True, "reservation"), (False, "check after each record")):
            for repeat in range(args.repeats):
                row = measure(provider.api_base, args.limit, reserve=reserve)
                table.add_row(name, str(repeat + 1), str(row["episodes"]), f"{row['spent']:.6f}",
                              f"{row['dearest']:.6f}", f"{row['bound']:.6f}", f"{row['ratio']:.2f}x",
                              "yes" if row["holds"] else "no")
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
