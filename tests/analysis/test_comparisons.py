"""A look's comparisons from per-arm statistics, checked against scipy and statsmodels."""

import json

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep

from zcl_assets.analysis.comparisons import build_comparisons
from zcl_assets.analysis.plans import plan_registrations


def _registration(experiment_id, arms, metric="success", baseline_sd=None, guardrails="[]"):
    share = 1.0 / len(arms)
    return {
        "experiment_id": experiment_id, "org_id": "o", "task_type": "t", "kind": "other", "hypothesis": "h",
        "arms": json.dumps([{"name": a, "payload": {}, "allocation": share} for a in arms]),
        "control_arm": "control", "primary_metric": metric, "direction": "increase", "mde": 0.05,
        "alpha": 0.05, "power": 0.8, "baseline_mean": 0.5, "baseline_sd": baseline_sd, "min_samples_per_arm": 100,
        "randomization_unit": "session", "sessions_per_unit": "many", "guardrails": guardrails,
        "metric_caps": None, "expected_verified_share": 1.0, "registered_at": None,
    }


def test_snapshot_comparisons_use_fisher_for_binary_and_welch_for_continuous():
    registrations = pl.DataFrame([_registration("x", ["control", "v1", "v2"])])
    arm_stats = pl.DataFrame(
        {
            "experiment_id": ["x"] * 6,
            "arm": ["control", "v1", "v2"] * 2,
            "metric": ["success"] * 3 + ["metric_2"] * 3,
            "source": ["arm_snapshots"] * 6,
            "analysis_unit": ["snapshot"] * 6,
            "n": [400, 410, 395, 400, 410, 395],
            "mean": [0.5, 0.56, 0.49, 10.0, 10.9, 9.8],
            "variance": [0.25, 0.2464, 0.2499, 4.0, 5.0, 3.5],
            "successes": [200, 230, 194, None, None, None],
        },
        schema_overrides={"successes": pl.Int64},
    )
    plans = plan_registrations(registrations)
    look = build_comparisons(registrations, plans, arm_stats, pl.DataFrame(schema={"experiment_id": pl.String, "arm": pl.String, "units": pl.Int64}))
    assert look.height == 4
    v1 = look.filter((pl.col("metric") == "success") & (pl.col("treatment_arm") == "v1")).row(0, named=True)
    # scipy: Fisher's exact test on [[230, 180], [200, 200]].
    assert v1["p_value"] == pytest.approx(stats.fisher_exact([[230, 180], [200, 200]]).pvalue, rel=1e-9)
    low, high = confint_proportions_2indep(230, 410, 200, 400, method="newcomb")
    assert (v1["ci_low"], v1["ci_high"]) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert v1["is_primary"] and v1["p_method"] == "fisher_exact"
    # SRM on snapshot units against equal thirds: scipy chisquare on the pair renormalised.
    assert v1["srm_chisquare_p"] == pytest.approx(stats.chisquare([410, 400], [405, 405]).pvalue, rel=1e-9)
    c2 = look.filter((pl.col("metric") == "metric_2") & (pl.col("treatment_arm") == "v2")).row(0, named=True)
    ref = stats.ttest_ind_from_stats(9.8, np.sqrt(3.5), 395, 10.0, np.sqrt(4.0), 400, equal_var=False)
    assert c2["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert c2["difference"] == pytest.approx(-0.2)
    assert not c2["is_primary"] and c2["p_method"] == "welch_t"
    # The CS is wider than the fixed-horizon interval at the same look.
    assert c2["cs_low"] < c2["ci_low"] and c2["cs_high"] > c2["ci_high"]


def test_user_randomized_ratio_metric_uses_the_delta_method():
    registrations = pl.DataFrame([_registration("u", ["control", "treatment"], metric="score", baseline_sd=0.3)])
    # Per-user sums: control users (y, m) = (1.0, 2), (0.5, 1), (2.1, 3); treatment (1.4, 2), (0.9, 1), (3.0, 4).
    def moments(pairs):
        y = np.array([p[0] for p in pairs]); m = np.array([p[1] for p in pairs], dtype=float)
        return dict(n=len(pairs), sum_y=y.sum(), sum_y2=(y * y).sum(), sum_m=m.sum(), sum_m2=(m * m).sum(), sum_ym=(y * m).sum(), mean=y.sum() / m.sum())
    c = moments([(1.0, 2), (0.5, 1), (2.1, 3)])
    t = moments([(1.4, 2), (0.9, 1), (3.0, 4)])
    arm_stats = pl.DataFrame([
        {"experiment_id": "u", "arm": "control", "metric": "score", "source": "sessions", "analysis_unit": "user", "variance": None, "successes": None, **c},
        {"experiment_id": "u", "arm": "treatment", "metric": "score", "source": "sessions", "analysis_unit": "user", "variance": None, "successes": None, **t},
    ], schema_overrides={"variance": pl.Float64, "successes": pl.Int64})
    look = build_comparisons(registrations, plan_registrations(registrations), arm_stats,
                             pl.DataFrame({"experiment_id": ["u", "u"], "arm": ["control", "treatment"], "units": [3, 3]}))
    row = look.row(0, named=True)
    assert row["p_method"] == "delta_method_z"
    # Deng, Lu, Litz (2018): var(Ybar/Mbar) ~ (s_y^2 - 2 r s_ym + r^2 s_m^2) / (n Mbar^2), sample (co)variances.
    def ratio_var(pairs):
        y = np.array([p[0] for p in pairs]); m = np.array([p[1] for p in pairs], dtype=float); r = y.sum() / m.sum()
        return (np.var(y, ddof=1) - 2 * r * np.cov(y, m, ddof=1)[0, 1] + r * r * np.var(m, ddof=1)) / (len(y) * m.mean() ** 2)
    se = np.sqrt(ratio_var([(1.4, 2), (0.9, 1), (3.0, 4)]) + ratio_var([(1.0, 2), (0.5, 1), (2.1, 3)]))
    diff = 5.3 / 7 - 3.6 / 6
    assert row["difference"] == pytest.approx(diff, rel=1e-12)
    assert row["ci_low"] == pytest.approx(diff - stats.norm.ppf(0.975) * se, rel=1e-6)
    assert row["p_value"] == pytest.approx(2 * stats.norm.sf(abs(diff) / se), rel=1e-6)
