"""``rsigym/ProgramEvolution-v0``: evaluation-budget allocation in program evolution (EvoAlloc)."""

from .program_archive import Archive, Program
from .bin_packing import BinPackingTask
from .circle_packing import CirclePackingTask, check_packing
from .env import DECISIONS, EVOLUTION_LIMITS, ProgramEvolutionEnv
from .evaluator import SandboxEvaluator
from .sources import CandidateSource, Proposal, make_source
from .tasks import EvalResult, EvolutionTask, make_task, task_names

__all__ = ["Archive", "BinPackingTask", "CandidateSource", "CirclePackingTask", "DECISIONS", "EVOLUTION_LIMITS",
           "EvalResult", "EvolutionTask", "Program", "ProgramEvolutionEnv", "Proposal", "SandboxEvaluator",
           "check_packing", "make_source", "make_task", "task_names"]
