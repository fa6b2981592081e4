"""A/A families under nightly looks: adopt or reject in at most alpha of organization-task families.

Each family (an organization and task type) runs K = 4 concurrent experiments with one to
four treatment arms and no true effect, looked at every night for 30 nights through the
production path (registration with alpha slots, the look with Holm steps and the decision
rule). Reduced here (400 families); ``benchmarks/simulate_families.py`` runs 10,000.
"""

import numpy as np

from zcl_assets.analysis.engine import analyse
from zcl_assets.simulation.families import family_error_rates, simulate_families

N_FAMILIES = 400


def test_aa_families_keep_the_familywise_error_at_alpha():
    inputs, _ = simulate_families(N_FAMILIES, seed=2026)
    rates = family_error_rates(analyse(inputs))
    assert rates["families_n"] == N_FAMILIES and rates["experiments_n"] == 4 * N_FAMILIES
    # target alpha = 0.05 per family; MC s.e. at the target sqrt(.05 .95 / 400) = 0.011
    assert rates["families"] <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / N_FAMILIES)
    # and per experiment, whatever its number of arms, at most its share alpha / K = 0.0125
    for k in (1, 2, 3, 4):
        assert rates[f"arms_{k}"] <= 0.0125 + 3 * np.sqrt(0.0125 * 0.9875 / rates[f"arms_{k}_n"])
