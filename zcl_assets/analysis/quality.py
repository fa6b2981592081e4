"""Rule 1 of the decision, for every experiment at every night at once: is the data trustworthy?

* **SRM** on units assigned (Lindon and Malek 2022), every arm of the experiment in one
  test, prior tuned at the planned total sample within bounds (``stats.srm.srm_tuning_units``,
  ``stats.srm.tuned_concentration``), per
  stratum with its declared shares (a declared allocation change starts a stratum, so an
  undeclared change is a mismatch), read at ``stats.srm.SRM_ALPHA``. When no allocation was
  declared, the constancy test of ``stats.srm.srm_constancy`` instead. The chi-square test
  (goodness of fit, or homogeneity across nights when the allocation is unknown) is
  reported beside it.
* **Outcome imbalance**: the same test on units with a verified outcome of the primary
  metric, against the split of the units actually assigned (a verification that depends
  on the arm breaks the comparison; a chance imbalance of the assignment is the SRM test's
  to judge). The verified units are a subsample of the assigned ones, whose split varies
  less than a multinomial draw of their number (hypergeometric variance), so reading them
  against the observed split errs on the conservative side; the tests check the
  false-alarm rate by simulation.
* **Baseline drift**: the control arm's context digest changed.
* **Contract violations**: an anytime-valid test (``stats.monitoring.rate_exceeds``) that
  more than ``stats.monitoring.VIOLATION_THRESHOLD`` of the experiment's rows were
  quarantined.

Every test restarts at a ``reopened`` event (an *epoch*); within an epoch a look is invalid
from the first night that fired on (sticky). Arrays are ``[experiment, night, stratum,
arm]`` (``grid.Grid``); no loop runs over experiments.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.wording import figure, figures
from zcl_assets.stats.epochs import running_pvalue
from zcl_assets.stats.monitoring import VIOLATION_THRESHOLD, rate_exceeds
from zcl_assets.stats.srm import (
    DEFAULT_PRIOR_CONCENTRATION,
    SRM_ALPHA,
    srm_chisquare,
    srm_constancy,
    srm_sequential,
    srm_tuning_units,
    tuned_concentration,
)


class Validity(NamedTuple):
    """Rule 1 per experiment and night, arrays ``[E, D]`` (NaN / False where not computed)."""

    srm_sequential_p: np.ndarray
    srm_chisquare_p: np.ndarray
    srm_fired: np.ndarray
    imbalance_p: np.ndarray
    violation_share: np.ndarray
    violation_p: np.ndarray
    drift: np.ndarray
    invalid: np.ndarray
    invalid_since: np.ndarray  # night position, -1 when valid
    ever: dict[str, np.ndarray]  # per signal: fired at some night of the epoch so far
    assigned: np.ndarray  # [E, D, K] units assigned per arm, every stratum of the night's epoch


class _Design(NamedTuple):
    """What rule 1 reads of each experiment's registration, arrays over experiments."""

    shares: np.ndarray  # [E, S, K] declared share (NaN: unknown or no such arm)
    arms: np.ndarray  # [E, K] the arm exists
    known: np.ndarray  # [E] the allocation was declared
    check_verified: np.ndarray  # [E] verified outcomes are checked for imbalance
    concentration: np.ndarray  # [E] SRM prior tuned at the planned sample
    in_epoch: np.ndarray  # [E, D, S] the stratum belongs to the night's epoch


def _counts(grid: Grid, frame: pl.DataFrame) -> np.ndarray:
    """``[E, D, S, K]`` cumulative units of ``frame`` (``experiment_id, arm, segment, day, units``)."""
    e = grid.e(frame.get_column("experiment_id"))
    j = grid.arm(e, frame.get_column("arm"))
    return grid.tensor((e, frame.get_column("segment").to_numpy(), j), grid.d(frame.get_column("day")),
                       frame.get_column("units").cast(pl.Float64).to_numpy(), (grid.segment_epoch.shape[1], grid.max_arms))


