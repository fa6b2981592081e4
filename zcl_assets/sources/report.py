"""What a run of the PostgreSQL source says to a person: what it read, landed and found changed."""

from __future__ import annotations

from pathlib import Path

from zcl_assets.sources.journal import SHOWN_IDS
from zcl_assets.sources.sync import STREAMED, SyncSummary

SHOWN_DAYS = 20
"""Days with updated or deleted rows listed one by one; the change ledger lists all."""


def render_sync(summary: SyncSummary, landing: Path) -> str:
    """A few lines: the run, per table what was read and changed, the days with updated or deleted rows."""
    how = "every day reconciled" if summary.reconciled else "incremental"
    lines = [f"PostgreSQL source, run {summary.run} ({how}): {summary.registrations} registrations, "
             f"{len(summary.files_written)} files written, {len(summary.files_removed)} removed under {landing}"]
    for role in STREAMED:
        window = "every day" if summary.windows[role] == "all" else f"days from {summary.windows[role]}"
        lines.append(f"  {role:<12} {summary.rows_read[role]:>9,} rows read in {summary.days_read[role]:>4,} changed days "
                     f"(fingerprinted {window}; watermark {summary.watermarks[role] or 'none'})")
    if not summary.changes:
        lines.append("  no landed row changed")
    for table in sorted({c.table for c in summary.changes}):
        mine = [c for c in summary.changes if c.table == table]
        lines.append(f"  {table}: {sum(c.added for c in mine):,} rows added, {sum(c.updated for c in mine):,} updated, "
                     f"{sum(c.deleted for c in mine):,} deleted at the source, in {len(mine):,} days")
    corrected = [c for c in summary.changes if c.updated or c.deleted]
    for change in corrected[:SHOWN_DAYS]:
        lines.append(f"    {change.table} {change.day}: {change.updated:,} updated, {change.deleted:,} deleted")
        if change.deleted:
            shown = ", ".join(change.deleted_ids[:SHOWN_IDS])
            more = f" and {change.deleted - SHOWN_IDS:,} more" if change.deleted > SHOWN_IDS else ""
            lines.append(f"      deleted source rows: {shown}{more}")
    if len(corrected) > SHOWN_DAYS:
        lines.append(f"    and {len(corrected) - SHOWN_DAYS:,} more days with updated or deleted rows (in the ledger)")
    lines.append(f"  change ledger: {summary.ledger}")
    return "\n".join(lines)
