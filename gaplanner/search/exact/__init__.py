"""The exact search (branch and bound over placements) and its reductions.

Its interface, for ``solve`` and for the GA beside it (:mod:`gaplanner.search.side_by_side`):
:class:`ExactSettings`; :func:`exact_search`, a plan within a time limit; :class:`ExactSearch`,
started once and then run to a deadline or for some seconds, offered plans, read for its best
plan and bound; :func:`searchable`, whether it takes a problem. The method is
described in :mod:`gaplanner.search.exact.search`.
"""

from gaplanner.search.exact.parts_search import SearchResult, searchable
from gaplanner.search.exact.search import ExactSearch, event_record, exact_search, usable_cores
from gaplanner.search.exact.settings import ExactSettings

__all__ = [
    "ExactSearch",
    "ExactSettings",
    "SearchResult",
    "event_record",
    "exact_search",
    "searchable",
    "usable_cores",
]
