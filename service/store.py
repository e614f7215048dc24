"""Jobs and results in SQLite: nothing accepted is lost across restarts.

One writing connection in WAL mode, shared by the service's threads under a
lock (every statement is short), and one read-only connection per thread:
in WAL mode readers see the last commit and never wait for the writer. Status changes are conditional updates
(``... WHERE status = 'queued'``), so a cancel and a dispatch racing for the
same job cannot both win.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    graph TEXT NOT NULL,
    options TEXT NOT NULL,
    name TEXT NOT NULL,
    blocks INTEGER NOT NULL,
    lower_bound INTEGER NOT NULL,
    algorithm TEXT NOT NULL,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    progress TEXT,
    result TEXT,
    trace TEXT,
    layout TEXT,
    error TEXT,
    peak INTEGER,
    idempotency_key TEXT,
    request_digest TEXT,
    request BLOB,
    result_rendered INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_kind_seq ON jobs (kind, seq);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status);
"""

#: Columns added since the first schema, with their types: a store written before gets them on opening.
_ADDED_COLUMNS = {
    "idempotency_key": "TEXT",
    "request_digest": "TEXT",
    "request": "BLOB",
    "result_rendered": "INTEGER NOT NULL DEFAULT 0",
}

#: One job per kind and idempotency key: a retried submission finds the job it made.
_KEY_INDEX = (
    "CREATE UNIQUE INDEX IF NOT EXISTS jobs_idempotency ON jobs (kind, idempotency_key) "
    "WHERE idempotency_key IS NOT NULL"
)

#: Columns every read returns (the big ``graph``/``trace``/``layout`` texts only when asked for).
_SUMMARY = (
    "seq, id, kind, status, options, name, blocks, lower_bound, algorithm, created, started, finished, "
    "attempts, cancel_requested, progress, error, peak"
)

#: SQLite's result codes (the low byte of an extended code) for a write the disk could not take.
_STORAGE_ERRORS = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR}

ACTIVE = ("queued", "running")
FINISHED = ("done", "failed", "cancelled")


class DuplicateKey(Exception):
    """Another submission with the same idempotency key was stored first."""


class StoreFull(Exception):
    """A write failed because the disk under the database is full (or failing); nothing was changed."""


def json_text(value: Any) -> str | None:
    """The compact JSON text the store keeps (None stays NULL)."""
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _storage_error(exc: sqlite3.Error) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _STORAGE_ERRORS


@dataclass(frozen=True)
class NewJob:
    """A job as submitted. ``request`` is the submission's JSON text, stored as it came, so that the
    graph is never encoded again; without it (jobs made in code), ``graph`` is stored."""

    id: str
    kind: str
    graph: Any
    options: dict[str, Any]
    name: str
    blocks: int
    lower_bound: int
    algorithm: str
    idempotency_key: str | None = None
    request_digest: str | None = None
    request: bytes | None = None


@dataclass(frozen=True)
class Recovered:
    """What start-up did with the jobs a previous server left unfinished."""

    requeued: list[str]
    failed: list[str]
    cancelled: list[str]


class JobStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # the one writing connection is shared by the service's threads
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a process crash loses nothing
            self._db.execute("PRAGMA busy_timeout=5000")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(f"{path} was written by a newer gaplanner (schema {version})")
            self._db.executescript(_SCHEMA)
            present = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
            for column, kind in _ADDED_COLUMNS.items():
                if column not in present:  # a store from before the column: nothing in it has a key
                    self._db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
            self._db.execute(_KEY_INDEX)
            if version != SCHEMA_VERSION:  # opening a current store writes nothing: a full disk still opens
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        with self._lock:
            for reader in self._readers:
                reader.close()
            self._db.close()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """The writing connection, under the lock; a full disk raises :class:`StoreFull`."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as exc:
                if _storage_error(exc):
                    raise StoreFull(f"{self.path}: {exc}") from exc
                raise

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._writing() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite may have rolled back already (a full disk does)
                    db.execute("ROLLBACK")
                raise

    def _reader(self) -> sqlite3.Connection:
        """This thread's read-only connection: in WAL mode readers never wait for the writer."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            db.row_factory = sqlite3.Row
            self._local.db = db
            with self._lock:
                self._readers.append(db)
        return db

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Row | None:
        return self._reader().execute(sql, args).fetchone()

    # --- writes -----------------------------------------------------------------------------------

    def insert(self, job: NewJob) -> float:
        """Store a queued job; :class:`DuplicateKey` if its idempotency key is taken (nothing is stored)."""
        created = time.time()
        try:
            with self._writing() as db:
                db.execute(
                    "INSERT INTO jobs (id, kind, status, graph, options, name, blocks, lower_bound, "
                    "algorithm, created, idempotency_key, request_digest, request) "
                    "VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        job.id,
                        job.kind,
                        "" if job.request is not None else json.dumps(job.graph, separators=(",", ":")),
                        json.dumps(job.options),
                        job.name,
                        job.blocks,
                        job.lower_bound,
                        job.algorithm,
                        created,
                        job.idempotency_key,
                        job.request_digest,
                        job.request,
                    ),
                )
        except sqlite3.IntegrityError as exc:
            if job.idempotency_key is None:
                raise
            raise DuplicateKey(job.idempotency_key) from exc
        return created

    def by_key(self, kind: str, key: str) -> sqlite3.Row | None:
        """The job of this kind submitted with this idempotency key (id, status, digest), if any."""
        return self._one(
            "SELECT id, status, request_digest FROM jobs WHERE kind = ? AND idempotency_key = ?", (kind, key)
        )

    def mark_running(self, job_id: str) -> tuple[str, bytes, dict[str, Any]] | None:
        """queued -> running; the job's kind, request text (JSON holding its ``graph``) and options, or
        None if it is no longer queued. The text goes to the worker as stored: it parses it anyway."""
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE jobs SET status = 'running', started = ? WHERE id = ? AND status = 'queued'",
                (time.time(), job_id),
            ).rowcount
            if not changed:
                return None
            row = db.execute(
                "SELECT kind, graph, options, request FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        request = row["request"] if row["request"] is not None else f'{{"graph":{row["graph"]}}}'.encode()
        return row["kind"], request, json.loads(row["options"])

    def finish(
        self,
        job_id: str,
        status: str,
        *,
        result: str | None = None,
        trace: str | None = None,
        layout: str | None = None,
        progress: str | None = None,
        peak: int | None = None,
        error: str | None = None,
        rendered: bool = False,
    ) -> None:
        """A job's end, with its result, trace, layout and progress as JSON texts (:func:`json_text`).
        ``rendered``: the result is the text its route answers with (the response model's JSON)."""
        with self._writing() as db:
            db.execute(
                "UPDATE jobs SET status = ?, finished = ?, result = ?, trace = ?, layout = ?, "
                "progress = COALESCE(?, progress), peak = ?, error = ?, result_rendered = ? WHERE id = ?",
                (
                    status,
                    time.time(),
                    result,
                    trace,
                    layout,
                    progress,
                    peak,
                    error,
                    int(rendered),
                    job_id,
                ),
            )

    def requeue(self, job_id: str, *, count_attempt: bool) -> int:
        """running -> queued (after a worker crash or a shutdown); the job's attempts so far."""
        with self._transaction() as db:
            db.execute(
                "UPDATE jobs SET status = 'queued', started = NULL, attempts = attempts + ? WHERE id = ?",
                (int(count_attempt), job_id),
            )
            return int(db.execute("SELECT attempts FROM jobs WHERE id = ?", (job_id,)).fetchone()[0])

    def cancel_queued(self, job_id: str) -> bool:
        with self._writing() as db:
            return bool(
                db.execute(
                    "UPDATE jobs SET status = 'cancelled', cancel_requested = 1, finished = ? "
                    "WHERE id = ? AND status = 'queued'",
                    (time.time(), job_id),
                ).rowcount
            )

    def request_cancel(self, job_id: str) -> bool:
        with self._writing() as db:
            return bool(
                db.execute(
                    "UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND status = 'running'", (job_id,)
                ).rowcount
            )

    def last_seq(self) -> int:
        """The sequence number of the newest job stored (0 for none): where the last run's jobs end."""
        return int(self._one("SELECT COALESCE(MAX(seq), 0) FROM jobs")[0])

    def recover(self, max_attempts: int, up_to_seq: int | None = None) -> Recovered:
        """Jobs a previous server left queued or running: re-queued, or failed/cancelled with a reason.

        ``up_to_seq`` (see :meth:`last_seq`) limits it to the jobs stored before this server started,
        when it runs late (the disk was full at start-up) and this server's own jobs are running.
        """
        requeued, failed, cancelled = [], [], []
        now = time.time()
        with self._transaction() as db:
            rows = db.execute(
                "SELECT id, status, attempts, cancel_requested FROM jobs "
                "WHERE status IN ('queued', 'running') AND seq <= ? ORDER BY seq",
                (up_to_seq if up_to_seq is not None else 2**62,),
            ).fetchall()
            for row in rows:
                if row["cancel_requested"]:
                    db.execute(
                        "UPDATE jobs SET status = 'cancelled', finished = ?, error = ? WHERE id = ?",
                        (now, "cancelled; the server restarted before the search stopped", row["id"]),
                    )
                    cancelled.append(row["id"])
                    continue
                attempts = row["attempts"] + (row["status"] == "running")
                if attempts >= max_attempts:
                    db.execute(
                        "UPDATE jobs SET status = 'failed', finished = ?, attempts = ?, error = ? "
                        "WHERE id = ?",
                        (
                            now,
                            attempts,
                            f"interrupted {attempts} times (server restarts or worker crashes); not retried",
                            row["id"],
                        ),
                    )
                    failed.append(row["id"])
                    continue
                db.execute(
                    "UPDATE jobs SET status = 'queued', started = NULL, attempts = ? WHERE id = ?",
                    (attempts, row["id"]),
                )
                requeued.append(row["id"])
        return Recovered(requeued, failed, cancelled)

    def fail(self, job_id: str, error: str) -> None:
        self.finish(job_id, "failed", error=error)

    # --- reads ------------------------------------------------------------------------------------

    def get(self, job_id: str) -> sqlite3.Row | None:
        return self._one(f"SELECT {_SUMMARY}, result, result_rendered FROM jobs WHERE id = ?", (job_id,))

    def get_columns(self, job_id: str, *columns: str) -> sqlite3.Row | None:
        allowed = {"status", "kind", "lower_bound", "result", "trace", "layout", "name", "algorithm"}
        assert set(columns) <= allowed
        return self._one(f"SELECT {', '.join(columns)} FROM jobs WHERE id = ?", (job_id,))

    def page(
        self, kind: str, limit: int, after: int | None, status: str | None
    ) -> tuple[list[sqlite3.Row], int]:
        """Newest first; ``after`` is the ``seq`` of the last job of the previous page."""
        where, args = ["kind = ?"], [kind]
        if status is not None:
            where.append("status = ?")
            args.append(status)
        clause = " AND ".join(where)
        db = self._reader()
        total = db.execute(f"SELECT COUNT(*) FROM jobs WHERE {clause}", args).fetchone()[0]
        if after is not None:
            clause += " AND seq < ?"
            args.append(after)
        rows = db.execute(
            f"SELECT {_SUMMARY} FROM jobs WHERE {clause} ORDER BY seq DESC LIMIT ?", (*args, limit)
        ).fetchall()
        return rows, int(total)

    def counts(self) -> dict[str, int]:
        rows = self._reader().execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()
        return {row[0]: row[1] for row in rows}
