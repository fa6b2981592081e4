"""Landed days are not bounded by a partitions definition: data from 1999 or 2015 runs like any other."""

import duckdb

from tests.warehouse_checks import conservation_gaps
from zcl_assets.importers.ab_export import AbExportOptions, import_ab_export
from zcl_assets.runner import run_night


def test_an_export_dated_before_2016_is_loaded_and_analysed(pipeline_paths, instance, tmp_path):
    landing, warehouse = pipeline_paths
    src = tmp_path / "old.csv"
    rows = ["user_id,timestamp,group,landing_page,converted"]
    rows += [f"u{i},1999-12-31 23:{i % 60:02d}:00,{'control' if i % 2 else 'treatment'},"
             f"{'old' if i % 2 else 'new'},{i % 3 == 0:d}" for i in range(40)]
    rows += [f"v{i},2015-06-0{1 + i % 3} 10:00:{i:02d},{'control' if i % 2 else 'treatment'},"
             f"{'old' if i % 2 else 'new'},{i % 4 == 0:d}" for i in range(40)]
    src.write_text("\n".join(rows) + "\n")
    import_ab_export(src, landing, AbExportOptions(experiment_id="old", variant_map={"control": "old", "treatment": "new"}))
    results = run_night(instance, "2015-06-30")
    assert results and all(r.success for r in results)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        days = [r[0] for r in con.execute("SELECT DISTINCT CAST(partition_day AS VARCHAR) FROM staged_sessions ORDER BY 1").fetchall()]
        assert days == ["1999-12-31", "2015-06-01", "2015-06-02", "2015-06-03"]
        # its last units came on 2015-06-03: stalled 7 days later, its last look is that night
        # (no look on every night since), and it says so, with no days-left figure
        as_of, n_c, n_t, stalled, left = con.execute(
            "SELECT as_of, n_control, n_treatment, stalled_since, days_to_plan FROM experiment_analysis "
            "WHERE experiment_id = 'old' AND is_primary ORDER BY as_of DESC LIMIT 1"
        ).fetchone()
        assert (str(as_of), n_c, n_t, str(stalled), left) == ("2015-06-10", 40, 40, "2015-06-03", None)
