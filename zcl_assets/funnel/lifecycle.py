"""The admission lifecycle: stages, the transitions allowed between them, the rules broken.

An admission is one exploration attempt, keyed by ``admission_id``; its history is an
append-only stream of lifecycle events (``admission_events``)::

    admitted -> consumed -> launched -> terminal (outcome productive | unproductive | failed)
                        \\-> blocked

The current state of an admission is the stage of its last valid event. An event is valid
when its stage may follow the current state (:data:`TRANSITIONS`); otherwise it is
quarantined with the first rule of :data:`RULES` that it breaks and the admission keeps its
state. Events of one admission are replayed in the order of ``at``, then stage order (for
events stamped in the same second), then append order (file and row).

The replay itself runs in DuckDB (``sql/funnel/select_admission_transitions.sql``), which
reads the transitions from :func:`transitions_frame`; this module holds the definitions.
"""

from __future__ import annotations

import polars as pl

from contracts.tables import ADMISSION_STATES

STAGES: tuple[str, ...] = ADMISSION_STATES
"""Lifecycle stages (the landing contract's states), in funnel order; ``blocked`` is the
alternative to ``launched``."""

STAGE_ORDER: dict[str, int] = {"admitted": 1, "consumed": 2, "launched": 3, "blocked": 3, "terminal": 4}
"""Order of stages stamped in the same second of one admission."""

OUTCOMES: tuple[str, ...] = ("productive", "unproductive", "failed")
"""Outcomes of a ``terminal`` event; ``productive`` is a useful observation."""

INITIAL = "none"
"""The state of an admission before its first valid event."""

TRANSITIONS: frozenset[tuple[str, str]] = frozenset(
    {
        (INITIAL, "admitted"),
        ("admitted", "consumed"),
        ("consumed", "launched"),
        ("consumed", "blocked"),
        ("launched", "terminal"),
    }
)
"""(state, next stage) pairs that are possible; ``blocked`` and ``terminal`` end an admission."""

ENDS: frozenset[str] = frozenset({"blocked", "terminal"})

RULES: dict[str, str] = {
    "bad_outcome": "a terminal event whose outcome is missing or not productive, unproductive or failed",
    "inconsistent_admission": "organization, task type or arm differ from the admitted event",
    "not_admitted_first": "the first event of an admission is not `admitted`",
    "event_after_terminal": "any event after the admission ended with `terminal`",
    "event_after_blocked": "any event after the admission ended with `blocked`",
    "launched_twice": "a second `launched` event",
    "terminal_before_launched": "`terminal` before the admission was launched",
    "repeated_stage": "a stage the admission is already in (admitted or consumed twice)",
    "out_of_order": "a stage that cannot follow the current one (e.g. launched before consumed)",
}
"""Quarantine rules of stage ``funnel``, in the order they are tried (first match wins)."""


def transitions_frame() -> pl.DataFrame:
    """The allowed transitions as a two-column frame (``from_state``, ``to_state``) for DuckDB."""
    pairs = sorted(TRANSITIONS)
    return pl.DataFrame({"from_state": [p[0] for p in pairs], "to_state": [p[1] for p in pairs]})


def stage_order_frame() -> pl.DataFrame:
    """Stage order as a frame (``stage``, ``stage_order``) for DuckDB."""
    return pl.DataFrame({"stage": list(STAGE_ORDER), "stage_order": list(STAGE_ORDER.values())})
