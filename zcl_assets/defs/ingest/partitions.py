"""The daily partitions of the landing tables: the UTC day of the records' event time."""

import dagster as dg

# Landing days before this date cannot be represented; the bundled and example data start
# in 2017. `end_offset=1` makes today's (still open) day a partition too.
PARTITIONS_START = "2016-01-01"

landing_days = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, end_offset=1, timezone="UTC")
