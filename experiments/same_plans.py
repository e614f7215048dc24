"""Same plans before and after a refactoring: fixed inputs, fixed seeds, budgets counted in work.

Plans a fixed set of inputs (the zoo's networks, the bundled examples, among
them three with memories, a zoo network with an SRAM in front of DRAM, a few
MiniMalloc CSV files when ``--benchmarks`` names the shared benchmark folder)
with every algorithm, each under a budget of generations or evaluations (never
a time limit, so that a run does not depend on the machine's load), and writes
every plan's offsets (and memories) as JSON. ``--compare BEFORE.json`` then
says which plans differ from a file written before the change.

The exact search has only a time limit: it is run on small inputs alone, with
one thread, and its plans are kept where they are proved optimal (a proof does
not depend on timing; the offsets may, and are compared only when two runs
before the change agree, see ``--compare``'s report).

Usage::

    python -m experiments.same_plans --out /tmp/after.json --benchmarks /work/shared/benchmarks \\
        --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import gaplanner
from gaplanner import GASettings, RandomSearchSettings, load_problem

ZOO = ("zoo:mobilenetv1", "zoo:mobilenetv2@2", "zoo:googlenet", "zoo:resnet50@4")
EXAMPLES = (
    "example:buffers_input12",
    "example:multicore_fig1b",
    "example:seed000_queue",
    "example:runtime_rules",
    "example:prefill_decode_pool",
    "example:npu_dsp",
    "example:sram_dram",
)
#: Zoo networks with an SRAM of this many KiB in front of DRAM (``experiments.bench_memories``): the
#: search across memories runs every generation of its budget there.
WITH_SRAM = (("zoo:googlenet", 1024),)
#: MiniMalloc's CSV files (under the benchmarks' minimalloc/ folder) planned when the folder is given.
CSV_FILES = ("minimalloc/A.1048576.csv", "minimalloc/B.1048576.csv", "minimalloc/C.1048576.csv")
#: Inputs small enough for the exact search to prove its plan optimal within EXACT_SECONDS.
EXACT_INPUTS = ("example:buffers_input12", "example:multicore_fig1b", "example:seed000_queue")
EXACT_SECONDS = 20.0

GA = GASettings(
    population=16, generations=8, time_limit=None, stall_generations=None, islands=2, seed=3, exact_share=0
)
RANDOM = RandomSearchSettings(evaluations=200, seed=3)


def _exact_settings() -> Any:
    """The exact search's settings (from the front door, or where the layout before issue 39 kept them)."""
    kind = getattr(gaplanner, "ExactSettings", None)
    if kind is None:
        from gaplanner.solve import SETTINGS  # the layout before issue 39

        kind = SETTINGS["exact"]
    return kind(time_limit=EXACT_SECONDS, threads=1, seed=3)


def _settings(algorithm: str) -> Any:
    return {"ga": GA, "random-search": RANDOM, "exact": _exact_settings()}.get(algorithm)


def _record(plan: Any) -> dict[str, Any]:
    """What must not change: offsets, memories, peaks, the bounds and the work done (no times)."""
    record: dict[str, Any] = {"offsets": [int(x) for x in plan.offsets]}
    for name in ("peak", "lower_bound", "optimal", "cost", "cost_lower_bound", "generations", "evaluations"):
        value = getattr(plan, name, None)
        if value is not None:
            record[name] = value if isinstance(value, bool | str) else float(value)
    if getattr(plan, "memory_of", None) is not None:
        record["memory_of"] = [int(x) for x in plan.memory_of]
    search = getattr(plan, "search", None)
    if search is not None:
        record["search"] = {"generations": search.generations, "evaluations": search.evaluations}
    return record


def _load(source: str) -> Any:
    """The problem of ``source``: a name ``load_problem`` reads, or ``NETWORK+sramKIB`` (see WITH_SRAM)."""
    if "+sram" not in source:
        return load_problem(source)
    from experiments.bench_memories import with_memories
    from gaplanner.documents.zoo import zoo_document

    network, kib = source.split("+sram")
    return with_memories(zoo_document(network), int(kib) * 1024)


def plan_all(sources: list[str]) -> dict[str, dict[str, Any]]:
    """Every source planned by every algorithm: a record, or the error's one line."""
    results: dict[str, dict[str, Any]] = {}
    for source in sources:
        problem = _load(source)
        results[source] = {}
        for algorithm in gaplanner.ALGORITHMS:
            if algorithm == "exact" and source not in EXACT_INPUTS:
                continue
            try:
                plan = gaplanner.solve(problem, algorithm, _settings(algorithm))
            except gaplanner.GaplannerError as error:
                results[source][algorithm] = {"error": f"{type(error).__name__}: {error}"}
                continue
            results[source][algorithm] = _record(plan)
            print(source, algorithm, results[source][algorithm].get("peak"), file=sys.stderr, flush=True)
    return results


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """One line per input and algorithm whose record differs (or is missing on one side)."""
    lines = []
    for source in sorted(set(before) | set(after)):
        old, new = before.get(source, {}), after.get(source, {})
        for algorithm in sorted(set(old) | set(new)):
            if old.get(algorithm) != new.get(algorithm):
                was, now = old.get(algorithm), new.get(algorithm)
                lines.append(f"{source} {algorithm}: {was!r:.120} -> {now!r:.120}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON of plans to write")
    parser.add_argument("--benchmarks", type=Path, help="the shared benchmark folder (adds MiniMalloc CSVs)")
    parser.add_argument("--compare", type=Path, help="a JSON written before the change: report differences")
    args = parser.parse_args(argv)
    sources = [*ZOO, *EXAMPLES, *(f"{network}+sram{kib}" for network, kib in WITH_SRAM)]
    if args.benchmarks is not None:
        sources += [str(args.benchmarks / name) for name in CSV_FILES if (args.benchmarks / name).exists()]
    results = plan_all(sources)
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if args.compare is None:
        return 0
    lines = differences(json.loads(args.compare.read_text()), results)
    plans = sum(len(v) for v in results.values())
    print("\n".join(lines) if lines else f"identical: {plans} plans of {len(results)} inputs")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
