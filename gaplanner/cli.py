"""The ``gaplanner`` command line.

Every subcommand is a thin shell over library calls; errors the user can fix
(bad input, an invalid plan) print one line naming the problem and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from gaplanner.cli_parser import DEFAULT_INPUT, build_parser
from gaplanner.deadline import Deadline, process_started
from gaplanner.documents.onnx_schedule import write_scheduled_model
from gaplanner.documents.rules import Rules
from gaplanner.documents.schema import document_json_schema
from gaplanner.errors import GaplannerError, InputError
from gaplanner.plans.files import check_plan_file, plan_json, read_plan_schedule, write_text
from gaplanner.plans.plan import Plan
from gaplanner.plans.pool_report import (
    Pool,
    compare_alone,
    pool_inputs,
    pooled_share,
    read_schedule,
    schedule_line,
)
from gaplanner.problem.loading import load_document, load_pool_data, load_problem
from gaplanner.problem.pools import read_pool_document
from gaplanner.problem.problem import Problem
from gaplanner.progress import ProgressLine
from gaplanner.schedule import ScheduleResult, ScheduleSettings
from gaplanner.schedule.choose import settings_within
from gaplanner.schedule.interleave import scheduled_pool
from gaplanner.schedule.planning import scheduled_problem, with_interleaving, with_schedule
from gaplanner.solve import Planned, compare, plan_input, settings_for, solve

Handler = Callable[[argparse.Namespace], int]


#: Estimated seconds of writing the plan (JSON or CSV) per block: a high estimate from plans of a
#: million blocks on a loaded machine, kept back from the time limit.
OUTPUT_SECONDS_PER_BLOCK = 5e-6


def _settings(args: argparse.Namespace, algorithm: str = "ga") -> Any:
    """The algorithm's settings from the search flags it uses (a baseline uses none)."""
    given = {
        "population": args.population,
        "generations": args.generations,
        "time_limit": args.time_limit,
        "stall_generations": args.stall_generations,
        "seed": args.seed,
        "islands": args.islands,
        "exact_share": args.exact_share,
        "threads": args.threads,
    }
    options = {key: value for key, value in given.items() if value is not None}  # the flags given
    try:
        return settings_for(algorithm, options, refuse_unused=True)
    except InputError as exc:  # name the flag: "--time-limit: must be a positive number of seconds, got nan"
        raise InputError(exc.reason, f"--{exc.field.replace('_', '-')}" if exc.field else "options") from None


