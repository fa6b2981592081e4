"""Checks of the nightly assets: conservation is blocking; data-quality signals only warn."""

import dagster as dg

from resources import Warehouse
from sql import load_sql
from zcl_assets.defs.analysis.assets import experience, experiment_analysis
from zcl_assets.stats.srm import SRM_ALPHA


@dg.asset_check(
    asset=experience,
    blocking=True,
    description="Every staged assignment is in the experience table or quarantined (stage experience).",
)
def assignment_conservation(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        staged, kept, quarantined = con.execute(load_sql("count_assignment_conservation")).fetchone()
    return dg.AssetCheckResult(
        passed=staged == kept + quarantined,
        metadata={"staged_assignments": staged, "experience_rows": kept, "quarantined": quarantined},
    )


@dg.asset_check(
    asset=experiment_analysis,
    description=f"Sample ratio on units matches the registered allocation, or stays constant when none was declared "
    f"(sequential SRM p >= {SRM_ALPHA}, docs/statistics.md). A mismatch makes the experiment's decisions invalid.",
)
def sample_ratio(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.execute(load_sql("find_srm_comparisons"), {"threshold": SRM_ALPHA}).fetchall()
    return dg.AssetCheckResult(
        passed=not rows,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"comparisons_with_srm": len(rows), "examples": dg.MetadataValue.json([list(map(str, r)) for r in rows[:20]])},
    )
