"""Names of the methods behind every figure a report shows, in words an analyst recognises.

The analysis stores short method codes (``ci_method``, ``p_method``); the reports print the
name and its reference from here, so a code is named once. An unknown code is shown as is
(underscores as spaces) rather than hidden.

Examples:
    >>> method_name("fisher_exact")
    "Fisher's exact test"
    >>> method_name("some_new_test")
    'some new test'
    >>> method_name(None)
    'not computed'
"""

from __future__ import annotations

METHOD_NAMES: dict[str, str] = {
    # intervals of the difference (descriptive)
    "newcombe_hybrid_score": "Newcombe hybrid score interval",
    "miettinen_nurminen": "Miettinen-Nurminen score interval",
    "welch": "Welch t interval",
    "stratified_normal": "normal approximation stratified by allocation period",
    "cuped_normal": "normal approximation of the CUPED-adjusted difference",
    "delta_method_per_user_sums": "delta method on per-user sums",
    # tests (descriptive)
    "fisher_exact": "Fisher's exact test",
    "welch_t": "Welch t",
    "delta_method_z": "delta-method z-test",
    "miettinen_nurminen_score": "Miettinen-Nurminen score",
    # the deciding interval, the lift, the allocation check
    "confidence_sequence": "asymptotic confidence sequence",
    "log_delta_method": "log-scale delta method",
    "srm_sequential": "sequential multinomial test",
    "srm_chisquare": "chi-square goodness of fit",
}

REFERENCES: dict[str, str] = {
    "confidence_sequence": "Waudby-Smith et al. 2024",
    "srm_sequential": "Lindon and Malek 2022",
    "newcombe_hybrid_score": "Newcombe 1998",
    "miettinen_nurminen": "Miettinen and Nurminen 1985",
    "miettinen_nurminen_score": "Miettinen and Nurminen 1985",
    "delta_method_per_user_sums": "Deng, Lu and Litz 2018",
    "delta_method_z": "Deng, Lu and Litz 2018",
    "cuped_normal": "Deng, Xu, Kohavi and Walker 2013",
}

NOT_COMPUTED = "not computed"
"""What every report shows for a figure the analysis did not write."""

DECIDING_INTERVAL = "confidence_sequence"
"""Code of the interval that decides (DESIGN section 6); every other interval is descriptive."""


def method_name(code: str | None, cite: bool = False) -> str:
    """The readable name of a method code; with ``cite``, its reference in parentheses."""
    if not code:
        return NOT_COMPUTED
    name = METHOD_NAMES.get(code, code.replace("_", " "))
    if cite and code in REFERENCES:
        return f"{name} ({REFERENCES[code]})"
    return name
