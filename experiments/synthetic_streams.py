"""Synthetic multi-stream problems (vector clocks), from a fixed seed, at any size.

    python -m experiments.synthetic_streams 250000 --streams 4 -o /tmp/streams.csv [--seed 0]

Each stream runs a trace of :mod:`experiments.synthetic`'s shape (nested
activations, medium- and long-lived blocks, a few through the whole run) on
its own steps, and the streams meet at a barrier every :data:`BARRIER` steps.
A time on stream ``s`` at step ``t`` is the vector clock with ``t`` in
component ``s`` and the last barrier, ``BARRIER * (t // BARRIER)``, in the
others: a buffer is surely done before another starts when it ends by the
last barrier before the other starts (or earlier on the same stream).
:data:`HANDED_OVER` of the buffers are written on one stream and freed on
another, after the next barrier. Blocks of different streams between two
barriers conflict, so the pairs grow with the blocks times the streams' work
between barriers.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from experiments.synthetic import synthetic_arrays
from gaplanner.problem.problem import Problem, problem_from_clocks

BARRIER = 512
HANDED_OVER = 0.02


def _clock(stream: np.ndarray, step: np.ndarray, streams: int) -> np.ndarray:
    clock = np.repeat((step // BARRIER * BARRIER)[:, None], streams, axis=1)
    clock[np.arange(len(step)), stream] = step
    return clock


def stream_arrays(n: int, streams: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sizes, lower, upper)``: ``n`` buffers over ``streams`` streams, clocks ``(n, streams)``."""
    rng = np.random.default_rng(seed)
    parts = [synthetic_arrays(n // streams + (s < n % streams), seed * 1000 + s) for s in range(streams)]
    sizes = np.concatenate([p[0] for p in parts])
    start = np.concatenate([p[1] for p in parts])
    end = np.concatenate([p[2] for p in parts])
    home = np.repeat(np.arange(streams), [len(p[0]) for p in parts])
    freed_on = home.copy()
    handed = np.flatnonzero(rng.random(len(sizes)) < HANDED_OVER)
    freed_on[handed] = (home[handed] + rng.integers(1, streams, len(handed))) % streams
    end[handed] = np.maximum(end[handed], (start[handed] // BARRIER + 1) * BARRIER)
    return sizes, _clock(home, start, streams), _clock(freed_on, end, streams)


def stream_problem(n: int, streams: int, seed: int = 0) -> Problem:
    sizes, lower, upper = stream_arrays(n, streams, seed)
    return problem_from_clocks(sizes, lower, upper, name=f"streams-{streams}x{n}")


def write_csv(path: str, sizes: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
    """The buffers as omnimalloc's CSV (``id,lower,upper,size``, clocks ``a:b:c``)."""
    with open(path, "w") as out:
        out.write("id,lower,upper,size\n")
        for i, (lo, up, size) in enumerate(zip(lower, upper, sizes, strict=True)):
            out.write(f"{i},{':'.join(map(str, lo))},{':'.join(map(str, up))},{size}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("blocks", type=int)
    parser.add_argument("--streams", type=int, default=2)
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write_csv(args.output, *stream_arrays(args.blocks, args.streams, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
