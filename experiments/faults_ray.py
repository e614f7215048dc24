"""Faults on a real two-node Ray cluster on this machine: two network namespaces joined by a veth pair.

This module makes two test hosts, network namespaces with one private address
each (``10.213.0.1/24`` and ``10.213.0.2/24``, nothing else is ever a target),
runs ``ray start --head`` in one and ``ray start --address`` in the other, and
drives the clients from inside the head's namespace (``ip netns exec``), so no
route from the host is needed:

- ``gaplanner plan --ray-address`` with one island worker on each node: a worker
  actor is killed (SIGKILL), then the second node's raylet; the plan must come
  back and pass :func:`gaplanner.plans.verify.verify`.
- ``python -m experiments.run`` (the batch runner) on the cluster: the second
  node's raylet is killed mid-run, then the runner itself; run again, it must
  resume with the cells it had not finished, each cell in the results once.

Root only (``ip netns``). Every wait is bounded, and the cluster is torn down
on the way out, also on failure: every process in the two namespaces is
killed and the namespaces deleted. ``ray stop`` is never called: it would stop
every Ray on the machine, not only these two nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.faults_service import wait_for as wait_until
from service.testing import check_plan, unreachable_bound_document

ROOT = Path(__file__).resolve().parents[1]
HEAD_IP, NODE_IP = "10.213.0.1", "10.213.0.2"
PREFIX = 24
PORT = 6379
NODE_OPTIONS = ["--num-cpus", "1", "--object-store-memory", str(200 * 2**20), "--disable-usage-stats"]


@dataclass
class RaySettings:
    """How long: the defaults take about three minutes on 2 busy cores."""

    plan_seconds: float = 40.0  # the search's time limit
    cell_seconds: float = 3.0  # the GA's budget per runner cell
    seeds: int = 4
    startup_seconds: float = 90.0


@dataclass
class Hosts:
    """The two namespaces and what runs in them."""

    head: str
    node: str
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)

    def run(self, namespace: str, *argv: str, timeout: float = 120, check: bool = True) -> str:
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, "nice", "-n", "10", *argv],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:3])} in {namespace}: {done.stderr.strip()[-1500:]}")
        return done.stdout

    def start(self, namespace: str, *argv: str, log: Path) -> subprocess.Popen:
        with log.open("ab") as out:
            return subprocess.Popen(
                ["ip", "netns", "exec", namespace, "nice", "-n", "10", *argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
            )

    def pids(self, namespace: str) -> list[int]:
        done = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
        return [int(p) for p in done.stdout.split()]

    def find(self, namespace: str, needle: str) -> list[int]:
        """Processes in ``namespace`` whose command line contains ``needle``."""
        return [pid for pid in self.pids(namespace) if needle in _cmdline(pid)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ip(*argv: str) -> None:
    done = subprocess.run(["ip", *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(argv)}: {done.stderr.strip()}")


def why_not() -> str | None:
    """Why this machine cannot run the cluster, or None."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if not shutil.which("ip"):
        return "needs iproute2's ip"
    if not shutil.which("ray"):
        return "needs Ray's `ray` command (pip install -e '.[ray]')"
    return None


@contextlib.contextmanager
def two_hosts(workdir: Path) -> Iterator[Hosts]:
    """Two namespaces joined by a veth pair; on exit every process in them is killed, then they go."""
    tag = f"gpf{os.getpid() % 100000}"
    hosts = Hosts(f"{tag}-head", f"{tag}-node", workdir)
    hosts.env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ADDRESS": "",
    }
    made: list[str] = []
    try:
        for namespace in (hosts.head, hosts.node):
            _ip("netns", "add", namespace)
            made.append(namespace)
        _ip("link", "add", f"{tag}h", "type", "veth", "peer", "name", f"{tag}n")
        for namespace, link, address in ((hosts.head, "h", HEAD_IP), (hosts.node, "n", NODE_IP)):
            _ip("link", "set", f"{tag}{link}", "netns", namespace)
            _ip("-n", namespace, "addr", "add", f"{address}/{PREFIX}", "dev", f"{tag}{link}")
            _ip("-n", namespace, "link", "set", f"{tag}{link}", "up")
            _ip("-n", namespace, "link", "set", "lo", "up")
        yield hosts
    finally:
        for namespace in made:
            stop_everything_in(hosts, namespace)
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def stop_everything_in(hosts: Hosts, namespace: str) -> None:
    """SIGKILL every process of ``namespace`` (only this module's Ray runs there) until none is left."""
    for _ in range(50):
        pids = hosts.pids(namespace)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def wait_for(check: Callable[[], Any], seconds: float, what: str, interval: float = 0.25) -> Any:
    """``check()`` once it is truthy; TimeoutError naming ``what`` after ``seconds``."""
    value = wait_until(check, seconds, interval)
    if not value:
        raise TimeoutError(f"{what}: not within {seconds:g} s")
    return value


