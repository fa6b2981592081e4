"""The lifecycle replay in DuckDB against an independent fold, on examples and generated ledgers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zcl_assets.funnel.budgets import load_budgets
from zcl_assets.funnel.build import build_funnel
from zcl_assets.funnel.lifecycle import RULES, STAGE_ORDER, STAGES

from .ledger import ledger

BUDGETS = load_budgets()
NEXT = {"none": {"admitted"}, "admitted": {"consumed"}, "consumed": {"launched", "blocked"}, "launched": {"terminal"},
        "blocked": set(), "terminal": set()}


def reference_replay(events: list[dict]) -> tuple[list[str | None], dict[str, str]]:
    """The rule each event breaks (None: valid) and each admission's final state, written from
    the rules table of docs/funnel.md, one event at a time."""
    order = sorted(range(len(events)), key=lambda i: (events[i].get("minute", i + 1), STAGE_ORDER[events[i]["state"]], i))
    state: dict[str, str] = {}
    first: dict[str, dict] = {}
    rules: list[str | None] = [None] * len(events)
    for i in order:
        e = events[i]
        aid, stage = e["admission_id"], e["state"]
        s = state.get(aid, "none")
        adm = first.get(aid)
        rule = None
        if stage == "terminal" and e.get("outcome") not in ("productive", "unproductive", "failed"):
            rule = "bad_outcome"
        elif adm is not None and (
            e.get("org_id", "o1") != adm.get("org_id", "o1")
            or e.get("task_type", "t1") != adm.get("task_type", "t1")
            or (e.get("arm") is not None and adm.get("arm") is not None and e["arm"] != adm["arm"])
        ):
            rule = "inconsistent_admission"
        elif stage in NEXT[s]:
            rule = None
        elif s == "none":
            rule = "not_admitted_first"
        elif s in ("terminal", "blocked"):
            rule = f"event_after_{s}"
        elif stage == "launched" and s == "launched":
            rule = "launched_twice"
        elif stage == "terminal":
            rule = "terminal_before_launched"
        elif stage == s:
            rule = "repeated_stage"
        else:
            rule = "out_of_order"
        rules[i] = rule
        if rule is None:
            state[aid] = stage
            if stage == "admitted":
                first[aid] = e
    return rules, state


def replay_sql(events: list[dict]):
    con = ledger(events)
    build_funnel(con, BUDGETS)
    rules = [r[0] for r in con.execute("SELECT rule FROM admission_transitions ORDER BY source_row").fetchall()]
    states = dict(con.execute("SELECT admission_id, state FROM admission_states").fetchall())
    return con, rules, states


def test_the_three_impossible_transitions_of_the_issue_are_quarantined_with_a_reason():
    events = [
        {"admission_id": "a", "state": "admitted", "arm": "x"},
        {"admission_id": "a", "state": "terminal", "outcome": "productive"},  # terminal before launched
        {"admission_id": "b", "state": "admitted", "arm": "x"},
        {"admission_id": "b", "state": "consumed"},
        {"admission_id": "b", "state": "launched", "session_id": "s1"},
        {"admission_id": "b", "state": "launched", "session_id": "s2"},  # launched twice
        {"admission_id": "b", "state": "terminal", "outcome": "failed"},
        {"admission_id": "b", "state": "consumed"},  # an event after terminal
    ]
    con, rules, states = replay_sql(events)
    assert rules == [None, "terminal_before_launched", None, None, None, "launched_twice", None, "event_after_terminal"]
    assert states == {"a": "admitted", "b": "terminal"}
    quarantined = con.execute(
        "SELECT source_row, stage, rule, reason FROM quarantine ORDER BY source_row"
    ).fetchall()
    assert quarantined == [
        (2, "funnel", "terminal_before_launched", "terminal before launched (the admission was admitted)"),
        (6, "funnel", "launched_twice", "launched twice: the admission was already launched"),
        (8, "funnel", "event_after_terminal", "consumed after the admission ended (terminal)"),
    ]
    # the second launch takes no slot: one launch of b
    assert con.execute("SELECT launch_slot, session_id FROM admission_states WHERE admission_id = 'b'").fetchone() == (1, "s1")


def test_field_rules_and_ordering_by_time_not_by_arrival():
    events = [
        {"admission_id": "a", "state": "consumed", "minute": 5},
        {"admission_id": "a", "state": "admitted", "minute": 1, "arm": "x"},  # arrives late, happened first
        {"admission_id": "a", "state": "launched", "minute": 6, "arm": "y"},  # another arm than admitted
        {"admission_id": "b", "state": "consumed", "minute": 1},  # never admitted
        {"admission_id": "c", "state": "admitted", "minute": 1},
        {"admission_id": "c", "state": "consumed", "minute": 2},
        {"admission_id": "c", "state": "launched", "minute": 3},
        {"admission_id": "c", "state": "terminal", "minute": 4, "outcome": "great"},
    ]
    _, rules, states = replay_sql(events)
    assert rules == [None, None, "inconsistent_admission", "not_admitted_first", None, None, None, "bad_outcome"]
    assert states == {"a": "consumed", "c": "launched"}


EVENT = st.fixed_dictionaries(
    {
        "admission_id": st.sampled_from(["a1", "a2", "a3"]),
        "state": st.sampled_from(STAGES),
        "minute": st.integers(0, 12),
    },
    optional={
        "arm": st.sampled_from(["x", "y"]),
        "org_id": st.sampled_from(["o1", "o1", "o1", "o2"]),
        "outcome": st.sampled_from(["productive", "unproductive", "failed", "bogus"]),
    },
)


def _unique_keys(events: list[dict]) -> list[dict]:
    """Staging refuses a repeated (admission_id, state, at); keep the first, as staging does."""
    seen, out = set(), []
    for e in events:
        key = (e["admission_id"], e["state"], e["minute"])
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENT, min_size=1, max_size=14).map(_unique_keys))
def test_replay_matches_an_independent_fold(events):
    con, rules, states = replay_sql(events)
    expected_rules, expected_states = reference_replay(events)
    assert rules == expected_rules
    assert states == expected_states
    assert {r for r in rules if r} <= set(RULES)
    # every event is replayed or quarantined, once
    valid = con.execute("SELECT coalesce(sum(valid_events), 0) FROM admission_states").fetchone()[0]
    quarantined = con.execute("SELECT count(*) FROM quarantine WHERE stage = 'funnel'").fetchone()[0]
    assert valid + quarantined == len(events)
    # an admission enters a stage at most once, so stage counts never exceed admissions
    per_stage = dict(con.execute("SELECT stage, sum(admissions) FROM funnel_stage_counts GROUP BY ALL").fetchall())
    assert all(n <= len(states) for n in per_stage.values())
    assert per_stage.get("launched", 0) >= per_stage.get("terminal", 0)
    # building again replaces, never doubles
    before = con.execute("SELECT * FROM funnel_stage_counts ORDER BY ALL").fetchall()
    build_funnel(con, BUDGETS)
    assert con.execute("SELECT * FROM funnel_stage_counts ORDER BY ALL").fetchall() == before
    assert con.execute("SELECT count(*) FROM quarantine WHERE stage = 'funnel'").fetchone()[0] == quarantined


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_is_documented(rule):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "funnel.md").read_text(encoding="utf-8")
    assert f"`{rule}`" in doc
