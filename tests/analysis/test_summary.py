"""The printed summary shows per-arm figures as the issue asks: x/n for binary, mean and variance otherwise."""

from zcl_assets.reports.summary import COMPARISON_COLUMNS, render_summary


def _comparison(**values):
    row = dict.fromkeys(COMPARISON_COLUMNS)
    row.update(is_primary=True, control_arm="control", treatment_arm="treatment", p_method="welch_t")
    row.update(values)
    return row


def test_render_shows_counts_or_mean_and_variance_and_the_planned_sample():
    summary = {
        "as_of": "2026-11-28",
        "experiments": [
            {"experiment_id": "bin", "comparisons": [_comparison(
                metric="success", n_control=1000, n_treatment=990, successes_control=500, successes_treatment=560,
                difference=0.0657, ci_low=0.022, ci_high=0.109, p_value=0.0034, p_method="fisher_exact", planned_n_per_arm=1402.0)]},
            {"experiment_id": "cont", "comparisons": [_comparison(
                metric="time_minutes", n_control=50, n_treatment=52, mean_control=39.68, mean_treatment=36.15,
                variance_control=260.0, variance_treatment=203.0, difference=-3.53, ci_low=-4.8, ci_high=-2.2,
                p_value=1.7e-7, planned_n_per_arm="inf")]},
        ],
        "quarantine": {"assignments": {"delivered_arm_mismatch": 2}},
    }
    text = render_summary(summary)
    assert "Look as of 2026-11-28: 2 experiments" in text
    assert "500/1000" in text and "560/990" in text and "1,402" in text and "fisher_exact" in text
    assert "39.68 (var 260)" in text and "36.15 (var 203)" in text and "unreachable" in text
    assert "{'assignments': 2}" in text
