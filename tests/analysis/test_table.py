"""The last step of the look (table.py): the rows, and every reason in words with its figures."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from tests.analysis.looks import DAY0, NIGHT, binary, binary_cs, continuous, halfwidth, look, registration, row, sig


def test_every_template_of_the_reason_in_words_with_its_figures():
    # Each reason written out in full; its figures from the reference formulas of this file. The
    # data come on the night itself, so the running intersection holds one look, tonight's.
    reg = registration("w", ["control", "treatment"], min_samples_per_arm=10)
    cs = "the 98.75% confidence sequence [{0}, {1}] (intersected over 1 look since 2026-10-21; tonight's alone [{0}, {1}])"
    padj = "Holm-adjusted running anytime-valid p = {} against alpha share 0.0125"

    def rests(n_c, n_t):
        return f"; rests on epoch 0 (from 2026-10-01): {n_c} control and {n_t} treatment units"

    def reason(figures, night=NIGHT, **kw):
        return row(look([reg], figures, night, **kw), night)["decision_reason"]

    # reject: 2,000 / 5,000 against 2,500 / 5,000
    lo, hi, p, plan = binary_cs(2000, 5000, 2500, 5000)
    assert plan == 3480  # ceil(1.568 * 2219.07): R at alpha .0125, power .80, n_fixed of 0.50 -> 0.55
    assert reason([binary("w", "control", NIGHT, 5000, 2500), binary("w", "treatment", NIGHT, 5000, 2000)]) == (
        f"{cs.format(sig(lo), sig(hi))} lies entirely on the harmful side of zero ({padj.format(sig(p, 3))})"
        + rests("5,000", "5,000"))
    # adopt, no guardrails
    lo, hi, p, _ = binary_cs(2800, 5000, 2500, 5000)
    assert reason([binary("w", "control", NIGHT, 5000, 2500), binary("w", "treatment", NIGHT, 5000, 2800)]) == (
        f"{cs.format(sig(lo), sig(hi))} lies entirely on the beneficial side of zero ({padj.format(sig(p, 3))})"
        + rests("5,000", "5,000"))
    # no effect: 6,000 a side is past the planned 3,480, the CS inside (-0.05, 0.05)
    lo, hi, _, _ = binary_cs(3030, 6000, 3000, 6000)
    assert reason([binary("w", "control", NIGHT, 6000, 3000), binary("w", "treatment", NIGHT, 6000, 3030)]) == (
        f"planned sample reached; {cs.format(sig(lo), sig(hi))} lies inside (-MDE, +MDE) = (-0.05, 0.05)"
        + rests("6,000", "6,000"))
    # inconclusive: past the plan, the CS includes zero and reaches beyond the MDE
    lo, hi, _, _ = binary_cs(2120, 4000, 2000, 4000)
    assert lo < 0 < 0.05 < hi
    assert reason([binary("w", "control", NIGHT, 4000, 2000), binary("w", "treatment", NIGHT, 4000, 2120)]) == (
        f"planned sample reached; {cs.format(sig(lo), sig(hi))} neither excludes zero nor lies inside (-0.05, 0.05)"
        + rests("4,000", "4,000"))
    # collecting: 3,350 of 3,480 a side after 21 days (159.5 a day: 130 / 159.5 -> 1 more day);
    # 3,350 / 3,480 = 96.3%, printed as its whole percent below (never rounded up to the plan)
    lo, hi, _, _ = binary_cs(1745, 3350, 1675, 3350)
    assert reason([binary("w", "control", NIGHT, 3350, 1675), binary("w", "treatment", NIGHT, 3350, 1745)]) == (
        f"collecting: 96% of the planned sample, about 1 more days at the current traffic; "
        f"{cs.format(sig(lo), sig(hi))} includes zero" + rests("3,350", "3,350"))
    # burn-in: day 3 of the first assignment, 4.0 days since it at the end of the night
    day3 = DAY0 + dt.timedelta(days=3)
    assert reason([binary("w", "control", day3, 500, 250), binary("w", "treatment", day3, 430, 300)], day3) == (
        "burn-in: fewer than 7 days since first assignment (4 days since the first assignment)" + rests("500", "430"))
    # invalid since the drift day, sticky
    drift = [{"experiment_id": "w", "epoch": 0, "drift_day": DAY0 + dt.timedelta(days=5)}]
    assert reason([binary("w", "control", NIGHT, 3000, 1500), binary("w", "treatment", NIGHT, 3000, 1560)],
                  drift=drift) == (
        "invalid since 2026-10-06: the control arm's context digest drifted (sticky until a reopened event)"
        + rests("3,000", "3,000"))
    # a guardrail: tokens may rise by at most 500 (its CS read at the comparison's alpha, 0.0125,
    # on the same tuning), read in its own direction (treatment minus control against +500):
    # non-inferior (CS wholly below +500): adopt; breached (wholly above +500): adopt is held and
    # the breach comes first; neither: adopt is held, not yet shown. The plan splits the type II
    # error over the primary and the guardrail: power 1 - 0.2 / 2 each.
    guard = registration("w", ["control", "treatment"], min_samples_per_arm=10,
                         guardrails='[{"metric": "tokens", "direction": "decrease", "margin": 500.0}]')
    lo, hi, p, plan = binary_cs(2800, 5000, 2500, 5000, power=0.9)
    primary = [binary("w", "control", NIGHT, 5000, 2500), binary("w", "treatment", NIGHT, 5000, 2800)]
    rho2 = (-2 * math.log(0.0125) + math.log(1 - 2 * math.log(0.0125))) / (2 * plan)
    head = f"{cs.format(sig(lo), sig(hi))}"
    for sd, mean_t, verdict in ((600.0, 15010.0, "non-inferior"), (6000.0, 16500.0, "breached"),
                                (6000.0, 15400.0, "not yet shown non-inferior")):
        tokens = [continuous("w", "control", NIGHT, 5000, 15000.0, sd**2, metric="tokens"),
                  continuous("w", "treatment", NIGHT, 5000, mean_t, sd**2, metric="tokens")]
        hw = halfwidth(10000 * 2 * sd**2 / 5000, 10000, rho2, 0.0125)
        g_lo, g_hi = mean_t - 15000.0 - hw, mean_t - 15000.0 + hw
        assert {"non-inferior": g_hi < 500, "breached": g_lo > 500}.get(verdict, g_lo < 500 < g_hi)
        line = f"tokens {verdict}: {sig(g_lo, 4, True)} to {sig(g_hi, 4, True)} against a margin of +500"
        got = row(look([guard], primary + tokens, NIGHT), NIGHT, role="primary")["decision_reason"]
        if verdict == "non-inferior":
            assert got == (f"{head} lies entirely on the beneficial side of zero ({padj.format(sig(p, 3))}); "
                           f"guardrails: {line}" + rests("5,000", "5,000"))
        else:
            held = "guardrail " if verdict == "breached" else "held by guardrail "
            assert got == (f"{held}{line}; {head} lies on the beneficial side of zero ({padj.format(sig(p, 3))}), "
                           "and adopt needs every guardrail non-inferior" + rests("5,000", "5,000"))


def test_the_invalid_reason_names_every_signal_that_fired_with_its_figures():
    # The p-values are those of the stats tests (tests/stats/test_srm.py, test_monitoring.py);
    # here the words: every signal of the epoch, in a fixed order, each with its figures.
    reg = registration("v1", ["control", "treatment"], min_samples_per_arm=10)
    figures = [binary("v1", "control", NIGHT, 3000, 1500), binary("v1", "treatment", NIGHT, 3000, 1560)]
    violations = [{"experiment_id": "v1", "epoch": 0, "day": DAY0 + dt.timedelta(days=k), "bad": 40, "total": 400}
                  for k in range(10)]  # 10% of the rows, every day from the first
    drift = [{"experiment_id": "v1", "epoch": 0, "drift_day": DAY0 + dt.timedelta(days=5)}]
    r = row(look([reg], figures, NIGHT, violations=violations, drift=drift), NIGHT)
    assert r["contract_violation_share"] == pytest.approx(0.10)
    assert r["decision_reason"] == (
        "invalid since 2026-10-01: the control arm's context digest drifted; contract violations exceed 5% of its "
        f"rows (10% quarantined or excluded, p = {sig(r['contract_violation_p'], 3)}) (sticky until a reopened event)"
        "; rests on epoch 0 (from 2026-10-01): 3,000 control and 3,000 treatment units")
    # 4,800 / 5,200 on a 50/50 design
    reg = registration("srm", ["control", "treatment"], mde=0.05, min_samples_per_arm=10)
    r = row(look([reg], [binary("srm", "control", NIGHT, 4800, 2400), binary("srm", "treatment", NIGHT, 5200, 2600)],
                 NIGHT), NIGHT)
    assert r["srm_sequential_p"] < 0.01
    assert r["decision_reason"] == (f"invalid since {r['invalid_since']}: sequential SRM fired "
                                    f"(p = {sig(r['srm_sequential_p'], 3)} < 0.01) (sticky until a reopened event)"
                                    "; rests on epoch 0 (from 2026-10-01): 4,800 control and 5,200 treatment units")


def test_a_guardrail_row_carries_no_decision_status_or_invalid_spell_of_its_own():
    # The decision, the guardrail status and the invalid spell belong to the primary row (the
    # report prints a row's guardrail status after it); the drift on day 5 makes the experiment
    # invalid from that night on.
    guard = '[{"metric": "tokens", "direction": "decrease", "margin": 500.0}]'
    reg = registration("g2", ["control", "treatment"], guardrails=guard, min_samples_per_arm=10)
    figures = [binary("g2", "control", NIGHT, 5000, 2500), binary("g2", "treatment", NIGHT, 5000, 2800),
               continuous("g2", "control", NIGHT, 5000, 15000.0, 600.0**2, metric="tokens"),
               continuous("g2", "treatment", NIGHT, 5000, 15010.0, 600.0**2, metric="tokens")]
    drift = [{"experiment_id": "g2", "epoch": 0, "drift_day": DAY0 + dt.timedelta(days=5)}]
    out = look([reg], figures, NIGHT, drift=drift)
    p, g = row(out, NIGHT, role="primary"), row(out, NIGHT, role="guardrail")
    assert p["decision"] == "invalid" and p["invalid_since"] == DAY0 + dt.timedelta(days=5)
    assert p["guardrail_status"].startswith("tokens non-inferior: ")
    keys = ("decision", "decision_rule", "decision_reason", "guardrail_status", "invalid_since", "power_at_mde")
    assert {k: g[k] for k in keys} == dict.fromkeys(keys)
    assert p["decision_reason"].startswith("invalid since 2026-10-06")



def test_burn_in_days_are_cut_never_rounded_up_across_the_threshold():
    # first assignment at 00:30 on 10-01: at the end of 10-07 that is 7 - 0.5 / 24 = 6.979 days,
    # fewer than 7: printed 6.97 (cut to two decimals), never "7.0" beside "fewer than 7 days"
    reg = registration("bd", ["control", "treatment"], min_samples_per_arm=10)
    night = DAY0 + dt.timedelta(days=6)
    r = row(look([reg], [binary("bd", "control", night, 500, 250), binary("bd", "treatment", night, 500, 260)], night,
                 first_assigned_at=dt.datetime(2026, 10, 1, 0, 30, tzinfo=dt.timezone.utc)), night)
    assert r["days_since_first_assignment"] == pytest.approx(7 - 0.5 / 24)
    assert r["decision_reason"].startswith("burn-in: fewer than 7 days since first assignment (6.97 days since the first "
                                           "assignment)")


def test_reasons_print_figures_to_their_significant_digits():
    from zcl_assets.analysis.wording import figure

    # binary floats whose repr shows their noise (Python: repr(round(9.4e-26, 27)) etc.)
    assert (figure(9.400000000000001e-26), figure(6.569999999999999e-52)) == ("9.4e-26", "6.57e-52")
    assert (figure(2475.3, 4, signed=True), figure(-5214.4, 4), figure(0.06529), figure(9.996)) == (
        "+2,475", "-5,214", "0.0653", "10")