def start_cluster(hosts: Hosts, settings: RaySettings) -> None:
    """``ray start --head`` on the first host, ``ray start --address`` on the second; both up."""
    start_head(hosts, settings)
    join_node(hosts, settings)


def _on_core(core: int | None) -> list[str]:
    """The prefix that keeps a node's processes (Ray's and its workers') on one core, or none."""
    return [] if core is None else ["taskset", "-c", str(core)]


def start_head(hosts: Hosts, settings: RaySettings, core: int | None = None) -> None:
    """``ray start --head`` on the first host (one CPU; its processes on ``core`` when given)."""
    hosts.run(
        hosts.head, *_on_core(core), "ray", "start", "--head", "--node-ip-address", HEAD_IP,
        "--port", str(PORT), "--include-dashboard=false", "--temp-dir", str(hosts.workdir / "h"),
        *NODE_OPTIONS, timeout=settings.startup_seconds,
    )  # fmt: skip
    wait_for(lambda: alive_nodes(hosts) == 1, settings.startup_seconds, "the head alive")


def join_node(hosts: Hosts, settings: RaySettings, core: int | None = None) -> None:
    """``ray start --address`` on the second host (one CPU; on ``core`` when given); both nodes up."""
    hosts.run(
        hosts.node, *_on_core(core), "ray", "start", "--address", f"{HEAD_IP}:{PORT}",
        "--node-ip-address", NODE_IP, *NODE_OPTIONS, timeout=settings.startup_seconds,
    )  # fmt: skip
    wait_for(lambda: alive_nodes(hosts) == 2, settings.startup_seconds, "two nodes alive")


def alive_nodes(hosts: Hosts) -> int:
    script = (
        f"import ray; ray.init(address='{HEAD_IP}:{PORT}', logging_level='ERROR'); "
        "print(sum(n['Alive'] for n in ray.nodes()))"
    )
    out = hosts.run(hosts.head, sys.executable, "-c", script, check=False)
    lines = out.strip().splitlines()
    return int(lines[-1]) if lines and lines[-1].isdigit() else 0


def island_workers(hosts: Hosts) -> dict[str, list[int]]:
    return {ns: hosts.find(ns, "ray::IslandWorker") for ns in (hosts.head, hosts.node)}


def node_raylet(hosts: Hosts) -> int:
    pids = hosts.find(hosts.node, "/raylet/raylet ")
    if not pids:
        raise RuntimeError("the second node's raylet is not running")
    return pids[0]


