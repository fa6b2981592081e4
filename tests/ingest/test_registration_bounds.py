"""A registration outside the bounds the contract declares is refused with the bound in its
reason, before any plan, look or report computes from it (contracts/tables.py): a 1,000-arm
design or an MDE of 1e308 never reaches the night's report."""

import pytest

from contracts.tables import MAX_ARMS, MAX_GUARDRAILS
from contracts.validate import check_records
from tests.ingest.valid_records import VALID

SUCCESS = VALID["experiments"]  # primary metric success, baseline 0.5
TOKENS = dict(SUCCESS, primary_metric="tokens", direction="decrease", mde=100.0, baseline_mean=2000.0, baseline_sd=800.0)


def _arms(n):
    return [{"name": "c" if i == 0 else f"t{i}", "payload": {}, "allocation": 1 / n} for i in range(n)]


@pytest.mark.parametrize("record, rule, reason", [
    (dict(SUCCESS, arms=_arms(1000)), "bad_arms", f"1000 arms; a registration has at most {MAX_ARMS}"),
    (dict(SUCCESS, mde=1e308), "out_of_range", "mde=1e+308 must be <= 1e+12"),
    (dict(TOKENS, mde=1e13), "out_of_range", "mde=10000000000000.0 must be <= 1e+12"),
    (dict(SUCCESS, mde=1.5), "rate_out_of_range", "for the success metric, mde must be <= 1 and baseline_mean within [0, 1] (rates)"),
    (dict(SUCCESS, baseline_mean=1.2), "rate_out_of_range",
     "for the success metric, mde must be <= 1 and baseline_mean within [0, 1] (rates)"),
    # 1e-5 / sqrt(0.25) = 2e-5 sd, below 1e-4; 0.05 / 800 = 6.25e-5 sd, below 1e-4
    (dict(SUCCESS, mde=1e-5), "mde_below_resolution",
     "mde must be at least 0.0001 x the baseline sd (sqrt(p(1-p)) for success): a smaller effect needs more units than any experiment has"),
    (dict(TOKENS, mde=0.05), "mde_below_resolution",
     "mde must be at least 0.0001 x the baseline sd (sqrt(p(1-p)) for success): a smaller effect needs more units than any experiment has"),
    (dict(SUCCESS, alpha=1e-9), "out_of_range", "alpha=1e-09 must be >= 1e-06"),
    (dict(SUCCESS, power=0.9999), "out_of_range", "power=0.9999 must be <= 0.999"),
    (dict(TOKENS, baseline_mean=-2e12), "out_of_range", "baseline_mean=-2000000000000.0 must be >= -1e+12"),
    (dict(TOKENS, baseline_sd=5e12), "out_of_range", "baseline_sd=5000000000000.0 must be <= 1e+12"),
    (dict(SUCCESS, min_samples_per_arm=2_000_000_000), "out_of_range", "min_samples_per_arm=2000000000 must be <= 1e+09"),
    (dict(SUCCESS, expected_verified_share=0.001), "out_of_range", "expected_verified_share=0.001 must be >= 0.01"),
    (dict(SUCCESS, guardrails=[{"metric": "success", "direction": "increase", "margin": 2}]), "bad_guardrails",
     "the margin of guardrail success is 2; it must be <= 1"),
    (dict(SUCCESS, guardrails=[{"metric": "tokens", "direction": "decrease", "margin": 5e12}]), "bad_guardrails",
     "the margin of guardrail tokens is 5e+12; it must be <= 1e+12"),
    (dict(SUCCESS, guardrails=[{"metric": "tokens", "direction": "decrease", "margin": 1}] * (MAX_GUARDRAILS + 1)),
     "bad_guardrails", f"{MAX_GUARDRAILS + 1} guardrails; a registration has at most {MAX_GUARDRAILS}"),
    (dict(SUCCESS, metric_caps={"tokens": 1e13}), "bad_metric_caps", "the cap of tokens must be <= 1e+12"),
])
def test_a_registration_beyond_a_bound_is_refused_with_the_bound(record, rule, reason):
    # the first rule broken names the refusal (an MDE of 1e308 on a rate also breaks the rate rule)
    (problems,) = check_records("experiments", [record])
    assert problems[0] == (rule, reason)


@pytest.mark.parametrize("record", [
    dict(SUCCESS, arms=_arms(MAX_ARMS)), dict(SUCCESS, mde=1.0, baseline_mean=0.0), dict(SUCCESS, mde=5e-5, baseline_mean=0.5),
    dict(TOKENS, mde=0.08), dict(SUCCESS, alpha=1e-6, power=0.999), dict(SUCCESS, expected_verified_share=0.01),
    dict(SUCCESS, guardrails=[{"metric": "success", "direction": "increase", "margin": 1}]),
])
def test_a_registration_on_a_bound_is_accepted(record):
    assert check_records("experiments", [record]) == [[]]
