"""The same records landed as JSON Lines, CSV (nested fields as JSON text) and Parquet stage alike."""

import json

import polars as pl
import pytest

from resources import LandingStore, Warehouse
from zcl_assets.ingest.archive import load_table
from zcl_assets.ingest.staging import held_table, stage_table

ARMS = [{"name": "control", "payload": {"docs": ["a"]}, "allocation": 0.5}, {"name": "treatment", "payload": {}, "allocation": 0.5}]
REGISTRATION = {
    "schema_version": 1, "experiment_id": "e1", "org_id": "o", "task_type": "t", "kind": "order", "hypothesis": "h",
    "control_arm": "control", "primary_metric": "time_minutes", "direction": "decrease", "mde": 2.0, "alpha": 0.05,
    "power": 0.8, "baseline_mean": 30.0, "baseline_sd": 10.0, "min_samples_per_arm": 50, "randomization_unit": "user",
    "registered_at": "2026-10-01T08:00:00+02:00", "metric_caps": {"time_minutes": 120},
}


def test_jsonl_csv_and_parquet_stage_the_same_registration(tmp_path):
    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    (day / "a.jsonl").write_text(json.dumps({**REGISTRATION, "arms": ARMS}) + "\n")
    as_text = {**REGISTRATION, "experiment_id": "e2", "arms": json.dumps(ARMS), "metric_caps": json.dumps(REGISTRATION["metric_caps"])}
    pl.DataFrame([as_text]).write_csv(day / "b.csv")
    pl.DataFrame([{**as_text, "experiment_id": "e3"}]).write_parquet(day / "c.parquet")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        loaded = load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        assert [(d.partition_day, d.files, d.rows, d.change) for d in loaded.days] == [("2026-10-01", 3, 3, "new")]
        result = stage_table(con, "experiments")
        quarantined = con.execute("SELECT rule, reason FROM quarantine").fetchall()
        assert quarantined == []
        assert result.days == [("2026-10-01", 3, 3, 0)]
        staged = con.execute("SELECT * FROM staged_experiments ORDER BY experiment_id").pl()
        assert staged.get_column("experiment_id").to_list() == ["e1", "e2", "e3"]
        assert staged.get_column("source_file").to_list() == ["a.jsonl", "b.csv", "c.parquet"]
        # Nested fields arrive as the same JSON whatever the file format.
        assert [json.loads(a) for a in staged.get_column("arms")] == [ARMS] * 3
        assert [json.loads(c) for c in staged.get_column("metric_caps")] == [{"time_minutes": 120}] * 3
        # Optional fields left out get their contract defaults.
        assert staged.get_column("sessions_per_unit").to_list() == ["many"] * 3
        assert [json.loads(g) for g in staged.get_column("guardrails")] == [[]] * 3
        assert staged.get_column("expected_verified_share").to_list() == [1.0] * 3
        # The +02:00 offset is kept: 08:00+02:00 is 06:00 UTC, on the partition day.
        assert {t.hour for t in staged.get_column("registered_at")} == {6}
        # Staging again with nothing pending changes nothing.
        assert not stage_table(con, "experiments").rechecked


def test_a_line_that_is_not_utf8_is_quarantined_as_invalid_encoding_and_its_neighbours_stage(tmp_path):
    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    good = json.dumps({**REGISTRATION, "arms": ARMS}).encode()
    bad = json.dumps({**REGISTRATION, "experiment_id": "e2", "arms": ARMS, "hypothesis": "h"}).encode().replace(
        b'"hypothesis": "h"', b'"hypothesis": "caf\xe9"')  # Latin-1 e-acute: not UTF-8
    (day / "a.jsonl").write_bytes(good + b"\n" + bad + b"\n" + good.replace(b'"e1"', b'"e3"') + b"\n")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        stage_table(con, "experiments")
        assert con.execute("SELECT source_row, rule, reason FROM quarantine").fetchall() == [
            (2, "invalid_encoding", "invalid_encoding: line is not valid UTF-8")]
        assert con.execute("SELECT experiment_id FROM staged_experiments ORDER BY 1").fetchall() == [("e1",), ("e3",)]



