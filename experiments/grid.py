"""The runner's grid: its config (TOML), the inputs it names, and the cells (input x algorithm x seed x
budget) it runs. See :mod:`experiments.run` for the config's keys."""

from __future__ import annotations

import glob
import hashlib
import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gaplanner.errors import InputError
from gaplanner.registry import ALGORITHMS
from gaplanner.search.ga import GASettings

BENCHMARKS_MARK = "{benchmarks}"
GA_FIELDS = {f.name for f in fields(GASettings)} - {"seed", "time_limit"}


class ConfigError(ValueError):
    """A config that cannot run; the message names the key."""


@dataclass(frozen=True)
class Algorithm:
    name: str
    label: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def seeded(self) -> bool:
        return self.name == "ga"


@dataclass(frozen=True)
class Cell:
    input: str  # as the results name it: a path under the benchmarks as {benchmarks}/..., else as given
    source: str  # what to load here: a path, example:NAME or zoo:NAME
    algorithm: Algorithm
    seed: int | None
    time_budget: float | None

    @property
    def key(self) -> str:
        spec = {
            "input": self.input,
            "algorithm": self.algorithm.name,
            "label": self.algorithm.label,
            "params": self.algorithm.params,
            "seed": self.seed,
            "time_budget": self.time_budget,
        }
        return hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Config:
    path: Path
    inputs: list[str]
    seeds: list[int]
    time_budgets: list[float]
    algorithms: list[Algorithm]
    results: Path


def _list(data: dict[str, Any], key: str, kind: type | tuple[type, ...], default: list | None = None) -> list:
    value = data.get(key, default)
    if not isinstance(value, list) or not value or not all(isinstance(v, kind) for v in value):
        raise ConfigError(f"{key}: expected a non-empty list")
    return value


def load_config(path: str | Path) -> Config:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    algorithms = []
    for k, entry in enumerate(_list(data, "algorithms", dict)):
        params = dict(entry)
        name = params.pop("name", None)
        label = params.pop("label", name)
        if name not in ALGORITHMS:
            raise ConfigError(f"algorithms[{k}].name: {name!r} is not one of {', '.join(ALGORITHMS)}")
        unknown = set(params) - (GA_FIELDS if name == "ga" else set())
        if unknown:
            raise ConfigError(f"algorithms[{k}]: {name} takes no {', '.join(sorted(unknown))}")
        if name == "ga":
            try:
                GASettings(**params)
            except InputError as exc:
                where = f"algorithms[{k}].{exc.field}" if exc.field else f"algorithms[{k}]"
                raise ConfigError(f"{where}: {exc.reason}") from None
            except TypeError as exc:
                raise ConfigError(f"algorithms[{k}]: {exc}") from None
        algorithms.append(Algorithm(name, str(label), params))
    labels = [a.label for a in algorithms]
    if len(set(labels)) != len(labels):
        raise ConfigError("algorithms: give each entry a distinct label")
    seeds = _list(data, "seeds", int, [0])
    budgets = [float(b) for b in _list(data, "time_budgets", (int, float), [10.0])]
    results = Path(data.get("results", f"experiments/results/{path.stem}.csv"))
    return Config(path, _list(data, "inputs", str), seeds, budgets, algorithms, results)


def expand_inputs(patterns: Iterable[str], root: Path | None) -> tuple[list[tuple[str, str]], list[str]]:
    """``(name, source)`` for every input, and notes on what was skipped."""
    found: list[tuple[str, str]] = []
    notes: list[str] = []
    for pattern in patterns:
        if pattern.startswith(("zoo:", "example:")):
            found.append((pattern, pattern))
            continue
        if BENCHMARKS_MARK in pattern and root is None:
            notes.append(f"{pattern}: skipped, no benchmark folder (--benchmarks, GAPLANNER_BENCHMARKS)")
            continue
        text = pattern.replace(BENCHMARKS_MARK, str(root)) if root is not None else pattern
        paths = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        paths = [p for p in paths if Path(p).is_file()]
        if not paths:
            notes.append(f"{pattern}: no such file")
        for p in paths:
            name = pattern if not glob.has_magic(pattern) else p
            if root is not None and BENCHMARKS_MARK in pattern:
                name = BENCHMARKS_MARK + "/" + Path(p).resolve().relative_to(root).as_posix()
            found.append((name, p))
    unique = list(dict.fromkeys(found))
    return unique, notes


def make_cells(config: Config, inputs: list[tuple[str, str]]) -> list[Cell]:
    cells = []
    for name, source in inputs:
        for algorithm in config.algorithms:
            if not algorithm.seeded:
                cells.append(Cell(name, source, algorithm, None, None))
                continue
            for budget in config.time_budgets:
                for seed in config.seeds:
                    cells.append(Cell(name, source, algorithm, seed, budget))
    return cells