def _shapes(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--batch`` and ``--dim`` flags as keyword arguments of the loaders."""
    return {"batch": args.batch, "dims": dict(args.dim or ())}


def _shape_flag(exc: InputError) -> InputError:
    """An error about a symbolic dimension, naming its flag."""
    flag = {"batch": "--batch", "dims": "--dim"}.get(exc.field or "")
    return InputError(exc.reason, flag) if flag else exc


def _load(args: argparse.Namespace, source: str) -> Problem:
    """The problem of one input under the flags' rules and symbolic dimensions."""
    try:
        return load_problem(source, rules=_rules(args), **_shapes(args))
    except InputError as exc:
        raise _shape_flag(exc) from None


def _rules(args: argparse.Namespace) -> Rules:
    return Rules(keep_outputs=not args.outputs_copied_out, views=not args.no_views, inplace=args.inplace)


#: Exit status of ``plan`` when the input does not fit its capacity.
EXIT_DOES_NOT_FIT = 3


def _pool(args: argparse.Namespace) -> Pool | None:
    """The inputs pooled when ``--together`` asks for it (None: one input planned alone)."""
    inputs = args.input or [DEFAULT_INPUT]
    together = "concurrent" if args.concurrent else args.together
    if together is None:
        if len(inputs) > 1:
            raise InputError(f"{len(inputs)} inputs: plan them in one pool with --together", "input")
        if args.shared:
            raise InputError("shared tensors apply to a pool of models; add --together", "--shared")
        return None
    schedule = _schedule_option(args)
    try:
        return pool_inputs(
            inputs, together, args.shared or (), _rules(args), schedule, **_shapes(args),
            schedule_settings=_order_settings(args),
        )  # fmt: skip
    except InputError as exc:  # name the flag: "--shared: no model has a tensor 'kv'"
        flags = {"shared": "--shared", "together": "--together", "batch": "--batch", "dims": "--dim"}
        raise _schedule_flag(args, exc, flags) from None


def _schedule_option(args: argparse.Namespace) -> str | list[str] | None:
    """``--schedule``: search, a FILE's operator ids, or None (fixed)."""
    if args.schedule in (None, "fixed"):
        return None
    return args.schedule if args.schedule == "search" else read_schedule(args.schedule)


def _order_settings(args: argparse.Namespace) -> ScheduleSettings:
    """The order search's settings: the seed given, and with a time limit (``args.deadline``) up to
    :data:`~gaplanner.schedule.choose.SCHEDULE_SHARE` of the time left."""
    given: dict[str, Any] = {} if args.seed is None else {"seed": args.seed}
    deadline: Deadline | None = getattr(args, "deadline", None)
    if deadline is not None and deadline.limit is not None:
        deadline.stage("order search")
    return settings_within(deadline, **given)


def _schedule_flag(args: argparse.Namespace, exc: InputError, flags: dict[str, str]) -> InputError:
    """An error about the schedule told as ``--schedule`` or the FILE's line; other fields by ``flags``."""
    field = exc.field or ""
    flag = flags.get(field)
    if field.startswith("schedule[") and args.schedule not in (None, "fixed", "search"):
        flag = f"{args.schedule} (line {schedule_line(args.schedule, int(field[9:-1]))})"
    elif field == "schedule":
        flag = "--schedule"
    return InputError(exc.reason, flag or exc.field)


def _pool_document(
    args: argparse.Namespace, data: dict[str, Any], name: str
) -> tuple[Problem, ScheduleResult | None]:
    """A pool document's problem in the interleaving ``--schedule`` names, and the search's result."""
    pool, models = read_pool_document(data)
    try:
        return scheduled_pool(pool, models, _schedule_option(args) or "fixed", _rules(args),
                              _order_settings(args), name)  # fmt: skip
    except InputError as exc:
        raise _schedule_flag(args, exc, {}) from None


def _single_problem(args: argparse.Namespace) -> tuple[Problem, ScheduleResult | None, bool]:
    """One input's problem, its operators in the order ``--schedule`` names (and the search's result);
    true if the input is a pool of models (its order: their interleaving)."""
    source = (args.input or [DEFAULT_INPUT])[0]
    if args.schedule in (None, "fixed"):
        return _load(args, source), None, False
    if (pool_data := load_pool_data(source)) is not None:
        return (*_pool_document(args, *pool_data), True)
    try:
        document = load_document(source, **_shapes(args))
    except InputError as exc:
        raise _shape_flag(exc) from None
    if not document.is_graph:
        raise InputError("a buffer list has no operators to order", "--schedule")
    schedule = args.schedule if args.schedule == "search" else read_schedule(args.schedule)
    try:
        return (*scheduled_problem(document, schedule, _rules(args), _order_settings(args)), False)
    except InputError as exc:  # "schedule[3]" is the file's fourth entry
        if args.schedule == "search" or not (exc.field or "").startswith("schedule"):
            raise
        if exc.field == "schedule":
            raise InputError(exc.reason, args.schedule) from None
        line = schedule_line(args.schedule, int(exc.field[9:-1]))  # type: ignore[index]
        raise InputError(exc.reason, f"{args.schedule} (line {line})") from None


def _check_write_model(args: argparse.Namespace) -> None:
    """``--write-model`` needs one ONNX input and an order to write (refused before any search)."""
    if args.write_model is None:
        return
    inputs = args.input or [DEFAULT_INPUT]
    if len(inputs) > 1 or args.together or args.concurrent:
        raise InputError("writes one model in its order; give one ONNX model", "--write-model")
    if args.schedule in (None, "fixed"):
        raise InputError("writes the order --schedule search (or FILE) chooses; add it", "--write-model")
    if not str(inputs[0]).lower().endswith(".onnx"):
        raise InputError(f"writes ONNX models; {inputs[0]} is not one (.onnx)", "--write-model")


def _plan(args: argparse.Namespace) -> int:
    """The plan (exit 0), or for a does-it-fit question the answer (exit 0 fits, 3 does not)."""
    _check_write_model(args)
    settings = _settings(args, args.algorithm)
    limit = getattr(settings, "time_limit", None)
    progress = ProgressLine(0, args.quiet, limit, args.started)
    # The time limit counts from the command's start: reading the input, an order search, the layout
    # search and its verification, and writing the plan (kept back) all come out of it.
    args.deadline = Deadline(limit, args.started, listener=progress.stage)
    try:
        progress.stage("reading the input")
        pool = _pool(args)
        if pool is not None:
            problem, searched, pooled = pool.problem, pool.certificate, True
        else:
            problem, searched, pooled = _single_problem(args)
        progress.lower_bound = problem.lower_bound
        searching = args.deadline.keeping(OUTPUT_SECONDS_PER_BLOCK * problem.n)
        if pool is not None:  # each model is planned alone afterwards, within the same limit
            searching = searching.share(pooled_share(pool))
        # stdout carries the plan only: what prints during the search (Ray's notes on a dead
        # worker, say) goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            planned = plan_input(
                problem, args.algorithm, settings, capacity=args.capacity, on_progress=progress,
                workers=args.workers, ray_address=args.ray_address, deadline=searching,
            )  # fmt: skip
        progress.stage("writing the plan")
        if planned.fit is None and pooled and searched is not None:  # the interleaving as MODEL/operator ids
            planned = replace(planned, plan=with_interleaving(planned.plan, searched))
        elif planned.fit is None and not pooled and args.schedule not in (None, "fixed"):
            planned = replace(planned, plan=with_schedule(planned.plan, problem, searched))
        return _print_planned(args, planned, pool, problem)
    finally:
        progress.close()


