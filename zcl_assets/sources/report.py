"""What a run of the PostgreSQL source says to a person: what it read, landed and found changed."""

from __future__ import annotations

from pathlib import Path

from zcl_assets.sources.journal import SHOWN_IDS
from zcl_assets.sources.sync import STREAMED, SyncSummary


def render_sync(summary: SyncSummary, landing: Path) -> str:
    """A few lines: the run, per table what was read, the changes by day, deletions by id."""
    how = "every day reconciled" if summary.reconciled else "incremental"
    lines = [f"PostgreSQL source, run {summary.run} ({how}): {summary.registrations} registrations, "
             f"{len(summary.files_written)} files written, {len(summary.files_removed)} removed under {landing}"]
    for role in STREAMED:
        window = "every day" if summary.windows[role] == "all" else f"days from {summary.windows[role]}"
        lines.append(f"  {role:<12} {summary.rows_read[role]:>9,} rows read in {summary.days_read[role]:>4,} changed days "
                     f"(fingerprinted {window}; watermark {summary.watermarks[role] or 'none'})")
    if not summary.changes:
        lines.append("  no landed row changed")
    for change in summary.changes:
        lines.append(f"  {change.table} {change.day}: {change.added:,} added, {change.updated:,} updated, "
                     f"{change.deleted:,} deleted at the source")
        if change.deleted:
            shown = ", ".join(change.deleted_ids[:SHOWN_IDS])
            more = f" and {change.deleted - SHOWN_IDS:,} more" if change.deleted > SHOWN_IDS else ""
            lines.append(f"    deleted source rows: {shown}{more}")
    lines.append(f"  change ledger: {summary.ledger}")
    return "\n".join(lines)
