"""A night with nothing newly landed keeps the derived tables and the look's state, and gives
the same look as recomputing everything; a newly landed file makes them rebuilt where it touches."""

import duckdb

from tests.fresh_look import fresh_look
from zcl_assets.runner import run_night
from zcl_assets.simulation.sessions import simulate_sessions


def _built(warehouse):
    """The change-log cursor of every derived table: it moves only when the table read changes."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return dict(con.execute("SELECT consumer, seq FROM internal.change_cursors").fetchall())


def _rebuilt(result, asset):
    """Whether the run rebuilt ``asset``: false when a quiet night left it out (nothing to read,
    ``zcl_assets.defs.nightly.idle_assets``) or materialized it without rebuilding."""
    events = [e for e in result.get_asset_materialization_events() if e.asset_key.path[-1] == asset]
    assert len(events) <= 1
    return bool(events) and events[0].materialization.metadata["rebuilt"].value


def _stored_differs_from_recomputed(warehouse, as_of):
    """Columns in which the stored look of ``as_of`` differs from one recomputed from scratch."""
    with duckdb.connect(str(warehouse)) as con:
        stored = con.execute(f"SELECT * FROM experiment_analysis WHERE as_of = DATE '{as_of}'").pl()
        fresh = fresh_look(con, as_of)
    assert stored.height == fresh.height > 0
    compared = [c for c in fresh.columns if c != "analysed_at"]
    keys = ["experiment_id", "metric", "treatment_arm"]
    stored_rows = stored.select(compared).sort(keys)
    fresh_rows = fresh.select(compared).cast(stored_rows.schema).sort(keys)
    return [c for c in compared if not stored_rows.get_column(c).equals(fresh_rows.get_column(c), null_equal=True)]


def test_a_quiet_night_reuses_what_did_not_change(pipeline_paths, instance):
    landing, warehouse = pipeline_paths
    simulate_sessions(landing, seed=8, start="2026-10-01", days=10, inject_dirty=False)
    (first,) = run_night(instance, "2026-10-12")
    assert first.success and _rebuilt(first, "experience") and _rebuilt(first, "verification_records")
    built = _built(warehouse)

    (quiet,) = run_night(instance, "2026-10-13")
    assert quiet.success
    assert not _rebuilt(quiet, "experience") and not _rebuilt(quiet, "verification_records")
    assert _built(warehouse) == built
    assert _stored_differs_from_recomputed(warehouse, "2026-10-13") == []

    simulate_sessions(landing, seed=8, start="2026-10-01", days=12, inject_dirty=False)  # two more days land
    (busy,) = run_night(instance, "2026-10-13")
    assert busy.success and _rebuilt(busy, "experience") and _rebuilt(busy, "verification_records")
    assert _built(warehouse)["experience"] > built["experience"]
    assert _stored_differs_from_recomputed(warehouse, "2026-10-13") == []


def test_a_run_for_an_earlier_night_keeps_the_later_looks(pipeline_paths, instance):
    landing, warehouse = pipeline_paths
    simulate_sessions(landing, seed=8, start="2026-10-01", days=10, inject_dirty=False)
    (first,) = run_night(instance, "2026-10-12")
    assert first.success

    def looks():
        with duckdb.connect(str(warehouse), read_only=True) as con:
            return con.execute("SELECT * EXCLUDE (analysed_at) FROM experiment_analysis "
                               "ORDER BY ALL").fetchall()

    def cited_but_gone():
        with duckdb.connect(str(warehouse), read_only=True) as con:
            return con.execute("SELECT count(*) FROM knowledge_records k ANTI JOIN experiment_analysis a "
                               "ON a.experiment_id = k.experiment_id AND a.as_of = k.look_as_of").fetchone()[0]

    before = looks()
    (earlier,) = run_night(instance, "2026-10-05")
    assert earlier.success
    after = looks()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        nights = [d for (d,) in con.execute("SELECT DISTINCT as_of FROM experiment_analysis ORDER BY 1").fetchall()]
    assert str(nights[-1]) == "2026-10-12"  # the nights after 2026-10-05 are still there
    assert len(after) == len(before) and after == before  # and, with the same data, unchanged
    assert cited_but_gone() == 0


def test_a_quiet_night_records_a_stray_file_that_appeared_and_forgets_it_once_gone(pipeline_paths, instance):
    landing, warehouse = pipeline_paths
    simulate_sessions(landing, seed=8, start="2026-10-01", days=3, inject_dirty=False)
    (first,) = run_night(instance, "2026-10-04")
    assert first.success

    def recorded():
        with duckdb.connect(str(warehouse), read_only=True) as con:
            return con.execute("SELECT source_file, rule FROM quarantine WHERE stage = 'landing'").fetchall()

    def ran_inventory(result):
        return any(e.asset_key.path[-1] == "landing_inventory" for e in result.get_asset_materialization_events())

    (quiet,) = run_night(instance, "2026-10-05")  # nothing new: the inventory has nothing to record
    assert quiet.success and not ran_inventory(quiet) and recorded() == []
    (landing / "notes.txt").write_text("not data\n", encoding="utf-8")  # a file no load reads
    (noticed,) = run_night(instance, "2026-10-06")
    assert noticed.success and ran_inventory(noticed)
    assert recorded() == [("notes.txt", "unknown_table")]
    (still,) = run_night(instance, "2026-10-07")  # the same stray file: recorded already
    assert still.success and not ran_inventory(still) and recorded() == [("notes.txt", "unknown_table")]
    (landing / "notes.txt").unlink()
    (gone,) = run_night(instance, "2026-10-08")
    assert gone.success and ran_inventory(gone) and recorded() == []


def test_a_step_that_failed_after_its_build_runs_again_on_a_quiet_night(pipeline_paths, instance, monkeypatch):
    from zcl_assets.defs.funnel import assets

    landing, _ = pipeline_paths
    simulate_sessions(landing, seed=8, start="2026-10-01", days=3, inject_dirty=False)

    def broken(con):
        raise RuntimeError("the stage counts could not be read")

    def ran_funnel(result):
        return any(e.asset_key.path[-1] == "admission_states" for e in result.get_asset_materialization_events())

    with monkeypatch.context() as patched:  # the funnel's tables are written, then its metadata fails
        patched.setattr(assets, "stage_rows", broken)
        (failed,) = run_night(instance, "2026-10-04")
    assert not failed.success and not ran_funnel(failed)
    (quiet,) = run_night(instance, "2026-10-05")  # nothing new to read, but its last attempt did not materialize
    assert quiet.success and ran_funnel(quiet)
    (settled,) = run_night(instance, "2026-10-06")
    assert settled.success and not ran_funnel(settled)
