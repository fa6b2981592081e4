"""``postgres_landing``: the ZCL PostgreSQL database landed as landing files, before the night.

The asset reads the source through :class:`resources.postgres.PostgresSource` (connection from
``ZCL_POSTGRES_URI``) and writes ``<landing>/<table>/<day>/postgres-<source>.parquet``; the
nightly job then loads the changed days like any other landed file. It never touches the
warehouse, so it runs outside the ``duckdb`` pool.
"""

import dagster as dg
import polars as pl

from resources import LandingStore
from resources.postgres import PostgresSource
from zcl_assets.defs.metadata import table_metadata
from zcl_assets.sources.journal import SHOWN_IDS


class PostgresLandingConfig(dg.Config):
    """``reconcile``: fingerprint every day, not only the look-back window (the night's run does)."""

    reconcile: bool = True


@dg.asset(
    group_name="sources",
    kinds={"postgres", "parquet"},
    check_specs=[dg.AssetCheckSpec("no_rows_deleted_at_source", asset="postgres_landing", blocking=False)],
    description=(
        "The ZCL PostgreSQL schema (experiments, sessions, assignments, outcomes) landed as one Parquet file per "
        "table and UTC day that mirrors the source's rows of that day: changed days are found by fingerprints "
        "computed on the server (the look-back window before the watermark, or every day when reconciling) and "
        "rewritten whole, so reruns and overlaps land a row once and updates land as corrections. Rows deleted at "
        "the source leave the landing and are reported by the check `no_rows_deleted_at_source` (docs/postgres.md)."
    ),
)
def postgres_landing(context: dg.AssetExecutionContext, config: PostgresLandingConfig, postgres: PostgresSource,
                     landing: LandingStore):
    summary = postgres.sync(landing.root, reconcile=config.reconcile)
    for experiment_id, reason in summary.refused.items():
        context.log.warning(f"registration of experiment {experiment_id} refused: {reason}")
    changes = pl.DataFrame([{k: v for k, v in c.as_dict().items() if k != "deleted_source_ids"} for c in summary.changes],
                           schema={"table": pl.String, "day": pl.String, "added": pl.Int64, "updated": pl.Int64,
                                   "deleted": pl.Int64})
    yield dg.MaterializeResult(metadata={
        "dagster/row_count": sum(summary.rows_read.values()),
        "run": summary.run,
        "reconciled": summary.reconciled,
        "registrations": summary.registrations,
        "refused_registrations": dg.MetadataValue.json(summary.refused),
        "files_written": len(summary.files_written),
        "files_removed": len(summary.files_removed),
        "rows_added": summary.total("added"), "rows_updated": summary.total("updated"),
        "rows_deleted": summary.total("deleted"),
        "watermarks": dg.MetadataValue.json(summary.watermarks),
        "windows": dg.MetadataValue.json(summary.windows),
        "changes": table_metadata(changes, "Landed days this run changed: source rows added, updated, deleted"),
        "ledger": str(summary.ledger),
    })
    deleted = [c for c in summary.changes if c.deleted]
    yield dg.AssetCheckResult(
        check_name="no_rows_deleted_at_source",
        passed=not deleted,
        severity=dg.AssetCheckSeverity.WARN,
        description="Source rows that were landed before and are gone from the source now; they left the landing "
                    "(a fresh load would not have them) and are listed here and in the change ledger.",
        metadata={"rows_deleted": sum(c.deleted for c in deleted),
                  "deleted": dg.MetadataValue.json({f"{c.table} {c.day}": list(c.deleted_ids[:SHOWN_IDS]) for c in deleted})},
    )
