"""Coverage-guided fuzzing of every input path: each input plans to a verified plan or is refused in one line.

A *target* takes raw bytes the way a user hands them to gaplanner: a file of
one format (graph or buffer-list JSON, pool documents, MiniMalloc or
omnimalloc CSV, ONNX, a program saved by ``torch.export.save``) read by
``gaplanner.load_problem``, or the body of a
``POST /v1/plans`` read by the service. The property, for every input:

* it loads and every plan made of it passes the verifier (``solve`` verifies
  before it returns; first-fit and the exact search with a short limit), or
  it is answered "does not fit" in memories with capacities (the CLI's exit 3), or
* it is refused with ``InputError`` (the CLI's exit 2) or, in the service, a
  4xx ``ApiError``, with a one-line message.

Anything else (another exception, a 5xx) is a crash. Runs use atheris
(libFuzzer) when it is installed (extra ``fuzz``), seeded with the bundled
examples and a small ONNX model, under a memory cap; ``--mutations N`` instead
runs N random byte mutations of the seeds per target without atheris (what the
tests do).

    python -m experiments.fuzz --seconds 120               # every target; figures to docs/results/fuzz.md
    python -m experiments.fuzz --target csv --seconds 600  # one target, longer
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ONNX_SEED = ROOT / "experiments" / "models" / "onnx" / "whisper_encoder.onnx"


#: Per-input memory cap for atheris runs (libFuzzer's -rss_limit_mb) and the exact search's time.
RSS_LIMIT_MB = 2048
EXACT_SECONDS = 0.05


def _plan_everything(problem) -> None:
    """Plans of ``problem`` (each verified by ``solve``); not fitting given memories is an answer too."""
    from gaplanner.errors import DoesNotFit
    from gaplanner.search.exact import ExactSettings
    from gaplanner.solve import solve

    try:
        solve(problem, "first-fit")
    except DoesNotFit as answer:  # the CLI's exit 3
        _one_line(str(answer))
        return
    if problem.memories is None and problem.n <= 200:
        solve(problem, "exact", ExactSettings(time_limit=EXACT_SECONDS))


def _file_target(suffix: str) -> Callable[[bytes], bool]:
    def target(data: bytes) -> bool:
        from gaplanner import load_problem
        from gaplanner.errors import InputError

        with tempfile.NamedTemporaryFile(suffix=suffix) as handle:
            handle.write(data)
            handle.flush()
            try:
                problem = load_problem(handle.name)
            except InputError as error:
                _one_line(str(error))
                return False
            _plan_everything(problem)
            return True

    return target


def _service_target(data: bytes) -> bool:
    from service.config import ServiceSettings
    from service.errors import ApiError
    from service.inputs import parse_request, prepare

    try:
        prepare("plan", parse_request("plan", data), ServiceSettings(max_time_limit=1.0))
    except ApiError as error:
        if not 400 <= error.status < 500:
            raise
        _one_line(str(error))
        return False
    return True


def _one_line(message: str) -> None:
    if "\n" in message.strip() or not message.strip():
        raise AssertionError(f"a refusal must be one non-empty line, got {message!r}")


#: Each target: True when the input was accepted (and its plans verified), False when refused.
TARGETS: dict[str, Callable[[bytes], bool]] = {
    "json": _file_target(".json"),
    "csv": _file_target(".csv"),
    "onnx": _file_target(".onnx"),
    "pt2": _file_target(".pt2"),
    "service": _service_target,
}


def seeds(target: str) -> list[bytes]:
    """Valid inputs each target's mutations start from."""
    documents = [path.read_bytes() for path in sorted(EXAMPLES.glob("*.json"))]
    if target == "json":
        return documents
    if target == "csv":
        return [
            b"id,lower,upper,size\na,0,3,4\nb,1,4,4\nc,2,5,4\nd,3,6,8\n",
            b"id,lower,upper,size,offset\na,0:0,1:0,4,\nb,0:1,0:2,4,0\nc,1:0,2:2,8,\n",
        ]
    if target == "onnx":
        return [ONNX_SEED.read_bytes()] if ONNX_SEED.is_file() else []
    if target == "pt2":
        return _saved_programs()
    graphs = [json.loads(doc) for doc in documents]
    return [json.dumps({"graph": graph, "options": {"time_limit": 0.5}}).encode() for graph in graphs]


def _saved_programs() -> list[bytes]:
    """A small program saved by ``torch.export.save`` (a block with a view, an in-place chance and a
    matrix product), or none without torch."""
    try:
        import torch
    except ImportError:
        return []

    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.relu(x @ x.transpose(-1, -2))
            return (h.reshape(-1) + 1).sigmoid()

    program = torch.export.export(Block(), (torch.randn(2, 8, 8),))
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    return [buffer.getvalue()]


def mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """A few random byte edits: flip, insert, delete, duplicate a run, or cut the tail."""
    buffer = bytearray(data)
    for _ in range(int(rng.integers(1, 5))):
        if not buffer:
            buffer += bytes(rng.integers(0, 256, 4, dtype=np.uint8))
        at = int(rng.integers(0, len(buffer)))
        kind = int(rng.integers(0, 5))
        if kind == 0:
            buffer[at] = int(rng.integers(0, 256))
        elif kind == 1:
            buffer[at:at] = bytes(rng.choice(list(b'0123456789-,:"{}[]e.\n '), int(rng.integers(1, 4))))
        elif kind == 2:
            del buffer[at : at + int(rng.integers(1, 8))]
        elif kind == 3:
            buffer[at:at] = buffer[at : at + int(rng.integers(1, 16))]
        else:
            del buffer[at:]
    return bytes(buffer)


