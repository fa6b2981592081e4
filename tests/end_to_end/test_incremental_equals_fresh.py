"""Incremental equals fresh: thirty days landed night by night give the tables of one fresh load.

The history (``tests/end_to_end/landing_history.py``) lands 30 UTC days of several
experiments in two organizations night by night on one Dagster instance, with corrected
files of earlier days, late outcomes, a re-evaluation, two removed files, a registration that
lands after its assignments, outcomes waiting for their sessions and a night with nothing
newly landed. A second warehouse, on its own instance, loads the final landing in one night
as of the last day. Every table of both warehouses (discovered from ``information_schema``)
must then be equal row for row: the same multiset of rows, every value exact, floats bit for
bit (``tests.warehouse_checks.bits``).

What is not compared, and why:

* bookkeeping of when something happened, which differs by nature between two loads:
  ``quarantine.quarantined_at``, ``experiment_analysis.analysed_at``,
  ``experiment_plans.planned_at``, ``knowledge_records.recorded_at``, and in
  ``landing_manifest`` ``loaded_at``, ``superseded_at`` and ``mtime_ns`` (the landed files'
  modification times: the fresh landing was written later);
* ``landing_manifest.archive_path`` embeds the warehouse's folder: it is compared relative to
  that folder (the archive's own layout, ``<stem>_archive/<table>/<day>/<sha>-<name>``, is);
* append-only history, which a fresh load cannot have: the superseded rows of
  ``landing_manifest`` (file versions replaced or removed on the way) are left out, the
  current files (``superseded_at IS NULL``) compared; of ``knowledge_records`` the current
  claims are compared (records no later record supersedes), without ``sequence`` and
  ``supersedes``, which number and link a comparison's history;
* in schema ``internal``: ``change_log`` (what each pass changed, numbered by the passes),
  ``change_cursors`` (the last number each derived table read), and
  ``staging_state`` (versions that count the stagings, fingerprints). The other
  internal tables are state and compared: ``held_<table>`` (rows held back by a cross-row
  rule), ``pending_days`` (empty after a night), ``experience_exclusions`` and the daily
  counts kept for loop health and the exploration share; in ``main``, the look's stored
  per-day sums (``arm_day_sums``, ``look_*``) are compared like every other table.

Every table not listed in :data:`COMPARED` or :data:`NOT_COMPARED` (a table added later) is
compared whole by ``test_every_table_not_listed_equals_fresh``.

``ZCL_EVERY_NIGHT=1`` runs all 30 nights instead of 10.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from contracts.tables import CONTRACTS
from tests.end_to_end import landing_history as lh
from tests.warehouse_checks import BOOKKEEPING, conservation_gaps, exact_rows, row_differences, run_one_night, warehouse_tables
from zcl_assets.experience_gain.build import build_experience_gain

KNOWLEDGE_CURRENT = "record_id NOT IN (SELECT supersedes FROM knowledge_records WHERE supersedes IS NOT NULL)"
COMPARED: dict[str, dict] = {
    **{f"main.{t}": {} for t in (
        "admission_states", "arm_repeats", "evaluation_contracts", "experience", "experience_gain",
        "experience_gain_by_task", "exploration_share", "funnel_stage_counts", "information_yield", "loop_health",
        "verification_records", *(f"staged_{t}" for t in CONTRACTS))},
    "main.quarantine": {"drop": ("quarantined_at",)},
    "main.experiment_analysis": {"drop": ("analysed_at",)},
    "main.experiment_plans": {"drop": ("planned_at",)},
    "main.knowledge_records": {"drop": ("recorded_at", "sequence", "supersedes"), "where": KNOWLEDGE_CURRENT},
    "main.landing_manifest": {"drop": ("loaded_at", "superseded_at", "mtime_ns"), "where": "superseded_at IS NULL",
                              "columns": {"archive_path": "replace(archive_path, $folder, '')"}},
    **{f"main.{t}": {} for t in (
        "arm_day_sums", "look_assigned_days", "look_control_digests", "look_first_assignments", "look_mixed_users",
        "look_state_frames", "look_violation_days")},
    **{f"internal.held_{t}": {} for t in CONTRACTS},
    **{f"internal.{t}": {} for t in ("pending_days", "experience_exclusions", "loop_health_days", "explored_session_days")},
}
NOT_COMPARED = BOOKKEEPING


@dataclass(frozen=True)
class Loads:
    """The two warehouses, the history, and what the history's warehouse showed after each night."""

    incremental: Path
    fresh: Path
    history: lh.History
    nights: dict[int, dict]


