"""A corrected landed file gives the same tables as a fresh load of the corrected files.

Load, correct, reload: the warehouse must equal (row for row, timestamps of bookkeeping aside)
one that only ever saw the corrected files.
"""

import json
import shutil

import duckdb
import numpy as np
import pytest

from tests.ingest.valid_records import VALID
from tests.warehouse_checks import conservation_gaps, table_rows
from zcl_assets.importers.ab_export import AbExportOptions, import_ab_export
from zcl_assets.runner import run_night

COMPARED = {
    "staged_experiments": (), "staged_sessions": (), "staged_assignments": (), "staged_outcomes": (),
    "quarantine": ("quarantined_at",), "experience": (),
}
OPTIONS = AbExportOptions(experiment_id="fix", variant_map={"control": "old", "treatment": "new"})


def _export(rows) -> str:
    return "user_id,timestamp,group,landing_page,converted\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)


def _rows(seed=7, n=400):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        arm = "control" if rng.random() < 0.5 else "treatment"
        page = {"control": "old", "treatment": "new"}[arm] if rng.random() > 0.02 else "old"
        day = 2 + int(rng.integers(0, 10))
        rows.append((f"u{i}", f"2017-01-{day:02d} {int(rng.integers(0, 24)):02d}:{int(rng.integers(0, 60)):02d}:00", arm, page,
                     int(rng.random() < (0.12 if arm == "control" else 0.14))))
    rows.append(rows[10])  # an exact duplicate row: the same id, refused as a duplicate
    return rows


def _night(tmp_path, name, exports, monkeypatch, instance):
    """Import each export in turn (running a night after each); return the warehouse path."""
    landing, warehouse = tmp_path / name / "landing", tmp_path / name / "warehouse.duckdb"
    monkeypatch.setenv("ZCL_LANDING_DIR", str(landing))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(warehouse))
    src = tmp_path / name / "export.csv"
    src.parent.mkdir(parents=True, exist_ok=True)
    for rows in exports:
        src.write_text(_export(rows))
        import_ab_export(src, landing, OPTIONS)
        results = run_night(instance, "2017-01-31")
        assert results and all(r.success for r in results)
    return warehouse


def _tables(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        out = {t: table_rows(con, t, drop) for t, drop in COMPARED.items()}
        out["experiment_analysis"] = [
            tuple(round(v, 9) if isinstance(v, float) else v for v in row)
            for row in table_rows(con, "experiment_analysis", ("analysed_at",))
        ]
        return out


def test_a_corrected_export_gives_the_tables_of_a_fresh_load(tmp_path, monkeypatch, instance):
    original = _rows()
    corrected = list(original)
    del corrected[5]                                                        # a row removed
    corrected[20] = (*corrected[20][:4], 1 - corrected[20][4])              # an outcome fixed
    moved = corrected[30]
    corrected[30] = (moved[0], "2017-01-01 23:00:00", *moved[2:])           # a time corrected to an earlier day
    corrected = corrected[::-1]                                             # and every row reordered
    assert moved[1][:10] != "2017-01-01"

    reloaded = _tables(_night(tmp_path, "reloaded", [original, corrected], monkeypatch, instance))
    fresh = _tables(_night(tmp_path, "fresh", [corrected], monkeypatch, instance))
    for table in fresh:
        assert reloaded[table] == fresh[table], table
    sessions = {r[4] for r in reloaded["staged_sessions"]}
    assert any(s.startswith(f"fix:{moved[0]}:2017-01-01 23:00:00:") for s in sessions)  # staged on its new day
    assert not any(s.startswith(f"fix:{moved[0]}:{moved[1]}:") for s in sessions)       # and nowhere else


def _land(landing, table, day, name, records):
    folder = landing / table / day
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records))


def _at(day, hour=10):
    return f"{day}T{hour:02d}:00:00+00:00"


def _session(i, day):
    return {**VALID["sessions"], "session_id": f"s{i}", "started_at": _at(day), "ended_at": _at(day, 11), "delivered_arm": "c"}


