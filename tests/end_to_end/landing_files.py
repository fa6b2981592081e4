"""Writing hand-made landing files: one JSON Lines file of records under ``table/day/``."""

from __future__ import annotations

import json
from pathlib import Path


def land_jsonl(landing: Path, table: str, day: str, name: str, records: list[dict]) -> Path:
    folder = landing / table / day
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
