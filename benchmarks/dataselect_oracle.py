"""How much can DataSelection-v0's gain verdict see at ``dataselect_quick``'s settings? An oracle top group.

The top group is drawn from the rows whose **hidden** factor is not harmful (no wrong tool, wrong
roles, guessed value, truncated request or near duplicate; clean rows and the useful skills only),
the other four groups at random from the rest; it is scored exactly as a submission of the
battery (same pool, student seeds and paired random reference, so the score cache is shared).
A selector cannot do better than this on the factors, so when the oracle is indistinguishable
from random, no "good" verdict is reachable at these settings: the battery then detects harm
(``most_suspicious`` is worse) but not the benefit of cleaning.

Run: ``python benchmarks/dataselect_oracle.py [--draws 3]`` (one line per oracle draw).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_cases.dataselect import quick_settings  # noqa: E402

from rsigym.envs.dataselect.evaluation import random_subsets, score_submission  # noqa: E402
from rsigym.envs.dataselect.pools import PoolSpec, cached_scores, make_pool, warm_scores  # noqa: E402

HARMFUL = frozenset(("wrong_tool", "wrong_roles", "guess_not_ask", "truncated", "near_duplicate"))


def oracle_run(draw: int) -> dict:
    """One oracle submission at ``dataselect_quick``'s settings; ``draw`` seeds the groups."""
    q = quick_settings()
    spec = PoolSpec("function_calling", int(q["pool_size"]), int(q["group_size"]), int(q["eval_per_category"]), 0)
    pool = make_pool(spec)
    factors = pool.factors  # type: ignore[attr-defined]  # hidden: the oracle's privilege
    rng = np.random.default_rng(draw)
    size = spec.group_size
    top = [int(i) for i in rng.permutation([i for i, f in enumerate(factors) if f not in HARMFUL])[:size]]
    rest = [int(i) for i in rng.permutation(sorted(set(range(len(pool))) - set(top)))]
    groups = [top] + [rest[k * size:(k + 1) * size] for k in range(4)]
    randoms = random_subsets(len(pool), size, int(q["n_random"]), spec.data_seed)
    return score_submission(groups, [0, 1, 2, 3, 4], list(range(int(q["student_seeds"]))), randoms,
                            lambda rows, seed: cached_scores(pool, rows, seed),
                            prefetch=lambda jobs: warm_scores(spec, jobs, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=3)
    args = parser.parse_args()
    for draw in range(args.draws):
        m = oracle_run(draw)
        low, high = m["gain_ci"]
        print(f"oracle draw {draw}: gain {m['gain']:+.3f} [{low:+.3f}, {high:+.3f}] -> {m['gain_verdict']}")


if __name__ == "__main__":
    main()