def _design(grid: Grid, shares: pl.DataFrame, experiments: pl.DataFrame) -> _Design:
    n_exp = grid.shape[0]
    theta = np.full((n_exp, grid.segment_epoch.shape[1], grid.max_arms), np.nan)
    e = grid.e(shares.get_column("experiment_id"))
    j = grid.arm(e, shares.get_column("arm"))
    ok = (j >= 0) & (e >= 0)
    theta[e[ok], shares.get_column("segment").to_numpy()[ok], j[ok]] = shares.get_column("share").fill_null(np.nan).to_numpy()[ok]
    exp = experiments.with_columns(pl.Series("e", grid.e(experiments.get_column("experiment_id")))).filter(
        pl.col("e") >= 0).sort("e")
    e_of = exp.get_column("e").to_numpy()
    known = np.zeros(n_exp, dtype=bool)
    known[e_of] = exp.get_column("allocation_known").to_numpy()
    check_v = np.zeros(n_exp, dtype=bool)
    check_v[e_of] = exp.get_column("check_verified").to_numpy()
    conc = np.full(n_exp, DEFAULT_PRIOR_CONCENTRATION)
    n_star = srm_tuning_units(exp.get_column("srm_n_star").to_numpy())
    conc[e_of] = np.asarray(tuned_concentration(n_star, SRM_ALPHA), dtype=float).reshape(-1)
    in_epoch = (grid.segment_epoch[:, None, :] == grid.epoch[:, :, None]) & (grid.epoch[:, :, None] >= 0)
    arms = np.arange(grid.max_arms)[None, :] < grid.n_arms[:, None]
    return _Design(theta, arms, known, check_v, conc, in_epoch)


