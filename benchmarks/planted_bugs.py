"""Planted bugs for ``benchmarks/mutation.py``: the SQL mutants and the wiring bugs.

Each is one realistic single bug, written as the exact text to find in a file of the project
(it must occur once) and its replacement. ``tests`` are the tests to run, fastest first; the
run stops at the first failure.

- ``SQL_MUTANTS``: the mutants of ``sql/`` (a join condition flipped, a filter dropped, ``<``
  made ``<=``, a rule left out), run against the tests that cover each file. A change that no
  test can tell apart from the original (an equivalent mutant) does not belong here.
- ``WIRING_BUGS``: for each kind of test data that the older fixtures never varied, the bug
  it exists to catch, run against the synthetic end-to-end test alone: each must be killed
  (docs/testing.md).
"""

from __future__ import annotations

from typing import NamedTuple


class PlantedChange(NamedTuple):
    """One planted bug in one SQL file."""

    name: str
    file: str  # relative to the project root
    find: str
    replace: str
    why: str  # the mistake it stands for
    tests: tuple[str, ...]


# Test groups, fastest first.
SYNTHETIC = "tests/end_to_end/test_synthetic_pipeline.py"
STAGING = (
    "tests/ingest/test_cross_row_boundaries.py",
    "tests/end_to_end/test_bad_input.py",
    SYNTHETIC,
    "tests/ingest",
    "tests/end_to_end/test_simulated_pipeline.py",
    "tests/end_to_end/test_corrections.py",
    "tests/end_to_end/test_recovery.py",
)
EXPERIENCE = (
    SYNTHETIC,
    "tests/end_to_end/test_bad_input.py",
    "tests/end_to_end/test_simulated_pipeline.py",
    "tests/end_to_end/test_ab_export_pipeline.py",
)
# The only fixture with a task type whose evaluation contract differs from the default.
VERIFICATION = "tests/analysis/test_verification_records_sql.py"
LOOK = (
    "tests/analysis/test_look_count_sql.py",
    SYNTHETIC,
    "tests/analysis/test_aggregation_sql.py",
    "tests/end_to_end/test_simulated_pipeline.py",
    "tests/end_to_end/test_ab_export_pipeline.py",
    "tests/end_to_end/test_world_decisions.py",
    "tests/end_to_end/test_any_landed_date.py",
    "tests/importers/test_arm_snapshots.py",
)


def _change(name, file, find, replace, why, tests):
    return PlantedChange(name, file, find, replace, why, tests)


