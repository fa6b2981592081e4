"""Pure statistics for experiment analysis: no Dagster imports.

Every function takes sufficient statistics (counts; n, mean, variance; moments
of per-user sums) as NumPy-broadcastable arrays and returns a ``NamedTuple``
of arrays, so one call analyses many experiments. Modules:

- ``binary``: Fisher's exact test, Miettinen-Nurminen, Newcombe, chi-square.
- ``continuous``: Welch t, Mann-Whitney, caps and direction.
- ``lift``: relative lift with a log-scale delta-method interval.
- ``sequential``: asymptotic confidence sequences (the deciding interval).
- ``power``: planned sample, reachable MDE, power reached, days to sample.
- ``srm``: sample ratio mismatch, sequential and fixed-horizon.
- ``multiplicity``: alpha slots and Holm.
- ``clustering``: delta method on per-user sums, CR2, design effect.
- ``meta``: random-effects pooling with HKSJ intervals.
- ``decision``: the decision rule of DESIGN section 6.
"""
