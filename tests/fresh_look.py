"""The look's state brought up to date by hand, and the oracle of the stored look: one night
computed from a state built from scratch.

The nightly job keeps the look's state (its daily sums, its cursor) and computes every night
from it (``look.take_looks``). :func:`fresh_look` builds the whole state afresh in temp tables of
the given connection (read-only is enough), whatever is stored, and computes the one night asked
for; the tests compare it with the rows the job stored for that night.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from zcl_assets.analysis.engine import analyse
from zcl_assets.analysis.look import read_inputs, state_frames
from zcl_assets.analysis.look_state import update_look_state
from zcl_assets.warehouse import transaction


def refresh_state(con: duckdb.DuckDBPyConnection, as_of: str, fresh: bool = False) -> pl.DataFrame:
    """Update the look's stored state for what changed and commit it, as a pass does before its looks
    (``fresh``: build it from scratch in temp tables, committing nothing); the dirty experiments
    ``experiment_id, from_day``."""
    update = update_look_state(con, state_frames(con, as_of), fresh=fresh)
    if not fresh:
        with transaction(con):
            update.commit(con)
    return update.dirty


def fresh_look(con: duckdb.DuckDBPyConnection, as_of: str) -> pl.DataFrame:
    """The look of the night ``as_of`` alone (every night of the path is evaluated, for rule 1), from a
    state built from scratch on ``con``."""
    refresh_state(con, as_of, fresh=True)
    inputs = read_inputs(con, as_of)
    night = inputs.looks.with_columns((pl.col("as_of") == dt.date.fromisoformat(as_of)).alias("output"))
    return analyse(inputs._replace(looks=night))
