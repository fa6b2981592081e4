"""Dagster metadata built from frames: the tables of a run's days."""

import datetime as dt

import polars as pl

from zcl_assets.defs.metadata import DAYS_LISTED, days_metadata


def _days(n: int) -> pl.DataFrame:
    days = [(dt.date(2026, 6, 1) + dt.timedelta(days=i)).isoformat() for i in range(n)]
    return pl.DataFrame({"partition_day": days, "files": [1] * n, "rows": list(range(n)),
                         "change": ["new"] * (n - 1) + ["changed"]})


def test_a_month_of_days_is_listed_day_by_day():
    table = days_metadata(_days(DAYS_LISTED), "Days loaded")
    assert [r.data["partition_day"] for r in table.value.records][:2] == ["2026-06-01", "2026-06-02"]
    assert len(table.value.records) == DAYS_LISTED == 31


def test_a_longer_run_lists_its_months_with_the_sums_of_their_days():
    table = days_metadata(_days(45), "Days loaded")  # 2026-06-01 to 2026-07-15
    # June: 30 days, rows 0 + 1 + ... + 29 = 435; July: 15 days, rows 30 + ... + 44 = 15 * 37 = 555, the last one changed
    assert [r.data for r in table.value.records] == [
        {"month": "2026-06", "days": 30, "files": 30, "rows": 435, "change": "new 30"},
        {"month": "2026-07", "days": 15, "files": 15, "rows": 555, "change": "changed 1, new 14"},
    ]
    assert table.value.schema.columns[0].description == "Days loaded, by month (45 days)"
