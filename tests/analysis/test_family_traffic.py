"""The family outlook's traffic, summed from loop health's daily counts, is what a registration measures.

``sql/select_family_traffic.sql`` reads 28 rows a family (``internal.loop_health_days``) where
``sql/measure_family_traffic.sql`` reads every session of the window; for a registration at a
UTC midnight both must give the same sessions a day, verified share and success rate, whatever
the outcomes: several authoritative outcomes of one session (the latest decides; a tie on time
goes to the first evaluator id), an outcome of a kind that is not authoritative, a verified
outcome without a success value, and sessions on both sides of the window's ends.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pytest

from sql import load_sql
from tests.end_to_end.landing_files import land_jsonl
from tests.ingest.valid_records import VALID
from tests.warehouse_checks import run_one_night

UTC = dt.timezone.utc
END = dt.datetime(2026, 11, 1, tzinfo=UTC)  # the window is 10-04 00:00 to 10-31 24:00


def _session(sid: str, org: str, task: str, at: dt.datetime) -> dict:
    return {**VALID["sessions"], "session_id": sid, "org_id": org, "task_type": task, "user_id": f"u-{sid}",
            "experiment_id": None, "delivered_arm": None, "admission_id": None, "started_at": at.isoformat(),
            "ended_at": (at + dt.timedelta(minutes=5)).isoformat()}


def _outcome(sid: str, at: dt.datetime, success: bool | None, evaluator: str = "ev", kind: str = "evaluator") -> dict:
    return {**VALID["outcomes"], "session_id": sid, "success": success, "recorded_at": at.isoformat(),
            "evaluator_id": evaluator, "evaluator_kind": kind}


def _land(landing) -> None:
    """Two families over 10-02 to 10-31; what each session's outcomes are is in its id."""
    by_day: dict[str, dict[str, list]] = {}

    def put(table: str, row: dict) -> None:  # landed on the UTC day of its event time
        at = row["started_at" if table == "sessions" else "recorded_at"]
        by_day.setdefault(at[:10], {}).setdefault(table, []).append(row)

    for day in range(30):
        at = dt.datetime(2026, 10, 2, 23, 59, tzinfo=UTC) + dt.timedelta(days=day)  # 10-02 is outside the window
        for org, task in (("o", "t"), ("o", "t2"), ("p", "t")):
            for i in range(4 + day % 3):
                sid = f"{org}{task}-{day}-{i}"
                put("sessions", _session(sid, org, task, at))
                later = at + dt.timedelta(minutes=30)
                kind = i % 4
                if kind == 0:  # re-evaluated: the later outcome decides (a failure)
                    put("outcomes", _outcome(sid, later, True))
                    put("outcomes", _outcome(sid, later + dt.timedelta(minutes=1), False, "ev2"))
                elif kind == 1:  # two at the same time: the first evaluator id decides (a success)
                    put("outcomes", _outcome(sid, later, True, "a"))
                    put("outcomes", _outcome(sid, later, False, "b"))
                elif kind == 2 and day % 2:  # only a self report: not verified
                    put("outcomes", _outcome(sid, later, True, kind="self_report"))
                elif kind == 2:  # verified without a success value
                    put("outcomes", _outcome(sid, later, None))
                # kind 3: no outcome at all
    for day, tables in by_day.items():
        for table, rows in tables.items():
            land_jsonl(landing, table, day, "part.jsonl", rows)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("family_traffic")
    _land(root / "landing")
    run_one_night(root / "landing", root / "warehouse.duckdb", "2026-10-31")
    return root / "warehouse.duckdb"


def test_the_outlooks_day_sums_equal_what_a_registration_at_the_nights_end_measures(warehouse):
    families = [("o", "t"), ("o", "t2"), ("p", "t")]
    new = pl.DataFrame({"experiment_id": [f"{o}/{t}" for o, t in families], "org_id": [o for o, _ in families],
                        "task_type": [t for _, t in families], "randomization_unit": ["session"] * 3,
                        "registered_at": [END] * 3})
    with duckdb.connect(str(warehouse), read_only=True) as con:
        summed = con.execute(load_sql("select_family_traffic"), {"end": END}).pl()
        con.register("new_registrations", new)
        measured = con.execute(load_sql("measure_family_traffic")).pl()
    columns = ["traffic_per_day", "verified_share", "success_rate"]
    by_days = {f"{r['org_id']}/{r['task_type']}": [r[c] for c in columns] for r in summed.to_dicts()}
    by_sessions = {r["experiment_id"]: [r[c] for c in columns] for r in measured.to_dicts()}
    assert set(by_days) == set(by_sessions)
    for family, figures in by_sessions.items():
        assert by_days[family] == pytest.approx(figures, rel=1e-12), family
    # by hand for o / t: days 2..29 of the loop (10-04 to 10-31) have 4, 5 or 6 sessions by day % 3: 4 x 9 + 5 x 10
    # + 6 x 9 = 140 sessions, 28 days; kinds 0 and 1 are verified in every day, kind 2 on the even days only
    sessions = sum(4 + d % 3 for d in range(2, 30))
    kinds = [[i % 4 for i in range(4 + d % 3)] for d in range(2, 30)]
    verified = sum(k.count(0) + k.count(1) + (k.count(2) if d % 2 == 0 else 0) for d, k in zip(range(2, 30), kinds))
    failures, successes = sum(k.count(0) for k in kinds), sum(k.count(1) for k in kinds)
    assert by_days["o/t"] == pytest.approx([sessions / 28, verified / sessions, successes / (successes + failures)])
