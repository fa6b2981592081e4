"""Property-based: whatever per-arm figures arrive, the look answers with a decision and valid ranges.

Hypothesis generates counts of every size including empty arms, all successes, all failures,
tiny and huge samples, continuous arms with zero, tiny or missing variance. The look must not
raise, must report every comparison, and every figure must lie in its range.
"""

from __future__ import annotations

import datetime as dt
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.analysis.looks import DAY0, binary, continuous, look, registration, row

NIGHT = DAY0 + dt.timedelta(days=12)
LABELS = {"adopt", "reject", "no_effect", "inconclusive", "continue", "invalid"}


@st.composite
def binary_arm(draw):
    n = draw(st.integers(min_value=0, max_value=50_000))
    return n, draw(st.integers(min_value=0, max_value=n))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(control=binary_arm(), treatment=binary_arm(), mde=st.floats(0.001, 0.6), baseline=st.floats(0.01, 0.99))
def test_binary_figures_of_any_shape(control, treatment, mde, baseline):
    reg = registration("h", ["control", "treatment"], mde=mde, baseline_mean=baseline, min_samples_per_arm=1)
    figures = [binary("h", arm, NIGHT, n, x) for arm, (n, x) in (("control", control), ("treatment", treatment)) if n > 0]
    r = row(look([reg], figures, NIGHT), NIGHT)
    assert r["decision"] in LABELS and r["decision_reason"]
    for lo, hi in ((r["cs_low"], r["cs_high"]), (r["ci_low"], r["ci_high"])):
        assert (lo is None) == (hi is None)
        if lo is not None:
            assert -1.0 <= lo <= hi <= 1.0
    for p in ("cs_p_value", "cs_p_adjusted", "p_value", "fisher_p_value", "srm_sequential_p"):
        assert r[p] is None or 0.0 <= r[p] <= 1.0
    if r["decision"] in ("adopt", "reject"):  # a decision always has its interval on one side
        assert r["cs_low"] > 0 or r["cs_high"] < 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.tuples(st.integers(0, 5000), st.integers(0, 5000)),
       mean=st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)),
       var=st.tuples(st.one_of(st.none(), st.just(0.0), st.floats(1e-300, 1e12)),
                     st.one_of(st.none(), st.just(0.0), st.floats(1e-300, 1e12))))
def test_continuous_figures_of_any_shape(n, mean, var):
    reg = registration("h", ["control", "treatment"], metric="score", baseline_sd=1.0, min_samples_per_arm=1)
    figures = [continuous("h", arm, NIGHT, k, m, v, exported=True)
               for arm, k, m, v in zip(("control", "treatment"), n, mean, var) if k > 0]
    r = row(look([reg], figures, NIGHT), NIGHT)
    assert r["decision"] in LABELS
    if r["cs_low"] is not None:
        assert r["cs_low"] <= r["difference"] <= r["cs_high"] and math.isfinite(r["cs_high"] - r["cs_low"])
    both_flat = all(v is not None and v <= 1e-10 * m * m for v, m in zip(var, mean))
    if both_flat:  # no variance in either arm: never a p-value, never a decision
        assert r["cs_p_value"] is None and r["decision"] in ("continue", "invalid")