def _probe(con: duckdb.DuckDBPyConnection, facts: dict) -> dict:
    """Facts about the warehouse after a night, to show that the history took each path."""
    def one(sql: str, *params):
        return con.execute(sql, list(params)).fetchone()[0]

    late = lh.LATE_DESIGN.experiment_id
    return {
        "late_rows_staged": one("SELECT (SELECT count(*) FROM staged_assignments WHERE experiment_id = ?) "
                                "+ (SELECT count(*) FROM staged_experiment_events WHERE experiment_id = ?)", late, late),
        "late_rows_quarantined": one("SELECT count(*) FROM quarantine WHERE rule = 'unknown_experiment' AND record LIKE ?",
                                     f"%{late}%"),
        "waiting_outcomes_staged": one("SELECT count(*) FROM staged_outcomes WHERE session_id LIKE ?",
                                       f"fab-%-{lh.HELD_SESSIONS_DAY:02d}-%"),
        "superseded_files": one("SELECT count(*) FROM landing_manifest WHERE superseded_at IS NOT NULL"),
        "current_files": sorted(con.execute(
            "SELECT table_name, partition_day, file_name, sha256, loaded_at FROM landing_manifest "
            "WHERE superseded_at IS NULL").fetchall()),
        "removed_file_rows_staged": one("SELECT count(*) FROM staged_sessions WHERE source_file = 'fab-extra.jsonl'"),
        "removed_session_outcomes": one("SELECT count(*) FROM staged_outcomes WHERE session_id = ?",
                                        facts["removed_session"]),
        "outcomes_by_file": dict(con.execute("SELECT source_file, count(*) FROM staged_outcomes GROUP BY ALL").fetchall()),
        "knowledge_records": one("SELECT count(*) FROM knowledge_records"),
    }


def _history(history: lh.History, folder: Path) -> tuple[Path, dict[int, dict]]:
    landing, warehouse = folder / "landing", folder / "warehouse.duckdb"
    nights = {}
    with dg.DagsterInstance.ephemeral() as instance:
        for night in history.nights:
            lh.sync_landing(landing, history.landing_on(night))
            run_one_night(landing, warehouse, lh.day(night), instance=instance)
            with duckdb.connect(str(warehouse), read_only=True) as con:
                nights[night] = _probe(con, history.facts)
    return warehouse, nights


@pytest.fixture(scope="module")
def loads(tmp_path_factory) -> Loads:
    history = lh.build_history()
    root = tmp_path_factory.mktemp("incremental_equals_fresh")
    incremental, nights = _history(history, root / "incremental")
    fresh_landing, fresh = root / "fresh" / "landing", root / "fresh" / "warehouse.duckdb"
    lh.sync_landing(fresh_landing, history.final())
    run_one_night(fresh_landing, fresh, lh.day(history.nights[-1]))
    return Loads(incremental, fresh, history, nights)


def _rows(warehouse: Path, table: str) -> object:
    spec = {**COMPARED.get(table, {})}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        params = {"folder": str(warehouse.parent)} if "columns" in spec else None
        return exact_rows(con, table, spec.get("drop", ()), spec.get("where", ""), spec.get("columns"), params)


@pytest.mark.parametrize("table", list(COMPARED))
def test_a_table_after_the_nights_equals_the_fresh_load(loads, table):
    with duckdb.connect(str(loads.fresh), read_only=True) as con:
        assert table in warehouse_tables(con), f"{table} is listed in COMPARED but not in the fresh warehouse"
    assert row_differences(_rows(loads.incremental, table), _rows(loads.fresh, table)) == ""


def test_both_warehouses_hold_the_same_tables(loads):
    found = {}
    for name, path in (("incremental", loads.incremental), ("fresh", loads.fresh)):
        with duckdb.connect(str(path), read_only=True) as con:
            found[name] = warehouse_tables(con)
    assert found["incremental"] == found["fresh"]


def test_every_table_not_listed_equals_fresh(loads):
    with duckdb.connect(str(loads.fresh), read_only=True) as con:
        unlisted = sorted(warehouse_tables(con) - set(COMPARED) - set(NOT_COMPARED))
    differing = {t: d for t in unlisted if (d := row_differences(_rows(loads.incremental, t), _rows(loads.fresh, t)))}
    assert differing == {}


