"""Pure statistics for experiment analysis: no Dagster imports.

Every function takes sufficient statistics (counts; n, mean, variance; moments
of per-user sums) as NumPy-broadcastable arrays and returns a ``NamedTuple``
of arrays, so one call analyses many experiments. Modules:

- ``binary``: Fisher's exact test (many tables at once), Miettinen-Nurminen.
- ``continuous``: Welch t.
- ``lift``: relative lift with a log-scale delta-method interval.
- ``sequential``: asymptotic confidence sequences (the deciding interval).
- ``power``: planned sample, power reached.
- ``srm``: sample ratio mismatch on the look's grid arrays, sequential and fixed-horizon.
- ``epochs``: running quantities along the nights, restarted at each reopen.
- ``monitoring``: the anytime-valid test of the contract-violation rate.
- ``multiplicity``: alpha slots and Holm.
- ``clustering``: delta method on per-user sums.
- ``meta``: random-effects pooling with HKSJ intervals.
- ``decision``: the decision rule of DESIGN section 6, its burn-in and guardrail readings.

Every public function has a caller in the pipeline; the plain forms the tests compare the
vectorised ones with are in ``tests/stats/``.
"""
