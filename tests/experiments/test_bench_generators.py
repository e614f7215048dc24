"""The generator benchmark's instances are omnimalloc's, unchanged: same conflicts, same optimum."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.bench_generators import FAMILIES, generate, generated_problem
from gaplanner import find_violation
from tests.oracles import brute_force_peaks

sources = pytest.importorskip("omnimalloc.benchmark.sources", reason="omnimalloc (the 'compare' extra)")

TINY = {"capacity": 12, "makespan": 12, "size_min": 1, "duration_min": 1}


#: Tiny instances of each generator: its class and block count, and further options.
GENERATORS = {
    "tiling": ("TilingSource", 6, {}),
    "pinwheel": ("PinwheelSource", 5, {}),
    "concurrent": ("ConcurrentTilingSource", 6, {"num_threads": 2, "num_syncs": 3}),
}


@pytest.mark.parametrize("kind", GENERATORS)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_converted_instance_has_the_generators_optimum(kind: str, seed: int) -> None:
    """Brute force over every order finds the optimum the generator built, and its packing is valid."""
    source, blocks, options = GENERATORS[kind]
    generator = getattr(sources, source)(num_allocations=blocks, seed=seed, **TINY, **options)
    problem = generated_problem(generator.get_allocations(), "tiny")
    packing = np.array([a.offset for a in generator.get_ground_truth_pool().allocations])
    optimum = generator.get_known_optimum()
    assert find_violation(problem, packing, optimum) is None
    assert brute_force_peaks(problem)[0] == optimum
    assert problem.lower_bound <= optimum
    assert (problem.clocks is not None) == isinstance(generator, sources.ConcurrentTilingSource)


@pytest.mark.parametrize("family", FAMILIES, ids=[family.key for family in FAMILIES])
def test_every_family_generates_an_instance_its_packing_solves(family) -> None:
    instance = generate(family, 9, seed=1)
    assert instance.problem.n == 9 and instance.optimum > 0
