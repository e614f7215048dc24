"""Synthetic interval problems shaped like real traces, at any size, from a fixed seed.

    python -m experiments.synthetic 250000 -o /tmp/s250k.csv [--seed 0]

Of the blocks,

* 96 % are nested: activations freed last-in first-out. They come in episodes
  of 64 to 512 blocks (a layer's or a step's temporaries); within an episode
  the pushes and pops form a random well-nested sequence (a random ±1 walk
  with as many pops as pushes, rotated at its lowest point so that it never
  goes below zero: the cycle lemma), and each pop frees the latest block
  still live;
* 3 % are medium-lived (log-uniform 100 to 5,000 steps, anywhere in the run);
* 1 % are long-lived (log-uniform 2,000 to 20,000 steps);
* up to 16 live through the whole run (weights, say);

sizes log-uniform from 64 B to 64 MiB. A step is one push or pop of the nested
blocks, so the live set stays about the same size as the run grows and the
conflicting pairs grow with the blocks (not with their square).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from gaplanner.problem.problem import Problem, problem_from_arrays

NESTED, MEDIUM, LONG = 0.96, 0.03, 0.01
WHOLE_RUN = 16
EPISODE = (64, 512)
MEDIUM_STEPS, LONG_STEPS = (100, 5_000), (2_000, 20_000)
SIZES = (64, 64 << 20)


def _log_uniform(rng: np.random.Generator, low: float, high: float, count: int) -> np.ndarray:
    return np.exp(rng.uniform(np.log(low), np.log(high), count))


def _episode(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Lifetimes ``[push, pop)`` (steps from 0 to ``2k``) of ``k`` nested blocks."""
    steps = rng.permutation(np.repeat(np.array([1, -1], np.int64), k))
    low = int(np.argmin(np.cumsum(steps)))
    steps = np.roll(steps, -(low + 1))  # cycle lemma: every prefix sum is now >= 0
    depth = np.cumsum(steps)
    pushes, pops = np.flatnonzero(steps > 0), np.flatnonzero(steps < 0)
    # At each depth, pushes reaching it and pops leaving it alternate in time: pair them in order.
    pushes = pushes[np.lexsort((pushes, depth[pushes]))]
    pops = pops[np.lexsort((pops, depth[pops] + 1))]
    return pushes, pops + 1


def _nested(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    lower, upper, clock = [], [], 0
    while count > 0:
        k = min(count, int(rng.integers(EPISODE[0], EPISODE[1] + 1)))
        start, end = _episode(rng, k)
        lower.append(start + clock)
        upper.append(end + clock)
        clock += 2 * k
        count -= k
    if not lower:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(lower), np.concatenate(upper)


def _spans(rng: np.random.Generator, count: int, steps: tuple[int, int], run: int) -> tuple:
    length = np.minimum(_log_uniform(rng, *steps, count).astype(np.int64), run)
    lower = rng.integers(0, run - length + 1)
    return lower, lower + length


def synthetic_arrays(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sizes, lower, upper)`` of ``n`` blocks (see the module docstring), blocks shuffled."""
    rng = np.random.default_rng(seed)
    whole = min(WHOLE_RUN, n // 100)
    medium, long = round(MEDIUM * n), round(LONG * n)
    lower, upper = _nested(rng, max(0, n - whole - medium - long))
    run = max(int(upper.max(initial=0)), 1)
    parts = [(lower, upper), _spans(rng, medium, MEDIUM_STEPS, run), _spans(rng, long, LONG_STEPS, run)]
    parts.append((np.zeros(whole, np.int64), np.full(whole, run, np.int64)))
    lower = np.concatenate([p[0] for p in parts])
    upper = np.concatenate([p[1] for p in parts])
    sizes = _log_uniform(rng, *SIZES, len(lower)).astype(np.int64)
    shuffle = rng.permutation(len(lower))
    return sizes[shuffle], lower[shuffle], upper[shuffle]


def synthetic_problem(n: int, seed: int = 0) -> Problem:
    sizes, lower, upper = synthetic_arrays(n, seed)
    return problem_from_arrays(sizes, lower, upper, name=f"synthetic-{n}")


def write_csv(path: str, sizes: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
    """The blocks as a buffer-list CSV (``id,lower,upper,size``)."""
    table = np.column_stack([np.arange(len(sizes)), lower, upper, sizes])
    np.savetxt(path, table, fmt="%d", delimiter=",", header="id,lower,upper,size", comments="")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("blocks", type=int)
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write_csv(args.output, *synthetic_arrays(args.blocks, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
