"""``rsigym/ExperimentForecast-v0``: forecast the gains of interventions from an archive of real experiments.

The family: five small research environments with real seeded trainings (``research``), an
intervention catalogue with near-duplicate group keys (``catalogue``, ``interventions``), the
archive of paired-seed gains built by ``rsigym archive build`` (``archive``), the env and its
experience conditions (``env``, ``experience``), the metrics (``metrics``), numeric forecasters
(``agents``), the offline model ``rsigym/forecast_heuristic`` (``policies``), graders and the
report section (``analyses``).
"""

from .archive import Archive, ArchiveRecord, load_archive
from .env import ExperimentForecastEnv
from .experience import ExperienceCondition
from .interventions import Intervention, lint_catalogue
from .metrics import mae, ndcg_at_k, ndcg_lift, regret_best, regret_mean, round_metrics, spearman

__all__ = ["Archive", "ArchiveRecord", "ExperimentForecastEnv", "ExperienceCondition", "Intervention",
           "lint_catalogue", "load_archive", "mae", "ndcg_at_k", "ndcg_lift", "regret_best", "regret_mean",
           "round_metrics", "spearman"]
