"""``rsigym/ExperimentForecast-v0``: forecast the gains of interventions from an archive of real experiments.

The family: forty-six small research environments in five groups with real seeded trainings
(``research``; trainers ``charlm``, ``digits``, ``tabular_mlp`` on the shared torch recipe ``nets``, and ``classify``, ``text_bow``, ``regression``, ``sequence`` on the shared
scikit-learn recipe ``sklearn_recipe``), an intervention catalogue with near-duplicate group keys
(``catalogue``, ``catalogue_small``, ``catalogue_studies``, ``interventions``), the archive of paired-seed gains built by
``rsigym archive build`` (``archive``) and its rerun check (``rerun``), the env and its experience
conditions (``env``, ``experience``), the metrics (``metrics``), numeric forecasters (``agents``),
the offline model ``rsigym/forecast_heuristic`` (``policies``), graders and the report section
(``analyses``), and the paper's fixed-budget and leave-one-group-out experiments (``transfer``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .archive import Archive, ArchiveRecord, load_archive
    from .env import ExperimentForecastEnv
    from .experience import ExperienceCondition
    from .interventions import Intervention, lint_catalogue
    from .metrics import mae, ndcg_at_k, ndcg_lift, regret_best, regret_mean, round_metrics, spearman

__all__ = ["Archive", "ArchiveRecord", "ExperimentForecastEnv", "ExperienceCondition", "Intervention",
           "lint_catalogue", "load_archive", "mae", "ndcg_at_k", "ndcg_lift", "regret_best", "regret_mean",
           "round_metrics", "spearman"]

# Imported on first use: the archive module imports torch (its research environments train), and
# ``rsigym --help`` imports this package for the ``archive`` command's help line.
_WHERE = {"Archive": "archive", "ArchiveRecord": "archive", "load_archive": "archive",
          "ExperimentForecastEnv": "env", "ExperienceCondition": "experience", "Intervention": "interventions",
          "lint_catalogue": "interventions", **{name: "metrics" for name in (
              "mae", "ndcg_at_k", "ndcg_lift", "regret_best", "regret_mean", "round_metrics", "spearman")}}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
