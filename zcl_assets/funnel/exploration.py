"""The exploration monitor: the share of sessions that explored against the configured rate.

The context provider of seed note 000 explores with probability
``min(cap, base_rate + uncertainty_multiplier * uncertainty)``, uncertainty in [0, 1], so
the long-run share of explored sessions of an organization and task type lies between the
base rate and ``min(cap, base_rate + uncertainty_multiplier)``. The observed share is
compared with that range through its Wilson score interval.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from statsmodels.stats.proportion import proportion_confint

STATUSES = ("above_cap", "below_base", "within", "no_sessions")


class ExplorationShare(NamedTuple):
    """Observed exploration share with its interval and where it lies.

    Attributes:
        share: explored / sessions (NaN without sessions).
        ci_low: lower end of the Wilson score interval at ``1 - alpha``.
        ci_high: upper end.
        rate_low: expected lowest share (the base rate).
        rate_high: expected highest share, ``min(cap, base_rate + uncertainty_multiplier)``.
        status: ``above_cap`` (interval entirely above ``rate_high``), ``below_base``
            (entirely below the base rate), ``within`` or ``no_sessions``.
    """

    share: float
    ci_low: float
    ci_high: float
    rate_low: float
    rate_high: float
    status: str


def exploration_share(
    explored: int, sessions: int, base_rate: float, uncertainty_multiplier: float, cap: float, alpha: float = 0.05
) -> ExplorationShare:
    """Share of ``sessions`` that ``explored``, its Wilson interval and its status against the rate.

    Args:
        explored: sessions that explored (count, 0 <= explored <= sessions).
        sessions: all sessions of the organization and task type (count).
        base_rate, uncertainty_multiplier, cap: the configured exploration rate (shares).
        alpha: two-sided level of the interval, in (0, 1).

    Returns:
        :class:`ExplorationShare`; share and interval are NaN when ``sessions`` is 0.

    Raises:
        ValueError: counts negative or ``explored > sessions``.

    References:
        Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
        inference. JASA 22:209-212 (``statsmodels.stats.proportion.proportion_confint``,
        ``method="wilson"``).

    Examples:
        >>> r = exploration_share(45, 100, base_rate=0.2, uncertainty_multiplier=0.5, cap=0.4)
        >>> round(r.share, 2), r.rate_high, r.status
        (0.45, 0.4, 'within')
        >>> exploration_share(85, 100, 0.2, 0.5, 0.4).status
        'above_cap'
    """
    if sessions < 0 or explored < 0 or explored > sessions:
        raise ValueError(f"need 0 <= explored <= sessions, got {explored} of {sessions}")
    rate_high = min(cap, base_rate + uncertainty_multiplier)
    if sessions == 0:
        nan = math.nan
        return ExplorationShare(nan, nan, nan, base_rate, rate_high, "no_sessions")
    share = explored / sessions
    low, high = proportion_confint(explored, sessions, alpha=alpha, method="wilson")
    low, high = min(float(low), share), max(float(high), share)  # the score interval holds the share; drop rounding
    if low > rate_high:
        status = "above_cap"
    elif high < base_rate:
        status = "below_base"
    else:
        status = "within"
    return ExplorationShare(share, low, high, base_rate, rate_high, status)