def test_a_json_string_with_an_unpaired_surrogate_is_quarantined_and_the_rest_of_the_file_stages(tmp_path):
    # "\ud800" is valid JSON syntax but no character: Python decodes it to a lone surrogate, which
    # no UTF-8 text holds, and DuckDB refuses the line; a pair ("\ud83d\ude00") is one character
    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    line = json.dumps({**REGISTRATION, "arms": ARMS})  # ASCII: json.dumps escapes every non-ASCII character
    (day / "a.jsonl").write_text("\n".join([
        line,
        line.replace('"e1"', '"e2"').replace('"hypothesis": "h"', '"hypothesis": "h\\ud800"'),  # a lone high half
        line.replace('"e1"', '"e3"').replace('"org_id"', '"org_\\udc00id"'),  # a lone low half, in a key
        line.replace('"e1"', '"e4"').replace('"hypothesis": "h"', '"hypothesis": "h\\ud83d\\ude00"'),  # a pair
        line.replace('"e1"', '"e5"').replace('"hypothesis": "h"', '"hypothesis": "h\\\\ud800"'),  # a backslash, then "ud800"
    ]) + "\n")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        assert stage_table(con, "experiments").days == [("2026-10-01", 5, 3, 2)]
        why = "half of a UTF-16 surrogate pair without its other half, which is no Unicode character"
        assert con.execute("SELECT source_row, rule, reason FROM quarantine ORDER BY source_row").fetchall() == [
            (2, "unpaired_surrogate", f'unpaired_surrogate: "hypothesis" holds \\ud800, {why}'),
            (3, "unpaired_surrogate", f'unpaired_surrogate: "org_\\udc00id" holds \\udc00, {why}')]
        # the record keeps the escape as landed: text that any later step can encode
        (record,) = con.execute("SELECT record FROM quarantine WHERE source_row = 2").fetchone()
        assert '"hypothesis": "h\\ud800"' in record
        assert con.execute("SELECT experiment_id, hypothesis FROM staged_experiments ORDER BY 1").fetchall() == [
            ("e1", "h"), ("e4", "h\N{GRINNING FACE}"), ("e5", "h\\ud800")]


def test_check_records_finds_an_unpaired_surrogate_as_staging_does():
    from contracts.validate import check_records

    problems = check_records("experiments", [{**REGISTRATION, "arms": ARMS, "hypothesis": "h\ud800"}])
    assert [rule for rule, _ in problems[0]] == ["unpaired_surrogate"]


def test_a_csv_cell_of_3_mb_stages_as_the_same_jsonl_line_does_with_its_neighbours(tmp_path):
    # pyarrow refuses a cell longer than its 1 MB block and Python's csv one longer than 131,072
    # characters by default; a JSON Lines line has no such limit, and neither has a CSV cell
    landing = tmp_path / "landing"
    big = "y" * 3_000_000
    rows = [{"schema_version": 1, "session_id": f"C-{name}", "org_id": "org1", "user_id": "u", "task_type": "bugfix",
             "started_at": "2026-11-04T05:00:00Z", "model": model} for name, model in (("ok1", "m"), ("big", big), ("ok2", "m"))]
    for day, suffix in (("2026-11-04", "csv"), ("2026-11-05", "jsonl")):
        folder = landing / "sessions" / day
        folder.mkdir(parents=True)
        landed = [dict(r, session_id=f"{r['session_id']}-{suffix}", started_at=f"{day}T05:00:00Z") for r in rows]
        if suffix == "csv":
            pl.DataFrame(landed).write_csv(folder / "s.csv")
        else:
            (folder / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in landed))
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "sessions")
        # per day: 3 raw rows, 3 staged, none quarantined
        assert stage_table(con, "sessions").days == [("2026-11-04", 3, 3, 0), ("2026-11-05", 3, 3, 0)]
        staged = con.execute("SELECT session_id, length(model) FROM staged_sessions ORDER BY partition_day, source_row").fetchall()
        assert staged == [("C-ok1-csv", 1), ("C-big-csv", 3_000_000), ("C-ok2-csv", 1),
                          ("C-ok1-jsonl", 1), ("C-big-jsonl", 3_000_000), ("C-ok2-jsonl", 1)]

def test_parquet_decimal_and_small_integer_columns_stage_as_their_fields(tmp_path):
    # a writer that stores the MDE and the baseline as DECIMAL(10, 3) and the minimum sample
    # as a 16-bit integer: the values are the same numbers, staged without a problem
    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    as_text = {**REGISTRATION, "arms": json.dumps(ARMS), "metric_caps": json.dumps(REGISTRATION["metric_caps"])}
    from decimal import Decimal

    frame = pl.DataFrame([as_text]).with_columns(
        pl.Series("mde", [Decimal("2.000")], dtype=pl.Decimal(10, 3)),
        pl.Series("baseline_mean", [Decimal("30.125")], dtype=pl.Decimal(10, 3)),
        pl.col("min_samples_per_arm").cast(pl.Int16))
    frame.write_parquet(day / "a.parquet")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        stage_table(con, "experiments")
        assert con.execute("SELECT rule, reason FROM quarantine").fetchall() == []
        assert con.execute("SELECT mde, baseline_mean, min_samples_per_arm FROM staged_experiments").fetchall() == [
            (2.0, 30.125, 50)]