def plan_under_faults(hosts: Hosts, settings: RaySettings) -> dict[str, Any]:
    """``gaplanner plan --ray-address`` while a worker actor, then the second node's raylet, are killed."""
    document = unreachable_bound_document(150, seed=3)
    source, output, log = (
        hosts.workdir / "input.json",
        hosts.workdir / "plan.json",
        hosts.workdir / "plan.log",
    )
    source.write_text(json.dumps(document))
    started = time.monotonic()
    process = hosts.start(
        hosts.head, sys.executable, "-m", "gaplanner.cli", "plan", str(source), "--workers", "2",
        "--ray-address", f"{HEAD_IP}:{PORT}", "--time-limit", str(settings.plan_seconds),
        "--stall-generations", "1000000", "--seed", "1", "--no-exact", "--quiet", "-o", str(output),
        log=log,
    )  # fmt: skip
    events = []
    try:
        workers = wait_for(
            lambda: (w := island_workers(hosts)) and all(w.values()) and w, 120, "a worker on each node"
        )
        time.sleep(3)  # mid-search
        victim = workers[hosts.head][0]
        os.kill(victim, signal.SIGKILL)
        events.append(f"worker actor {victim} on {HEAD_IP} killed at {time.monotonic() - started:.0f} s")
        wait_for(
            lambda: any(p != victim for p in island_workers(hosts)[hosts.head]), 60, "the worker replaced"
        )
        time.sleep(3)
        raylet = node_raylet(hosts)
        os.kill(raylet, signal.SIGKILL)
        events.append(f"raylet of {NODE_IP} killed at {time.monotonic() - started:.0f} s")
        returncode = process.wait(timeout=settings.plan_seconds + 180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    seconds = time.monotonic() - started
    outcome: dict[str, Any] = {"events": events, "returncode": returncode, "seconds": round(seconds, 1)}
    if returncode != 0 or not output.exists():
        outcome.update(verified=False, error=log.read_text(errors="replace")[-1500:])
        return outcome
    plan = json.loads(output.read_text())
    check_plan(document, plan)  # raises if the plan does not verify
    outcome.update(
        verified=True,
        peak=plan["peak"],
        lower_bound=plan["lower_bound"],
        restarts=plan.get("restarts"),
        stop_reason=plan.get("stop_reason"),
    )
    return outcome


RUNNER_CONFIG = """\
inputs = ["example:seed000_queue", "zoo:mobilenetv1", "zoo:densenet121@2"]
seeds = {seeds}
time_budgets = [{budget}]

[[algorithms]]
name = "ga"
population = 16
"""


def runner_rows(path: Path) -> list[dict[str, str]]:
    from experiments.run import read_results

    return read_results(path)


def runner_under_faults(hosts: Hosts, settings: RaySettings) -> dict[str, Any]:
    """The batch runner: the second node's raylet killed mid-run, then the runner; run again to resume."""
    config = hosts.workdir / "faults.toml"
    config.write_text(RUNNER_CONFIG.format(seeds=list(range(settings.seeds)), budget=settings.cell_seconds))
    results, log = hosts.workdir / "faults.csv", hosts.workdir / "runner.log"
    cells = 3 * settings.seeds
    argv = [sys.executable, "-m", "experiments.run", str(config), "--results", str(results)]
    argv += ["--ray-address", f"{HEAD_IP}:{PORT}"]
    events = []
    first = hosts.start(hosts.head, *argv, log=log)
    try:
        wait_for(lambda: hosts.find(hosts.node, "run_cell"), 120, "a cell running on the second node", 0.1)
        os.kill(node_raylet(hosts), signal.SIGKILL)
        events.append(f"raylet of {NODE_IP} killed with {len(runner_rows(results))} of {cells} cells done")
        wait_for(lambda: len(runner_rows(results)) >= cells // 2 or first.poll() is not None, 180, "half")
        if first.poll() is None:
            done_before = len(runner_rows(results))
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
            events.append(f"runner killed with {done_before} of {cells} cells done")
        else:
            events.append(f"the runner finished before it could be killed (exit {first.returncode})")
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    after_first = len(runner_rows(results))
    second = hosts.start(hosts.head, *argv, log=log)
    try:
        returncode = second.wait(timeout=cells * settings.cell_seconds + 240)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()
    rows = runner_rows(results)
    keys = [row["cell"] for row in rows]
    resumed_line = next(
        (line for line in log.read_text(errors="replace").splitlines()[::-1] if "already in" in line), ""
    )
    return {
        "events": events,
        "cells": cells,
        "rows_after_first_run": after_first,
        "resume_message": resumed_line.strip(),
        "returncode": returncode,
        "rows": len(rows),
        "duplicates": len(keys) - len(set(keys)),
        "missing": cells - len(set(keys)),
        "bad_rows": sum(int(row["peak"]) < int(row["lower_bound"]) for row in rows),
    }


def run_cluster_faults(settings: RaySettings) -> dict[str, Any]:
    """Both parts on a fresh two-node cluster; {"skipped": reason} where this machine cannot."""
    reason = why_not()
    if reason:
        return {"skipped": reason}
    # Short: Ray's socket paths under the temp dir must fit in 107 bytes.
    workdir = Path(tempfile.mkdtemp(prefix="gpf", dir="/tmp"))
    try:
        with two_hosts(workdir) as hosts:
            start_cluster(hosts, settings)
            plan = plan_under_faults(hosts, settings)
            stop_everything_in(hosts, hosts.node)  # what the killed raylet left behind
            join_node(hosts, settings)
            runner = runner_under_faults(hosts, settings)
            return {"plan": plan, "runner": runner}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
