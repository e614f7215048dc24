"""The job manager: a queue, a bounded pool of worker processes, progress and cancellation.

Searches never run on the server's event loop, nor in its threads: a
dispatcher thread hands queued jobs to a ``ProcessPoolExecutor`` (spawned
processes: ``fork`` does not carry the kernels' threads over), at most
one job per worker, each with a *slot* whose cancel flag lives in shared
memory. Workers report progress on a queue that a reader thread keeps in
memory; results go straight to SQLite. Processes rather than threads: the GA's
loop is Python and holds the GIL, so threads would share one core between all
searches and the HTTP server (``experiments/service_workers.py`` measures it).
"""

from __future__ import annotations

import functools
import gc
import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gaplanner.errors import GaplannerError
from service import worker
from service.config import ServiceSettings
from service.errors import ApiError
from service.store import JobStore, NewJob, StoreFull
from service.traces import thin_trace

log = logging.getLogger("service.jobs")

#: Linux's per-process flag (``/proc/PID/stat``, field 9) set as a process starts to exit.
_PF_EXITING = 0x4
#: Seconds between attempts to write to a store whose disk was full.
STORE_RETRY_SECONDS = 1.0


@dataclass
class _Running:
    slot: int
    started: float = field(default_factory=time.monotonic)
    progress: dict[str, Any] | None = None
    cancel_requested: bool = False
    records: list[dict[str, Any]] = field(default_factory=list)  # the progress reports so far
    pid: int | None = None  # the worker process running it, once it has said so


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs: not gone, not a zombie, and not on its way out (the kernel closes
    a killed process's pipes, which is how the pool notices, before it turns into a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X") and not int(fields[6]) & _PF_EXITING


class JobManager:
    """Queue, pool and bookkeeping; every public method is safe to call from any thread."""

    def __init__(self, settings: ServiceSettings, store: JobStore) -> None:
        self.settings, self.store = settings, store
        self._ctx = multiprocessing.get_context("spawn")
        # One lock, two conditions: the dispatcher waits for a queued job and a free slot, the retry
        # thread for something unsaved; a submission wakes the dispatcher alone, and only when a slot
        # is free (each wake-up makes the threads trade the GIL).
        lock = threading.RLock()
        self._cond = threading.Condition(lock)
        self._unsaved_cond = threading.Condition(lock)
        self._pending: deque[str] = deque()
        self._free: list[int] = list(range(settings.workers))[::-1]
        self._running: dict[str, _Running] = {}
        self._cancel = self._ctx.Array("b", settings.workers, lock=False)
        self._progress = self._ctx.Queue()
        self._executor: ProcessPoolExecutor | None = None
        self._stopping = False
        self._threads: list[threading.Thread] = []
        # Ends of jobs the store could not take (its disk was full), retried until it can: the job stays
        # 'running' in the database meanwhile, so a restart before then runs it again.
        self._unsaved: deque[tuple[str, Callable[[], None]]] = deque()

    # --- life cycle -------------------------------------------------------------------------------

    def start(self) -> None:
        recover = functools.partial(self._recover, self.store.last_seq())  # the last run's jobs only
        try:
            recover()
        except StoreFull as exc:  # restarted on a full disk: serve now, recover once there is room
            log.error("cannot take back the last run's unfinished jobs yet: %s", exc)
            self._unsaved.append(("the last run's unfinished jobs", recover))
        self._executor = self._new_executor()
        threads = ((self._dispatch, "dispatcher"), (self._read_progress, "progress"), (self._retry, "retry"))
        for target, name in threads:
            thread = threading.Thread(target=target, name=f"gaplanner-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _recover(self, up_to_seq: int) -> None:
        recovered = self.store.recover(self.settings.max_attempts, up_to_seq)
        if recovered.requeued or recovered.failed or recovered.cancelled:
            log.warning(
                "unfinished jobs from the last run: %d re-queued, %d failed, %d cancelled",
                len(recovered.requeued),
                len(recovered.failed),
                len(recovered.cancelled),
            )
        with self._cond:
            self._pending.extend(recovered.requeued)
            self._cond.notify_all()

    def _new_executor(self) -> ProcessPoolExecutor:
        s = self.settings
        executor = ProcessPoolExecutor(
            max_workers=s.workers,
            mp_context=self._ctx,
            initializer=worker.initialize,
            initargs=(
                self._progress,
                self._cancel,
                s.threads_per_worker,
                s.worker_nice,
                s.progress_interval,
                s.warm_up,
                os.getpid(),  # the server: a worker started after it died must see it gone at once
            ),
        )
        for _ in range(s.workers):  # start every process now (each warms up), not on the first jobs
            executor.submit(worker.ping)
        return executor

    def stop(self) -> None:
        """Stop the searches that run (they go back to the queue for the next start) and the pool."""
        with self._cond:
            self._stopping = True
            for running in self._running.values():
                self._cancel[running.slot] = 1
            self._cond.notify_all()
            self._unsaved_cond.notify_all()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        self._progress.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        self._progress.close()
        self._progress.join_thread()
        # Release the queues' semaphores now: uvicorn ends the process by re-raising the signal that
        # stopped it, so no exit handler would, and the resource tracker would report them leaked.
        del self._progress, self._cancel
        gc.collect()

    # --- requests ---------------------------------------------------------------------------------

    def submit(self, job: NewJob) -> None:
        with self._cond:
            if self._stopping:
                raise ApiError(503, "the server is shutting down", None, {"Retry-After": "5"})
            if len(self._pending) >= self.settings.max_queue:
                raise ApiError(
                    503,
                    f"the queue is full ({len(self._pending)} jobs waiting); retry later",
                    None,
                    {"Retry-After": "5"},
                )
            try:
                self.store.insert(job)
            except StoreFull as exc:
                log.error("refused a job: %s", exc)
                raise ApiError(
                    503, "the server's storage is full; retry later", None, {"Retry-After": "30"}
                ) from exc
            self._pending.append(job.id)
            if self._free:  # else the dispatcher waits for a slot, and the job that frees it wakes it
                self._cond.notify()

    def cancel(self, job_id: str) -> str:
        """``cancelled`` (it was queued), ``stopping`` (it runs and will stop) or its finished status."""
        with self._cond:
            if job_id in self._pending:
                self._pending.remove(job_id)
                self.store.cancel_queued(job_id)
                return "cancelled"
            running = self._running.get(job_id)
            if running is not None:
                running.cancel_requested = True
                self._cancel[running.slot] = 1
                self.store.request_cancel(job_id)
                return "stopping"
        row = self.store.get_columns(job_id, "status")
        if row is None:
            raise ApiError(404, f"no job with id {job_id!r}", "id")
        return str(row["status"])

    def live(self, job_id: str) -> tuple[dict[str, Any] | None, bool] | None:
        """Progress and cancel request of a running job, or None when it is not running here."""
        with self._cond:
            running = self._running.get(job_id)
            if running is None:
                return None
            return running.progress, running.cancel_requested

    def live_trace(self, job_id: str) -> list[dict[str, Any]] | None:
        """The progress reports of a running job so far (a sample of its trace), or None."""
        with self._cond:
            running = self._running.get(job_id)
            return None if running is None else list(running.records)

    def health(self) -> dict[str, int]:
        with self._cond:
            return {
                "queue_depth": len(self._pending),
                "running": len(self._running),
                "workers": self.settings.workers,
            }

    # --- threads ----------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and not (self._pending and self._free):
                    self._cond.wait()
                if self._stopping:
                    return
                job_id, slot = self._pending.popleft(), self._free.pop()
                self._cancel[slot] = 0
                self._running[job_id] = _Running(slot)
            try:
                claimed = self.store.mark_running(job_id)
            except StoreFull as exc:  # still queued in the store: wait for room, then try again
                log.error("cannot start job %s: %s", job_id, exc)
                self._release(job_id, slot, back_to_queue=True)
                with self._cond:
                    self._cond.wait(STORE_RETRY_SECONDS)
                continue
            if claimed is None:  # cancelled meanwhile
                self._release(job_id, slot)
                continue
            try:
                future = self._submit(job_id, slot, *claimed)
            except Exception:
                self._not_started(job_id)
                self._release(job_id, slot)
                continue
            future.add_done_callback(lambda f, job_id=job_id, slot=slot: self._finished(job_id, slot, f))

    def _not_started(self, job_id: str) -> None:
        """A claimed job the pool would not take: back to the queue when shutting down, else failed."""
        try:
            if self._stopping:  # the pool shut down under us: the next start runs the job
                self.store.requeue(job_id, count_attempt=False)
            else:
                log.exception("could not start job %s", job_id)
                self.store.fail(job_id, "the server could not start this job")
        except StoreFull:  # left 'running' in the store: the next start runs it again
            log.exception("could not record that job %s did not start", job_id)

    def _submit(self, job_id: str, slot: int, kind: str, request: bytes, options: dict[str, Any]) -> Future:
        if self._executor is None:
            raise RuntimeError("the worker pool has been shut down")
        job = (worker.run_stored, job_id, slot, kind, request, options, self.settings.max_trace_records)
        try:
            return self._executor.submit(*job)
        except BrokenProcessPool:
            log.warning("the worker pool broke; starting a new one")
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = self._new_executor()
            return self._executor.submit(*job)

    def _release(self, job_id: str, slot: int, back_to_queue: bool = False) -> None:
        with self._cond:
            self._running.pop(job_id, None)
            self._free.append(slot)
            if back_to_queue:
                self._pending.appendleft(job_id)
            self._cond.notify_all()

    def _finished(self, job_id: str, slot: int, future: Future) -> None:
        with self._cond:
            stopping = self._stopping
            running = self._running.get(job_id)
            cancel_requested = running is not None and running.cancel_requested
            pid = running.pid if running is not None else None
        # A dead worker breaks the whole pool: every job running gets BrokenProcessPool, here, before
        # the pool stops the other workers. Only the job whose own worker is dead counts an attempt.
        blamed = pid is None or not _alive(pid)
        try:
            self._record(job_id, future, stopping, cancel_requested, blamed)
        except StoreFull as exc:
            log.error("cannot record the end of job %s yet: %s", job_id, exc)
            with self._cond:
                record = lambda: self._record(job_id, future, stopping, cancel_requested, blamed)  # noqa: E731
                self._unsaved.append((f"the end of job {job_id}", record))
                self._unsaved_cond.notify()
        except Exception:
            log.exception("could not record the end of job %s", job_id)
        finally:
            self._release(job_id, slot)

    def _retry(self) -> None:
        """Write what the store could not take (the last run's recovery, ends of jobs), once it can."""
        while True:
            with self._cond:
                self._unsaved_cond.wait_for(lambda: self._stopping or self._unsaved)
                if self._stopping and not self._unsaved:
                    return
                what, record = self._unsaved[0]
            try:
                record()
            except StoreFull:
                if self._stopping:  # left 'running' in the store: the next start runs them again
                    return
                time.sleep(STORE_RETRY_SECONDS)
                continue
            except Exception:
                log.exception("could not record %s", what)
            log.info("recorded %s", what)
            with self._cond:
                self._unsaved.popleft()

    def _record(
        self, job_id: str, future: Future, stopping: bool, cancel_requested: bool, blamed: bool = True
    ) -> None:
        try:
            result = future.result()
        except BrokenProcessPool:
            self._worker_died(job_id, stopping, blamed)
            return
        except GaplannerError as exc:  # the input passed the checks at submission, yet did not plan
            self.store.fail(job_id, str(exc))
            return
        except Exception as exc:
            if stopping:
                self.store.requeue(job_id, count_attempt=False)
                return
            log.error("job %s failed", job_id, exc_info=exc)
            self.store.fail(
                job_id, f"internal error while planning ({type(exc).__name__}); see the server log"
            )
            return
        if stopping and result["stopped"] and not cancel_requested:
            self.store.requeue(job_id, count_attempt=False)  # shutdown: the next start runs it again
            return
        status = "cancelled" if result["stopped"] and cancel_requested else "done"
        self.store.finish(
            job_id,
            status,
            result=result["result"],
            trace=result["trace"],
            layout=result["layout"],
            progress=result["progress"],
            peak=result["peak"],
            rendered=True,
        )

    def _worker_died(self, job_id: str, stopping: bool, blamed: bool = True) -> None:
        """Its worker died (``blamed``), or another one did and took the pool down: back to the queue."""
        attempts = self.store.requeue(job_id, count_attempt=blamed and not stopping)
        if stopping:
            return
        if not blamed:
            log.warning("job %s stopped when another worker died; re-queued", job_id)
            with self._cond:
                self._pending.appendleft(job_id)
                self._cond.notify_all()
            return
        if attempts >= self.settings.max_attempts:
            self.store.fail(
                job_id, f"the worker process died {attempts} times running this job (out of memory?)"
            )
            return
        log.warning("a worker died running job %s; re-queued (attempt %d)", job_id, attempts + 1)
        with self._cond:
            self._pending.appendleft(job_id)
            self._cond.notify_all()

    def _read_progress(self) -> None:
        while True:
            try:
                message = self._progress.get()
            except (EOFError, OSError):
                return
            if message is None:
                return
            job_id, record = message
            with self._cond:
                running = self._running.get(job_id)
                if running is not None and "pid" in record:  # the job has started in this process
                    running.pid = record["pid"]
                elif running is not None:
                    running.progress = record
                    running.records.append(record)
                    if len(running.records) > 2 * self.settings.max_trace_records:
                        running.records = thin_trace(running.records, self.settings.max_trace_records)
