"""Checks of the nightly assets: conservation is blocking; data-quality signals only warn.

Each is evaluated by its asset's own step (``check_specs``), on the asset's connection, so a
night pays no Dagster step for it.
"""

import dagster as dg
import duckdb

from sql import load_sql
from zcl_assets.stats.srm import SRM_ALPHA

ASSIGNMENT_CONSERVATION = dg.AssetCheckSpec(
    "assignment_conservation", asset="experience", blocking=True,
    description="Every staged assignment is in the experience table or quarantined (stage experience).",
)


def assignment_conservation(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    staged, kept, quarantined = con.execute(load_sql("count_assignment_conservation")).fetchone()
    return dg.AssetCheckResult(
        check_name=ASSIGNMENT_CONSERVATION.name,
        passed=staged == kept + quarantined,
        metadata={"staged_assignments": staged, "experience_rows": kept, "quarantined": quarantined},
    )


SRM_EXAMPLE_COLUMNS = (
    dg.TableColumn("experiment_id", "string", description="experiment whose allocation check fires"),
    dg.TableColumn("treatment_arm", "string", description="arm compared with the control arm"),
    dg.TableColumn("units_control", "int", description="control units assigned up to the look"),
    dg.TableColumn("units_treatment", "int", description="treatment units assigned up to the look"),
    dg.TableColumn("srm_sequential_p", "float", description="anytime-valid SRM p-value (Lindon and Malek 2022)"),
    dg.TableColumn("srm_chisquare_p", "float", description="chi-square goodness-of-fit p-value"),
)


SAMPLE_RATIO = dg.AssetCheckSpec(
    "sample_ratio", asset="experiment_analysis",
    description=f"Sample ratio on units matches the registered allocation, or stays constant when none was declared "
    f"(sequential SRM p >= {SRM_ALPHA}, docs/statistics.md), in the look just taken. A mismatch makes the "
    "experiment's decisions invalid.",
)


def sample_ratio(con: duckdb.DuckDBPyConnection, as_of: str) -> dg.AssetCheckResult:
    """The comparisons of the look ``as_of`` whose allocation check fired (a warning)."""
    rows = con.execute(load_sql("find_srm_comparisons"), {"as_of": as_of}).fetchall()
    examples = [
        dg.TableRecord({c.name: v for c, v in zip(SRM_EXAMPLE_COLUMNS, row)}) for row in rows[:20]
    ]
    return dg.AssetCheckResult(
        check_name=SAMPLE_RATIO.name,
        passed=not rows,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "as_of": as_of,
            "comparisons_with_srm": len(rows),
            "examples": dg.MetadataValue.table(examples, schema=dg.TableSchema(columns=list(SRM_EXAMPLE_COLUMNS))),
        },
    )
