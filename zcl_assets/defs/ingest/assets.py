"""raw_<table> and staged_<table> assets for every landing table, and the landing inventory.

Both are partitioned by landing day (``partitions.landing_days``) and are the assets of one
subsettable multi-asset: a run materializes the selected ones for a range of days in one step,
loading the days among them whose landed files changed (``zcl_assets.ingest.archive``) and
staging them, the cross-row rules re-checked for the keys those days change
(``zcl_assets.ingest.staging``). The metadata of each materialization lists the days it
touched with their own counts (by month for a run of more than 31 days). Staging reads the
already staged tables for its cross-row rules, so tables are staged in dependency order
(``deps``, and ``CONTRACTS``'s order).
"""

import dagster as dg
import polars as pl

from contracts.tables import CONTRACTS
from resources import LandingStore, Warehouse
from resources.engine import ComputeEngine
from sql import load_sql
from zcl_assets.defs.ingest.checks import checked_days, staged_check_results, staged_check_specs
from zcl_assets.defs.ingest.partitions import landing_days, run_days, single_run
from zcl_assets.defs.metadata import days_metadata, table_metadata
from zcl_assets.engine import Engine
from zcl_assets.ingest.archive import load_table
from zcl_assets.ingest.staging import STAGING_DEPENDS_ON, stage_table
from zcl_assets.warehouse import transaction


def _contract_frame(table: str) -> pl.DataFrame:
    contract = CONTRACTS[table]
    return pl.DataFrame(
        {
            "field": [f.name for f in contract.fields],
            "type": [f.type for f in contract.fields],
            "required": [f.required for f in contract.fields],
            "partition_day": [f.name == contract.event_time for f in contract.fields],
            "key": [f.name in contract.key for f in contract.fields],
            "rule": [f.doc for f in contract.fields],
        }
    )


RAW_DESCRIPTION = (
    "Landed `{table}` files, archived by content (SHA-256) and counted: `landing_manifest` lists every "
    "file ever loaded (a changed day supersedes its old rows, never deletes them). One partition per "
    "landing day; of the days a run asks for, only those whose files changed since the last load are read."
)
STAGED_DESCRIPTION = (
    "Contract-valid `{table}` rows (table `staged_{table}`); every other landed row is in `quarantine` "
    "with the rule it broke. One partition per landing day: row rules run on the days that changed; "
    "keys and references are re-checked for the keys those days change, so a corrected file gives the "
    "same rows as a fresh load."
)


def _raw_spec(table: str) -> dg.AssetSpec:
    return dg.AssetSpec(f"raw_{table}", group_name="landing", kinds={"duckdb", "python"},
                        description=RAW_DESCRIPTION.format(table=table))


def _staged_spec(table: str) -> dg.AssetSpec:
    deps = [dg.AssetKey(f"raw_{table}")] + [dg.AssetKey(f"staged_{t}") for t in STAGING_DEPENDS_ON[table]]
    return dg.AssetSpec(
        f"staged_{table}", deps=deps, group_name="staging", kinds={"duckdb"},
        description=STAGED_DESCRIPTION.format(table=table),
        metadata={"contract": table_metadata(_contract_frame(table), f"Contract of {table}")},
    )


@dg.multi_asset(
    name="landing_and_staging",
    specs=[_raw_spec(t) for t in CONTRACTS] + [_staged_spec(t) for t in CONTRACTS],
    check_specs=[spec for t in CONTRACTS for spec in staged_check_specs(t)],
    can_subset=True,
    pool="duckdb",
    partitions_def=landing_days,
    backfill_policy=single_run,
)
def landing_and_staging(context: dg.AssetExecutionContext, warehouse: Warehouse, landing: LandingStore, engine: ComputeEngine):
    """The selected ``raw_<table>`` and ``staged_<table>`` assets of the run's days, in one step.

    Each is its own asset in the catalog, with its own partitions, metadata and checks; they
    run as one step on one connection (the raw tables first, then staging in the order of its
    cross-row rules, ``CONTRACTS``'s order), so a night pays one Dagster step and one write
    of the warehouse for ingestion, not fourteen. The chosen engine reads and validates the
    landed files (on Spark its executors); the cross-row rules run on the warehouse.
    """
    days = run_days(context)
    selected = {k.path[-1] for k in context.selected_asset_keys}
    reader = engine.open(warehouse)
    with warehouse.connect() as con:
        for table in CONTRACTS:
            if f"raw_{table}" in selected:
                yield _load_raw(con, landing, warehouse, table, days)
        for table in CONTRACTS:
            if f"staged_{table}" in selected:
                yield _stage(con, table, days, reader)


