"""The launch cap is charged at launch: admissions that never launch use none of it, and of two
launches racing for the last slot only the first in the ledger is within the cap."""

from zcl_assets.funnel.budgets import load_budgets
from zcl_assets.funnel.build import build_funnel

from .ledger import ledger

BUDGETS = load_budgets()  # launch cap 4 a day, attempt cap 4 a day


def _launched(aid: str, minute: int, **extra) -> list[dict]:
    return [
        {"admission_id": aid, "state": "admitted", "minute": minute - 3, **extra},
        {"admission_id": aid, "state": "consumed", "minute": minute - 2, **extra},
        {"admission_id": aid, "state": "launched", "minute": minute, **extra},
    ]


def test_admissions_that_never_launch_do_not_use_the_launch_cap():
    events = []
    for k in range(6):  # six admissions stall or are blocked: no launch
        events.append({"admission_id": f"idle{k}", "state": "admitted", "minute": 10 + k})
        if k % 2:
            events.append({"admission_id": f"idle{k}", "state": "consumed", "minute": 20 + k})
        if k == 5:
            events.append({"admission_id": f"idle{k}", "state": "blocked", "minute": 30})
    for k in range(4):  # then four launches: all four fit the cap of 4
        events += _launched(f"run{k}", 100 + 10 * k)
    con = ledger(events)
    build_funnel(con, BUDGETS)
    launched = con.execute(
        "SELECT admission_id, launch_slot, within_launch_cap FROM admission_states WHERE launched_at IS NOT NULL ORDER BY 2"
    ).fetchall()
    assert launched == [("run0", 1, True), ("run1", 2, True), ("run2", 3, True), ("run3", 4, True)]
    assert con.execute("SELECT count(*) FROM admission_states WHERE launch_slot IS NOT NULL").fetchone()[0] == 4
    # the same ten admissions are ten attempts: six beyond the attempt cap of 4
    assert con.execute("SELECT count(*) FROM admission_states WHERE NOT within_attempt_cap").fetchone()[0] == 6


def test_two_launches_racing_for_the_last_slot_only_one_is_within_the_cap():
    events = []
    for k in range(3):
        events += _launched(f"early{k}", 100 + 10 * k)
    # two runners saw three launches and launched in the same second; the ledger appended
    # racer-b's launch first (earlier row), so racer-b holds the last slot.
    events += [
        {"admission_id": "racer-a", "state": "admitted", "minute": 200},
        {"admission_id": "racer-b", "state": "admitted", "minute": 201},
        {"admission_id": "racer-a", "state": "consumed", "minute": 202},
        {"admission_id": "racer-b", "state": "consumed", "minute": 202},
        {"admission_id": "racer-b", "state": "launched", "minute": 210},
        {"admission_id": "racer-a", "state": "launched", "minute": 210},
    ]
    con = ledger(events)
    build_funnel(con, BUDGETS)
    racers = con.execute(
        "SELECT admission_id, launch_slot, within_launch_cap FROM admission_states WHERE admission_id LIKE 'racer%' ORDER BY 1"
    ).fetchall()
    assert racers == [("racer-a", 5, False), ("racer-b", 4, True)]
    from sql import load_sql

    over = con.execute(load_sql("funnel/find_launches_over_cap")).fetchall()
    assert [(r[0], r[2], r[3], r[4]) for r in over] == [("o1", 5, 4, "racer-a")]


def test_caps_are_per_organization_and_utc_day(tmp_path):
    budgets_file = tmp_path / "budgets.yaml"
    budgets_file.write_text("organizations:\n  o2:\n    launch_cap_per_day: 1\n", encoding="utf-8")
    budgets = load_budgets(budgets_file)
    events = _launched("a", 100, org_id="o2") + _launched("b", 110, org_id="o2")
    events += _launched("c", 100 + 24 * 60, org_id="o2")  # next UTC day: a fresh cap
    events += _launched("d", 120, org_id="o1")  # another organization: its own cap (default 4)
    con = ledger(events)
    build_funnel(con, budgets)
    rows = con.execute("SELECT admission_id, launch_slot, launch_cap, within_launch_cap FROM admission_states ORDER BY 1").fetchall()
    assert rows == [("a", 1, 1, True), ("b", 2, 1, False), ("c", 1, 1, True), ("d", 1, 4, True)]


def test_the_attempt_cap_is_its_own_not_the_launch_cap(tmp_path):
    budgets_file = tmp_path / "budgets.yaml"
    budgets_file.write_text("defaults:\n  launch_cap_per_day: 2\n  attempt_cap_per_day: 5\n"
                            "organizations:\n  o2:\n    launch_cap_per_day: 3\n    attempt_cap_per_day: 1\n", encoding="utf-8")
    budgets = load_budgets(budgets_file)
    # six admissions a day in each organization, none launched: only the attempt cap applies
    events = [{"admission_id": f"{org}-{k}", "state": "admitted", "minute": 10 + k, "org_id": org}
              for org in ("o1", "o2") for k in range(6)]
    con = ledger(events)
    build_funnel(con, budgets)
    rows = con.execute("SELECT org_id, attempt_cap, count(*) FILTER (WHERE within_attempt_cap) FROM admission_states "
                       "GROUP BY ALL ORDER BY 1").fetchall()
    # o1 takes the default attempt cap 5 (not the default launch cap 2); o2 its own 1 (not its launch cap 3)
    assert rows == [("o1", 5, 5), ("o2", 1, 1)]


def test_a_new_default_cap_alone_replays_the_ledger(tmp_path):
    from zcl_assets.funnel.build import funnel_pending

    budgets_file = tmp_path / "budgets.yaml"
    budgets_file.write_text("defaults:\n  launch_cap_per_day: 4\n", encoding="utf-8")
    con = ledger(_launched("a", 100) + _launched("b", 110))
    build_funnel(con, load_budgets(budgets_file))
    assert not funnel_pending(con, load_budgets(budgets_file))  # built, nothing new
    assert con.execute("SELECT count(*) FILTER (WHERE within_launch_cap) FROM admission_states").fetchone()[0] == 2
    # o1 has no entry of its own: its cap is the default, a parameter of the SQL, not a row of the caps table
    budgets_file.write_text("defaults:\n  launch_cap_per_day: 1\n", encoding="utf-8")
    assert funnel_pending(con, load_budgets(budgets_file))
    build_funnel(con, load_budgets(budgets_file))
    rows = con.execute("SELECT admission_id, launch_cap, within_launch_cap FROM admission_states ORDER BY 1").fetchall()
    assert rows == [("a", 1, True), ("b", 1, False)]
