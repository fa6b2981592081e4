"""The four inputs that used to stop every later night, landed beside good data: a Parquet
file with columns named ``filename`` and ``file_row_number``, a Parquet file whose footer is
valid but whose data pages are corrupt (a partial upload), a registration with an MDE of
1e308 and one with 1,000 arms. Each night succeeds, the good rows are staged and each
blocker is quarantined with its reason, this night and the next; the next night does not
read the quarantined file again, and reads it once it changed."""

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from tests.end_to_end.test_bad_input import GOOD_EXPERIMENT, _assignment, _write
from tests.warehouse_checks import conservation_gaps
from zcl_assets.runner import run_night

DAY, NEXT = "2026-10-02", "2026-10-03"
WIDE = [{"name": "control" if i == 0 else f"arm{i}", "payload": {}, "allocation": 0.001} for i in range(1000)]


def _session(session, day=DAY):
    return {"schema_version": 1, "session_id": session, "org_id": "o", "user_id": f"u-{session}", "task_type": "t",
            "started_at": f"{day}T09:00:00+00:00", "experiment_id": "e1", "delivered_arm": "control"}


def corrupt_data_pages(path):
    """Overwrite every column chunk's pages (headers included) with garbage; the footer stays valid."""
    meta = pq.ParquetFile(path).metadata
    raw = bytearray(path.read_bytes())
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            chunk = meta.row_group(g).column(c)
            start = chunk.dictionary_page_offset or chunk.data_page_offset
            raw[start:start + chunk.total_compressed_size] = b"\xab" * chunk.total_compressed_size
    path.write_bytes(bytes(raw))


def _night(instance, as_of):
    results = run_night(instance, as_of)
    assert results and all(r.success for r in results)
    return results[-1]


def _state(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        staged = sorted(r for (r,) in con.execute("SELECT session_id FROM staged_assignments").fetchall())
        quarantine = con.execute(
            "SELECT source_table, source_file, rule, min(reason), count(*), min(quarantined_at) FROM quarantine "
            "WHERE stage = 'contract' GROUP BY ALL ORDER BY ALL").fetchall()
        looked = {r for (r,) in con.execute("SELECT DISTINCT experiment_id FROM experiment_analysis").fetchall()}
    return staged, quarantine, looked


@pytest.fixture
def landed(pipeline_paths):
    landing, warehouse = pipeline_paths
    _write(landing / "experiments" / "2026-10-01" / "reg.jsonl", [
        GOOD_EXPERIMENT, dict(GOOD_EXPERIMENT, experiment_id="huge-mde", mde=1e308), dict(GOOD_EXPERIMENT, experiment_id="wide", arms=WIDE)])
    day = landing / "assignments" / DAY
    _write(day / "good.jsonl", [_assignment("s1")])
    pl.DataFrame([dict(_assignment("s2"), filename="theirs.csv", file_row_number=41)]).write_parquet(day / "named.parquet")
    pl.DataFrame([_assignment(f"c{i}") for i in range(100)]).write_parquet(day / "partial.parquet")
    corrupt_data_pages(day / "partial.parquet")
    pl.DataFrame([_assignment("s3", arm="treatment")]).write_parquet(day / "good.parquet")
    _write(landing / "sessions" / DAY / "s.jsonl", [_session(s) for s in ("s1", "s2", "s3")])
    return landing, warehouse


def test_the_four_blockers_stop_no_night(landed, instance):
    landing, warehouse = landed
    _night(instance, NEXT)
    staged, quarantine, looked = _state(warehouse)
    assert staged == ["s1", "s2", "s3"]  # the file with lineage-named columns is staged, under its own row numbers
    blockers = {(table, name, rule): (reason, n) for table, name, rule, reason, n, _ in quarantine}
    reason, rows = blockers[("assignments", "partial.parquet", "unreadable_file")]
    assert rows == 100 and reason.startswith("unreadable_file: unreadable file: ")  # the engine's message follows
    assert blockers[("experiments", "reg.jsonl", "bad_arms")] == ("bad_arms: 1000 arms; a registration has at most 32", 1)
    assert blockers[("experiments", "reg.jsonl", "out_of_range")][0].startswith("out_of_range: mde=1e+308 must be <= 1e+12")
    assert looked == {"e1"}  # the night's look and report ran, for the one sound experiment
    first = quarantine

    # the next night: a new day lands; the blockers stay quarantined and are not read again
    _write(landing / "assignments" / NEXT / "more.jsonl", [_assignment("s4", at=f"{NEXT}T10:00:00+00:00")])
    _write(landing / "sessions" / NEXT / "s.jsonl", [_session("s4", NEXT)])
    _night(instance, "2026-10-04")
    staged, quarantine, looked = _state(warehouse)
    assert staged == ["s1", "s2", "s3", "s4"] and looked == {"e1"}
    assert quarantine == first  # same rows, same quarantined_at: nothing of the blockers' day was read again

    # the partial upload completes: the changed file is read and its rows are staged
    pl.DataFrame([_assignment(f"c{i}") for i in range(100)]).write_parquet(landing / "assignments" / DAY / "partial.parquet")
    _write(landing / "sessions" / DAY / "c.jsonl", [_session(f"c{i}") for i in range(100)])
    _night(instance, "2026-10-04")
    staged, quarantine, _ = _state(warehouse)
    assert len(staged) == 104 and not [q for q in quarantine if q[1] == "partial.parquet"]
