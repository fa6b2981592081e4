"""write_landing splits records into day folders: every row once, in its day, in input order."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from zcl_assets.importers.landing_writer import write_landing

DAY0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)

# A row: its position in the input and an event time (minutes after DAY0), or None when the
# time is missing; missing times land in the fallback day.
rows = st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=6 * 24 * 60 - 1)), min_size=1, max_size=60)


def _expected(minutes: list[int | None], fallback: dt.date) -> dict[str, list[int]]:
    """Row positions per day, in input order, counted in plain Python."""
    out: dict[str, list[int]] = {}
    for i, m in enumerate(minutes):
        day = fallback if m is None else (DAY0 + dt.timedelta(minutes=m)).date()
        out.setdefault(day.isoformat(), []).append(i)
    return out


def _frame(minutes: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame({
        "row": list(range(len(minutes))),
        "at": [None if m is None else DAY0 + dt.timedelta(minutes=m) for m in minutes],
    }, schema={"row": pl.Int64, "at": pl.Datetime("us", "UTC")})


@settings(max_examples=40)
@given(minutes=rows, fmt=st.sampled_from(["parquet", "jsonl"]))
def test_each_row_lands_once_in_its_day_in_input_order(tmp_path_factory, minutes, fmt):
    landing = tmp_path_factory.mktemp("landing")
    fallback = dt.date(2026, 2, 27)
    written = write_landing(_frame(minutes), landing, "events", time_column="at", name="src", fallback_day=fallback, fmt=fmt)

    found: dict[str, list[int]] = {}
    for path in sorted((landing / "events").glob(f"*/src.{fmt}")):
        if fmt == "parquet":
            found[path.parent.name] = pl.read_parquet(path).get_column("row").to_list()
        else:
            found[path.parent.name] = [json.loads(line)["row"] for line in path.read_text().splitlines()]
    assert found == _expected(minutes, fallback)
    assert written.rows == len(minutes)
    assert written.rows_per_day == {day: len(r) for day, r in found.items()}


def test_a_rewrite_without_a_day_removes_that_day_and_leaves_identical_files_untouched(tmp_path):
    first = _frame([10, 24 * 60 + 5, 10])  # day 1, day 2, day 1
    write_landing(first, tmp_path, "events", time_column="at", name="src", fmt="parquet")
    day1 = tmp_path / "events" / "2026-03-01" / "src.parquet"
    stamp = day1.stat().st_mtime_ns
    again = write_landing(first.filter(pl.col("row") != 1), tmp_path, "events", time_column="at", name="src", fmt="parquet")
    assert [p.parent.name for p in again.removed_stale] == ["2026-03-02"]
    assert day1.stat().st_mtime_ns == stamp  # the same rows again: the file is not rewritten
    assert pl.read_parquet(day1).get_column("row").to_list() == [0, 2]
