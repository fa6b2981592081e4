"""`zcl simulate` world through the nightly job: decisions against known truth, end to end.

The world (zcl_assets/simulation/world.py) is landed by the CLI, then one `zcl run`-style night
as of the last day writes every nightly look in one pass. Each experiment's truth lists the
decisions it warrants by the planned sample; the effects are far enough from the MDE (or
zero) that the registered power and alpha make any other decision a rare event, and the seed
is fixed.
"""

from __future__ import annotations

import json
import re

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

from tests.warehouse_checks import run_one_night
from zcl_assets.cli import main

AS_OF = "2026-11-25"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    result = CliRunner().invoke(main, ["--landing-dir", str(landing), "--warehouse", str(warehouse), "simulate"])
    assert result.exit_code == 0, result.output
    assert f"next: zcl run --as-of {AS_OF}" in result.output
    truth = json.loads((root / "world-20261201-truth.json").read_text())
    run_one_night(landing, warehouse, AS_OF)
    con = duckdb.connect(str(warehouse), read_only=True)
    looks = con.execute("SELECT * FROM experiment_analysis").pl()
    yield truth, looks, con, warehouse
    con.close()


def last(looks):
    return looks.filter((pl.col("as_of") == pl.lit(AS_OF).str.to_date()) & pl.col("is_primary"))


def test_every_experiment_reaches_a_decision_its_truth_warrants(world):
    truth, looks, _, _ = world
    final = last(looks)
    assert final.get_column("experiment_id").n_unique() == len(truth["experiments"])
    for r in final.iter_rows(named=True):
        t = truth["experiments"][r["experiment_id"]]
        effect = t["effects"][r["treatment_arm"]]
        allowed = t["expected_decisions"]
        if r["experiment_id"] == "acme-support-three" and effect == 0.0:
            allowed = ["no_effect", "inconclusive", "continue"]  # the null arm of the three-arm test
        assert r["decision"] in allowed, (r["experiment_id"], r["treatment_arm"], r["decision"], r["decision_reason"])


def test_incidents_are_invalid_with_their_signal(world):
    _, looks, _, _ = world
    final = {r["experiment_id"]: r for r in last(looks).iter_rows(named=True)}
    assert "sequential SRM fired" in final["acme-bugfix-srm"]["decision_reason"]
    assert final["acme-refactor-drift"]["baseline_drift"] and "drifted" in final["acme-refactor-drift"]["decision_reason"]
    assert "registration refused" in final["acme-bugfix-fifth"]["decision_reason"]
    # the drift starts on day 20 (2026-10-21): the looks before it were not invalid
    drift = looks.filter(pl.col("is_primary") & (pl.col("experiment_id") == "acme-refactor-drift")).sort("as_of")
    assert drift.filter(pl.col("decision") == "invalid").get_column("as_of").min().isoformat() == "2026-10-21"


def test_a_small_organization_is_never_rejected_and_nulls_never_decided(world):
    _, looks, _, _ = world
    primary = looks.filter(pl.col("is_primary"))
    tiny = primary.filter(pl.col("org_id") == "tinyco")
    assert set(tiny.get_column("decision").unique().to_list()) == {"continue"}
    assert (tiny.get_column("plan_reachable")).all() and (tiny.get_column("information_fraction") < 0.3).all()
    nulls = primary.filter(pl.col("experiment_id").is_in(["acme-bugfix-order", "globex-bugfix-users", "acme-support-shift"]))
    assert not nulls.get_column("decision").is_in(["adopt", "reject"]).any()


def test_guardrail_harm_holds_adopt_with_the_guardrail_named(world):
    _, looks, _, _ = world
    r = last(looks).filter(pl.col("experiment_id") == "acme-refactor-time").row(0, named=True)
    assert r["decision"] == "continue" and r["decision_rule"] == 4
    assert "guardrail tokens breached" in r["decision_reason"] and r["cs_high"] < 0  # time went down: beneficial


def test_the_cs_covers_each_estimand_s_truth(world):
    truth, looks, _, _ = world
    final = looks.filter(pl.col("as_of") == pl.lit(AS_OF).str.to_date())
    memory = truth["experiments"]["acme-refactor-memory"]
    per_user = final.filter((pl.col("experiment_id") == "acme-refactor-memory") & pl.col("is_primary")).row(0, named=True)
    ratio = final.filter((pl.col("experiment_id") == "acme-refactor-memory") & (pl.col("role") == "secondary")).row(0, named=True)
    assert per_user["metric_kind"] == "continuous_mean" and ratio["metric_kind"] == "ratio_of_sums"
    assert per_user["cs_low"] < memory["effects"]["memory_on"] < per_user["cs_high"]
    assert ratio["cs_low"] < memory["session_weighted_effects"]["memory_on"] < ratio["cs_high"]
    # heavy users gain less: the two estimands differ, and the truth says so
    assert memory["effects"]["memory_on"] > memory["session_weighted_effects"]["memory_on"] + 0.01
    for r in final.filter(pl.col("is_primary") & pl.col("cs_low").is_not_null()).iter_rows(named=True):
        t = truth["experiments"][r["experiment_id"]]
        if t["incident"] is None and r["experiment_id"] != "acme-support-shift":
            assert r["cs_low"] <= t["effects"][r["treatment_arm"]] <= r["cs_high"], r["experiment_id"]