def _assignment(i, day):
    return {**VALID["assignments"], "session_id": f"s{i}", "assigned_at": _at(day)}


def _outcome(i, day):
    return {**VALID["outcomes"], "session_id": f"s{i}", "recorded_at": _at(day, 12)}


@pytest.fixture
def corrections(tmp_path):
    """Landed files before and after a correction: a file moved to another day, one removed,
    one rewritten with a key that now repeats an earlier day, and an outcome whose session
    lands only with the correction."""
    registration = {**VALID["experiments"], "registered_at": "2026-09-30T00:00:00+00:00"}
    before = {
        ("experiments", "2026-09-30", "reg.jsonl"): [registration],
        ("sessions", "2026-10-01", "a.jsonl"): [_session(1, "2026-10-01"), _session(2, "2026-10-01")],
        ("sessions", "2026-10-03", "b.jsonl"): [_session(3, "2026-10-03"), _session(4, "2026-10-03")],
        ("sessions", "2026-10-04", "c.jsonl"): [_session(5, "2026-10-04")],
        ("assignments", "2026-10-01", "a.jsonl"): [_assignment(1, "2026-10-01"), _assignment(2, "2026-10-01")],
        ("assignments", "2026-10-03", "b.jsonl"): [_assignment(3, "2026-10-03"), _assignment(4, "2026-10-03")],
        ("outcomes", "2026-10-03", "o.jsonl"): [_outcome(1, "2026-10-03"), _outcome(3, "2026-10-03"), _outcome(6, "2026-10-03")],
    }
    after = dict(before)
    # b.jsonl moved from 10-03 to 10-02 (its times corrected), and it now also holds s1 again
    del after[("sessions", "2026-10-03", "b.jsonl")]
    after[("sessions", "2026-10-02", "b.jsonl")] = [_session(3, "2026-10-02"), _session(4, "2026-10-02"), _session(1, "2026-10-02")]
    del after[("assignments", "2026-10-03", "b.jsonl")]
    after[("assignments", "2026-10-02", "b.jsonl")] = [_assignment(3, "2026-10-02"), _assignment(4, "2026-10-02")]
    del after[("sessions", "2026-10-04", "c.jsonl")]                   # removed
    after[("sessions", "2026-10-01", "late.jsonl")] = [_session(6, "2026-10-01")]  # s6's outcome was waiting for it
    return tmp_path, before, after


def _write_all(landing, files):
    shutil.rmtree(landing, ignore_errors=True)
    for (table, day, name), records in files.items():
        _land(landing, table, day, name, records)


def test_moved_removed_and_late_files_give_the_tables_of_a_fresh_load(corrections, monkeypatch, instance):
    tmp_path, before, after = corrections
    warehouses = {}
    for name, states in (("reloaded", [before, after]), ("fresh", [after])):
        landing, warehouse = tmp_path / name / "landing", tmp_path / name / "warehouse.duckdb"
        monkeypatch.setenv("ZCL_LANDING_DIR", str(landing))
        monkeypatch.setenv("ZCL_WAREHOUSE", str(warehouse))
        for files in states:
            _write_all(landing, files)
            results = run_night(instance, "2026-10-05")
            assert results and all(r.success for r in results)
        warehouses[name] = warehouse
    reloaded, fresh = _tables(warehouses["reloaded"]), _tables(warehouses["fresh"])
    for table in fresh:
        assert reloaded[table] == fresh[table], table
    with duckdb.connect(str(warehouses["reloaded"]), read_only=True) as con:
        days = dict(con.execute("SELECT session_id, CAST(partition_day AS VARCHAR) FROM staged_sessions").fetchall())
        assert days == {"s1": "2026-10-01", "s2": "2026-10-01", "s3": "2026-10-02", "s4": "2026-10-02", "s6": "2026-10-01"}
        rules = dict(con.execute("SELECT source_file || ':' || source_row, rule FROM quarantine WHERE stage = 'contract'").fetchall())
        assert rules == {"b.jsonl:3": "duplicate_key"}  # s1 again on 10-02: the 10-01 row came first
        # s6's outcome was held while its session was missing, and is staged now
        assert con.execute("SELECT count(*) FROM staged_outcomes WHERE session_id = 's6'").fetchone()[0] == 1
        history = con.execute(
            "SELECT count(*) FILTER (WHERE superseded_at IS NOT NULL), count(*) FROM landing_manifest").fetchone()
        assert history[0] >= 3 and history[1] > history[0]  # superseded file versions are kept, never deleted