ODD_VALUES: tuple[object, ...] = (0, -1, 1, 2**63, 2**31, 0.5, 1e308, "", "a", "zz", None, True, [], {})


def mutate_json(data: bytes, rng: np.random.Generator) -> bytes:
    """The document with a few values replaced, keys dropped or list items repeated: still JSON."""
    document = json.loads(data)
    for _ in range(int(rng.integers(1, 4))):
        places = list(_places(document))
        if not places:
            break
        parent, key = places[int(rng.integers(0, len(places)))]
        kind = int(rng.integers(0, 4))
        if kind == 0 or not isinstance(parent, dict | list):
            parent[key] = ODD_VALUES[int(rng.integers(0, len(ODD_VALUES)))]
        elif kind == 1 and isinstance(parent, dict):
            del parent[key]
        elif kind == 2 and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        elif isinstance(parent[key], int) and not isinstance(parent[key], bool):
            parent[key] = int(parent[key]) + int(rng.integers(-3, 4))
    return json.dumps(document).encode()


def _places(value: object, depth: int = 0):
    """(container, key) of every value inside ``value``."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in list(items):
        yield value, key
        if depth < 8:
            yield from _places(inner, depth + 1)


def run_mutations(target: str, count: int, seed: int = 0) -> int:
    """``count`` mutated inputs through ``target`` (without atheris); how many were accepted.

    A crash raises."""
    rng, check, corpus = np.random.default_rng(seed), TARGETS[target], seeds(target)
    structured = target in ("json", "service")
    accepted = 0
    for k in range(count):
        data = corpus[k % len(corpus)]
        accepted += check(mutate_json(data, rng) if structured and k % 2 else mutate(data, rng))
    return accepted


def _atheris_main(target: str) -> None:  # pragma: no cover - runs in the child process
    import atheris

    check = TARGETS[target]
    with atheris.instrument_imports(include=["gaplanner", "service"]):
        import gaplanner  # noqa: F401
        import service.inputs  # noqa: F401
    check(seeds(target)[0])  # imports what the first input needs outside libFuzzer's clock

    def one_input(data: bytes) -> None:
        check(data)

    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


def run_atheris(target: str, seconds: float, folder: Path) -> dict[str, object]:
    """One atheris run of ``target`` in a child process: inputs tried, crash files written."""
    corpus = folder / target
    corpus.mkdir(parents=True, exist_ok=True)
    for k, data in enumerate(seeds(target)):
        (corpus / f"seed{k}").write_bytes(data)
    command = [
        sys.executable, "-m", "experiments.fuzz", "--child", target,
        f"-max_total_time={int(seconds)}", f"-rss_limit_mb={RSS_LIMIT_MB}", "-timeout=30",
        "-print_final_stats=1", f"-artifact_prefix={folder}/{target}-", str(corpus),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=seconds + 600)
    executed = re.findall(r"stat::number_of_executed_units:\s*(\d+)", done.stderr)
    crashes = sorted(p.name for p in folder.glob(f"{target}-*"))
    return {"target": target, "inputs": int(executed[-1]) if executed else 0, "crashes": crashes,
            "exit": done.returncode, "tail": done.stderr[-2000:]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        sys.argv = [sys.argv[0], *argv[2:]]
        _atheris_main(argv[1])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=sorted(TARGETS), action="append", help="default: every target")
    parser.add_argument("--seconds", type=float, default=60.0, help="atheris time per target")
    parser.add_argument("--mutations", type=int, help="random mutations per target instead of atheris")
    parser.add_argument("--jobs", type=int, default=1, help="targets fuzzed at once (one process each)")
    parser.add_argument("--no-write", action="store_true", help="print only, no docs/results/fuzz.md")
    args = parser.parse_args(argv)
    targets = args.target or sorted(TARGETS)
    if args.mutations is not None:
        for target in targets:
            started = time.perf_counter()
            accepted = run_mutations(target, args.mutations)
            seconds = time.perf_counter() - started
            print(f"{target}: {args.mutations} inputs, {accepted} accepted and planned, {seconds:.1f} s")
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(args.jobs) as pool:
        results = pool.map(lambda target: run_atheris(target, args.seconds, Path(scratch)), targets)
        for target, result in zip(targets, results, strict=True):
            print(f"{target}: {result['inputs']} inputs, crashes {result['crashes']}, exit {result['exit']}")
            if result["exit"] != 0:
                print(result["tail"], file=sys.stderr)
            rows.append([target, f"{result['inputs']:,}", f"{args.seconds:g}", len(result["crashes"])])
    if not args.no_write:
        from experiments.report import write_results

        command = f"python -m experiments.fuzz --seconds {args.seconds:g} --jobs {args.jobs}"
        header = ["target", "inputs tried", "seconds", "crashes"]
        write_results("fuzz", "Coverage-guided fuzzing of the input paths", header, rows, command, FUZZ_NOTES)
    return 0 if all(row[3] == 0 for row in rows) else 1


FUZZ_NOTES = """atheris (libFuzzer) on each input path, seeded with the bundled examples (JSON,
pool documents), two CSV files (MiniMalloc and omnimalloc vector clocks), a stripped
Whisper-encoder ONNX export, a small saved ExportedProgram (.pt2, where torch is installed),
and service request bodies (pool documents too). Property: the input loads and its
plans (first-fit, the exact search for 50 ms) pass the verifier, or it is refused with
one line (InputError: the CLI's exit 2; a 4xx in the service). A crash is any other
exception, a hang past 30 s or more than 2 GB of memory. Crashes found before this run
are fixed and kept as regression tests (tests/experiments/test_fuzz.py)."""


if __name__ == "__main__":
    raise SystemExit(main())