def _load_raw(con, landing: LandingStore, warehouse: Warehouse, table: str, days: list[str] | None) -> dg.MaterializeResult:
    result = load_table(con, landing, warehouse.archive_dir, table, days=days)
    total = con.execute(
        "SELECT coalesce(sum(row_count), 0), count(*) FROM landing_manifest WHERE table_name = ? AND superseded_at IS NULL",
        [table],
    ).fetchone()
    loaded = pl.DataFrame(
        [d._asdict() for d in result.days],
        schema={"partition_day": pl.String, "files": pl.Int64, "rows": pl.Int64, "change": pl.String},
    )
    return dg.MaterializeResult(
        asset_key=f"raw_{table}",
        metadata={
            "dagster/row_count": int(total[0]),
            "current_files": int(total[1]),
            "days_loaded": len(result.days),
            "rows_loaded": result.rows,
            "days": days_metadata(loaded, "Days loaded by this run: files, raw rows, and what changed"),
        },
    )


def _stage(con, table: str, days: list[str] | None, engine: Engine) -> dg.MaterializeResult:
    result = stage_table(con, table, days=days, engine=engine)
    total = con.execute(f"SELECT count(*) FROM {CONTRACTS[table].staged_table}").fetchone()[0]
    quarantined = con.execute(
        "SELECT count(*) FROM quarantine WHERE source_table = ? AND stage = 'contract'", [table]
    ).fetchone()[0]
    checks = staged_check_results(con, table, checked_days(con, table, days))
    staged = pl.DataFrame(
        result.days, schema={"partition_day": pl.String, "raw_rows": pl.Int64, "staged_rows": pl.Int64, "quarantined_rows": pl.Int64},
        orient="row",
    )
    by_rule = pl.DataFrame(sorted(result.by_rule.items()), schema={"rule": pl.String, "rows": pl.Int64}, orient="row")
    return dg.MaterializeResult(
        asset_key=f"staged_{table}",
        metadata={
            "dagster/row_count": int(total),
            "engine": result.engine if result.days else engine.name,
            "quarantined_rows": int(quarantined),
            "days_staged": len(result.days),
            "rows_released": result.released,
            "rows_held_back": result.held_back,
            "days": days_metadata(staged, "Days staged by this run, each with its own counts"),
            "quarantined_by_rule": table_metadata(by_rule, "Quarantined rows of the staged days, by rule"),
            "quarantine_preview": table_metadata(result.preview, "First quarantined rows of the staged days"),
        },
        check_results=checks,
    )




@dg.asset(group_name="landing", kinds={"duckdb", "python"}, pool="duckdb")
def landing_inventory(context: dg.AssetExecutionContext, warehouse: Warehouse, landing: LandingStore) -> dg.MaterializeResult:
    """Landed files that no load reads (unknown table folder, a day folder that is not a
    valid date, an unsupported file type) recorded in `quarantine` (stage `landing`) with the
    reason, so that a misplaced file is reported instead of silently ignored."""
    strays = landing.stray_files()
    batch = pl.DataFrame(strays, schema=["source_table", "source_file", "rule", "reason"], orient="row")
    for _table, path, rule, reason in strays:
        context.log.warning(f"landed file not read: {path} ({rule}: {reason})")
    with warehouse.connect() as con:
        with transaction(con, strays_batch=batch):
            con.execute(load_sql("delete_landing_quarantine"))
            if strays:
                con.execute(load_sql("insert_landing_quarantine"))
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(strays),
            "files_not_read": table_metadata(batch, "Landed files that no load reads"),
        }
    )
