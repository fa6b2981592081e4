"""Importers: turn external A/B exports into ZCL landing files (see docs/landing.md).

Plain functions with keyword options; no Dagster and no CLI code here.
"""

from zcl_assets.importers.ab_export import AbExportSummary, import_ab_export
from zcl_assets.importers.arm_snapshots import ArmSnapshotSummary, import_arm_snapshots
from zcl_assets.importers.landing_writer import (
    SCHEMA_VERSION,
    LandingWrite,
    iso_utc,
    json_text,
    parse_timestamp,
    write_landing,
)

__all__ = [
    "SCHEMA_VERSION",
    "AbExportSummary",
    "ArmSnapshotSummary",
    "LandingWrite",
    "import_ab_export",
    "import_arm_snapshots",
    "iso_utc",
    "json_text",
    "parse_timestamp",
    "write_landing",
]
