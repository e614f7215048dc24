"""Loading (or compiling) every kernel a search runs before the search's clock starts.

Above the kernels it warms: it runs the GA's island (which runs every kernel
there is) on three small problems, and an island across memories, once per process.
"""

from __future__ import annotations

from gaplanner.problem.loading import load_problem
from gaplanner.problem.problem import problem_from_arrays
from gaplanner.search.ga.island import make_island
from gaplanner.search.ga.settings import GASettings
from gaplanner.search.kernels import prepare
from gaplanner.search.memories.baselines import seed_orders
from gaplanner.search.memories.decoder import MemoryDecoder
from gaplanner.search.memories.island import make_memory_islands

_warm = False


def warm_up() -> None:
    """Load (or compile) every kernel a search runs, for narrow and wide offsets and for graph problems.

    Numba compiles a kernel on its first call in a process unless its on-disk
    cache holds it already (a fresh install, or a changed source): seconds that
    would otherwise come out of the first search's time limit. The searches
    call this themselves before their clock starts.
    """
    global _warm
    if _warm:  # loaded in this process already: a plan at the bound costs milliseconds
        return
    prepare()
    sizes, lower, upper = [2, 1, 1], [0, 0, 1], [2, 1, 2]
    problems = [problem_from_arrays([s << shift for s in sizes], lower, upper) for shift in (0, 40)]
    problems.append(load_problem("example:multicore_fig1b"))
    settings = GASettings(population=4, elite=1, islands=1, generations=1, time_limit=None)
    for problem in problems:
        make_island(problem, settings, 0).step()
    memories = load_problem("example:sram_dram")
    make_memory_islands(memories, settings, MemoryDecoder.for_problem(memories), seed_orders(memories))[
        0
    ].step()
    _warm = True
