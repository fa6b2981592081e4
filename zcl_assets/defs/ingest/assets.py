"""raw_<table> and staged_<table> assets for every landing table.

A run covers one partition or a range of days (single-run backfill policy): each asset
loops over the run's days, and each day is written in its own transaction. Staging
validates against the already staged tables, so registrations are staged before
assignments, assignments before outcomes (the ``deps`` below).
"""


from collections import Counter

import dagster as dg

from contracts.tables import CONTRACTS
from resources import LandingStore, Warehouse
from resources.warehouse import transaction
from zcl_assets.defs.ingest.partitions import landing_days
from zcl_assets.ingest.partition_io import load_raw_partition, stage_partition
from sql import load_sql
from zcl_assets.reports.markdown import markdown_table

# Which staged tables a table's validation reads (references and ordering).
STAGING_DEPENDS_ON: dict[str, tuple[str, ...]] = {
    "experiments": (),
    "experiment_events": ("experiments",),
    "sessions": (),
    "assignments": ("experiments",),
    "outcomes": ("assignments",),
    "admission_events": (),
    "arm_snapshots": ("experiments",),
}


def _build_raw_asset(table: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"raw_{table}",
        partitions_def=landing_days,
        backfill_policy=dg.BackfillPolicy.single_run(),
        group_name="landing",
        kinds={"duckdb", "python"},
        pool="duckdb",
        description=(
            f"Landed `{table}` files of the day, read as-is into `raw_records` (one row per "
            "line or row, as JSON text, with file name and row number). Unreadable files and "
            "malformed lines are kept and quarantined downstream."
        ),
    )
    def raw_asset(context: dg.AssetExecutionContext, warehouse: Warehouse, landing: LandingStore) -> dg.MaterializeResult:
        rows = files = 0
        unreadable: list[str] = []
        with warehouse.connect() as con:
            for day in context.partition_keys:
                loaded = load_raw_partition(con, landing, table, day)
                rows += loaded.rows
                files += loaded.files
                unreadable += loaded.unreadable
        for problem in unreadable:
            context.log.warning(f"unreadable landed file, quarantined as one row: {problem}")
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": rows,
                "files": files,
                "days": len(context.partition_keys),
                "unreadable_files": dg.MetadataValue.json(unreadable),
            }
        )

    return raw_asset


def _build_staged_asset(table: str) -> dg.AssetsDefinition:
    deps = [dg.AssetKey(f"raw_{table}")] + [dg.AssetKey(f"staged_{t}") for t in STAGING_DEPENDS_ON[table]]

    @dg.asset(
        name=f"staged_{table}",
        partitions_def=landing_days,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=deps,
        group_name="staging",
        kinds={"duckdb", "pandera"},
        pool="duckdb",
        description=(
            f"Contract-valid `{table}` rows (table `staged_{table}`); every other raw row of the "
            "day goes to `quarantine` with the rule it broke. Re-running a day replaces its rows."
        ),
        metadata={"contract": dg.MetadataValue.md(_contract_markdown(table))},
    )
    def staged_asset(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
        raw = staged = quarantined = 0
        by_rule: Counter[str] = Counter()
        previews = []
        with warehouse.connect() as con:
            for day in context.partition_keys:
                result = stage_partition(con, table, day)
                raw += result.raw
                staged += result.staged
                quarantined += result.quarantined
                by_rule.update(result.by_rule)
                if result.quarantined and len(previews) < 3:
                    previews.append(result.quarantine_preview)
        preview_md = "\n\n".join(markdown_table(p.select("source_file", "source_row", "rule", "reason")) for p in previews)
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": staged,
                "raw_rows": raw,
                "quarantined_rows": quarantined,
                "quarantined_share": (quarantined / raw) if raw else 0.0,
                "quarantined_by_rule": dg.MetadataValue.json(dict(by_rule)),
                "quarantine_preview": dg.MetadataValue.md(preview_md or "nothing quarantined"),
            }
        )

    return staged_asset


def _contract_markdown(table: str) -> str:
    contract = CONTRACTS[table]
    lines = ["| field | type | required |", "|---|---|---|"]
    lines += [f"| {f.name} | {f.sql_type} | {'yes' if f.required else 'no'} |" for f in contract.fields]
    return f"Partition day: UTC day of `{contract.event_time}`; key: {', '.join(contract.key)}\n\n" + "\n".join(lines)


raw_assets = [_build_raw_asset(t) for t in CONTRACTS]
staged_assets = [_build_staged_asset(t) for t in CONTRACTS]


@dg.asset(group_name="landing", kinds={"duckdb", "python"}, pool="duckdb")
def landing_inventory(context: dg.AssetExecutionContext, warehouse: Warehouse, landing: LandingStore) -> dg.MaterializeResult:
    """Landed files that no partition reads (unknown table folder, a day folder that is not a
    valid date, an unsupported file type) recorded in `quarantine` (stage `landing`) with the
    reason, so that a misplaced file is reported instead of silently ignored."""
    import polars as pl

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
            "files_not_read": dg.MetadataValue.md(markdown_table(batch) if strays else "none"),
        }
    )
