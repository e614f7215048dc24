"""gaplanner: static memory planning for deep-learning models.

Data flows one way: document -> :class:`Problem` (blocks, conflicts, lower
bound) -> search -> :class:`Plan` (verified offsets) -> JSON / CSV.

The front door::

    import gaplanner

    problem = gaplanner.load_problem("zoo:resnet50@2")
    plan = gaplanner.solve(problem, "ga", gaplanner.GASettings(time_limit=5))

Importing the package does no work: compiled kernels are checked and loaded
at their first use, or up front with :func:`warm_up`.
"""

from gaplanner.documents.schema import Document, parse_document
from gaplanner.documents.torch_import import from_exported_program
from gaplanner.errors import GaplannerError, InputError, PlanError
from gaplanner.plans.plan import GenerationRecord, Plan, RayStats, SearchStats, make_plan
from gaplanner.plans.verify import find_violation, verify
from gaplanner.problem.loading import load_problem, problem_from_csv_text, problem_from_json
from gaplanner.problem.problem import Problem, build_problem, problem_from_arrays
from gaplanner.registry import ALGORITHMS
from gaplanner.search.baselines import BASELINES, best_fit_coalescing, first_fit, greedy_size
from gaplanner.search.decoder import decode, decode_population
from gaplanner.search.ga import GASettings
from gaplanner.search.random_search import RandomSearchSettings, random_search
from gaplanner.search.warm import warm_up
from gaplanner.solve import ComparisonRow, compare, settings_for, solve

__all__ = [
    "ALGORITHMS",
    "BASELINES",
    "ComparisonRow",
    "Document",
    "GASettings",
    "GaplannerError",
    "GenerationRecord",
    "InputError",
    "Plan",
    "PlanError",
    "Problem",
    "RandomSearchSettings",
    "RayStats",
    "SearchStats",
    "best_fit_coalescing",
    "build_problem",
    "compare",
    "decode",
    "decode_population",
    "find_violation",
    "first_fit",
    "from_exported_program",
    "greedy_size",
    "load_problem",
    "make_plan",
    "parse_document",
    "problem_from_arrays",
    "problem_from_csv_text",
    "problem_from_json",
    "random_search",
    "settings_for",
    "solve",
    "verify",
    "warm_up",
]
