"""Operating characteristics of the sequential SRM test, simulated at its production tuning.

Each run assigns units to two arms of a 50/50 design at a true treatment share, in equal
nightly batches, and reads the production test (``stats.srm.srm_sequential`` with the prior
of ``stats.srm.tuned_concentration`` at the units ``stats.srm.srm_tuning_units`` gives the
plan) at every look. The share of runs whose p ever falls below ``SRM_ALPHA`` is the power
(a true mismatch) or the false-alarm rate (a true 50/50 split). DESIGN section 6 asks for a
52/48 split caught within 10,000 units in at least 70% of runs whatever the plan, and false
alarms over 60 looks at most 0.01; ``benchmarks/srm_tuning.py`` prints the figures.
"""

from __future__ import annotations

import numpy as np

from zcl_assets.stats.srm import SRM_ALPHA, srm_sequential, srm_tuning_units, tuned_concentration

__all__ = ["alarm_rate"]


def alarm_rate(planned_total: float, treatment_share: float, units: int, looks: int, runs: int, seed: int,
               bounded: bool = True) -> float:
    """Share of ``runs`` in which the sequential SRM test fires at some look.

    Args:
        planned_total: The experiment's planned units (all arms).
        treatment_share: The true share of units assigned to treatment (0.5: no mismatch).
        units: Units assigned by the last look.
        looks: Nightly looks, in equal batches of units.
        runs: Simulated experiments.
        seed: Seed of the generator.
        bounded: Tune at ``srm_tuning_units(planned_total)`` (production); False: at the plan
            itself (the tuning before the bounds, for comparison).
    """
    rng = np.random.default_rng(seed)
    batch = np.diff(np.rint(np.linspace(0, units, looks + 1))).astype(np.int64)
    treated = np.cumsum(rng.binomial(np.broadcast_to(batch, (runs, looks)), treatment_share), axis=1)
    total = np.cumsum(batch)[None, :]
    counts = np.stack([total - treated, treated], axis=-1)[:, :, None, :].astype(float)
    n_star = srm_tuning_units(planned_total) if bounded else planned_total
    conc = np.full((runs, looks, 1), float(tuned_concentration(n_star)))
    p = srm_sequential(counts, np.array([0.5, 0.5])[None, None, None, :], conc, np.zeros((runs, looks), dtype=np.int64),
                       np.ones((runs, looks, 1), dtype=bool))
    return float((p.min(axis=1) < SRM_ALPHA).mean())