def _knowledge(warehouse):
    """Every record, and each comparison's current one (claim, cited look, interval, digest)."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        records = con.execute("SELECT experiment_id, treatment_arm, sequence, claim, CAST(look_as_of AS VARCHAR), "
                              "supersedes FROM knowledge_records ORDER BY 1, 2, 3").fetchall()
        current = con.execute(
            "SELECT experiment_id, treatment_arm, claim, CAST(look_as_of AS VARCHAR), round(cs_low, 9), round(cs_high, 9), "
            "evidence_digest FROM knowledge_records QUALIFY sequence = max(sequence) OVER (PARTITION BY experiment_id, "
            "metric, treatment_arm) ORDER BY 1, 2").fetchall()
        looks = con.execute("SELECT CAST(as_of AS VARCHAR), decision, round(cs_low, 9), round(cs_high, 9) "
                            "FROM experiment_analysis WHERE is_primary ORDER BY as_of").fetchall()
    return records, current, looks


def test_a_correction_of_a_cited_look_supersedes_its_knowledge_record_as_a_fresh_load_would(tmp_path, monkeypatch,
                                                                                                 instance):
    # 10% against 50% conversion, 60 users an arm a day from 01-02 to 01-11: adopted once burn-in
    # ends (7 full days after the first assignment, on 01-02 after midnight: the night of 01-09). The correction flips 30
    # treatment conversions of 01-03 to 0: every look from 01-03 on changes, the cited one too.
    rng = np.random.default_rng(11)
    rows = []
    for i in range(1200):
        arm = "control" if i % 2 else "treatment"
        day = 2 + (i // 120)
        rows.append((f"k{i}", f"2017-01-{day:02d} {int(rng.integers(0, 24)):02d}:{int(rng.integers(0, 60)):02d}:00",
                     arm, {"control": "old", "treatment": "new"}[arm], int(rng.random() < (0.1 if arm == "control" else 0.5))))
    flipped = [i for i, r in enumerate(rows) if r[1].startswith("2017-01-03") and r[2] == "treatment" and r[4] == 1][:30]
    assert len(flipped) == 30
    corrected = [(*r[:4], 0) if i in flipped else r for i, r in enumerate(rows)]
    reloaded = _night(tmp_path, "reloaded", [rows, corrected], monkeypatch, instance)
    fresh = _night(tmp_path, "fresh", [corrected], monkeypatch, instance)
    (re_records, re_current, re_looks), (fr_records, fr_current, fr_looks) = _knowledge(reloaded), _knowledge(fresh)
    assert re_looks == fr_looks
    # the fresh load adopts once, on the first night past burn-in; the reload wrote that record
    # before the correction, then one superseding it with the corrected evidence
    assert [(r[2], r[3], r[4]) for r in fr_records] == [(1, "adopt", "2017-01-09")]
    assert [(r[2], r[3], r[4]) for r in re_records] == [(1, "adopt", "2017-01-09"), (2, "adopt", "2017-01-09")]
    assert re_records[1][5] is not None and re_current == fr_current
    first_adopt = next(r for r in fr_looks if r[1] == "adopt")
    assert (fr_current[0][2], fr_current[0][3], fr_current[0][4], fr_current[0][5]) == ("adopt", *first_adopt[:1],
                                                                                      *first_adopt[2:])
