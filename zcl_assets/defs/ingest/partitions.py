"""The daily partitions of the landing and staging assets: one key per UTC day that landed.

A dynamic partitions definition, not a calendar: landed data may be years old (an export from
2017) or arrive for any day, and a calendar would show every day without data as missing. The
night adds each day that landed for the first time (``zcl_assets.defs.nightly``), so the
catalog lists exactly the days with data, each with its materializations, failures and
staleness. A range of days runs as one step per asset (``BackfillPolicy.single_run``).
"""

import dagster as dg

landing_days = dg.DynamicPartitionsDefinition(name="landing_day")
single_run = dg.BackfillPolicy.single_run()


def run_days(context) -> list[str] | None:
    """The landing days a run asks for (its partitions); None for a run without partitions
    (every changed day, as a first load or a run launched by hand without a range)."""
    if context.has_partition_key_range or context.has_partition_key:
        return list(context.partition_keys)
    return None
