"""Dense arrays over experiments, nights, strata, arms and metrics: how the look avoids loops.

The look reads long frames (one row per experiment, arm, stratum and day on which a
cumulative statistic changed). :class:`Grid` gives every experiment, night, stratum, arm
and metric an integer position, and :meth:`Grid.tensor` scatters a long frame into a dense
NumPy array ``[experiment, night, ...]`` whose values are carried forward to the nights
with no change (cumulative statistics: the last value at or before the night). After that
every statistic of every experiment at every night is one array operation; running
quantities within an epoch (between ``reopened`` events) use :meth:`Grid.within_epoch`
(``stats.epochs``), which loops over epoch numbers (a handful), never over experiments.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import polars as pl

from zcl_assets.stats.epochs import within_epoch


def _codes(values: pl.Series, categories: list[str] | pl.Enum) -> np.ndarray:
    """Integer position of each value in ``categories`` (sorted unique strings, or their Enum)."""
    dtype = categories if isinstance(categories, pl.Enum) else pl.Enum(categories)
    return values.cast(dtype).to_physical().cast(pl.Int64).to_numpy()


@dataclass
class Grid:
    """Positions of experiments, nights, strata, arms and metrics.

    Attributes:
        experiments: sorted experiment ids (position ``e``).
        day0: the first night of any experiment (position ``d = night - day0``).
        nights: number of night positions ``D``.
        epoch: ``[E, D]`` epoch of each experiment's look at each night, -1 where it has none.
        segment_epoch: ``[E, S]`` epoch each stratum belongs to, -1 where the stratum does not exist.
        arm_keys, arm_pos: sorted ``e * A + arm code`` and the arm's position ``j`` within its experiment.
        arm_names: every arm name (the codes), ``n_arms``: ``[E]`` arms per experiment.
        metric_keys, metric_pos, metric_names: the same for (experiment, metric) pairs.
    """

    experiments: list[str]
    day0: dt.date
    nights: int
    epoch: np.ndarray
    segment_epoch: np.ndarray
    arm_names: list[str]
    arm_keys: np.ndarray
    arm_pos: np.ndarray
    n_arms: np.ndarray
    metric_names: list[str]
    metric_keys: np.ndarray
    metric_pos: np.ndarray
    n_metrics: int

    @classmethod
    def build(cls, looks: pl.DataFrame, segments: pl.DataFrame, arms: pl.DataFrame, metrics: pl.DataFrame) -> "Grid":
        """From ``looks`` (experiment_id, as_of, epoch), ``segments`` (experiment_id, segment,
        epoch), ``arms`` (experiment_id, arm, arm_order) and ``metrics`` (experiment_id, metric)."""
        experiments = pl.concat([looks.get_column("experiment_id"), arms.get_column("experiment_id")]).unique().sort().to_list()
        day0 = looks.get_column("as_of").min() if looks.height else dt.date(1970, 1, 1)
        nights = int((looks.get_column("as_of").max() - day0).days) + 1 if looks.height else 0
        n_exp = len(experiments)
        epoch = np.full((n_exp, max(nights, 1)), -1, dtype=np.int64)  # pragma: no mutate
        e = _codes(looks.get_column("experiment_id"), experiments)
        d = (looks.get_column("as_of") - day0).dt.total_days().to_numpy().astype(np.int64)
        epoch[e, d] = looks.get_column("epoch").to_numpy()
        seg = segments.filter(pl.col("experiment_id").is_in(experiments))
        n_seg = int(seg.get_column("segment").max()) + 1 if seg.height else 1
        segment_epoch = np.full((n_exp, n_seg), -1, dtype=np.int64)
        segment_epoch[_codes(seg.get_column("experiment_id"), experiments), seg.get_column("segment").to_numpy()] = \
            seg.get_column("epoch").to_numpy()
        arms = arms.filter(pl.col("experiment_id").is_in(experiments))
        arm_names = sorted(set(arms.get_column("arm").to_list()))
        ae = _codes(arms.get_column("experiment_id"), experiments)
        key = ae * len(arm_names) + _codes(arms.get_column("arm"), arm_names)
        order = np.argsort(key)
        # the position of an arm within its experiment, in registration order
        pos = arms.get_column("arm_order").to_numpy().astype(np.int64)
        n_arms = np.bincount(ae, minlength=n_exp)
        metrics = metrics.unique().filter(pl.col("experiment_id").is_in(experiments)).sort("experiment_id", "metric")
        metric_names = sorted(set(metrics.get_column("metric").to_list()))
        me = _codes(metrics.get_column("experiment_id"), experiments)
        mkey = me * max(len(metric_names), 1) + _codes(metrics.get_column("metric"), metric_names)
        mpos = metrics.with_columns(pl.int_range(pl.len()).over("experiment_id").alias("p")).get_column("p").to_numpy()
        n_metrics = int(mpos.max()) + 1 if mpos.size else 1  # pragma: no mutate
        morder = np.argsort(mkey)
        return cls(experiments, day0, max(nights, 1), epoch, segment_epoch, arm_names, key[order], pos[order],
                   n_arms, metric_names, mkey[morder], mpos[morder], n_metrics)

    # positions -------------------------------------------------------------------------------
    def e(self, ids: pl.Series) -> np.ndarray:
        """Position of each experiment id; -1 for an id the look does not know (never raised)."""
        if not hasattr(self, "_enum"):
            self._enum = pl.Enum(self.experiments)
        known = ids.is_in(self.experiments).fill_null(False).to_numpy()
        if known.all():
            return _codes(ids, self._enum)
        codes = np.full(ids.len(), -1, dtype=np.int64)
        if known.any():
            codes[known] = _codes(ids.filter(pl.Series(known)), self._enum)
        return codes

    def d(self, days: pl.Series) -> np.ndarray:
        return (days - self.day0).dt.total_days().to_numpy().astype(np.int64)

    def arm(self, e: np.ndarray, names: pl.Series) -> np.ndarray:
        """Position of each arm within its experiment (-1 for an arm the experiment does not declare)."""
        if not hasattr(self, "_arm_enum"):  # pragma: no mutate
            self._arm_enum = pl.Enum(self.arm_names)
        known = names.is_in(self.arm_names).to_numpy()
        codes = np.zeros(e.size, dtype=np.int64)
        if known.all():
            codes = _codes(names, self._arm_enum)
        elif known.any():
            codes[known] = _codes(names.filter(pl.Series(known)), self._arm_enum)
        key = e * len(self.arm_names) + codes
        i = np.clip(np.searchsorted(self.arm_keys, key), 0, max(self.arm_keys.size - 1, 0))
        hit = known & (self.arm_keys.size > 0) & (self.arm_keys[i] == key)
        return np.where(hit, self.arm_pos[i], -1)

    def metric(self, e: np.ndarray, names: pl.Series) -> np.ndarray:
        known = names.is_in(self.metric_names).to_numpy()
        codes = np.zeros(e.size, dtype=np.int64)
        if known.any():
            codes[known] = _codes(names.filter(pl.Series(known)), self.metric_names)
        key = e * max(len(self.metric_names), 1) + codes
        i = np.clip(np.searchsorted(self.metric_keys, key), 0, max(self.metric_keys.size - 1, 0))
        hit = known & (self.metric_keys.size > 0) & (self.metric_keys[i] == key)
        return np.where(hit, self.metric_pos[i], -1)

    @property
    def max_arms(self) -> int:
        return int(self.n_arms.max()) if self.n_arms.size else 1

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.experiments), self.nights

    # arrays ------------------------------------------------------------------------------------
    def tensor(self, index: tuple[np.ndarray, ...], days: np.ndarray, values: np.ndarray, extra: tuple[int, ...],
               carry: bool = True) -> np.ndarray:
        """Scatter long rows into ``[E, D, *extra]`` and carry each value forward over nights.

        Args:
            index: ``(e, *positions)`` per row (positions index the ``extra`` axes).
            days: night position ``d`` of each row (rows may fall before the first look: they
                count from ``d = 0``).
            values: the cumulative values.
            extra: sizes of the extra axes.
            carry: carry values forward (cumulative statistics); False: 0 on nights without a row.

        Returns:
            float array; 0 before a key's first row.
        """
        shape = (len(self.experiments), self.nights, *extra)
        out = np.full(shape, np.nan if carry else 0.0)
        ok = (days < self.nights) & np.all([i >= 0 for i in index], axis=0)  # index holds e at least
        d = np.maximum(days[ok], 0)
        idx = (index[0][ok], d, *(i[ok] for i in index[1:]))
        if carry:
            # several rows on the same position (before the first night): keep the latest
            order = np.lexsort((days[ok],))
            out[tuple(i[order] for i in idx)] = values[ok][order]
            seen = ~np.isnan(out)
            pos = np.where(seen, np.arange(self.nights).reshape((1, -1) + (1,) * len(extra)), 0)
            pos = np.maximum.accumulate(pos, axis=1)
            out = np.take_along_axis(out, pos, axis=1)
            return np.nan_to_num(out, nan=0.0)
        np.add.at(out, idx, values[ok])
        return out

    def within_epoch(self, ufunc: np.ufunc, values: np.ndarray, identity: float) -> np.ndarray:
        """Running ``ufunc`` along nights, restarting at each epoch (``stats.epochs.within_epoch``)."""
        return within_epoch(ufunc, values, self.epoch, identity)
