"""gaplanner's REST service: plan jobs over HTTP, a thin shell over :mod:`gaplanner.solve`.

``create_app`` builds the FastAPI application; ``gaplanner serve`` runs it with
uvicorn. Searches run in a pool of worker processes (:mod:`service.jobs`),
jobs and results live in SQLite (:mod:`service.store`).
"""

from service.config import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]


def __getattr__(name: str):  # create_app pulls in FastAPI: import it only when asked for
    if name == "create_app":
        from service.app import create_app

        return create_app
    raise AttributeError(name)