def test_a_parquet_decimal_column_stages_into_an_integer_field_only_when_whole(tmp_path):
    # min_samples_per_arm is a BIGINT field; a writer that stores it as DECIMAL(12, 2): 50.00
    # is the integer 50, 50.50 is not an integer and is refused as bad_type (nothing staged)
    from decimal import Decimal

    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    rows = [{**REGISTRATION, "experiment_id": eid, "arms": json.dumps(ARMS),
             "metric_caps": json.dumps(REGISTRATION["metric_caps"])} for eid in ("exp-whole", "exp-half")]
    frame = pl.DataFrame(rows).with_columns(
        pl.Series("min_samples_per_arm", [Decimal("50.00"), Decimal("50.50")], dtype=pl.Decimal(12, 2)))
    frame.write_parquet(day / "a.parquet")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        stage_table(con, "experiments")
        assert con.execute("SELECT experiment_id, min_samples_per_arm FROM staged_experiments").fetchall() == [
            ("exp-whole", 50)]
        (rule, reason, row), = con.execute("SELECT rule, reason, source_row FROM quarantine").fetchall()
        assert (rule, row) == ("bad_type", 2) and "min_samples_per_arm" in reason and "50.5" in reason  # rows from 1


def test_parquet_json_columns_stage_as_the_same_json(tmp_path):
    # Parquet's JSON logical type (DuckDB reads the column as JSON) for the nested fields
    import pyarrow as pa
    import pyarrow.parquet as pq

    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    as_text = {**REGISTRATION, "arms": json.dumps(ARMS), "metric_caps": json.dumps(REGISTRATION["metric_caps"])}
    table = pl.DataFrame([as_text]).to_arrow()
    for name in ("arms", "metric_caps"):
        table = table.set_column(table.schema.get_field_index(name), name,
                                 pa.array(table.column(name).to_pylist(), type=pa.json_(pa.utf8())))
    pq.write_table(table, day / "a.parquet")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        stage_table(con, "experiments")
        assert con.execute("SELECT rule, reason FROM quarantine").fetchall() == []
        arms, caps = con.execute("SELECT arms, metric_caps FROM staged_experiments").fetchone()
        assert (json.loads(arms), json.loads(caps)) == (ARMS, {"time_minutes": 120})


def test_a_parquet_list_of_texts_stages_as_a_json_array(tmp_path):
    # context_doc_ids written as a Parquet list of strings (DuckDB: VARCHAR[]) is the JSON array
    from tests.ingest.valid_records import DAY, VALID

    landing = tmp_path / "landing"
    day = landing / "sessions" / DAY
    day.mkdir(parents=True)
    pl.DataFrame([VALID["sessions"]]).write_parquet(day / "s.parquet")
    assert pl.read_parquet(day / "s.parquet").schema["context_doc_ids"] == pl.List(pl.String)
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "sessions")
        stage_table(con, "sessions")
        assert con.execute("SELECT rule, reason FROM quarantine").fetchall() == []
        (ids,) = con.execute("SELECT context_doc_ids FROM staged_sessions").fetchone()
        assert json.loads(ids) == ["d1", "d2"]


def test_a_parquet_boolean_column_stages_as_the_boolean_field(tmp_path):
    from tests.ingest.valid_records import DAY, VALID

    landing = tmp_path / "landing"
    day = landing / "outcomes" / DAY
    day.mkdir(parents=True)
    pl.DataFrame([VALID["outcomes"], {**VALID["outcomes"], "evaluator_id": "ev2", "success": False}]).write_parquet(
        day / "o.parquet")
    assert pl.read_parquet(day / "o.parquet").schema["success"] == pl.Boolean
    for table in ("experiments", "sessions", "assignments"):  # the outcomes' session, known and assigned
        (landing / table / DAY).mkdir(parents=True)
        (landing / table / DAY / "a.jsonl").write_text(json.dumps(VALID[table]) + "\n")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        for table in ("experiments", "sessions", "assignments", "outcomes"):
            load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, table)
            stage_table(con, table)
        assert con.execute("SELECT rule FROM quarantine").fetchall() == []
        assert con.execute("SELECT evaluator_id, success FROM staged_outcomes ORDER BY 1").fetchall() == [
            ("ev", True), ("ev2", False)]