SQL_MUTANTS: tuple[PlantedChange, ...] = (
    # contract rules that span rows (staging)
    _change("outcome_at_assignment_quarantined", "sql/find_outcomes_before_assignment.sql",
            "WHERE c.recorded_at < a.first_assigned_at", "WHERE c.recorded_at <= a.first_assigned_at",
            "< made <=: an outcome recorded at the assignment instant is quarantined", STAGING),
    _change("outcome_checked_against_last_assignment", "sql/find_outcomes_before_assignment.sql",
            "min(assigned_at) AS first_assigned_at", "max(assigned_at) AS first_assigned_at",
            "the outcome is compared with the session's last assignment, not its first", STAGING),
    _change("assignment_at_registration_quarantined", "sql/find_assignments_before_registration.sql",
            "WHERE c.assigned_at < e.registered_at", "WHERE c.assigned_at <= e.registered_at",
            "< made <=: an assignment at the registration instant is quarantined", STAGING),
    _change("duplicate_keeps_last_row", "sql/find_duplicate_keys.sql",
            "ORDER BY s.partition_day, s.source_file, s.source_row",
            "ORDER BY s.partition_day DESC, s.source_file, s.source_row",
            "a repeated key keeps the latest day's row instead of the first", STAGING),
    _change("duplicate_quarantines_first_row_too", "sql/find_duplicate_keys.sql",
            "FROM ranked WHERE k > 1", "FROM ranked WHERE k >= 1",
            "every copy of a repeated key is quarantined, the first one too", STAGING),
    _change("outcomes_of_known_sessions_held", "sql/find_outcomes_of_unknown_sessions.sql",
            "ANTI JOIN staged USING", "SEMI JOIN staged USING",
            "anti-join made a semi-join: outcomes of known sessions are held back", STAGING),
    _change("undeclared_arm_rule_inverted", "sql/find_undeclared_arms.sql",
            "WHERE NOT list_contains(", "WHERE list_contains(",
            "the declared-arm rule inverted", STAGING),
    _change("stale_cross_row_quarantine_kept", "sql/delete_contract_quarantine.sql",
            "OR (list_contains($cross_row_rules, rule) AND EXISTS (", "OR (false AND EXISTS (",
            "rows held by a cross-row rule are not re-checked, so a late session never frees its outcome", STAGING),
    _change("conservation_counts_superseded_files", "sql/count_table_conservation.sql",
            "WHERE table_name = $table AND superseded_at IS NULL AND partition_day", "WHERE table_name = $table AND partition_day",
            "row conservation counts the raw rows of superseded files", STAGING),
    _change("pending_files_include_superseded", "sql/select_pending_files.sql",
            "WHERE m.table_name = $table AND m.superseded_at IS NULL", "WHERE m.table_name = $table",
            "staging reads the superseded versions of a corrected file too", STAGING),
    # verification and experience
    _change("task_contract_ignored", "sql/select_verification_records.sql",
            "coalesce(specific.authoritative_kinds, fallback.authoritative_kinds)",
            "coalesce(fallback.authoritative_kinds, specific.authoritative_kinds)",
            "the default evaluation contract overrides the task type's own", (VERIFICATION, *EXPERIENCE)),
    _change("earliest_outcome_wins", "sql/select_experience.sql",
            "ORDER BY v.recorded_at DESC, v.evaluator_id", "ORDER BY v.recorded_at, v.evaluator_id",
            "the first authoritative outcome of a session is used, not the latest", EXPERIENCE),
    _change("non_authoritative_outcome_verifies", "sql/select_experience.sql",
            "WHERE c.authoritative_outcomes > 1 AND v.authoritative\n",
            "WHERE c.authoritative_outcomes > 1\n",
            "a self-report or heuristic outcome verifies a session", EXPERIENCE),
    _change("delivered_arm_rule_dropped", "sql/select_experience_exclusions.sql",
            " OR s.delivered_arm IS DISTINCT FROM a.arm", "",
            "a session that delivered another arm than assigned stays in the experience", EXPERIENCE),
    _change("unit_rules_on_sessions", "sql/insert_experience_unit_exclusions.sql",
            "FROM units WHERE randomization_unit = 'user' GROUP BY ALL",
            "FROM units WHERE randomization_unit = 'session' GROUP BY ALL",
            "the whole-unit exclusions apply to session-randomized experiments instead of user ones", EXPERIENCE),
    _change("control_by_name", "sql/select_experience.sql",
            "a.arm = e.control_arm AS is_control", "a.arm = 'control' AS is_control",
            "the control arm is taken to be the arm named 'control'", LOOK),
    # the look
    _change("srm_counts_sessions", "sql/aggregate_assigned_day_units.sql",
            "x.unit_id AS unit", "x.session_id AS unit",
            "the sample-ratio test counts sessions of a user-randomized experiment, not users", LOOK),
    _change("srm_counts_after_look", "sql/select_assigned_units.sql",
            "WHERE day < CAST($as_of_end AS DATE)", "WHERE TRUE",
            "assignments after the look's end enter its sample-ratio counts", LOOK),
    _change("statistics_on_sessions", "sql/aggregate_arm_day_sums.sql",
            "CASE WHEN r.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END AS unit", "x.session_id AS unit",
            "a user-randomized experiment is analysed per session", LOOK),
    _change("null_value_counted", "sql/aggregate_arm_day_sums.sql",
            "FROM measured WHERE value IS NOT NULL", "FROM measured",
            "an outcome without a value of the metric counts as an observation of it", LOOK),
    _change("outcomes_after_look", "sql/select_arm_statistics.sql",
            "WHERE day < CAST($as_of_end AS DATE)", "WHERE TRUE",
            "outcomes recorded after the look's end enter it", LOOK),
    _change("outcome_enters_on_assignment_day", "sql/aggregate_arm_day_sums.sql",
            "CAST(greatest(assigned_at, recorded_at) AS DATE) AS day", "CAST(assigned_at AS DATE) AS day",
            "an outcome enters the nights from its assignment day, before it was recorded", LOOK),
    _change("revision_enters_on_assignment_day", "sql/aggregate_arm_day_sums.sql",
            "CAST(greatest(a.assigned_at, v.recorded_at) AS DATE) AS revision_day",
            "CAST(a.assigned_at AS DATE) AS revision_day",
            "a revised session's later version counts from its assignment day, before it was recorded", LOOK),
    _change("revision_null_counted", "sql/aggregate_arm_day_sums.sql",
            "CAST(CAST(y IS NOT NULL AS INTEGER) - CAST(previous_y IS NOT NULL AS INTEGER) AS HUGEINT) AS m",
            "CAST(1 - CAST(previous_y IS NOT NULL AS INTEGER) AS HUGEINT) AS m",
            "a revised session's version without a value still counts as an observation", LOOK),
    _change("drift_watched_on_treatment", "sql/aggregate_control_digests.sql",
            "WHERE x.is_control AND", "WHERE NOT x.is_control AND",
            "baseline drift is looked for in the treatment arms instead of the control", LOOK),
    _change("users_in_both_arms_need_three", "sql/aggregate_mixed_users.sql",
            "HAVING count(*) >= 2", "HAVING count(*) > 2",
            ">= made >: a user seen in two arms is not counted", LOOK),
    _change("burn_in_from_last_assignment", "sql/aggregate_first_assignments.sql",
            "SELECT x.experiment_id, min(x.assigned_at) AS first_assigned_at", "SELECT x.experiment_id, max(x.assigned_at) AS first_assigned_at",
            "days since the first assignment are counted from the last one", LOOK),
    _change("experience_exclusions_not_violations", "sql/aggregate_violation_days.sql",
            "stage IN ('contract', 'experience')", "stage IN ('contract')",
            "assignments excluded at the experience stage are not counted as contract violations", LOOK),
    _change("first_snapshot_of_the_day", "sql/select_snapshot_statistics.sql",
            'ORDER BY "at" DESC', 'ORDER BY "at"',
            "an aggregate export's first snapshot of a day is read instead of its last", LOOK),
)


