"""Shared argument guards for the statistics modules.

Invalid *arguments* (alpha outside (0, 1), negative counts, successes above
trials, negative variances) raise ``ValueError``. Missing or non-finite *data*
(NaN, inf) never raises: the guards ignore NaN so that the calling function
can return NaN for that element.
"""

from __future__ import annotations

import numpy as np


def check_alpha(alpha: float) -> float:
    """Return ``alpha`` as a float, raising ``ValueError`` unless 0 < alpha < 1."""
    a = float(alpha)
    if not (0.0 < a < 1.0):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    return a


def as_float(x) -> np.ndarray:
    """Convert to a float64 array (0-d for scalars)."""
    return np.asarray(x, dtype=np.float64)


def check_nonnegative(name: str, x: np.ndarray) -> None:
    """Raise ``ValueError`` if any non-NaN entry of ``x`` is negative."""
    with np.errstate(invalid="ignore"):
        if np.any(x < 0):
            raise ValueError(f"{name} must be non-negative")


def check_counts(x: np.ndarray, n: np.ndarray, xname: str = "x", nname: str = "n") -> None:
    """Raise ``ValueError`` for negative counts or successes above trials.

    NaN entries are ignored (they produce NaN results downstream).
    """
    check_nonnegative(xname, x)
    check_nonnegative(nname, n)
    with np.errstate(invalid="ignore"):
        if np.any(x > n):
            raise ValueError(f"{xname} must not exceed {nname}")


def out(a, dtype=np.float64):
    """Return ``a`` as an array of ``dtype``; 0-d input becomes a NumPy scalar.

    Every public function returns fields through this helper so that scalar
    input gives ``np.float64`` (a ``float`` subclass) and array input gives
    arrays of the broadcast shape.
    """
    return np.asarray(a, dtype=dtype)[()]


VARIANCE_REL_TOL = 1e-10
"""A variance at or below ``VARIANCE_REL_TOL * mean**2`` is treated as exactly zero.

Variances computed in floating point from sums (or exported by another system) carry
rounding noise of the order ``n * eps * mean**2``: a constant arm can come out as 1e-30
instead of 0, and a test would then report a vanishing standard error and a p-value near 0.
A coefficient of variation below 1e-5 is not a real spread for any metric this project
analyses, so the guard is relative to the squared mean, never an absolute epsilon."""


def guard_variance(variance, mean) -> np.ndarray:
    """``variance`` with float noise set to exactly 0 (see :data:`VARIANCE_REL_TOL`).

    NaN stays NaN; a negative variance above ``-tol`` (rounding) becomes 0; a variance
    below ``-tol`` stays negative so that the caller's domain check rejects it.
    """
    v = np.asarray(variance, dtype=np.float64)  # pragma: no mutate
    m = np.asarray(mean, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        tol = VARIANCE_REL_TOL * np.where(np.isfinite(m), m * m, 0.0)
        return np.where(np.abs(v) <= tol, 0.0, v)


def two_arms(n_t, mean_t, var_t, n_c, mean_c, var_c):
    """Both arms' sufficient statistics as float arrays of one shape, checked (non-negative ``n``
    and variances, else ``ValueError`` naming the argument) and with their variances guarded
    (:func:`guard_variance`); also whether every input of an element is finite.

    Returns:
        ``(n_t, mean_t, var_t, n_c, mean_c, var_c, finite)``.
    """
    arrs = np.broadcast_arrays(*(as_float(a) for a in (n_t, mean_t, var_t, n_c, mean_c, var_c)))
    n_t, mean_t, var_t, n_c, mean_c, var_c = arrs
    for name, a in (("n_t", n_t), ("n_c", n_c), ("var_t", var_t), ("var_c", var_c)):
        check_nonnegative(name, a)
    finite = np.all([np.isfinite(a) for a in arrs], axis=0)
    return n_t, mean_t, guard_variance(var_t, mean_t), n_c, mean_c, guard_variance(var_c, mean_c), finite
