"""Reading landed JSON Lines back in importer tests."""

import json
from pathlib import Path


def read_lines(landing: Path, table: str) -> list[dict]:
    """Every record landed for ``table``, with its day folder as ``_day``."""
    out = []
    for f in sorted((landing / table).glob("*/*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            rec["_day"] = f.parent.name
            out.append(rec)
    return out