def _print_planned(args: argparse.Namespace, planned: Planned, pool: Pool | None, problem: Problem) -> int:
    plan = planned.plan
    if args.write_model is not None and plan is not None:
        write_scheduled_model(args.input[0], problem.document, plan.schedule, args.write_model)  # type: ignore[arg-type, union-attr]
    if planned.fits and args.format == "csv" and plan is not None:
        write_text(args.output, plan.to_csv())
    else:
        data = planned.to_dict()
        if pool is not None and plan is not None:
            with contextlib.redirect_stdout(sys.stderr):
                data["pool"] = _compare_alone(args, pool, plan)
        write_text(args.output, plan_json(data) if planned.fit is None else json.dumps(data, indent=2))
    if not planned.fits:
        assert planned.fit is not None
        print(f"gaplanner: does not fit: {planned.fit.proof or planned.fit.reason}", file=sys.stderr)
    return 0 if planned.fits else EXIT_DOES_NOT_FIT


def _solve(args: argparse.Namespace, problem: Problem, deadline: Deadline) -> Plan:
    """``solve`` with the algorithm, settings and workers the flags give, ending by ``deadline``."""
    settings = _settings(args, args.algorithm)
    return solve(
        problem,
        args.algorithm,
        settings,
        workers=args.workers,
        ray_address=args.ray_address,
        deadline=deadline,
    )


def _compare_alone(args: argparse.Namespace, pool: Pool, pooled: Plan) -> dict[str, Any]:
    """Each model planned alone by the same search, beside the pooled arena (says so on stderr), in
    what is left of the time limit (writing the plan kept back)."""
    deadline = args.deadline.keeping(OUTPUT_SECONDS_PER_BLOCK * pool.problem.n)
    deadline.stage("planning each model alone")
    comparison = compare_alone(pool, pooled, lambda p, d: _solve(args, p, d), deadline)
    print(
        f"pooled {comparison.pooled_peak} bytes; alone: sum {comparison.sum_alone}, largest "
        f"{comparison.max_alone}",
        file=sys.stderr,
    )
    return comparison.to_dict()