WIRING_BUGS: tuple[PlantedChange, ...] = (
    _change("arms_sorted_shares_kept", "zcl_assets/analysis/registration.py",
            'pl.col("a").struct.field("name").alias("arm"),',
            'pl.col("a").struct.field("name").sort().over("experiment_id").alias("arm"),',
            "unequal, three-way allocations registered in another order: arm names sorted, shares left in "
            "registration order", (SYNTHETIC,)),
    _change("control_by_name", "zcl_assets/analysis/registration.py",
            '(pl.col("a").struct.field("name") == pl.col("control_arm")).alias("is_control")',
            '(pl.col("a").struct.field("name") == "control").alias("is_control")',
            "control arm with another name: the arm named 'control' is taken as control", (SYNTHETIC,)),
    _change("control_by_name_in_experience", "sql/select_experience.sql",
            "a.arm = e.control_arm AS is_control", "a.arm = 'control' AS is_control",
            "control arm with another name: its baseline drift goes unwatched", (SYNTHETIC,)),
    _change("verified_share_ignored", "zcl_assets/analysis/registration.py",
            'verified_share=col("expected_verified_share")[i]', "verified_share=1.0",
            "verified share below 1: the plan assumes every outcome is verified", (SYNTHETIC,)),
    _change("earliest_outcome_wins", "sql/select_experience.sql",
            "ORDER BY v.recorded_at DESC, v.evaluator_id", "ORDER BY v.recorded_at, v.evaluator_id",
            "several outcomes per session: the first evaluator version wins, not the later", (SYNTHETIC,)),
    _change("non_authoritative_outcome_verifies", "sql/select_experience.sql",
            "WHERE c.authoritative_outcomes > 1 AND v.authoritative\n",
            "WHERE c.authoritative_outcomes > 1\n",
            "several outcomes per session: a later self-report wins over the evaluator", (SYNTHETIC,)),
    _change("nan_staged", "contracts/validate.py",
            'rules.append(("not_finite",', 'None and rules.append(("not_finite",',
            "NaN in an optional numeric field: staged instead of quarantined", (SYNTHETIC,)),
    _change("null_counted", "sql/aggregate_arm_day_sums.sql",
            "FROM measured WHERE value IS NOT NULL", "FROM measured",
            "null in an optional numeric field: counted as an observation", (SYNTHETIC,)),
    _change("outcome_enters_on_assignment_day", "sql/aggregate_arm_day_sums.sql",
            "CAST(greatest(assigned_at, recorded_at) AS DATE) AS day", "CAST(assigned_at AS DATE) AS day",
            "look before later data lands: an outcome counts in nights before it was recorded", (SYNTHETIC,)),
    _change("revision_null_counted", "sql/aggregate_arm_day_sums.sql",
            "CAST(CAST(y IS NOT NULL AS INTEGER) - CAST(previous_y IS NOT NULL AS INTEGER) AS HUGEINT) AS m",
            "CAST(1 - CAST(previous_y IS NOT NULL AS INTEGER) AS HUGEINT) AS m",
            "null in an optional numeric field of a revised session: counted as an observation", (SYNTHETIC,)),
    _change("revision_enters_on_assignment_day", "sql/aggregate_arm_day_sums.sql",
            "CAST(greatest(a.assigned_at, v.recorded_at) AS DATE) AS revision_day",
            "CAST(a.assigned_at AS DATE) AS revision_day",
            "look before later data lands: a revised session counts in nights before it was judged", (SYNTHETIC,)),
    _change("assignments_after_look_in_srm", "sql/select_assigned_units.sql",
            "WHERE day < CAST($as_of_end AS DATE)", "WHERE TRUE",
            "look before later data lands: later assignments enter its sample-ratio counts", (SYNTHETIC,)),
    _change("nights_after_the_look", "zcl_assets/analysis/look.py",
            'grid = days.filter((pl.col("as_of") >= pl.col("start")) & (pl.col("as_of") <= day))',
            'grid = days.filter(pl.col("as_of") >= pl.col("start"))',
            "look before later data lands: nights after it are written from the later data", (SYNTHETIC,)),
    _change("srm_counts_sessions", "sql/aggregate_assigned_day_units.sql",
            "x.unit_id AS unit", "x.session_id AS unit",
            "user-randomized: the sample-ratio test counts sessions, not users", (SYNTHETIC,)),
    _change("statistics_on_sessions", "sql/aggregate_arm_day_sums.sql",
            "CASE WHEN r.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END AS unit", "x.session_id AS unit",
            "user-randomized: the statistics count sessions, not users", (SYNTHETIC,)),
)
