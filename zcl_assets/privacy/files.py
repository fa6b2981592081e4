"""Files that hold landed bytes as they came: readable by the pipeline's user only.

The archive keeps every landed file byte for byte (it is the raw history that staging reads
and replays), so it holds whatever the landing held, secrets in rows that were quarantined
included. Analysts query the DuckDB file, whose tables are redacted; the archive folder is
made private to the pipeline's user (mode 0700), so sharing the warehouse does not share it.
"""

from __future__ import annotations

from pathlib import Path

PRIVATE_FOLDER_MODE = 0o700


def keep_private(folder: Path) -> Path:
    """Create ``folder`` (and its parents) if needed and make it 0700; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(PRIVATE_FOLDER_MODE)
    return folder
