"""Reading landed files (JSON Lines or Parquet) back in importer tests."""

import json
from pathlib import Path

import polars as pl


def read_lines(landing: Path, table: str) -> list[dict]:
    """Every record landed for ``table`` (JSON Lines or Parquet), with its day folder as ``_day``."""
    out = []
    for f in sorted((landing / table).glob("*/*")):
        if f.suffix == ".jsonl":
            records = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()]
        elif f.suffix == ".parquet":
            records = pl.read_parquet(f).to_dicts()
        else:
            continue
        for rec in records:
            rec["_day"] = f.parent.name
            out.append(rec)
    return out
