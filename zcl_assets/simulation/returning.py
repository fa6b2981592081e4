"""A world of returning users: each user's own success rate, seen before the experiment began.

For the simulations of CUPED (Deng, Xu, Kohavi, Walker 2013) through the production look.
Each user has a success propensity ``p``: ``ceiling`` times a beta variable, with mean the
baseline; a *returning* user had ``m`` verified sessions in the covariate window before the
experiment, so its covariate ``x`` is the mean of ``m`` Bernoulli(``p``) draws (the indicator
``h`` is 1); a new user has none (``x = 0``, ``h = 0``). A unit is one session of one user: in
control it succeeds with probability ``p``; in treatment, by default, with
``p + d (1 - p) / (1 - baseline)``: the treatment turns the same share of every user's
failures into successes, which keeps the rate in [0, 1], moves the mean by ``d`` exactly, and
gains nothing for a user who always succeeds (so the covariate explains less in the
treatment arm than in control). With ``additive``, every user gains ``d`` (which the
``ceiling`` must leave room for), and the covariate explains the same variance in both arms.

The correlation of ``x`` and the outcome among returning users in control is fixed by the
spread of ``p``: with ``ICC = var(p) / (b (1 - b))`` at baseline ``b``,
``corr^2 = ICC^2 / (ICC + (1 - ICC) / m)`` (``x`` and the outcome are independent draws given
``p``, so their covariance is ``var(p)``), which :meth:`ReturningUsers.dispersion` solves for
``ICC``. With a share ``s`` of returning users, the covariate ``(x, h)`` explains about
``s corr^2`` of the outcome's variance in control: what CUPED removes there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class ReturningUsers:
    """The users of every family.

    Attributes:
        correlation: correlation of a returning user's covariate with its outcome (control).
        returning_share: share of the units whose user had sessions in the covariate window.
        history_sessions: verified sessions each returning user had in the window (``m``).
        history_units: units of the family's 28 days before registration that measure the
            history's ``rho^2`` for the plan (None: 28 days of the family's traffic).
        additive: the treatment adds its difference to every user's rate (else it turns a
            share of each user's failures into successes).
        ceiling: the largest rate a user has (below 1 leaves room for an additive treatment).
    """

    correlation: float = 0.5
    returning_share: float = 1.0
    history_sessions: int = 4
    history_units: int | None = None
    additive: bool = False
    ceiling: float = 1.0

    def dispersion(self) -> float:
        """``ICC = var(p) / (b (1 - b))``, the root in (0, 1) of
        ``ICC^2 - corr^2 (1 - 1/m) ICC - corr^2 / m = 0`` (module docstring)."""
        r2, m = self.correlation**2, self.history_sessions
        return (r2 * (1 - 1 / m) + np.sqrt((r2 * (1 - 1 / m)) ** 2 + 4 * r2 / m)) / 2

    def propensity(self, baseline: float) -> tuple[float, float]:
        """The beta distribution ``(a, b)`` of the users' success rates over ``ceiling``: mean
        ``baseline / ceiling`` and variance ``ICC b (1 - b) / ceiling^2`` (a beta variable of mean
        ``mu`` has variance ``mu (1 - mu) / (a + b + 1)``)."""
        mu = baseline / self.ceiling
        total = mu * (1 - mu) * self.ceiling**2 / (self.dispersion() * baseline * (1 - baseline)) - 1
        return mu * total, (1 - mu) * total


class Units(NamedTuple):
    """Units drawn from the world: outcome ``y`` (0 or 1), covariate ``x`` and indicator ``h``."""

    y: np.ndarray
    x: np.ndarray
    h: np.ndarray


def draw_units(rng: np.random.Generator, world: ReturningUsers, baseline: float, effect: np.ndarray) -> Units:
    """One unit per entry of ``effect`` (its true difference: 0 in control), of a fresh user each.

    Args:
        rng: NumPy generator.
        world: the users.
        baseline: the control success rate (the mean of ``p``).
        effect: per unit, the true difference of its arm (``d``; at most ``1 - baseline``).

    Returns:
        :class:`Units`.
    """
    a, b = world.propensity(baseline)
    size = effect.shape[0]
    p = world.ceiling * rng.beta(a, b, size)
    h = rng.random(size) < world.returning_share
    x = np.where(h, rng.binomial(world.history_sessions, p) / world.history_sessions, 0.0)
    y = rng.random(size) < p + (effect if world.additive else effect * (1 - p) / (1 - baseline))
    return Units(y.astype(float), x, h.astype(float))


def history_sums(rng: np.random.Generator, world: ReturningUsers, baseline: float, units: int) -> dict[str, float]:
    """The ``cuped_*`` sums of ``sql/measure_family_traffic.sql`` over ``units`` units of a
    family's history (control outcomes): what a registration measures ``rho^2`` from."""
    u = draw_units(rng, world, baseline, np.zeros(units))
    return {"cuped_n": units, "cuped_sv": u.y.sum(), "cuped_svv": (u.y * u.y).sum(), "cuped_sx": u.x.sum(),
            "cuped_sxx": (u.x * u.x).sum(), "cuped_sh": u.h.sum(), "cuped_sxv": (u.x * u.y).sum(),
            "cuped_shv": (u.h * u.y).sum()}


def arm_night_sums(units: Units, arm: np.ndarray, arms: int) -> dict[str, np.ndarray]:
    """Per arm, the raw sums of a night's new units (``arm``: each unit's arm index):
    ``n, y, yy, x, xx, h, xy, hy``."""
    def total(values):
        return np.bincount(arm, weights=values, minlength=arms)

    return {"n": np.bincount(arm, minlength=arms).astype(float), "y": total(units.y), "yy": total(units.y * units.y),
            "x": total(units.x), "xx": total(units.x * units.x), "h": total(units.h), "xy": total(units.x * units.y),
            "hy": total(units.h * units.y)}


def centered(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The look's sufficient statistics of cumulative raw sums ``s`` (:func:`arm_night_sums`
    keys): ``engine.STAT_COLUMNS`` of a binary session-randomized arm and
    ``engine.COVARIATE_COLUMNS``, centered as ``sql/select_arm_statistics.sql`` does."""
    n = s["n"]
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(n > 0, n, 1.0)

        def c(a, b):  # the centered cross-product of a and b (the raw sums' key a + b)
            return np.where(n > 0, s[a + b] - s[a] * s[b] / safe, 0.0)

        m2 = c("y", "y")
        return {"n": n, "sum_v": s["y"], "m2_v": m2, "successes": s["y"], "observations": n, "sum_y": s["y"],
                "sum_m": n, "c_yy": m2, "c_mm": np.zeros_like(n), "c_ym": np.zeros_like(n),
                "sum_x": s["x"], "sum_h": s["h"], "m2_x": c("x", "x"),
                "m2_h": np.where(n > 0, s["h"] - s["h"] ** 2 / safe, 0.0),  # h h = h
                "c_xh": np.where(n > 0, s["x"] - s["x"] * s["h"] / safe, 0.0),  # x h = x
                "c_xv": c("x", "y"), "c_hv": c("h", "y")}
