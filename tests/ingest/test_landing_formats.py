"""The same records landed as JSON Lines, CSV (nested fields as JSON text) and Parquet stage alike."""

import json

import polars as pl

from contracts.validate import validate_partition
from resources import LandingStore, Warehouse
from zcl_assets.ingest.partition_io import load_raw_partition, stage_partition

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
        load_raw_partition(con, LandingStore(root=str(landing)), "experiments", "2026-10-01")
        result = validate_partition(con, "experiments", "2026-10-01")
        assert result.quarantined.height == 0, result.quarantined.to_dicts()
        staged = result.staged.sort("experiment_id")
        assert staged.get_column("experiment_id").to_list() == ["e1", "e2", "e3"]
        # Nested fields arrive as the same JSON whatever the file format.
        assert [json.loads(a) for a in staged.get_column("arms")] == [ARMS] * 3
        assert [json.loads(c) for c in staged.get_column("metric_caps")] == [{"time_minutes": 120}] * 3
        # The +02:00 offset is kept: 08:00+02:00 is 06:00 UTC, on the partition day.
        assert {t.hour for t in staged.get_column("registered_at")} == {6}
        assert stage_partition(con, "experiments", "2026-10-01").staged == 3
