"""The printed summary leads with the decision, the CS and the adjusted p; fixed-horizon figures are descriptive."""

from zcl_assets.reports.summary import COMPARISON_COLUMNS, render_summary


def _comparison(**values):
    row = dict.fromkeys(COMPARISON_COLUMNS)
    row.update(is_primary=True, control_arm="control", treatment_arm="treatment", p_method="welch_t")
    row.update(values)
    return row


def test_render_leads_with_the_decision_then_shows_counts_or_mean_and_variance():
    summary = {
        "as_of": "2026-11-28",
        "experiments": [
            {"experiment_id": "bin", "comparisons": [_comparison(
                metric="success", n_control=1000, n_treatment=990, successes_control=500, successes_treatment=560,
                difference=0.0657, ci_low=0.022, ci_high=0.109, p_value=0.0034, p_method="miettinen_nurminen_score",
                planned_n_per_arm=1402.0, decision="adopt", decision_reason="the 98.75% confidence sequence lies above 0",
                cs_low=0.0123, cs_high=0.1187, cs_p_adjusted=0.0041)]},
            {"experiment_id": "cont", "comparisons": [_comparison(
                metric="time_minutes", n_control=50, n_treatment=52, mean_control=39.68, mean_treatment=36.15,
                variance_control=260.0, variance_treatment=203.0, difference=-3.53, ci_low=-4.8, ci_high=-2.2,
                p_value=1.7e-7, planned_n_per_arm="inf", decision="continue", decision_reason="collecting")]},
        ],
        "quarantine": {"assignments": {"delivered_arm_mismatch": 2}},
    }
    text = render_summary(summary)
    lines = text.splitlines()
    assert "Look as of 2026-11-28: 2 experiments" in text
    adopt = next(line for line in lines if "bin" in line and "success" in line)
    assert adopt.startswith("adopt") and adopt.index("[0.0123, 0.1187]") < adopt.index("500/1000")
    assert "0.0041" in adopt and "why: the 98.75% confidence sequence lies above 0" in text
    assert "500/1000" in text and "560/990" in text and "1,402" in text
    assert "39.68 (var 260)" in text and "36.15 (var 203)" in text and "unreachable" in text
    assert "descriptive" in text and "{'assignments': 2}" in text
