"""Checks for env families, shipped with rsigym: run them on your own family as rsigym does on its.

``check_family(source)`` finds what a package or module adds through rsigym's entry points (env
ids, agent kinds, graders, analyses, conditions) and runs on it every check rsigym's own families
pass: Gymnasium's ``check_env``, seeded determinism, error observations for invalid actions, the
env's example actions against its ``action_schema``, sampled actions, a hypothesis fuzz of hostile
actions, each condition, episodes of each agent through the runner, the record's JSON and file
round trip, regrading from the read-back record, and each analysis::

    from rsigym.testing import check_family

    def test_my_family():
        check_family("my_family", env_kwargs={"my_family/Coin-v0": {"sides": 2}})

The single env checks (``rsigym.testing.env_checks``) and the fuzz (``rsigym.testing.fuzz``)
can be used alone. The fuzz needs ``hypothesis`` (``pip install hypothesis``, or the ``test``
extra: ``pip install -e '.[test]'`` in a checkout); every other check runs after a plain install.

It may import any part of the kernel (the runner and the report included); nothing in the kernel
imports it.
"""

from __future__ import annotations

from .env_checks import (ENV_CHECKS, check_deterministic, check_example_actions, check_fuzz, check_gym_api,
                         check_invalid_actions, check_sampled_actions)
from .family import CheckResult, Family, FamilyReport, check_family, family_members

__all__ = ["check_family", "family_members", "Family", "FamilyReport", "CheckResult", "ENV_CHECKS", "check_gym_api",
           "check_deterministic", "check_invalid_actions", "check_example_actions", "check_sampled_actions",
           "check_fuzz"]
