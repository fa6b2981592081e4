"""Each alarm read from what the look stores, and the fixed order in which reports show experiments."""

from __future__ import annotations

import datetime as dt
import random

import polars as pl
import pytest

from tests.reports.views import comparison, history, view
from zcl_assets.reports import alarms
from zcl_assets.reports.experiments import sort_views
from zcl_assets.reports.formatting import days_left_text
from zcl_assets.reports.markdown import headline, verdict_markdown

TOKENS = [{"metric": "tokens", "direction": "decrease", "margin": 2000.0}]


def _guardrail(low: float, high: float, direction: str = "decrease", margin: float = 2000.0):
    rows = [comparison(), comparison(metric="tokens", role="guardrail", is_primary=False, direction=direction,
                                     cs_low=low, cs_high=high, decision=None)]
    return view(rows=rows, guardrails=[{"metric": "tokens", "direction": direction, "margin": margin}])


@pytest.mark.parametrize(("low", "high", "direction", "margin", "breached"), [
    (2475.0, 5214.0, "decrease", 2000.0, True),    # lower is better: the whole CS lies above +2000
    (1500.0, 5214.0, "decrease", 2000.0, False),   # the CS reaches below the margin: not shown either way
    (2000.0, 5214.0, "decrease", 2000.0, False),   # touching the margin is not wholly beyond it
    (-0.08, -0.031, "increase", 0.03, True),       # higher is better: the whole CS lies below -0.03
    (-0.08, -0.029, "increase", 0.03, False),
])
def test_a_guardrail_is_breached_only_when_its_whole_cs_lies_beyond_the_margin(low, high, direction, margin, breached):
    found = alarms.guardrail_breached(_guardrail(low, high, direction, margin))
    assert (found is not None) == breached
    if breached:
        assert found.title == "guardrail tokens breached" and f"{margin:.4g}" in found.detail


UNITS = [("2026-09-01", 100), ("2026-09-05", 200), ("2026-09-10", 300), ("2026-09-20", 300)]


@pytest.mark.parametrize(("as_of", "since"), [
    ("2026-09-16", None),           # 6 days without a new unit: not yet
    ("2026-09-17", "2026-09-10"),   # 7 days: stalled since the last look with new units
    ("2026-09-20", "2026-09-10"),   # a look with the same units does not restart the count
])
def test_an_experiment_is_stalled_after_seven_days_without_a_new_unit(as_of, since):
    looked = view(as_of=as_of, looks=history(as_of, UNITS))
    found = alarms.stalled(looked)
    assert (found.title if found else None) == (f"stalled since {since}" if since else None)
    if since:
        assert looked.stalled_since == since
        assert days_left_text(looked) == f"none at zero traffic (stalled since {since})"  # no figure from zero traffic


def _last_new_units_oracle(looks: pl.DataFrame) -> str | None:
    """The rule in polars, as it was first written: per look, the control's count once plus every treatment
    arm's, looks without a control count dropped, the last look whose total beat every earlier one."""
    totals = (
        looks.group_by("as_of").agg(pl.col("srm_units_control").max() + pl.col("srm_units_treatment").sum())
        .rename({"srm_units_control": "units"}).drop_nulls().sort("as_of")
        .with_columns(before=pl.col("units").cum_max().shift(1).fill_null(0)).filter(pl.col("units") > pl.col("before"))
    )
    return totals.get_column("as_of")[-1].isoformat() if totals.height else None


def test_the_last_look_with_new_units_agrees_with_its_polars_form_on_random_histories():
    rng = random.Random(7)
    for _ in range(300):
        rows, assigned_known = [], rng.random() < 0.5  # half the histories count assigned units on every look
        for day in rng.sample(range(1, 29), rng.randint(1, 12)):
            for arm in range(rng.randint(1, 3)):  # a row per treatment arm; its control count may differ or lack
                assigned_c, assigned_t, analysed_c, analysed_t = (rng.choice([None, rng.randint(0, 50)]) for _ in range(4))
                assigned_c = rng.randint(0, 50) if assigned_known else assigned_c
                rows.append(comparison(as_of=dt.date(2026, 9, day), treatment_arm=f"t{arm}",
                                       srm_units_control=assigned_c, srm_units_treatment=assigned_t,
                                       n_control=analysed_c, n_treatment=analysed_t))
        counts = ("srm_units_control", "srm_units_treatment", "n_control", "n_treatment")
        looks = pl.DataFrame(rows).with_columns(pl.col(c).cast(pl.Int64) for c in counts)
        counted = looks  # a look without the control's assigned count: the rule counts the analysed units instead
        if looks.get_column("srm_units_control").null_count():
            counted = looks.with_columns(srm_units_control=pl.col("n_control"), srm_units_treatment=pl.col("n_treatment"))
        expected = _last_new_units_oracle(counted)
        assert alarms.last_new_units(view(as_of="2026-09-30", looks=looks)) == expected