def _compare(args: argparse.Namespace) -> int:
    problem = _load(args, args.input)
    progress = ProgressLine(problem.lower_bound, args.quiet, started=args.started)
    try:
        rows = compare(problem, _settings(args), on_progress=progress)
    finally:
        progress.close()
    print(f"{problem.name}: {problem.n} blocks, lower bound {problem.lower_bound}")
    print(f"{'algorithm':<22}{'peak':>16}{'ratio':>9}{'seconds':>10}")
    for row in rows:
        mark = "  optimal" if row.optimal else ""
        print(f"{row.algorithm:<22}{row.peak:>16}{row.ratio:>9.4f}{row.seconds:>10.3f}{mark}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    order = read_plan_schedule(args.plan)
    problem = load_problem(args.input, rules=_rules(args)) if order is None else _in_order(args, order)
    print(check_plan_file(problem, args.plan).summary())
    return 0


def _in_order(args: argparse.Namespace, order: list[str]) -> Problem:
    """The input run in the order a plan carries (a pool's: the models' interleaving)."""
    try:
        if (pool_data := load_pool_data(args.input)) is not None:
            pool, models = read_pool_document(pool_data[0])
            return scheduled_pool(pool, models, order, _rules(args), name=pool_data[1])[0]
        return scheduled_problem(load_document(args.input), order, _rules(args))[0]
    except InputError as exc:  # an order the input cannot run: the plan's field
        field = exc.field or ""
        raise InputError(exc.reason, f"plan.{field}" if field.startswith("schedule") else exc.field) from None


def _bounds(args: argparse.Namespace) -> int:
    problem = load_problem(args.input, rules=_rules(args))
    print(
        json.dumps(
            {
                "name": problem.name,
                "blocks": problem.n,
                "conflicts": problem.conflicts.edge_count,
                "total_size": problem.total_size,
                "lower_bound": problem.lower_bound,
                "interval_conflicts": problem.interval_conflicts,
            },
            indent=2,
        )
    )
    return 0


def _schema(args: argparse.Namespace) -> int:
    write_text(args.output, json.dumps(document_json_schema(), indent=2))
    return 0


def _zoo(args: argparse.Namespace) -> int:
    from gaplanner.documents.zoo import zoo_names

    rows = []
    for name in zoo_names():
        for cores in args.cores:
            problem = load_problem(f"zoo:{name}@{cores}")
            rows.append(
                {
                    "name": problem.name,
                    "blocks": problem.n,
                    "conflicts": problem.conflicts.edge_count,
                    "total_size": problem.total_size,
                    "lower_bound": problem.lower_bound,
                }
            )
    if args.format == "json":
        write_text(None, json.dumps(rows, indent=2))
        return 0
    print(f"{'input':<22} {'blocks':>7} {'conflicts':>10} {'lower bound':>12} {'total':>12}")
    for row in rows:
        print(
            f"{'zoo:' + row['name']:<22} {row['blocks']:>7} {row['conflicts']:>10} "
            f"{row['lower_bound']:>12,} {row['total_size']:>12,}"
        )
    return 0


def _import(args: argparse.Namespace) -> int:
    from gaplanner.documents.onnx_import import import_onnx
    from gaplanner.documents.writer import document_text
    from gaplanner.problem.problem import build_problem

    if str(args.model).endswith(".pt2"):
        from gaplanner.documents.torch_import import from_exported_program, load_exported_program

        if args.batch is not None or args.dim:
            flag = "--batch" if args.batch is not None else "--dim"
            raise InputError("applies to ONNX models; a .pt2 plans dynamic sizes at their maximum", flag)
        doc = from_exported_program(load_exported_program(args.model), inplace=not args.no_inplace)
    else:
        try:
            doc = import_onnx(args.model, inplace=not args.no_inplace, **_shapes(args))
        except InputError as exc:
            raise _shape_flag(exc) from None
    problem = build_problem(doc)  # the document must plan: fail here, not later
    write_text(args.output, document_text(doc))
    assert problem.tensors is not None
    print(
        f"{args.output or 'stdout'}: {len(doc.operators or [])} operators, "
        f"{len(problem.tensors.ids)} tensors in {problem.n} blocks, "
        f"lower bound {problem.lower_bound:,} bytes",
        file=sys.stderr,
    )
    return 0


def _convert(args: argparse.Namespace) -> int:
    from gaplanner.problem.convert import convert

    write_text(args.output, convert(load_problem(args.input, rules=_rules(args)), args.to))
    return 0


def _serve(args: argparse.Namespace) -> int:
    try:
        from service.app import run_server
    except ImportError as exc:
        raise InputError(
            f"the service needs its extra: pip install 'gaplanner[service]' ({exc.name} is missing)", "serve"
        ) from None
    run_server(host=args.host, port=args.port, db=args.db, workers=args.jobs, log_level=args.log_level)
    return 0


#: Each subcommand's handler.
HANDLERS: dict[str, Handler] = {
    "plan": _plan, "compare": _compare, "verify": _verify, "bounds": _bounds, "schema": _schema, "zoo": _zoo,
    "import": _import, "convert": _convert, "serve": _serve,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    # The time limit counts from the process's start when this is the program (``argv`` None), else
    # from this call (a test calling it in a process that has run for a while).
    started = process_started() if argv is None else time.perf_counter()
    args = build_parser().parse_args(argv)
    args.started = started
    handler = HANDLERS[args.command]
    try:
        return handler(args)
    except GaplannerError as exc:
        print(f"gaplanner: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return 0
    except OSError as exc:
        print(f"gaplanner: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
