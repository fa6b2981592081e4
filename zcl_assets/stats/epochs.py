"""Running quantities along an experiment's nightly looks, restarted at every epoch.

An *epoch* is the stretch of looks between two ``reopened`` events (DESIGN section 6): every
sequential test of rule 1 starts again at a reopen, and within an epoch an alarm stays raised.
Arrays here are ``[experiment, night, ...]`` with an ``epoch`` array ``[experiment, night]``
of integers that never decrease along a row; ``-1`` marks a night without a look. The
running operations loop over epoch numbers (a handful), never over experiments.
"""

from __future__ import annotations

import numpy as np

__all__ = ["within_epoch", "epoch_start", "running_pvalue"]


def within_epoch(ufunc: np.ufunc, values: np.ndarray, epoch: np.ndarray, identity: float) -> np.ndarray:
    """Running ``ufunc`` along nights (axis 1), restarted at each epoch.

    Args:
        ufunc: A binary NumPy ufunc with ``accumulate`` (``np.add``, ``np.fmax``, ...).
        values: ``[E, D, ...]``.
        epoch: ``[E, D]`` epoch of each night's look, -1 where there is none.
        identity: The ufunc's identity; it fills the nights no epoch covers.

    Returns:
        A float64 array of ``values``' shape.

    Examples:
        >>> within_epoch(np.add, np.ones((1, 4)), np.array([[0, 0, 1, 1]]), 0.0).tolist()
        [[1.0, 2.0, 1.0, 2.0]]
    """
    ep = epoch.reshape(epoch.shape + (1,) * (values.ndim - 2))
    out = np.full(values.shape, identity, dtype=float)
    for number in range(int(epoch.max()) + 1 if epoch.size else 0):
        here = ep == number
        acc = ufunc.accumulate(np.where(here, values, identity), axis=1)
        out = np.where(here, acc, out)
    return out


def epoch_start(epoch: np.ndarray) -> np.ndarray:
    """``[E, D]`` night at which each night's epoch started.

    A night without a look (epoch -1) between two nights of one epoch continues it:
    cumulative counts carry over such a night, so restarting there would count every unit
    a second time as one night's arrivals.

    Examples:
        >>> epoch_start(np.array([[0, -1, 0, 1], [-1, 0, 0, 0]])).tolist()
        [[0, 0, 0, 3], [0, 1, 1, 1]]
    """
    nights = np.arange(epoch.shape[1])[None, :]
    last_looked = np.maximum.accumulate(np.where(epoch >= 0, nights, 0), axis=1)
    carried = np.take_along_axis(epoch, last_looked, axis=1)
    previous = np.concatenate([np.full((epoch.shape[0], 1), -2), carried[:, :-1]], axis=1)
    return np.maximum.accumulate(np.where(carried != previous, nights, 0), axis=1)


def running_pvalue(log_e: np.ndarray, epoch: np.ndarray) -> np.ndarray:
    """Anytime-valid p-value ``min(1, 1 / max e-value so far)`` within each epoch.

    By Ville's inequality a test martingale ``E`` exceeds ``1 / alpha`` at some look with
    probability at most ``alpha``, so reading ``p`` at every look is valid. A NaN log
    e-value (a night without evidence) leaves the running maximum where it was.

    Args:
        log_e: ``[E, D]`` log e-values of the nightly looks.
        epoch: ``[E, D]`` epochs (see the module docstring).

    Returns:
        ``[E, D]`` p-values in (0, 1]; 1 where no epoch covers the night.

    References:
        Ville (1939); Ramdas, Grünwald, Vovk, Shafer (2023), "Game-theoretic statistics
        and safe anytime-valid inference", Statistical Science.
    """
    running = within_epoch(np.fmax, np.where(np.isnan(log_e), -np.inf, log_e), epoch, -np.inf)
    with np.errstate(over="ignore"):
        return np.minimum(1.0, np.exp(-running))
