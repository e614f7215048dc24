"""Service settings: environment variables ``GAPLANNER_*`` (pydantic-settings), overridable in code."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/gaplanner/service.sqlite3`` (``~/.local/share/...`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "gaplanner" / "service.sqlite3"


class ServiceSettings(BaseSettings):
    """Everything the service can be told; every field reads ``GAPLANNER_<FIELD>`` from the environment."""

    model_config = SettingsConfigDict(env_prefix="GAPLANNER_", extra="ignore")

    db: Path = Field(default_factory=default_db_path, description="SQLite file holding jobs and results.")
    api_key: str | None = Field(
        None, description="When set, every route but /v1/health needs it (X-API-Key or Bearer)."
    )
    workers: int = Field(
        default_factory=lambda: os.cpu_count() or 1, ge=1, le=256, description="Searches run at once."
    )
    worker_threads: int | None = Field(
        None, ge=1, description="Kernel threads per worker process (default: cores / workers, at least 1)."
    )
    worker_nice: int = Field(5, ge=0, le=19, description="Niceness of the worker processes.")
    max_queue: int = Field(1000, ge=1, description="Queued jobs beyond which submissions get 503.")
    max_blocks: int = Field(20_000, ge=1, description="Most blocks one job may have (413 beyond).")
    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="Largest request body (413 beyond).")
    inline_body_bytes: int = Field(
        32 * 1024,
        ge=0,
        description="Submissions up to this size are validated on the event loop, larger ones in a thread.",
    )
    max_time_limit: float = Field(300.0, gt=0, description="Largest options.time_limit in seconds.")
    default_time_limit: float = Field(10.0, gt=0, description="options.time_limit when none is given.")
    max_population: int = Field(1024, ge=4, description="Largest options.population.")
    max_islands: int = Field(16, ge=1, description="Largest options.islands.")
    max_job_workers: int = Field(
        default_factory=lambda: os.cpu_count() or 1, ge=1, description="Largest options.workers (Ray)."
    )
    max_attempts: int = Field(
        3, ge=1, description="Runs a job gets after restarts or worker crashes before it is failed."
    )
    max_trace_records: int = Field(
        20_000, ge=100, description="Longer convergence traces are thinned to about this many records."
    )
    progress_interval: float = Field(0.1, gt=0, description="Seconds between progress reports of a job.")
    access_log: bool = Field(
        False,
        description="Log a line per request (uvicorn's access log). Off by default: on the event loop it "
        "costs about as much as answering a status poll; errors and job events are logged either way.",
    )
    warm_up: bool = Field(
        True, description="Run a small plan in every worker at start-up, so the first job finds it loaded."
    )

    @property
    def threads_per_worker(self) -> int:
        if self.worker_threads is not None:
            return self.worker_threads
        return max(1, (os.cpu_count() or 1) // self.workers)