def test_a_csv_boolean_is_read_as_docs_landing_md_says(tmp_path):
    # docs/landing.md: true/false, t/f, yes/no, y/n, 1/0 in any case; anything else is bad_type.
    cells = ["yes", "No", "T", "f", "Y", "n", "1", "0", "TRUE", "false", "2", "maybe", "oui"]
    n = len(cells)
    quarantined, held = _stage_outcomes_csv(tmp_path, {
        "schema_version": ["1"] * n, "session_id": [f"s{i}" for i in range(n)], "success": cells,
        "recorded_at": ["2026-10-01T10:00:00+00:00"] * n, "evaluator_id": ["ev"] * n, "evaluator_version": ["1"] * n,
        "evaluator_kind": ["evaluator"] * n})
    assert [cells[int(s[1:])] for s, rule, _ in sorted(quarantined) if rule == "bad_type"] == ["2", "maybe", "oui"]
    # every other row is well typed and waits for its session (unknown_session), its value read
    assert [held[f"s{i}"]["success"] for i in range(10)] == [True, False, True, False, True, False, True, False, True,
                                                            False]


def _stage_outcomes_csv(tmp_path, columns: dict, quote_style: str = "necessary") -> tuple[list, dict]:
    """Land ``columns`` as one outcomes CSV, stage it; return the quarantine's (session_id,
    rule, reason) but unknown_session, and the held rows by session_id (all wait for a session)."""
    landing = tmp_path / "landing"
    day = landing / "outcomes" / "2026-10-01"
    day.mkdir(parents=True)
    pl.DataFrame(columns).write_csv(day / "o.csv", quote_style=quote_style)
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "outcomes")
        stage_table(con, "outcomes")
        quarantined = con.execute("SELECT json_extract_string(record, '$.session_id'), rule, reason FROM quarantine "
                                  "WHERE rule <> 'unknown_session'").fetchall()
        held = con.execute(f"SELECT * FROM {held_table('outcomes')}").pl()
    return quarantined, {row["session_id"]: row for row in held.iter_rows(named=True)}


def test_a_quarantined_parquet_row_keeps_every_column_it_landed_with(tmp_path):
    # the second registration's mde is negative (out_of_range); its record holds every column
    # of the file, the writer's own "__note" and "extra" included: the contract's with their
    # values, the others by name only (they may hold anything, a credential among them)
    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    rows = [{**REGISTRATION, "experiment_id": eid, "mde": mde, "arms": json.dumps(ARMS),
             "metric_caps": json.dumps(REGISTRATION["metric_caps"]), "__note": f"note {eid}", "extra": 7}
            for eid, mde in (("exp-good", 2.0), ("exp-bad", -1.0))]
    pl.DataFrame(rows).write_parquet(day / "a.parquet")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        stage_table(con, "experiments")
        (rule, record), = con.execute("SELECT rule, record FROM quarantine").fetchall()
    kept = json.loads(record)
    assert rule == "out_of_range" and set(kept) == set(rows[1])
    assert (kept["experiment_id"], kept["mde"], kept["__note"], kept["extra"]) == (
        "exp-bad", -1.0, "<redacted:not_in_contract>", "<redacted:not_in_contract>")


def test_parquet_struct_and_map_columns_stage_as_json_objects(tmp_path):
    # metric_caps (a JSON object field) written by one writer as a STRUCT column and by another
    # as a MAP column: both stage as the object {"time_minutes": 120.0}
    import pyarrow as pa
    import pyarrow.parquet as pq

    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    base = pl.DataFrame([{**REGISTRATION, "arms": json.dumps(ARMS)}]).drop("metric_caps").to_arrow()
    caps = {"struct": pa.array([{"time_minutes": 120.0}], type=pa.struct([("time_minutes", pa.float64())])),
            "map": pa.array([[("time_minutes", 120.0)]], type=pa.map_(pa.string(), pa.float64()))}
    for kind, column in caps.items():
        table = base.set_column(base.schema.get_field_index("experiment_id"), "experiment_id", pa.array([f"e-{kind}"]))
        pq.write_table(table.append_column("metric_caps", column), day / f"{kind}.parquet")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        stage_table(con, "experiments")
        assert con.execute("SELECT rule, reason FROM quarantine").fetchall() == []
        staged = dict(con.execute("SELECT experiment_id, CAST(metric_caps AS VARCHAR) FROM staged_experiments").fetchall())
    assert {k: json.loads(v) for k, v in staged.items()} == {"e-struct": {"time_minutes": 120.0},
                                                            "e-map": {"time_minutes": 120.0}}


