"""The daily partitions of the landing and staging assets: one key per UTC day that landed.

A dynamic partitions definition, not a calendar: landed data may be years old (an export from
2017) or arrive for any day, and a calendar would show every day without data as missing. The
night adds each day that landed for the first time (``zcl_assets.defs.nightly``), so the
catalog lists exactly the days with data, each with its materializations, failures and
staleness. A range of days runs as one step (``BackfillPolicy.single_run``).
"""

import datetime as dt

import dagster as dg

landing_days = dg.DynamicPartitionsDefinition(name="landing_day")
single_run = dg.BackfillPolicy.single_run()


def run_days(context) -> list[str] | None:
    """The landing days a run asks for: every calendar day of its partition range (the days
    without data are no partitions, and every reader of this list intersects it with the days
    that landed); None for a run without partitions (every changed day, as a first load or a
    run launched by hand without a range).

    The range's ends are read, not ``context.partition_keys``, which asks the instance about
    each key of the range, one query a day in every step.
    """
    if not (context.has_partition_key_range or context.has_partition_key):
        return None
    keys = context.partition_key_range
    return calendar_days(keys.start, keys.end)


def calendar_days(start: str, end: str) -> list[str]:
    """Every day from ``start`` to ``end``, both included, as ``YYYY-MM-DD``.

    >>> calendar_days("2026-02-27", "2026-03-02")
    ['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02']
    """
    first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    return [(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]
