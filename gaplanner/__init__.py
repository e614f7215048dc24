"""gaplanner: static memory planning for deep-learning models.

Data flows one way: document -> :class:`Problem` (blocks, conflicts, lower
bound) -> search -> :class:`Plan` (verified offsets) -> JSON / CSV.
"""

from gaplanner.baselines import BASELINES, best_fit_coalescing, first_fit, greedy_size
from gaplanner.errors import GaplannerError, InputError, PlanError
from gaplanner.io import load_problem, problem_from_csv_text, problem_from_json
from gaplanner.jit_cache import drop_stale_cache
from gaplanner.placement import decode, decode_population
from gaplanner.plan import Plan, make_plan
from gaplanner.problem import Problem, build_problem, problem_from_arrays
from gaplanner.random_search import random_search
from gaplanner.schema import Document, parse_document
from gaplanner.verify import find_violation, verify

# Numba loads a cached function at its first call, so this runs before any does.
drop_stale_cache()

__all__ = [
    "BASELINES",
    "Document",
    "GaplannerError",
    "InputError",
    "Plan",
    "PlanError",
    "Problem",
    "best_fit_coalescing",
    "build_problem",
    "decode",
    "decode_population",
    "find_violation",
    "first_fit",
    "greedy_size",
    "load_problem",
    "make_plan",
    "parse_document",
    "problem_from_arrays",
    "problem_from_csv_text",
    "problem_from_json",
    "random_search",
    "verify",
]