def test_a_decided_or_completed_experiment_is_not_stalled():
    looks = history("2026-09-30", UNITS)
    assert alarms.stalled(view(as_of="2026-09-30", looks=looks)) is not None
    assert alarms.stalled(view(as_of="2026-09-30", looks=looks, rows=[comparison(decision="adopt")])) is None
    assert alarms.stalled(view(as_of="2026-09-30", looks=looks, rows=[comparison(status="completed")])) is None


def test_an_srm_mismatch_leads_the_alarms_and_the_verdict():
    rows = [comparison(decision="invalid", decision_reason="sequential SRM fired", srm_fired=True, srm_sequential_p=1e-9,
                       srm_units_control=5600, srm_units_treatment=4400),
            comparison(metric="tokens", role="guardrail", is_primary=False, direction="decrease", cs_low=2500.0,
                       cs_high=5000.0, decision=None)]
    looked = view(rows=rows, guardrails=TOKENS)
    assert [a.kind for a in looked.alarms] == ["srm_mismatch", "guardrail_breached"]
    assert "units assigned control 5,600, treatment 4,400 against the registered shares 0.5 / 0.5" in looked.alarms[0].detail
    assert looked.attention == "invalid"
    assert headline(looked) == "### \u26a0 INVALID: SRM mismatch"
    verdict = verdict_markdown(looked)
    assert verdict.startswith("### \u26a0 INVALID: SRM mismatch\n\n**\u26a0 SRM mismatch:**")
    assert verdict.index("guardrail tokens breached") < verdict.index("**Decision: invalid")


@pytest.mark.parametrize(("fired", "kind", "title"), [
    ({"imbalance_fired": True, "imbalance_p_value": 0.004}, "outcome_imbalance", "outcomes imbalanced"),
    ({"contract_violations_fired": True, "contract_violation_p": 0.002, "contract_violation_share": 0.12},
     "contract_violations", "rows rejected"),
])
def test_an_imbalance_or_too_many_rejected_rows_is_named_from_the_looks_flag(fired, kind, title):
    looked = view(rows=[comparison(decision="invalid", decision_reason="rule 1", **fired)])
    assert [(a.kind, a.title) for a in looked.alarms] == [(kind, title)]
    # the flag is what the look decided on: a small p without it (another epoch, a reopen) names no such alarm
    quiet = {k: (False if k.endswith("_fired") else v) for k, v in fired.items()}
    assert [a.kind for a in view(rows=[comparison(decision="invalid", **quiet)]).alarms] == ["invalid"]


def test_an_experiment_without_alarm_has_a_plain_heading():
    assert headline(view(rows=[comparison(decision="adopt")])) == "### ADOPT"


def test_experiments_sort_by_severity_whatever_their_ids():
    looks = history("2026-09-30", UNITS)
    made = [
        view("a-inconclusive", [comparison(decision="inconclusive")]),
        view("b-adopt", [comparison(decision="adopt")]),
        view("c-no-effect", [comparison(decision="no_effect")]),
        view("d-reject", [comparison(decision="reject")]),
        view("e-continue", [comparison()]),
        view("f-invalid", [comparison(decision="invalid", srm_fired=True)]),
        view("g-stalled", as_of="2026-09-30", looks=looks),
        view("h-guardrail", [comparison(), comparison(metric="tokens", role="guardrail", is_primary=False,
                                                      direction="decrease", cs_low=2500.0, cs_high=5000.0)],
             guardrails=TOKENS),
        view("i-drift", [comparison(decision="invalid", baseline_drift=True)]),
    ]
    order = [v.experiment_id for v in sort_views(made)]
    assert order == ["f-invalid", "i-drift", "h-guardrail", "g-stalled", "d-reject", "b-adopt", "c-no-effect",
                     "a-inconclusive", "e-continue"]


def test_a_check_that_cannot_read_the_look_is_named_and_stops_nothing(monkeypatch):
    def unreadable(_view):
        raise KeyError("srm_units_control")

    monkeypatch.setattr(alarms, "CHECKS", (unreadable, alarms.stalled))
    found = alarms.alarms(view())
    assert [(a.kind, a.title) for a in found] == [("not_checked", "unreadable not checked")]
    assert "KeyError" in found[0].detail
