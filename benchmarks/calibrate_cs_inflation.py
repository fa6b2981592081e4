"""Calibrate the sample-size inflation R of the confidence sequence (CS) by simulation.

Question: the planned sample is ``N_plan = R * n_fixed`` where ``n_fixed`` is the
fixed-horizon two-sided z-test sample for the MDE. How large must R be so that, with the
CS tuned at ``N_plan`` and looked at every night, ``P(CS lower bound > 0 at some look
up to N_plan | true effect = MDE) = registered power``?

Method (exact up to Monte Carlo error, under the normal approximation the CS itself
rests on). Work in standardised units: per-observation sd 1, ``n_fixed`` = 1 (total),
so the MDE is ``delta = z_{1-alpha/2} + z_{power}``. The looks are at the fractions
``f_k = k / K`` of ``N_plan`` (K evenly spaced nightly looks, constant traffic); decisions
are allowed from look ``first_look`` on (DESIGN section 6: no decision in the first 7
days). With ``B`` a standard Brownian motion on [0, 1], the estimate at look k is
``delta + B(f_k) / (sqrt(R) f_k)`` and the CS half-width is ``hw(f_k) / sqrt(R)`` where
``hw`` is the half-width for ``N_plan = 1`` (the boundary depends on N only through
``N rho^2 = c N / N_plan``, so it is scale free). Hence a path adopts by ``N_plan`` iff
``sqrt(R) > min_k (hw(f_k) f_k - B(f_k)) / (delta f_k)``: each path has a critical
``R_path`` and the calibrated R is the ``power`` quantile of ``R_path``. Its Monte Carlo
error comes from the order-statistic (binomial) confidence interval of that quantile.

At the alpha actually used (``--table``): every comparison is planned and its CS tuned at
its ``comparison_alpha`` (the experiment's alpha share over its comparisons), so R is
calibrated there, on one set of paths shared by every cell, over a grid of levels and
per-test powers that covers every registration the contract admits. The calibration is the
least favourable configuration of an experiment with several treatment arms: the arm at the
MDE and the others without effect, where Holm's first step (level ``alpha_share / m``) is the
only one that can adopt it; when the other arms are better too, Holm's later steps give more.
Each cell is the upper end of the quantile's 95% Monte Carlo interval, so the registered
power holds within Monte Carlo error. The table ``--table`` prints is
``zcl_assets.stats.power.R_TABLE``.

Run: ``python benchmarks/calibrate_cs_inflation.py`` (about 10 s on 2 cores);
``python benchmarks/calibrate_cs_inflation.py --table`` (about a minute).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zcl_assets.stats.sequential import cs_halfwidth, optimal_rho  # noqa: E402

N_PATHS = 400_000
SEED = 20261129


def critical_inflation(
    alpha: float,
    power: float,
    n_looks: int = 30,
    first_look: int = 7,
    n_paths: int = N_PATHS,
    seed: int = SEED,
    paths: np.ndarray | None = None,
) -> np.ndarray:
    """Per-path critical R (the smallest R at which the path adopts by N_plan); ``paths``
    (from :func:`brownian_paths`) reuses one set of paths across settings."""
    f = np.arange(1, n_looks + 1) / n_looks
    delta = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    hw = cs_halfwidth(1.0, f, optimal_rho(alpha, 1.0), alpha)
    paths = brownian_paths(n_looks, n_paths, seed) if paths is None else paths
    out = np.empty(paths.shape[0])
    chunk = 50_000
    for start in range(0, paths.shape[0], chunk):
        b = paths[start : start + chunk]
        m = b.shape[0]
        sel = slice(first_look - 1, n_looks)
        root = (hw[sel] * f[sel] - b[:, sel]) / (delta * f[sel])
        out[start : start + m] = np.maximum(root.min(axis=1), 0.0) ** 2
    return out


def brownian_paths(n_looks: int = 30, n_paths: int = N_PATHS, seed: int = SEED) -> np.ndarray:
    """A standard Brownian motion at the looks ``k / n_looks``: shape (paths, looks)."""
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.standard_normal((n_paths, n_looks)) * np.sqrt(1.0 / n_looks), axis=1)


def quantile_with_error(r_path: np.ndarray, q: float, level: float = 0.95):
    """Quantile and its distribution-free order-statistic interval and s.e."""
    x = np.sort(r_path)
    n = x.size
    z = stats.norm.ppf(0.5 + level / 2)
    k = q * n
    half = z * np.sqrt(n * q * (1 - q))
    lo = x[max(int(np.floor(k - half)), 0)]
    hi = x[min(int(np.ceil(k + half)), n - 1)]
    est = x[min(int(np.ceil(k)) - 1, n - 1)]
    return est, lo, hi, (hi - lo) / (2 * z)


TABLE_ALPHAS = (0.5, 0.2, 0.1, 0.05, 0.025, 0.0125, 0.005, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
TABLE_POWERS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999)


def table() -> None:
    """Print ``R_TABLE``: for each comparison alpha, R at each per-test power (upper 95% MC bound)."""
    paths = brownian_paths()
    print(f"# {N_PATHS:,} paths, seed {SEED}; largest Monte Carlo s.e. printed after the table")
    print("R_POWERS = (" + ", ".join(f"{p:g}" for p in TABLE_POWERS) + ")")
    print("R_TABLE = {  # comparison alpha: R at each of R_POWERS")
    worst = 0.0
    for alpha in TABLE_ALPHAS:
        cells = [quantile_with_error(critical_inflation(alpha, pw, paths=paths), pw) for pw in TABLE_POWERS]
        worst = max(worst, *(c[3] for c in cells))
        print(f"    {alpha:g}: (" + ", ".join(f"{np.ceil(c[2] * 1000) / 1000:.3f}" for c in cells) + "),", flush=True)
    print(f"}}  # largest Monte Carlo s.e. {worst:.4f}")


def main() -> None:
    print(f"paths per setting: {N_PATHS}, seed {SEED}")
    print("alpha  power  looks first  R_hat   95% MC interval     s.e.")
    worst = 0.0
    for alpha in (0.05, 0.025):
        for power in (0.8, 0.9):
            r = critical_inflation(alpha, power)
            est, lo, hi, se = quantile_with_error(r, power)
            worst = max(worst, hi)
            print(f"{alpha:5.3f}  {power:4.2f}   30     7     {est:.4f}  "
                  f"[{lo:.4f}, {hi:.4f}]  {se:.4f}")
    print(f"largest upper MC bound over the four settings: {worst:.4f}")
    print("\nsensitivity (alpha 0.05, power 0.80):")
    for looks, first in ((30, 1), (10, 3), (60, 14), (1, 1)):
        r = critical_inflation(0.05, 0.8, n_looks=looks, first_look=first, n_paths=200_000)
        est, lo, hi, se = quantile_with_error(r, 0.8)
        print(f"  looks {looks:3d}, first decision look {first:2d}: R = {est:.4f} (s.e. {se:.4f})")


if __name__ == "__main__":
    if "--table" in sys.argv:
        table()
    else:
        main()
