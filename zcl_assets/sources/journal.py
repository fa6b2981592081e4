"""What a run changed in the landing folder, counted exactly once even across a crash.

Before a run replaces or removes one landed day file it keeps the file as it was (its
before-image; a marker when there was none) under ``<state>/pending/``, unless an image of
that day is already kept: after a crash the rerun finds the images of the crashed attempt and
keeps them, so the changes it reports run from the landing as it was before the first
attempt to the landing as the rerun leaves it. Once every file is written the run compares
each image with the day's file now, by source row id: rows added, updated and deleted.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl

SHOWN_IDS = 50
"""Deleted row ids listed per day in a report; the ledger file keeps all of them."""


@dataclass(frozen=True)
class DayChange:
    """How one landed day file of one table changed, by source row id."""

    table: str
    day: str
    added: int
    updated: int
    deleted_ids: tuple[str, ...]

    @property
    def deleted(self) -> int:
        return len(self.deleted_ids)

    def as_dict(self) -> dict:
        return {"table": self.table, "day": self.day, "added": self.added, "updated": self.updated,
                "deleted": self.deleted, "deleted_source_ids": list(self.deleted_ids)}


class Journal:
    """Before-images of the day files of one run (see the module docstring)."""

    def __init__(self, root: Path, run: int) -> None:
        self.root = root
        marker = root / "run"
        if marker.exists() and int(marker.read_text() or 0) != run:
            shutil.rmtree(root)  # images of a run whose changes were already reported
        root.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(run))

    def _image(self, table: str, day: str) -> tuple[Path, Path]:
        return self.root / table / f"{day}.parquet", self.root / table / f"{day}.absent"

    def keep_before(self, table: str, day: str, landed: Path) -> None:
        """Keep ``landed`` as it is now, once per (table, day) and run."""
        image, absent = self._image(table, day)
        if image.exists() or absent.exists():
            return
        image.parent.mkdir(parents=True, exist_ok=True)
        if landed.exists():
            tmp = image.with_suffix(".tmp")
            shutil.copyfile(landed, tmp)
            os.replace(tmp, image)
        else:
            absent.touch()

    def changes(self, landed_path) -> list[DayChange]:
        """Every kept day compared with its file now (``landed_path(table, day)``), in order."""
        out = []
        for table_dir in sorted(p for p in self.root.iterdir() if p.is_dir()):
            for day in sorted({p.stem for p in table_dir.iterdir() if p.suffix in (".parquet", ".absent")}):
                image, _ = self._image(table_dir.name, day)
                change = diff_day(table_dir.name, day, _read(image), _read(landed_path(table_dir.name, day)))
                if change.added or change.updated or change.deleted:
                    out.append(change)
        return out

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _read(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.exists() else None


def diff_day(table: str, day: str, before: pl.DataFrame | None, after: pl.DataFrame | None) -> DayChange:
    """Rows added, updated (any field differs) and deleted between two versions of a day file."""
    old, new = _row_texts(before), _row_texts(after)
    joined = old.join(new, on="source_id", how="full", coalesce=True, suffix="_new")
    added = joined.filter(pl.col("row").is_null()).height
    updated = joined.filter(pl.col("row").is_not_null() & pl.col("row_new").is_not_null() & (pl.col("row") != pl.col("row_new"))).height
    deleted = joined.filter(pl.col("row_new").is_null()).sort("source_id").get_column("source_id").to_list()
    return DayChange(table, day, added, updated, tuple(deleted))


def _row_texts(frame: pl.DataFrame | None) -> pl.DataFrame:
    if frame is None or frame.height == 0:
        return pl.DataFrame(schema={"source_id": pl.String, "row": pl.String})
    fields = [pl.col(c).cast(pl.String).fill_null("\u0000") for c in sorted(frame.columns) if c != "source_id"]
    return frame.select("source_id", pl.concat_str(fields, separator="\u001f").alias("row"))
