"""The operator order as a decision: dependencies, an order's bound, a bound over all orders, the search.

The front door::

    from gaplanner.schedule import search_schedule, apply_schedule

    result = search_schedule(document)            # order, bounds, certificate
    reordered = apply_schedule(document, result.order)
"""

from gaplanner.schedule.apply import apply_schedule
from gaplanner.schedule.choose import ScheduleResult, ScheduleSettings, search_schedule

__all__ = ["ScheduleResult", "ScheduleSettings", "apply_schedule", "search_schedule"]
