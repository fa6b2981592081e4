"""ab_data.csv through `import_ab_export` and the nightly job, checked against plain SQL + scipy.

The rule for units with several rows (docs/pipeline.md): a row whose delivered page disagrees
with its assigned group is quarantined (delivered_arm_mismatch), and so is every other row of
that unit (unit_multiple_arms when the unit's rows name two groups, else unit_contaminated);
a unit-level export keeps only the first row of a repeated unit (repeated_unit).
"""

import math

import duckdb
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep
from statsmodels.stats.proportion import test_proportions_2indep as score_test_2indep

from tests.conftest import AB_DATA, require_shared_data
from tests.plan_reference import r_reference
from tests.warehouse_checks import conservation_gaps
from zcl_assets.importers.ab_export import AbExportOptions, import_ab_export
from zcl_assets.runner import run_night

# Independent computation over the CSV, not through the pipeline.
EXPECTED_SQL = """
WITH ab AS (
    SELECT *, ("group" = 'treatment') <> (landing_page = 'new_page') AS bad FROM read_csv_auto(?)
), units AS (
    SELECT user_id, count(*) FILTER (WHERE bad) AS bad_rows, count(DISTINCT "group") AS groups FROM ab GROUP BY ALL
), clean AS (
    SELECT ab.* FROM ab JOIN units USING (user_id) WHERE units.bad_rows = 0
    QUALIFY row_number() OVER (PARTITION BY user_id ORDER BY "timestamp") = 1
)
SELECT "group", count(*) AS units, sum(converted) AS conversions FROM clean GROUP BY ALL ORDER BY 1
"""
EXCLUSIONS_SQL = """
WITH ab AS (
    SELECT *, ("group" = 'treatment') <> (landing_page = 'new_page') AS bad FROM read_csv_auto(?)
), units AS (
    SELECT user_id, count(*) FILTER (WHERE bad) AS bad_rows, count(DISTINCT "group") AS groups, count(*) AS rows
    FROM ab GROUP BY ALL
)
SELECT
    (SELECT count(*) FROM ab WHERE bad) AS mismatch,
    (SELECT count(*) FROM ab JOIN units USING (user_id) WHERE NOT bad AND bad_rows > 0 AND groups > 1) AS multiple_arms,
    (SELECT count(*) FROM ab JOIN units USING (user_id) WHERE NOT bad AND bad_rows > 0 AND groups = 1) AS contaminated,
    (SELECT sum(rows - 1) FROM units WHERE bad_rows = 0) AS repeated
"""


def test_ab_data_end_to_end(pipeline_paths, instance):
    require_shared_data(AB_DATA)
    landing, warehouse = pipeline_paths
    import_ab_export(
        AB_DATA, landing,
        AbExportOptions(experiment_id="udacity-landing-page", variant_map={"control": "old_page", "treatment": "new_page"}),
    )
    results = run_night(instance, "2017-01-31")
    assert results and all(r.success for r in results)

    expected = duckdb.sql(EXPECTED_SQL, params=[str(AB_DATA)]).fetchall()
    (c_group, c_units, c_conv), (t_group, t_units, t_conv) = expected
    assert (c_group, t_group) == ("control", "treatment")
    mismatch, multiple_arms, contaminated, repeated = duckdb.sql(EXCLUSIONS_SQL, params=[str(AB_DATA)]).fetchone()
    # Known shape of the file (data/README.md): 3,893 mismatched rows, one user repeated cleanly.
    assert (mismatch, repeated) == (3893, 1)

    with duckdb.connect(str(warehouse), read_only=True) as con:
        by_rule = dict(con.execute("SELECT rule, count(*) FROM quarantine GROUP BY ALL").fetchall())
        assert by_rule == {
            "delivered_arm_mismatch": mismatch,
            "unit_multiple_arms": multiple_arms,
            "unit_contaminated": contaminated,
            "repeated_unit": repeated,
        }
        # Nothing lost: raw = staged + quarantined per landing table, and assignments = experience + excluded.
        assert conservation_gaps(con, ("experiments", "sessions", "assignments", "outcomes")) == {}
        assert con.execute(
            "SELECT sum(row_count) FROM landing_manifest WHERE table_name = 'sessions' AND superseded_at IS NULL"
        ).fetchone()[0] == 294478
        kept = con.execute("SELECT count(*) FROM experience").fetchone()[0]
        assert kept + sum(by_rule.values()) == 294478
        row = con.execute(
            "SELECT n_control, successes_control, n_treatment, successes_treatment, difference, ci_low, ci_high, "
            "p_value, p_method, ci_method, planned_n_per_arm, fisher_p_value, decision, alpha_share "
            "FROM experiment_analysis WHERE experiment_id = 'udacity-landing-page' AND is_primary "
            "AND as_of = DATE '2017-01-31'"
        ).fetchone()

    n_c, x_c, n_t, x_t, diff, low, high, p, p_method, ci_method, planned, fisher_p, decision, alpha_share = row
    assert (n_c, x_c, n_t, x_t) == (c_units, c_conv, t_units, t_conv)
    assert diff == pytest.approx(t_conv / t_units - c_conv / c_units, abs=1e-12)
    # Miettinen-Nurminen score test: statsmodels' score test agrees at margin 0 (its interval is
    # known to stray at the 1e-7 level, docs/statistics.md, hence the looser tolerance there).
    ref_p = score_test_2indep(t_conv, t_units, c_conv, c_units, method="score").pvalue
    assert p == pytest.approx(ref_p, rel=1e-9)
    ref_low, ref_high = confint_proportions_2indep(t_conv, t_units, c_conv, c_units, method="score")
    assert (low, high) == (pytest.approx(ref_low, abs=1e-6), pytest.approx(ref_high, abs=1e-6))
    assert (p_method, ci_method) == ("miettinen_nurminen_score", "miettinen_nurminen_score")
    # Large table: every expected cell is far above 5, so Fisher's exact test is not reported.
    assert fisher_p is None
    # Planned sample: baseline 0.5 and MDE 0.01 (importer defaults), alpha share 0.05 / K = 0.0125
    # (K = 4 slots), power 0.8: n_fixed = (z_{0.99375} + z_{0.8})^2 * (0.25 + 0.51*0.49) / 0.01^2
    # = (2.497705 + 0.841621)^2 * 0.4999 / 1e-4 = 55,744.4; N_plan = ceil(R * n_fixed) = 87,408
    # (R = 1.568 at alpha 0.0125 and power 0.8, calibrated for the confidence sequence by
    # benchmarks/calibrate_cs_inflation.py --table).
    assert alpha_share == pytest.approx(0.0125)
    z = stats.norm.ppf(1 - 0.0125 / 2) + stats.norm.ppf(0.8)
    n_fixed = z**2 * (0.5 * 0.5 + 0.51 * 0.49) / 0.01**2
    assert planned == math.ceil(r_reference(0.0125, 0.8) * n_fixed) == 87408
    # 143k units per arm are past the plan; the confidence sequence lies inside +/- the MDE.
    assert decision == "no_effect"
