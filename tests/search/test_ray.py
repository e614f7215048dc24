"""Islands on Ray: same seed same plan (also as in-process), dead workers replaced, loopback only.

One local Ray (2 CPUs) for the whole module, started the way the library starts it.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from gaplanner import native  # noqa: E402
from gaplanner.cli import main  # noqa: E402
from gaplanner.problem.problem import problem_from_arrays  # noqa: E402
from gaplanner.search.distributed import IslandWorker, Unit, local_ray, run_islands  # noqa: E402
from gaplanner.search.ga import GASettings, Pacing, heuristic_orders, run_ga  # noqa: E402
from gaplanner.solve import solve  # noqa: E402

SETTINGS = GASettings(
    population=12, generations=40, time_limit=None, stall_generations=None, islands=3, seed=5
)


pytestmark = pytest.mark.slow  # every test starts Ray (seconds) or runs islands on it


@pytest.fixture(scope="module")
def started_ray():
    """Started as the library starts a local Ray (module-wide: Ray's start-up costs seconds)."""
    if ray.is_initialized():
        ray.shutdown()
    with local_ray(num_cpus=2) as module:
        yield module


@pytest.fixture(scope="module")
def problem():
    """200 random interval blocks: the GA does not reach the lower bound in 40 generations."""
    rng = np.random.default_rng(1)
    lower = rng.integers(0, 100, 200)
    return problem_from_arrays(rng.integers(1, 1000, 200), lower, lower + rng.integers(1, 40, 200), name="r")


def peaks(plan) -> list[tuple[int, int, int]]:
    return [(r.generation, r.best_peak, r.evaluations) for r in plan.trace]


def test_islands_give_the_same_verified_plan_for_the_same_seed(started_ray, problem) -> None:
    first = run_islands(problem, SETTINGS, workers=2)
    second = run_islands(problem, SETTINGS, workers=2)
    alone = run_ga(problem, SETTINGS)  # the same three islands in this process
    assert first.ray is not None and first.ray.islands == 3 and first.ray.restarts == 0
    assert first.stop_reason == "generation limit" and first.search.generations == 40
    assert np.array_equal(first.offsets, second.offsets)
    assert np.array_equal(first.offsets, alone.offsets)
    assert peaks(first) == peaks(second) == peaks(alone)
    assert first.peak > problem.lower_bound  # the migration rounds did matter


def test_the_plan_does_not_depend_on_workers_or_where_units_ran(started_ray, problem, monkeypatch) -> None:
    """One worker, two, and two that take every island over at every unit (each unit runs where the
    island did not): the plan and trace of the in-process search each time."""
    from gaplanner.search.distributed import schedule

    alone = run_ga(problem, SETTINGS)
    one, two = run_islands(problem, SETTINGS, workers=1), run_islands(problem, SETTINGS, workers=2)
    assert (one.ray.workers, two.ray.workers) == (1, 2)
    moved: list[int] = []
    assign = schedule.Flow.assign

    def counting(flow, free, now):
        given = assign(flow, free, now)
        moved.extend(unit.island for _, unit in given if unit.state is not None)
        return given

    monkeypatch.setattr(schedule.Pace, "rank", lambda pace, w, steps, home, now: (w == home, w))
    monkeypatch.setattr(schedule.Flow, "assign", counting)
    wandering = run_islands(problem, SETTINGS, workers=2)
    assert len(moved) >= 3 * 4  # every island moved at each of its units after the first
    for plan in (one, two, wandering):
        assert np.array_equal(plan.offsets, alone.offsets) and peaks(plan) == peaks(alone)


@pytest.mark.parametrize(
    "limits",
    [
        {"max_evaluations": 700, "local_search": 3},  # stops mid-way between two migrations
        {"stall_generations": 12, "migration_interval": 5},
    ],
)
def test_other_limits_stop_at_the_same_generation_as_in_process(started_ray, problem, limits) -> None:
    settings = GASettings(
        **{"population": 12, "generations": None, "time_limit": None, "stall_generations": None, **limits}
    )
    settings = GASettings(**{**settings.__dict__, "islands": 2, "seed": 9})
    plan, alone = run_islands(problem, settings, workers=2), run_ga(problem, settings)
    assert plan.stop_reason == alone.stop_reason != "lower bound reached"
    assert np.array_equal(plan.offsets, alone.offsets) and peaks(plan) == peaks(alone)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_killed_worker_is_replaced_and_the_plan_is_unchanged(started_ray, problem) -> None:
    settings = GASettings(
        population=12, generations=240, time_limit=None, stall_generations=None, islands=2, seed=3,
        migration_interval=120,
    )  # fmt: skip
    with native.limited_threads(1):  # the reference as fast as a worker, also on a busy machine
        reference = run_ga(problem, settings)
    pids: list[int] = []
    killed: list[int] = []

    def kill(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    def on_progress(record) -> None:
        # Records come back with the unit that ran them: generations 0 to 119 with the units up to
        # the migration at 120, just before the units of the next 120 generations are handed out.
        if record.generation == 0 and not killed:  # between units: the next one finds it dead
            kill(pids[0])
        if record.generation == 119 and len(killed) == 1:  # early in the 120 generations that follow
            threading.Timer(0.02, kill, args=(pids[1],)).start()

    plan = run_islands(
        problem,
        settings,
        workers=2,
        on_start=lambda driver: pids.extend(driver.pids()),
        on_progress=on_progress,
    )
    assert len(killed) == 2 and all(_gone(pid) for pid in killed)
    assert plan.ray.restarts >= 2
    assert np.array_equal(plan.offsets, reference.offsets)  # restored from the last migration, exactly
    assert peaks(plan) == peaks(reference)


def test_a_replacement_that_finds_no_free_cpu_shares_one(started_ray, problem, monkeypatch) -> None:
    """As when a node dies with its CPUs: the replacement must not wait for a CPU that never comes."""
    from gaplanner.search.distributed import driver as driver_module

    monkeypatch.setattr(driver_module, "PLACEMENT_SECONDS", 2.0)
    settings = GASettings(
        population=12, generations=60, time_limit=None, stall_generations=None, islands=2, seed=4,
        migration_interval=30,
    )  # fmt: skip
    reference = run_ga(problem, settings)

    @ray.remote(num_cpus=1)
    class Blocker:
        def ready(self) -> bool:
            return True

    blockers = []

    def take_a_workers_cpu(driver) -> None:
        blockers.append(Blocker.remote())  # waits for a CPU: both are the workers'
        os.kill(driver.pids()[0], signal.SIGKILL)
        ray.get(blockers[0].ready.remote(), timeout=60)  # the dead worker's CPU is now the blocker's

    result: list = []
    search = threading.Thread(
        target=lambda: result.append(run_islands(problem, settings, workers=2, on_start=take_a_workers_cpu)),
        daemon=True,
    )
    search.start()
    search.join(timeout=120)
    for blocker in blockers:
        ray.kill(blocker)
    assert result, "the search waited for a CPU that never came"
    plan = result[0]
    assert plan.ray.restarts >= 1
    assert np.array_equal(plan.offsets, reference.offsets)  # restored from the last phase, exactly
    assert peaks(plan) == peaks(reference)


def test_time_limit_and_stop_requests_end_the_search(started_ray, problem) -> None:
    timed = GASettings(population=12, generations=None, time_limit=2.0, stall_generations=None, islands=2)
    started = time.perf_counter()
    plan = run_islands(problem, timed, workers=2)
    ended_by = "lower bound reached" if plan.peak <= problem.lower_bound else "time limit"  # a fast machine
    # An endless search ends: the margin is Ray's start-up on a loaded machine, not a timing claim
    # (how far past its limit a search runs is measured in experiments/, not here).
    assert plan.stop_reason == ended_by and time.perf_counter() - started < 30.0

    calls = []
    endless = GASettings(population=12, generations=None, time_limit=None, stall_generations=10**6, islands=2)
    plan = run_islands(problem, endless, workers=2, should_stop=lambda: len(calls) > 3 or calls.append(1))
    assert plan.stop_reason == "stopped by request"


def test_the_islands_and_the_memories_searches_on_ray_end_by_the_runs_deadline(started_ray, problem) -> None:
    """The run's deadline (2 s), not a clock of their own (their settings say a minute): the starting
    plans, the phases and the workers' searches come out of it. The margin is Ray's start-up on a
    loaded machine, not a timing claim (experiments/ measures how far past its limit a run goes)."""
    from gaplanner.deadline import Deadline
    from gaplanner.problem.loading import problem_from_json

    timed = GASettings(population=12, generations=None, time_limit=60.0, stall_generations=None, islands=2)
    deadline = Deadline(2.0)
    plan = run_islands(problem, timed, workers=2, deadline=deadline)
    assert plan.peak >= problem.lower_bound and deadline.elapsed() < 30.0
    rng = np.random.default_rng(7)
    lower = rng.integers(0, 300, 400)
    buffers = [{"id": f"b{k}", "lower": int(lo), "upper": int(lo + rng.integers(1, 30)),
                "size": int(rng.integers(1, 64))} for k, lo in enumerate(lower)]  # fmt: skip
    memories = [{"id": "sram", "capacity": 96}, {"id": "dram"}]
    across = problem_from_json({"buffers": buffers, "memories": memories})
    deadline = Deadline(2.0)
    plan = solve(across, "ga", replace(timed, islands=1), workers=2, deadline=deadline)  # Ray is running
    assert plan.cost is not None and deadline.elapsed() < 30.0


def test_a_worker_does_not_start_a_generation_that_would_end_past_its_deadline(problem) -> None:
    settings = GASettings(population=8, generations=None, time_limit=30.0, stall_generations=None, islands=1)
    worker = IslandWorker(problem, settings, heuristic_orders(problem))  # the class, not an actor
    worker.pacing = Pacing(10.0, 10.0, True)  # as if the last generation and local search took 10 s
    assert worker.run(Unit(0, 0, 3), seconds_left=5.0).records[1:] == []  # generation 0's record alone
    assert len(worker.run(Unit(0, 0, 3), seconds_left=30.0).records[1:]) == 3
    assert 0 < worker.pacing.generation_seconds < 10.0  # measured again
    worker.pacing = Pacing(10.0, 0.0, True)  # a generation does not fit, the local search does
    records = worker.run(Unit(0, 3, 3), seconds_left=5.0).records
    steps = [b[3] - a[3] for a, b in itertools.pairwise(records)]  # evaluations between records
    assert len(records) == 4 and steps == [settings.local_search] * 3
    assert 0 < worker.pacing.local_search_seconds < 5.0  # measured


def test_solve_and_the_cli_use_a_running_ray(started_ray, problem, capsys, tmp_path) -> None:
    plan = solve(problem, "ga", SETTINGS, workers=4)  # 4 islands; this Ray has 2 CPUs for them
    assert plan.ray is not None and plan.ray.islands == 4 and plan.ray.workers == 2
    path = tmp_path / "blocks.csv"
    path.write_text(plan.to_csv())
    # A generous time limit: on a busy machine the workers' start-up alone can take seconds.
    code = main(
        [
            "plan",
            str(path),
            "--workers",
            "2",
            "--generations",
            "5",
            "--islands",
            "1",
            "--time-limit",
            "300",
            "--no-exact",
            "-q",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ray"] and out["islands"] == 2 and out["generations"] == 5


def test_the_cli_joins_a_cluster_by_address_and_leaves_it_running(started_ray) -> None:
    address = ray.get_runtime_context().gcs_address  # this module's Ray, standing in for a cluster
    command = ["plan", "zoo:densenet121@2", "--workers", "2", "--generations", "3", "--time-limit", "300"]
    command.append("--no-exact")  # the GA on Ray, not exact probes
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # the "cluster" is on loopback
    done = subprocess.run(
        [sys.executable, "-m", "gaplanner.cli", *command, "--ray-address", address, "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["ray"] and plan["workers"] == 2 and plan["generations"] == 3
    assert ray.get(ray.put(7)) == 7 and all(node["Alive"] for node in ray.nodes())  # only disconnected


def _listening(process) -> list[tuple[str, int]]:
    try:
        return [c.laddr for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def _loopback(host: str) -> bool:
    address = ipaddress.ip_address(host.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address in ipaddress.ip_network("127.0.0.0/8") or address == ipaddress.ip_address("::1")


def test_a_local_ray_listens_on_loopback_only(started_ray, problem) -> None:
    sockets: list[tuple[str, str, int]] = []

    def inspect(driver) -> None:  # while the workers are up
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            sockets.extend((process.name(), address.ip, address.port) for address in _listening(process))

    settings = GASettings(population=8, generations=3, time_limit=None, islands=2)
    run_islands(problem, settings, workers=2, on_start=inspect)
    names = {name for name, _, _ in sockets}
    assert any("gcs_server" in name for name in names) and any("raylet" in name for name in names)
    assert [s for s in sockets if not _loopback(s[1])] == []


def test_the_search_across_memories_runs_a_seed_per_worker_and_keeps_the_best(started_ray) -> None:
    from dataclasses import replace

    from gaplanner.plans.verify import find_memory_violation
    from gaplanner.problem.loading import problem_from_json
    from gaplanner.search.distributed.memories import best_memory_plan
    from gaplanner.search.memories.ga import memory_ga

    rng = np.random.default_rng(7)
    lower = rng.integers(0, 30, 40)
    buffers = [
        {
            "id": f"b{k}",
            "lower": int(lo),
            "upper": int(lo + rng.integers(1, 10)),
            "size": int(rng.integers(1, 64)),
        }
        for k, lo in enumerate(lower)
    ]
    memories = [{"id": "sram", "capacity": 96}, {"id": "dram"}]
    problem = problem_from_json({"buffers": buffers, "memories": memories})
    settings = GASettings(population=8, generations=6, time_limit=None, stall_generations=None, seed=3)
    on_ray = solve(problem, "ga", settings, workers=2)  # Ray is running here, so it pays off
    alone = [memory_ga(problem, replace(settings, seed=seed)) for seed in (3, 4)]
    best = best_memory_plan(alone)
    assert (on_ray.cost, on_ray.peaks.tolist()) == (best.cost, best.peaks.tolist())
    assert on_ray.search.evaluations == sum(plan.search.evaluations for plan in alone)
    assert find_memory_violation(problem, on_ray.memory_of, on_ray.offsets) is None
    assert on_ray.peaks[0] <= 96
