"""The daily partitions of the landing and staging assets: one key per UTC day that landed.

A dynamic partitions definition, not a calendar: landed data may be years old (an export from
2017) or arrive for any day, and a calendar would show every day without data as missing. The
night adds each day that landed for the first time (``zcl_assets.defs.nightly``), so the
catalog lists exactly the days with data, each with its materializations, failures and
staleness. A range of days runs as one step (``BackfillPolicy.single_run``).
"""

import dagster as dg

landing_days = dg.DynamicPartitionsDefinition(name="landing_day")
single_run = dg.BackfillPolicy.single_run()


def run_days(context) -> list[str] | None:
    """The landing days a run asks for (its partitions); None for a run without partitions (every
    changed day, as a first load or a run launched by hand without a range).

    The keys of the range are read in one query of the instance's keys, in their order (the order
    days were added, not the calendar's), not from ``context.partition_keys``, which asks the
    instance about each key of the range, one query a day.
    """
    if not (context.has_partition_key_range or context.has_partition_key):
        return None
    keys = context.partition_key_range
    return keys_between(context.instance.get_dynamic_partitions(landing_days.name), keys.start, keys.end)


def keys_between(order: list[str], start: str, end: str) -> list[str]:
    """The keys of ``order`` from ``start`` to ``end``, both included, in that order.

    >>> keys_between(["2026-01-02", "2026-01-05", "2026-01-01", "2026-01-03"], "2026-01-05", "2026-01-01")
    ['2026-01-05', '2026-01-01']
    """
    first, last = order.index(start), order.index(end)
    return order[first:last + 1]