def test_experience_gain_does_not_depend_on_the_order_of_its_rows(loads, tmp_path):
    """The same rows of experience and staged_sessions, stored in two orders and read by one thread, give the
    same Experience Gain (its sums are exact integers: sql/experience_gain/select_memory_mode_arms.sql)."""
    gains = []
    for order in ("ASC", "DESC"):
        copy = tmp_path / f"experience-{order}.duckdb"
        shutil.copy(loads.fresh, copy)
        with duckdb.connect(str(copy)) as con:
            con.execute("SET threads = 1")
            for table in ("experience", "staged_sessions"):  # session_id is a key of both
                con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {table} ORDER BY session_id {order}")
            con.execute("DROP TABLE experience_gain_by_task")  # built again from every row
            con.execute("DROP TABLE experience_gain")
            build_experience_gain(con)
            gains.append((exact_rows(con, "experience_gain_by_task"), exact_rows(con, "experience_gain")))
    assert row_differences(gains[0][0], gains[1][0]) == row_differences(gains[0][1], gains[1][1]) == ""


def test_rows_are_conserved_in_both(loads):
    for path in (loads.incremental, loads.fresh):
        with duckdb.connect(str(path), read_only=True) as con:
            assert conservation_gaps(con) == {}


def _first(nights: dict[int, dict], at_or_after: int) -> dict:
    return nights[min(n for n in nights if n >= at_or_after)]


def test_the_history_takes_every_path(loads):
    """The nights did what the history says (else the comparisons above prove less than they claim)."""
    nights, facts = loads.nights, loads.history.facts

    def by_night(name):
        return {n: p[name] for n, p in nights.items()}

    assert any(lh.LATE_REGISTRATION_DAY <= n < lh.REGISTRATION_LANDS for n in nights)  # assignments before their registration
    assert {n: (v > 0, q > 0) for (n, v), q in zip(by_night("late_rows_staged").items(), by_night("late_rows_quarantined").values())
            } == {n: (n >= lh.REGISTRATION_LANDS, lh.LATE_REGISTRATION_DAY <= n < lh.REGISTRATION_LANDS) for n in nights}
    assert {n: v > 0 for n, v in by_night("superseded_files").items()} == {n: n >= lh.CORRECTION_NIGHT for n in nights}
    assert by_night("removed_session_outcomes") == {n: int(lh.CORRECTED_CONTOSO_DAY <= n < lh.CORRECTION_NIGHT) for n in nights}
    assert {n: v > 0 for n, v in by_night("removed_file_rows_staged").items()} == {
        n: lh.REMOVED_FILES_DAY <= n < lh.REMOVAL_NIGHT for n in nights}
    assert {n: files.get("late-outcomes.jsonl", 0) for n, files in by_night("outcomes_by_file").items()} == {
        n: facts["late_outcomes"] if n >= lh.LATE_OUTCOMES_DAY else 0 for n in nights}
    assert {n: files.get("re-evaluation.jsonl", 0) for n, files in by_night("outcomes_by_file").items()} == {
        n: facts["re_evaluations"] if n >= lh.REEVALUATION_DAY else 0 for n in nights}
    waiting = [nights[n]["waiting_outcomes_staged"] for n in (lh.HELD_SESSIONS_DAY, lh.QUIET_NIGHT, lh.HELD_SESSIONS_LAND)]
    assert waiting[0] == waiting[1] == 0 < waiting[2]  # outcomes wait for their sessions
    assert nights[lh.QUIET_NIGHT]["current_files"] == nights[lh.HELD_SESSIONS_DAY]["current_files"]  # nothing landed
    with duckdb.connect(str(loads.incremental), read_only=True) as con:
        rules = {r for (r,) in con.execute("SELECT DISTINCT rule FROM quarantine").fetchall()}
        statuses = {s for (s,) in con.execute(
            "SELECT DISTINCT status FROM experiment_analysis WHERE experiment_id = 'fab-reopen'").fetchall()}
        periods = con.execute("SELECT min(periods), max(periods) FROM experiment_analysis "
                              "WHERE experiment_id = 'fab-three' AND is_primary").fetchone()
        pooled = con.execute("SELECT tasks, estimate FROM experience_gain WHERE org_id = 'fabrikam'").fetchall()
        claims = con.execute("SELECT count(*) FROM knowledge_records WHERE experiment_id = 'fab-mem'").fetchone()[0]
        snapshots = con.execute("SELECT count(DISTINCT metric) FROM staged_arm_snapshots").fetchone()[0]
        funnel = con.execute("SELECT count(*) FROM admission_states").fetchone()[0]
    assert rules >= {
        "malformed_record", "bad_type", "ended_after_started", "duplicate_key", "arm_not_declared", "missing_field",
        "out_of_range", "not_finite", "some_metric", "unknown_session", "outcome_before_assignment",
        "delivered_arm_mismatch", "unit_multiple_arms", "no_session"}
    assert {"completed", "reopened"} <= statuses
    assert periods == (1, 2)  # one period before the declared change, two after
    assert pooled and pooled[0][0] == 2 and pooled[0][1] is not None  # two task types pooled
    assert claims > 0 and snapshots == 2 and funnel > 0
