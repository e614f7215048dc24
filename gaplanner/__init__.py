"""gaplanner: static memory planning for deep-learning models.

Data flows one way: document -> :class:`Problem` (blocks, conflicts, lower
bound) -> search -> :class:`Plan` (verified offsets) -> JSON / CSV.

The front door::

    import gaplanner

    problem = gaplanner.load_problem("zoo:resnet50@2")
    plan = gaplanner.solve(problem, "ga", gaplanner.GASettings(time_limit=5))

Importing the package does no work, and nothing is compiled at run time: the
kernels are C++ built with the package (:mod:`gaplanner.native`).
"""

from gaplanner.documents.onnx_import import import_onnx
from gaplanner.documents.schema import Document, parse_document
from gaplanner.documents.torch_import import from_exported_program
from gaplanner.errors import DoesNotFit, GaplannerError, InputError, PlanError
from gaplanner.plans.plan import GenerationRecord, Plan, SearchStats
from gaplanner.plans.verify import find_violation, verify
from gaplanner.problem.loading import load_problem
from gaplanner.problem.problem import Problem, build_problem
from gaplanner.registry import ALGORITHMS
from gaplanner.search.exact import ExactSettings
from gaplanner.search.ga import GASettings
from gaplanner.search.random_search import RandomSearchSettings
from gaplanner.solve import ComparisonRow, compare, solve

__all__ = [
    "ALGORITHMS",
    "ComparisonRow",
    "Document",
    "DoesNotFit",
    "ExactSettings",
    "GASettings",
    "GaplannerError",
    "GenerationRecord",
    "InputError",
    "Plan",
    "PlanError",
    "Problem",
    "RandomSearchSettings",
    "SearchStats",
    "build_problem",
    "compare",
    "find_violation",
    "from_exported_program",
    "import_onnx",
    "load_problem",
    "parse_document",
    "solve",
    "verify",
]
