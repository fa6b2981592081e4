"""Every kind of bad input found when trying to break the pipeline, landed at once beside
good data, on two consecutive nights: both nights succeed (the blocking conservation checks
pass: raw = staged + quarantined for every table and day), every kind is quarantined with
the rule expected of it, and the good rows are staged."""

import json
import os
import socket

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tests.end_to_end.test_bad_input import GOOD_EXPERIMENT, _assignment, _write
from tests.end_to_end.test_blockers import WIDE, corrupt_data_pages
from tests.warehouse_checks import conservation_gaps, run_one_night

DAY, NEXT = "2026-10-02", "2026-10-03"
SESSION = {"schema_version": 1, "org_id": "o", "task_type": "t", "started_at": f"{DAY}T09:00:00+00:00",
           "experiment_id": "e1", "delivered_arm": "control"}
EXPECTED = {  # kind: (table, file, rule)
    "mde of 1e308": ("experiments", "reg.jsonl", "out_of_range"),
    "1,000 arms": ("experiments", "reg.jsonl", "bad_arms"),
    "NaN inside an allocation": ("experiment_events", "events.jsonl", "not_finite"),
    "a key twice in a JSON object": ("experiment_events", "events.jsonl", "duplicate_field"),
    "a tab as org_id": ("sessions", "s.jsonl", "blank"),
    "an e-mail address as user_id": ("sessions", "s.jsonl", "sensitive_value"),
    "epoch as a timestamp": ("sessions", "s.jsonl", "bad_type"),
    "half a surrogate pair escaped in a session id": ("sessions", "s.jsonl", "unpaired_surrogate"),
    "filename and file_row_number columns": ("assignments", "named.parquet", None),  # staged
    "corrupt Parquet pages": ("assignments", "partial.parquet", "unreadable_file"),
    "a column twice in a Parquet file": ("assignments", "twice.parquet", "duplicate_field"),
    "a column twice in a CSV header": ("assignments", "twice.csv", "duplicate_field"),
    "a ragged CSV line": ("assignments", "ragged.csv", "malformed_record"),
    "a link out of the landing": ("assignments", f"assignments/{DAY}/escape.jsonl", "link_outside_landing"),
    "a day folder linked out": ("assignments", "assignments/2026-10-05", "link_outside_landing"),
    "a dangling link": ("assignments", f"assignments/{DAY}/dangling.jsonl", "dangling_link"),
    "a link to itself": ("assignments", f"assignments/{DAY}/self.jsonl", "link_loop"),
    "a FIFO": ("assignments", f"assignments/{DAY}/pipe.jsonl", "not_a_regular_file"),
    "a socket": ("assignments", f"assignments/{DAY}/sock.jsonl", "not_a_regular_file"),
}


def _land(landing, outside, monkeypatch):
    _write(landing / "experiments" / "2026-10-01" / "reg.jsonl", [
        GOOD_EXPERIMENT, dict(GOOD_EXPERIMENT, experiment_id="huge", mde=1e308), dict(GOOD_EXPERIMENT, experiment_id="wide", arms=WIDE)])
    event = {"schema_version": 1, "experiment_id": "e1", "status": "active", "at": f"{DAY}T08:00:00+00:00"}
    _write(landing / "experiment_events" / DAY / "events.jsonl", [
        event, json.dumps(dict(event, status="completed", allocation={"control": float("nan"), "treatment": 0.5})),
        json.dumps(dict(event, status="cancelled"))[:-1] + ', "status": "reopened"}'])
    _write(landing / "sessions" / DAY / "s.jsonl", [
        dict(SESSION, session_id="s1", user_id="u1"), dict(SESSION, session_id="s8", user_id="u8", org_id="\t"),
        dict(SESSION, session_id="s9", user_id="ada@example.com"), dict(SESSION, session_id="s10", user_id="u10", started_at="epoch"),
        dict(SESSION, session_id="s11\ud800", user_id="u11")])  # json.dumps writes the escape \ud800
    day = landing / "assignments" / DAY
    _write(day / "good.jsonl", [_assignment("s1")])
    pl.DataFrame([dict(_assignment("s2"), filename="x", file_row_number=9)]).write_parquet(day / "named.parquet")
    pl.DataFrame([_assignment(f"c{i}") for i in range(50)]).write_parquet(day / "partial.parquet")
    corrupt_data_pages(day / "partial.parquet")
    row = _assignment("s3")
    pq.write_table(pa.Table.from_arrays([pa.array([v]) for v in [*row.values(), "s3b"]], names=[*row, "session_id"]),
                   day / "twice.parquet")
    header = ",".join(row)
    (day / "twice.csv").write_text(f"{header},arm\n" + ",".join(str(v) for v in row.values()) + ",treatment\n")
    (day / "ragged.csv").write_text(f"{header}\n" + ",".join(str(v) for v in _assignment("s4").values()) + "\n1,s5,e1\n")
    outside.mkdir()
    (outside / "secret.jsonl").write_text(json.dumps(_assignment("s6")) + "\n")
    (day / "escape.jsonl").symlink_to(outside / "secret.jsonl")
    (landing / "assignments" / "2026-10-05").symlink_to(outside, target_is_directory=True)
    (day / "dangling.jsonl").symlink_to(day / "nothing.jsonl")
    (day / "self.jsonl").symlink_to(day / "self.jsonl")
    os.mkfifo(day / "pipe.jsonl")
    server = socket.socket(socket.AF_UNIX)
    with monkeypatch.context() as here:
        here.chdir(day)
        server.bind("sock.jsonl")
    return server


def _check(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        found = set(con.execute("SELECT source_table, source_file, rule FROM quarantine").fetchall())
        staged = sorted(r for (r,) in con.execute("SELECT session_id FROM staged_assignments").fetchall())
    missing = {kind: where for kind, where in EXPECTED.items() if where[2] and where not in found}
    assert missing == {}
    return staged


def test_every_kind_of_bad_input_at_once_stops_no_night(pipeline_paths, tmp_path, monkeypatch):
    landing, warehouse = pipeline_paths
    server = _land(landing, tmp_path / "outside", monkeypatch)
    try:
        run_one_night(landing, warehouse, NEXT)
        assert _check(warehouse) == ["s1", "s2", "s4"]  # good, lineage-named columns, the good line of a ragged CSV
        _write(landing / "assignments" / NEXT / "more.jsonl", [_assignment("s7", at=f"{NEXT}T10:00:00+00:00")])
        run_one_night(landing, warehouse, "2026-10-04")
        assert _check(warehouse) == ["s1", "s2", "s4", "s7"]
    finally:
        server.close()