def test_the_declared_allocation_change_is_stratified(world):
    _, looks, con, _ = world
    r = last(looks).filter(pl.col("experiment_id") == "acme-support-shift").row(0, named=True)
    assert r["periods"] == 2 and r["allocation"] == "declared, changed" and not r["srm_fired"]
    # pooled, the treatment's units come from the later, better period
    pooled = dict(con.execute("SELECT arm, avg(success) FROM experience WHERE experiment_id = 'acme-support-shift' "
                              "AND verified GROUP BY arm").fetchall())
    naive = pooled["treatment"] - pooled["control"]
    assert abs(r["difference"]) < abs(naive) and r["cs_low"] < 0 < r["cs_high"]


def test_registration_designs_in_the_world(world):
    _, looks, con, _ = world
    three = last(looks).filter(pl.col("experiment_id") == "acme-support-three")
    assert set(three.get_column("control_arm").to_list()) == {"baseline"} and three.height == 2
    assert (three.get_column("family_size") == 2).all()
    plans = con.execute("SELECT experiment_id, verified_share, planned_unit, traffic_per_day, days_to_plan "
                        "FROM experiment_plans").pl()
    assert (plans.get_column("verified_share") == 0.85).all()
    assert plans.filter(pl.col("experiment_id") == "acme-refactor-memory").get_column("planned_unit").item() == "users"
    assert plans.get_column("traffic_per_day").min() > 0 and plans.get_column("days_to_plan").is_not_null().all()
    q = con.execute("SELECT stage, rule, count(*) FROM quarantine GROUP BY ALL").fetchall()
    assert ("registration", "alpha_slots_exhausted", 1) in q
    assert {("contract", "malformed_record"), ("contract", "missing_field")} <= {(s, r) for s, r, _ in q}


def test_knowledge_records_follow_the_claims(world):
    _, looks, con, _ = world
    records = con.execute("SELECT experiment_id, treatment_arm, claim, supersedes, policy_version, evaluators "
                          "FROM knowledge_records").pl()
    adopted = last(looks).filter(pl.col("decision") == "adopt").select("experiment_id", "treatment_arm")
    got = records.filter(pl.col("claim") == "adopt").select("experiment_id", "treatment_arm").unique()
    assert adopted.sort("experiment_id").equals(got.join(adopted, on=["experiment_id", "treatment_arm"]).sort("experiment_id"))
    assert records.filter(pl.col("experiment_id").str.starts_with("tinyco")).height == 0
    assert (records.get_column("policy_version") == "promotion-gate/1").all()
    kinds = {e["evaluator_kind"] for e in json.loads(records.get_column("evaluators")[0])}
    assert kinds <= {"evaluator", "human"}  # self reports and heuristics never back a claim


def test_the_report_leads_with_the_decision(world):
    _, _, _, warehouse = world
    out = CliRunner().invoke(main, ["--warehouse", str(warehouse), "report", "--json", "--as-of", AS_OF])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output)
    first = summary["experiments"][0]["comparisons"][0]
    assert list(first)[:5] == ["decision", "decision_reason", "cs_low", "cs_high", "cs_p_adjusted"]
    text = CliRunner().invoke(main, ["--warehouse", str(warehouse), "report", "--as-of", AS_OF]).output
    # Every overview row starts with its decision; every detail block leads with the decision and its reason.
    header = next(line for line in text.splitlines() if "CS (decides)" in line)
    assert header.startswith("decision ")
    assert re.search(r"^  Decision: \w+ \(", text, flags=re.MULTILINE)


def test_a_rerun_of_the_same_look_is_bit_identical(world):
    from tests.fresh_look import fresh_look

    _, _, _, warehouse = world
    frames = []
    for threads in (1, 3):
        with duckdb.connect(str(warehouse), read_only=True) as con:
            con.execute("SET TimeZone = 'UTC'")
            con.execute(f"SET threads = {threads}")
            frames.append(fresh_look(con, AS_OF))
    assert frames[0].height > 0 and frames[0].equals(frames[1], null_equal=True)