def _allocation(grid: Grid, x: np.ndarray, design: _Design, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sequential SRM p and the chi-square p (at the nights in ``want``) of every experiment."""
    srm_p = np.full(grid.shape, np.nan)
    srm_chi = np.full(grid.shape, np.nan)
    obs = np.where(design.in_epoch[..., None], x, 0.0).sum(axis=2)  # [E, D, K] units of the epoch
    k_idx = np.flatnonzero(design.known)
    if k_idx.size:
        # known allocation: Dirichlet-multinomial per stratum, summed over the epoch's strata
        srm_p[k_idx] = srm_sequential(x[k_idx], design.shares[k_idx][:, None, :, :],
                                      design.concentration[k_idx][:, None, None], grid.epoch[k_idx],
                                      design.in_epoch[k_idx])
        # chi-square of the epoch's units against the expected split (nights asked for)
        e_w, d_w = np.nonzero(want[k_idx])
        ew = k_idx[e_w]
        expected = (np.where(design.in_epoch[ew, d_w][..., None], x[ew, d_w].sum(axis=2, keepdims=True)
                             * np.nan_to_num(design.shares[ew]), 0.0).sum(axis=1))
        srm_chi[ew, d_w] = srm_chisquare(obs[ew, d_w], expected, design.arms[ew])
    u_idx = np.flatnonzero(~design.known)
    if u_idx.size:
        # unknown allocation: constancy of the split across nights (universal inference)
        constancy = srm_constancy(obs[u_idx], design.arms[u_idx], grid.epoch[u_idx])
        srm_p[u_idx], srm_chi[u_idx] = constancy.pvalue, np.where(want[u_idx], constancy.chisquare_p, np.nan)
    return srm_p, srm_chi


def _imbalance(grid: Grid, x: np.ndarray, v: np.ndarray, design: _Design) -> np.ndarray:
    """The sequential test of the verified units against the split actually assigned, per stratum."""
    with np.errstate(divide="ignore", invalid="ignore"):
        observed_share = x / x.sum(axis=3, keepdims=True)
    observed_share = np.where(design.arms[:, None, None, :] & (observed_share > 0), observed_share, np.nan)
    imbalance_p = np.full(grid.shape, np.nan)
    c_idx = np.flatnonzero(design.check_verified)
    if c_idx.size:
        share_c = observed_share[c_idx]
        usable = (np.sum(~np.isnan(share_c), axis=3) >= 2) & design.in_epoch[c_idx]
        conc = np.broadcast_to(design.concentration[c_idx][:, None, None], usable.shape)
        imbalance_p[c_idx] = srm_sequential(v[c_idx], share_c, conc, grid.epoch[c_idx], usable)
    return np.where(grid.epoch >= 0, imbalance_p, np.nan)


def _violations(grid: Grid, violations: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The share of quarantined rows of the epoch so far and its anytime-valid p."""
    looked = grid.epoch >= 0
    ve = grid.e(violations.get_column("experiment_id"))
    vd = grid.d(violations.get_column("day"))
    bad = grid.tensor((ve,), vd, violations.get_column("bad").cast(pl.Float64).to_numpy(), (), carry=False)
    total = grid.tensor((ve,), vd, violations.get_column("total").cast(pl.Float64).to_numpy(), (), carry=False)  # pragma: no mutate
    bad_c = grid.within_epoch(np.add, bad, 0.0)
    total_c = grid.within_epoch(np.add, total, 0.0)
    viol_p = np.where(looked, 1.0, np.nan)
    v_idx = np.flatnonzero((bad_c > 0).any(axis=1))  # no quarantined row, no evidence: p = 1
    if v_idx.size:
        rate = rate_exceeds(bad_c[v_idx], total_c[v_idx], VIOLATION_THRESHOLD)
        with np.errstate(divide="ignore"):
            log_e = np.log(np.asarray(rate.e_value, dtype=float))
        viol_p[v_idx] = np.where(looked[v_idx], running_pvalue(log_e, grid.epoch[v_idx]), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        viol_share = np.where(looked & (total_c > 0), bad_c / total_c, np.nan)  # pragma: no mutate
    return viol_share, viol_p


def _drift(grid: Grid, drift: pl.DataFrame) -> np.ndarray:
    """A second control digest showed in the night's epoch, on or before the night."""
    n_exp, n_nights = grid.shape
    n_epochs = int(grid.epoch.max()) + 1 if grid.epoch.size else 1  # pragma: no mutate
    drift_day = np.full((n_exp, max(n_epochs, 1)), np.inf)
    if drift.height:
        dep = drift.get_column("epoch").to_numpy()
        de = grid.e(drift.get_column("experiment_id"))
        keep = (dep < drift_day.shape[1]) & (de >= 0)
        drift_day[de[keep], dep[keep]] = grid.d(drift.get_column("drift_day"))[keep]
    epoch_now = np.maximum(grid.epoch, 0)
    return (grid.epoch >= 0) & (np.arange(n_nights)[None, :] >= np.take_along_axis(drift_day, epoch_now, axis=1))


def rule_one(
    grid: Grid,
    assigned: pl.DataFrame,
    verified: pl.DataFrame,
    shares: pl.DataFrame,
    experiments: pl.DataFrame,
    violations: pl.DataFrame,
    drift: pl.DataFrame,
    output: np.ndarray | None = None,
) -> Validity:
    """The invalidity signals of every experiment at every night.

    Args:
        grid: positions (``grid.Grid``).
        assigned: ``experiment_id, arm, segment, day, units``: cumulative units first assigned
            in the stratum, on the days they changed.
        verified: the same with ``units`` = units with a verified primary outcome.
        shares: ``experiment_id, segment, arm, share`` (null share: allocation unknown).
        experiments: ``experiment_id, srm_n_star, allocation_known, check_verified``.
        violations: ``experiment_id, epoch, day, bad, total``: rows of that day.
        drift: ``experiment_id, epoch, drift_day``: first day a second control digest showed.
        output: ``[E, D]`` nights whose descriptive chi-square is wanted (default: all).

    Returns:
        :class:`Validity`.
    """
    n_nights = grid.shape[1]
    x, v = _counts(grid, assigned), _counts(grid, verified)  # [E, D, S, K]
    design = _design(grid, shares, experiments)
    looked = grid.epoch >= 0
    srm_p, srm_chi = _allocation(grid, x, design, looked if output is None else (output & looked))
    srm_p = np.where(looked, srm_p, np.nan)
    imbalance_p = _imbalance(grid, x, v, design)
    viol_share, viol_p = _violations(grid, violations)
    drifted = _drift(grid, drift)
    fired = {
        "srm": srm_p < SRM_ALPHA,
        "imbalance": imbalance_p < SRM_ALPHA,
        "drift": drifted,
        "violations": viol_p < SRM_ALPHA,
    }
    ever = {k: grid.within_epoch(np.maximum, f.astype(float), 0.0) > 0 for k, f in fired.items()}
    fires = np.any(np.stack(list(fired.values())), axis=0)
    invalid = grid.within_epoch(np.maximum, fires.astype(float), 0.0) > 0  # pragma: no mutate
    first = grid.within_epoch(np.fmin, np.where(fires, np.arange(n_nights)[None, :], np.inf), np.inf)
    since = np.where(invalid, first, -1).astype(np.int64)
    in_epoch = np.where(design.in_epoch[..., None], x, 0.0).sum(axis=2)  # the units of the night's epoch
    return Validity(srm_p, srm_chi, fired["srm"], imbalance_p, viol_share, viol_p, drifted, invalid, since, ever,
                    in_epoch)


def _fired_figures(fired: np.ndarray, values: np.ndarray) -> list[str | None]:
    """The figures of the looks whose signal fired (None elsewhere: no sentence uses them). Wording every
    look's figure cost 256,000 calls a night at 1,000 experiments (1.2 s under the profiler), for the few
    that fired."""
    out = np.full(fired.shape, None, dtype=object)
    if fired.any():
        out[fired] = figures(values[fired])
    return out.tolist()


def reasons(valid: Validity, e: np.ndarray, d: np.ndarray) -> list[str | None]:
    """The words of rule 1 for the looks at positions ``(e, d)``: every signal that fired in the epoch."""
    srm = valid.ever["srm"][e, d]
    imb = valid.ever["imbalance"][e, d]
    dri = valid.ever["drift"][e, d]
    vio = valid.ever["violations"][e, d]
    frame = pl.DataFrame({
        "srm": srm, "imb": imb, "dri": dri, "vio": vio,
        "srm_p": _fired_figures(srm, valid.srm_sequential_p[e, d]), "imb_p": _fired_figures(imb, valid.imbalance_p[e, d]),
        "vio_share": _fired_figures(vio, valid.violation_share[e, d] * 100),
        "vio_p": _fired_figures(vio, valid.violation_p[e, d]),
    }, schema_overrides={c: pl.String for c in ("srm_p", "imb_p", "vio_share", "vio_p")})
    level, threshold = figure(SRM_ALPHA), figure(VIOLATION_THRESHOLD * 100)
    parts = frame.select(pl.concat_str(
        pl.when(pl.col("srm")).then(pl.format("sequential SRM fired (p = {} < {})", "srm_p", pl.lit(level))),
        pl.when(pl.col("imb")).then(pl.format("verified outcomes imbalanced between arms (p = {} < {})", "imb_p",
                                              pl.lit(level))),
        pl.when(pl.col("dri")).then(pl.lit("the control arm's context digest drifted")),
        pl.when(pl.col("vio")).then(pl.format("contract violations exceed {}% of its rows ({}% quarantined or excluded, p = {})",
                                              pl.lit(threshold), "vio_share", "vio_p")),
        separator="; ", ignore_nulls=True,
    )).to_series()
    return parts.to_list()
