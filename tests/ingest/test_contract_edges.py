"""Values that look valid to a lenient reader and are not: blank text that is not spaces,
repeated keys and columns, non-finite numbers inside JSON fields, DuckDB's timestamp words,
and a CSV with ragged lines (its good lines still stage)."""

import json
import math

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contracts.validate import check_records
from resources import LandingStore, Warehouse
from tests.ingest.valid_records import DAY, VALID
from zcl_assets.ingest.archive import load_table
from zcl_assets.ingest.staging import stage_table


def _stage(tmp_path, table: str, name: str, content: bytes | str) -> list[tuple]:
    """Land one file, stage its table; (source_row, rule, reason) of its quarantined rows, and staged rows."""
    day = tmp_path / "landing" / table / DAY
    day.mkdir(parents=True, exist_ok=True)
    (day / name).write_bytes(content.encode() if isinstance(content, str) else content)
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(tmp_path / "landing")), warehouse.archive_dir, table)
        stage_table(con, table)
        quarantined = con.execute("SELECT source_row, rule, reason FROM quarantine ORDER BY source_row").fetchall()
        staged = con.execute(f"SELECT source_row FROM staged_{table} ORDER BY source_row").fetchall()
    return quarantined, [r for (r,) in staged]


@pytest.mark.parametrize("blank", ["\t", "\n", "\u00a0", "\u200b", "\u3000", " \t\u2003 ", "\u000b", "\ufeff"])
def test_text_of_white_space_or_invisible_characters_only_is_blank(blank):
    (problems,) = check_records("sessions", [dict(VALID["sessions"], org_id=blank)])
    assert problems == [("blank", "org_id is blank")]


@pytest.mark.parametrize("text", ["a", " a ", "\u00e9", "\t-\t", "0"])
def test_text_with_a_visible_character_is_not_blank(text):
    assert check_records("sessions", [dict(VALID["sessions"], org_id=text)]) == [[]]


@pytest.mark.parametrize("word", ["epoch", "infinity", "-infinity", " epoch", "Infinity"])
def test_timestamp_words_are_not_timestamps(word):
    (problems,) = check_records("assignments", [dict(VALID["assignments"], assigned_at=word)])
    assert problems[0] == ("bad_type", f'assigned_at="{word}" is not a valid TIMESTAMPTZ')


@pytest.mark.parametrize("offset", ["+99:00", "-23:59", "+2400", "+19", " +19:00", "+18:01", "+99:00:00"])
def test_an_offset_beyond_18_hours_is_not_a_timestamp(offset):
    at = VALID["assignments"]["assigned_at"][:19] + offset
    (problems,) = check_records("assignments", [dict(VALID["assignments"], assigned_at=at)])
    assert problems[0] == ("bad_type", f'assigned_at="{at}" is not a valid TIMESTAMPTZ')


@pytest.mark.parametrize("offset", ["+00:00", "Z", "", "+0000", "+14:00", "-12:00", "+05:30", ".123456+05:45", "+18:00"])
def test_an_offset_of_18_hours_or_less_is_read(offset):
    at = VALID["assignments"]["assigned_at"][:19] + offset
    (problems,) = check_records("assignments", [dict(VALID["assignments"], assigned_at=at)])
    assert "bad_type" not in [rule for rule, _ in problems]


ADMISSION = VALID["admission_events"]  # a table without rules across rows
HEADER = "schema_version,admission_id,org_id,task_type,state,at"


def _admission_line(i: int, **cells) -> str:
    row = {"schema_version": 1, "admission_id": f"a{i}", "org_id": "o", "task_type": "t", "state": "admitted", "at": ADMISSION["at"]}
    return ",".join(str(v) for v in {**row, **cells}.values())


def test_an_infinite_timestamp_column_is_not_finite(tmp_path):
    # a typed Parquet timestamp can hold DuckDB's infinity; it is no event time
    path = tmp_path / "inf.parquet"
    with duckdb.connect() as con:
        con.execute(
            "COPY (SELECT 1 AS schema_version, 'a' || x AS admission_id, 'o' AS org_id, 't' AS task_type, 'admitted' AS state, "
            f"CAST(CASE x WHEN 1 THEN '{ADMISSION['at']}' ELSE 'infinity' END AS TIMESTAMPTZ) AS at "
            f"FROM range(1, 3) t(x)) TO '{path}'")
    quarantined, staged = _stage(tmp_path, "admission_events", "inf.parquet", path.read_bytes())
    assert staged == [1]
    # the event time names the partition first; the reason lists the domain rule too
    assert [(r, rule) for r, rule, _ in quarantined] == [(2, "wrong_partition")]
    assert "not_finite: at=infinity is not finite" in quarantined[0][2]


