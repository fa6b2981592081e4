"""Rule 1 of the decision, for every experiment at every night at once: is the data trustworthy?

* **SRM** on units assigned (Lindon and Malek 2022), every arm of the experiment in one
  test, prior tuned at the planned total sample (``stats.srm.tuned_concentration``), per
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
from scipy import special

from zcl_assets.analysis.grid import Grid
from zcl_assets.stats.monitoring import VIOLATION_THRESHOLD, rate_exceeds
from zcl_assets.stats.srm import CONSTANCY_WINDOW, SRM_ALPHA, tuned_concentration


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
    assigned: np.ndarray  # [E, D, K] units assigned per arm, every stratum


def _dirichlet(x: np.ndarray, theta: np.ndarray, conc: np.ndarray) -> np.ndarray:
    """Log Dirichlet-multinomial Bayes factor over the last axis; arms with NaN share left out.

    ``x``: counts ``[..., K]``; ``theta``: shares broadcastable to ``x``; ``conc``: prior mass
    broadcastable to ``x.shape[:-1]``. Lindon and Malek (2022), closed form.
    """
    shape = np.broadcast_shapes(x.shape, theta.shape)
    arm = np.broadcast_to(~np.isnan(theta), shape)
    th = np.broadcast_to(theta, shape)[arm]
    xx = np.broadcast_to(x, shape)[arm]
    a = np.broadcast_to(np.asarray(conc)[..., None], shape)[arm] * th
    term = np.zeros(shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # only arms that exist (no padding)
        term[arm] = special.gammaln(a + xx) - special.gammaln(a) - xx * np.log(th)
    n = np.where(arm, np.broadcast_to(x, shape), 0.0).sum(axis=-1)
    conc = np.broadcast_to(conc, n.shape)
    return term.sum(axis=-1) - (special.gammaln(conc + n) - special.gammaln(conc))


def _running_p(grid: Grid, log_e: np.ndarray) -> np.ndarray:
    """Anytime-valid p: 1 / the running maximum of the e-value within the epoch."""
    running = grid.within_epoch(np.fmax, np.where(np.isnan(log_e), -np.inf, log_e), -np.inf)
    with np.errstate(over="ignore"):
        return np.minimum(1.0, np.exp(-running))


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
    n_exp, n_nights = grid.shape
    n_seg, n_arm = grid.segment_epoch.shape[1], grid.max_arms

    def counts(frame: pl.DataFrame) -> np.ndarray:
        e = grid.e(frame.get_column("experiment_id"))
        j = grid.arm(e, frame.get_column("arm"))
        return grid.tensor((e, frame.get_column("segment").to_numpy(), j), grid.d(frame.get_column("day")),
                           frame.get_column("units").cast(pl.Float64).to_numpy(), (n_seg, n_arm))

    x = counts(assigned)  # [E, D, S, K]
    v = counts(verified)
    theta = np.full((n_exp, n_seg, n_arm), np.nan)
    e = grid.e(shares.get_column("experiment_id"))
    j = grid.arm(e, shares.get_column("arm"))
    ok = (j >= 0) & (e >= 0)
    theta[e[ok], shares.get_column("segment").to_numpy()[ok], j[ok]] = shares.get_column("share").fill_null(np.nan).to_numpy()[ok]
    arm_exists = np.arange(n_arm)[None, :] < grid.n_arms[:, None]  # [E, K]
    exp = experiments.with_columns(pl.Series("e", grid.e(experiments.get_column("experiment_id")))).filter(
        pl.col("e") >= 0).sort("e")
    e_of = exp.get_column("e").to_numpy()
    known = np.zeros(n_exp, dtype=bool)
    known[e_of] = exp.get_column("allocation_known").to_numpy()
    check_v = np.zeros(n_exp, dtype=bool)
    check_v[e_of] = exp.get_column("check_verified").to_numpy()
    conc = np.full(n_exp, 100.0)
    conc[e_of] = np.asarray(tuned_concentration(exp.get_column("srm_n_star").to_numpy(), SRM_ALPHA), dtype=float).reshape(-1)
    in_epoch = (grid.segment_epoch[:, None, :] == grid.epoch[:, :, None]) & (grid.epoch[:, :, None] >= 0)  # [E, D, S]

    looked = grid.epoch >= 0
    want = looked if output is None else (output & looked)
    obs = np.where(in_epoch[..., None], x, 0.0).sum(axis=2)  # [E, D, K] units of the epoch
    srm_p = np.full((n_exp, n_nights), np.nan)
    srm_chi = np.full((n_exp, n_nights), np.nan)
    k_idx = np.flatnonzero(known)
    if k_idx.size:
        # known allocation: Dirichlet-multinomial per stratum, summed over the epoch's strata
        sub = Grid.subset(grid, k_idx)
        log_bf = _dirichlet(x[k_idx], theta[k_idx][:, None, :, :], conc[k_idx][:, None, None])
        srm_p[k_idx] = _running_p(sub, np.where(in_epoch[k_idx], log_bf, 0.0).sum(axis=2))
        # chi-square of the epoch's units against the expected split (nights asked for)
        e_w, d_w = np.nonzero(want[k_idx])
        ew = k_idx[e_w]
        expct = (np.where(in_epoch[ew, d_w][..., None], x[ew, d_w].sum(axis=2, keepdims=True)
                          * np.nan_to_num(theta[ew]), 0.0).sum(axis=1))
        o = obs[ew, d_w]
        with np.errstate(divide="ignore", invalid="ignore"):
            chi = np.where(arm_exists[ew] & (expct > 0), (o - expct) ** 2 / expct, 0.0).sum(axis=1)
        srm_chi[ew, d_w] = np.where(o.sum(axis=1) > 0, special.chdtrc(np.maximum(grid.n_arms[ew] - 1, 1), chi), np.nan)
    u_idx = np.flatnonzero(~known)
    if u_idx.size:
        # unknown allocation: constancy of the split across nights (universal inference)
        p_u, chi_u = _constancy(Grid.subset(grid, u_idx), obs[u_idx], arm_exists[u_idx])
        srm_p[u_idx], srm_chi[u_idx] = p_u, np.where(want[u_idx], chi_u, np.nan)
    srm_p = np.where(looked, srm_p, np.nan)

    # verified outcomes against the split actually assigned, per stratum
    with np.errstate(divide="ignore", invalid="ignore"):
        observed_share = x / x.sum(axis=3, keepdims=True)
    observed_share = np.where(arm_exists[:, None, None, :] & (observed_share > 0), observed_share, np.nan)
    imbalance_p = np.full((n_exp, n_nights), np.nan)
    c_idx = np.flatnonzero(check_v)
    if c_idx.size:
        share_c = observed_share[c_idx]
        usable = (np.sum(~np.isnan(share_c), axis=3) >= 2) & in_epoch[c_idx]
        log_v = np.where(usable, _dirichlet(v[c_idx], share_c, np.broadcast_to(conc[c_idx][:, None, None], usable.shape)),
                         0.0)
        imbalance_p[c_idx] = np.where(looked[c_idx], _running_p(Grid.subset(grid, c_idx), log_v.sum(axis=2)), np.nan)

    # contract violations, cumulative within the epoch
    ve = grid.e(violations.get_column("experiment_id"))
    vd = grid.d(violations.get_column("day"))
    bad = grid.tensor((ve,), vd, violations.get_column("bad").cast(pl.Float64).to_numpy(), (), carry=False)
    total = grid.tensor((ve,), vd, violations.get_column("total").cast(pl.Float64).to_numpy(), (), carry=False)
    bad_c = grid.within_epoch(np.add, bad, 0.0)
    total_c = grid.within_epoch(np.add, total, 0.0)
    viol_p = np.where(looked, 1.0, np.nan)
    v_idx = np.flatnonzero((bad_c > 0).any(axis=1))  # no quarantined row, no evidence: p = 1
    if v_idx.size:
        rate = rate_exceeds(bad_c[v_idx], total_c[v_idx], VIOLATION_THRESHOLD)
        with np.errstate(divide="ignore"):
            log_e = np.log(np.asarray(rate.e_value, dtype=float))
        viol_p[v_idx] = np.where(looked[v_idx], _running_p(Grid.subset(grid, v_idx), log_e), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        viol_share = np.where(looked & (total_c > 0), bad_c / total_c, np.nan)

    # baseline drift: a second control digest in the epoch
    n_epochs = int(grid.epoch.max()) + 1 if grid.epoch.size else 1
    drift_day = np.full((n_exp, max(n_epochs, 1)), np.inf)
    if drift.height:
        dep = drift.get_column("epoch").to_numpy()
        de = grid.e(drift.get_column("experiment_id"))
        keep = (dep < drift_day.shape[1]) & (de >= 0)
        drift_day[de[keep], dep[keep]] = grid.d(drift.get_column("drift_day"))[keep]
    epoch_now = np.maximum(grid.epoch, 0)
    drifted = looked & (np.arange(n_nights)[None, :] >= np.take_along_axis(drift_day, epoch_now, axis=1))

    fired = {
        "srm": srm_p < SRM_ALPHA,
        "imbalance": imbalance_p < SRM_ALPHA,
        "drift": drifted,
        "violations": viol_p < SRM_ALPHA,
    }
    ever = {k: grid.within_epoch(np.maximum, f.astype(float), 0.0) > 0 for k, f in fired.items()}
    fires = np.any(np.stack(list(fired.values())), axis=0)
    invalid = grid.within_epoch(np.maximum, fires.astype(float), 0.0) > 0
    first = grid.within_epoch(np.fmin, np.where(fires, np.arange(n_nights)[None, :], np.inf), np.inf)
    since = np.where(invalid, first, -1).astype(np.int64)
    return Validity(srm_p, srm_chi, fired["srm"], imbalance_p, viol_share, viol_p, drifted, invalid, since, ever,
                    x.sum(axis=2))


def _constancy(grid: Grid, cum: np.ndarray, arm_exists: np.ndarray, window: int = CONSTANCY_WINDOW):
    """``stats.srm.srm_constancy`` on ``[E, D, K]`` cumulative counts of each epoch, with the
    chi-square test of homogeneity of the nightly arrivals beside it."""
    n_exp, n_nights, n_arm = cum.shape
    night = np.arange(n_nights)[None, :]
    start = _continuing_epoch_start(grid.epoch)  # [E, D]
    mask = arm_exists[:, None, :]
    cum = np.where(mask, np.maximum.accumulate(cum, axis=1), 0.0)

    def at(offset):  # cumulative counts `offset` nights back, 0 before the epoch
        back = night - offset
        inside = back >= start
        idx = np.clip(back, 0, n_nights - 1)
        val = np.take_along_axis(cum, np.broadcast_to(idx[..., None], cum.shape), axis=1)
        return np.where(inside[..., None], val, 0.0)

    prev, old = at(1), at(window + 1)
    arrived = cum - prev
    recent = prev - old
    k = grid.n_arms[:, None, None].astype(float)
    theta = (recent + 0.5) / (recent.sum(axis=2, keepdims=True) + 0.5 * k)
    first_night = night == start
    with np.errstate(divide="ignore", invalid="ignore"):
        num = np.where(mask & ~first_night[..., None], arrived * np.log(theta), 0.0).sum(axis=2)
    num = grid.within_epoch(np.add, num, 0.0)
    seed = np.take_along_axis(cum, np.broadcast_to(start[..., None], cum.shape), axis=1)
    rest = cum - seed
    rest_total = rest.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mle = np.where(rest > 0, rest * np.log(rest / rest_total), 0.0).sum(axis=2)
        p = _running_p(grid, num - mle)
        look_total = arrived.sum(axis=2, keepdims=True)
        sq = grid.within_epoch(np.add, np.where(look_total > 0, arrived**2 / look_total, 0.0), 0.0)
        ratio = np.where(cum > 0, sq / cum, 0.0).sum(axis=2)
    total = cum.sum(axis=2)
    chi = total * ratio - total
    nights_with_units = grid.within_epoch(np.add, (look_total[..., 0] > 0).astype(float), 0.0)
    df = (grid.n_arms[:, None] - 1) * (nights_with_units - 1)
    chi_p = np.where(df > 0, special.chdtrc(np.maximum(df, 1), np.maximum(chi, 0.0)), np.nan)
    return p, chi_p


def _continuing_epoch_start(epoch: np.ndarray) -> np.ndarray:
    """``[E, D]`` night at which each night's epoch started, a night without a look (epoch -1)
    between two nights of the same epoch continuing it: the cumulative counts carry over such a
    night, so restarting there would count every unit a second time as one night's arrivals."""
    nights = np.arange(epoch.shape[1])[None, :]
    last_looked = np.maximum.accumulate(np.where(epoch >= 0, nights, 0), axis=1)
    carried = np.take_along_axis(epoch, last_looked, axis=1)
    previous = np.concatenate([np.full((epoch.shape[0], 1), -2), carried[:, :-1]], axis=1)
    return np.maximum.accumulate(np.where(carried != previous, nights, 0), axis=1)