def test_a_csv_cell_of_spaces_is_missing_in_a_typed_field_and_blank_in_a_text_field(tmp_path):
    # docs/landing.md: an empty cell is a missing value. A cell of spaces reads the same in a
    # typed field (tokens: null, the row waits for its session as the others do); in a text
    # field it is text, which a field that must not be blank refuses (evaluator_id: blank).
    quarantined, held = _stage_outcomes_csv(tmp_path, {
        "schema_version": ["1", "1", "1"], "session_id": ["s0", "s1", "s2"], "success": ["true"] * 3,
        "tokens": ["   ", "12", "5"], "recorded_at": ["2026-10-01T10:00:00+00:00"] * 3,
        "evaluator_id": ["ev", "ev", "   "], "evaluator_version": ["1"] * 3, "evaluator_kind": ["evaluator"] * 3},
        quote_style="always")
    assert quarantined == [("s2", "blank", "blank: evaluator_id is blank")]
    assert {s: row["tokens"] for s, row in held.items()} == {"s0": None, "s1": 12.0}


def _quarantined_csv_records(tmp_path, nights: list[list[tuple[str, dict]]]) -> list[tuple[str, str, dict]]:
    """Land and stage registrations as CSV night by night (each night a list of (day, row)
    files); the quarantine's (file, rule, record) at the end."""
    landing = tmp_path / "landing"
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        for night in nights:
            for day, row in night:
                folder = landing / "experiments" / day
                folder.mkdir(parents=True, exist_ok=True)
                pl.DataFrame([row]).write_csv(folder / f"{row['experiment_id']}.csv")
            load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
            stage_table(con, "experiments")
        rows = con.execute("SELECT source_file, rule, record FROM quarantine ORDER BY ALL").fetchall()
    return [(name, rule, json.loads(record)) for name, rule, record in rows]


def test_a_quarantined_csv_row_names_the_columns_of_its_own_file_whatever_lands_beside_it(tmp_path):
    # day 1's file has a column of its own ("note"); day 2's file lacks it and has a bad alpha.
    # Staged in one pass or night by night, day 2's record holds exactly its own file's
    # columns: the columns of another file staged in the same pass never appear in it
    as_text = {**REGISTRATION, "arms": json.dumps(ARMS), "metric_caps": json.dumps(REGISTRATION["metric_caps"])}
    first = ("2026-10-01", {**as_text, "experiment_id": "e1", "note": "x"})
    second = ("2026-10-02", {**as_text, "experiment_id": "e2", "alpha": "lots", "registered_at": "2026-10-02T08:00:00+00:00"})
    together = _quarantined_csv_records(tmp_path / "together", [[first, second]])
    nightly = _quarantined_csv_records(tmp_path / "nightly", [[first], [second]])
    assert together == nightly
    ((name, rule, record),) = together
    assert (name, rule) == ("e2.csv", "bad_type")
    assert set(record) == set(second[1]) and record["alpha"] == "lots"


def test_a_memory_error_while_staging_stops_the_pass_instead_of_quarantining_the_file(tmp_path, monkeypatch):
    # the process ran out of memory, not the file: nothing is quarantined, the days stay pending
    import duckdb

    from zcl_assets.ingest import staging

    landing = tmp_path / "landing"
    day = landing / "experiments" / "2026-10-01"
    day.mkdir(parents=True)
    (day / "a.jsonl").write_text(json.dumps({**REGISTRATION, "arms": ARMS}) + "\n")
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "experiments")
        for where in ("read_json_lines", "_insert"):  # reading the file, running its statement
            for error in (MemoryError(), duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate")):
                original, calls = getattr(staging, where), []

                def exhausted(*args, error=error, original=original, calls=calls):  # once, then as usual
                    calls.append(args)
                    if len(calls) == 1:
                        raise error
                    return original(*args)
                monkeypatch.setattr(staging, where, exhausted)
                with pytest.raises(type(error)):
                    stage_table(con, "experiments")
                monkeypatch.undo()
                assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
        assert stage_table(con, "experiments").days == [("2026-10-01", 1, 1, 0)]