@pytest.mark.parametrize("value, words", [(float("nan"), "NaN"), (float("inf"), "Infinity"), (-math.inf, "-Infinity")])
def test_a_non_finite_number_inside_a_json_field_is_refused(value, words):
    event = dict(VALID["experiment_events"], allocation={"c": value, "b": 0.5})
    assert json.dumps(event).count(words) == 1  # Python writes NaN and Infinity into JSON, and DuckDB reads them
    (problems,) = check_records("experiment_events", [event])
    assert problems == [("not_finite", "allocation holds a number that is not finite (NaN or infinity)")]


def test_a_number_too_large_for_a_double_inside_a_json_field_is_refused(tmp_path):
    line = json.dumps(VALID["experiment_events"]).replace('"c": 0.5', '"c": 1e999')
    quarantined, staged = _stage(tmp_path, "experiment_events", "e.jsonl", line + "\n")
    assert staged == [] and [rule for _, rule, _ in quarantined] == ["not_finite"]


def test_a_repeated_key_of_a_json_line_is_a_duplicate_field(tmp_path):
    good = json.dumps(ADMISSION)
    repeated = good[:-1] + ', "state": "launched"}'  # "state" twice: a reader keeps one of them silently
    quarantined, staged = _stage(tmp_path, "admission_events", "a.jsonl", good + "\n" + repeated.replace('"a1"', '"a2"') + "\n")
    assert staged == [1]
    assert quarantined == [(2, "duplicate_field", "duplicate_field: key state appears more than once")]


def test_a_repeated_key_inside_a_json_field_is_a_duplicate_field(tmp_path):
    line = json.dumps(VALID["experiment_events"]).replace('"c": 0.5', '"c": 0.5, "c": 0.9')
    (problems,) = check_records("experiment_events", [json.loads(line)])  # json.loads keeps one "c": check the file
    assert problems == []
    quarantined, _ = _stage(tmp_path, "experiment_events", "e.jsonl", line + "\n")
    assert ("duplicate_field", "duplicate_field: allocation holds an object with a key that appears more than once") in [
        (rule, reason.split("; ")[0]) for _, rule, reason in quarantined]


def test_a_repeated_csv_column_is_a_duplicate_field_on_every_row(tmp_path):
    lines = [HEADER + ",state"] + [_admission_line(i) + ",launched" for i in (1, 2)]
    quarantined, staged = _stage(tmp_path, "admission_events", "a.csv", "\n".join(lines) + "\n")
    assert staged == []
    assert quarantined == [(i, "duplicate_field", "duplicate_field: column state appears more than once") for i in (1, 2)]


def test_a_repeated_parquet_column_is_a_duplicate_field_on_every_row(tmp_path):
    names = ["schema_version", "admission_id", "org_id", "task_type", "state", "at", "state"]
    values = [[1, 1], ["a1", "a2"], ["o", "o"], ["t", "t"], ["admitted"] * 2, [ADMISSION["at"]] * 2, ["launched"] * 2]
    path = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(v) for v in values], names=names), path)
    quarantined, staged = _stage(tmp_path, "admission_events", "dup.parquet", path.read_bytes())
    assert staged == []
    assert quarantined == [(i, "duplicate_field", "duplicate_field: column state appears more than once") for i in (1, 2)]


def test_a_ragged_csv_quarantines_its_bad_lines_and_stages_the_others(tmp_path):
    lines = [HEADER, _admission_line(1),
             "1,a2,o,t",                                  # too few cells (a lenient reader pads them with nulls)
             _admission_line(3) + ",surplus",             # too many
             _admission_line(4, org_id='"o\nwith a newline"'),  # a quoted newline: one record on two lines
             "",                                          # a blank line is skipped
             _admission_line(5)]
    quarantined, staged = _stage(tmp_path, "admission_events", "a.csv", "\n".join(lines) + "\n")
    assert staged == [1, 4, 5]
    assert quarantined == [
        (2, "malformed_record", "malformed_record: line 3 has 4 cells; the header has 6"),
        (3, "malformed_record", "malformed_record: line 4 has 7 cells; the header has 6"),
    ]


def test_a_sound_csv_reads_as_before(tmp_path):
    # the fast path: every line has the header's cells; an empty cell is missing, a quoted one is text
    frame = pl.DataFrame([dict(ADMISSION, admission_id=f'a "{i}"', arm=None if i else "b") for i in range(3)])
    quarantined, staged = _stage(tmp_path, "admission_events", "a.csv", frame.write_csv())
    assert (quarantined, staged) == ([], [1, 2, 3])