def reasons(valid: Validity, e: np.ndarray, d: np.ndarray) -> list[str | None]:
    """The words of rule 1 for the looks at positions ``(e, d)``: every signal that fired in the epoch."""
    srm = valid.ever["srm"][e, d]
    imb = valid.ever["imbalance"][e, d]
    dri = valid.ever["drift"][e, d]
    vio = valid.ever["violations"][e, d]
    frame = pl.DataFrame({
        "srm": srm, "imb": imb, "dri": dri, "vio": vio,
        "srm_p": valid.srm_sequential_p[e, d], "imb_p": valid.imbalance_p[e, d],
        "vio_share": valid.violation_share[e, d], "vio_p": valid.violation_p[e, d],
    })
    parts = frame.select(pl.concat_str(
        pl.when(pl.col("srm")).then(pl.format("sequential SRM fired (p = {} < {})", pl.col("srm_p").round_sig_figs(3),
                                      pl.lit(SRM_ALPHA))),
        pl.when(pl.col("imb")).then(pl.format("verified outcomes imbalanced between arms (p = {} < {})",
                                      pl.col("imb_p").round_sig_figs(3), pl.lit(SRM_ALPHA))),
        pl.when(pl.col("dri")).then(pl.lit("the control arm's context digest drifted")),
        pl.when(pl.col("vio")).then(pl.format("contract violations exceed {}% of its rows ({}% quarantined, p = {})",
                                      pl.lit(round(VIOLATION_THRESHOLD * 100)), (pl.col("vio_share") * 100).round(1),
                                      pl.col("vio_p").round_sig_figs(3))),
        separator="; ", ignore_nulls=True,
    )).to_series()
    return parts.to_list()
