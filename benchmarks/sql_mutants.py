"""Planted changes to the SQL files, for ``benchmarks/mutation.py``.

Each is one realistic single bug (a join condition flipped, a filter dropped, ``<`` made
``<=``, a rule left out), written as the exact text to find in ``sql/<file>`` (it must occur
once) and its replacement. ``tests`` are the tests that cover the file, fastest first; the
mutation run stops at the first failure. A change that no test can tell apart from the
original (an equivalent mutant) does not belong here.
"""

from __future__ import annotations

from typing import NamedTuple


class PlantedChange(NamedTuple):
    """One planted bug in one SQL file."""

    name: str
    file: str  # relative to sql/
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
LOOK = (
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
    _change("outcome_at_assignment_quarantined", "find_outcomes_before_assignment.sql",
            "WHERE c.recorded_at < a.first_assigned_at", "WHERE c.recorded_at <= a.first_assigned_at",
            "< made <=: an outcome recorded at the assignment instant is quarantined", STAGING),
    _change("outcome_checked_against_last_assignment", "find_outcomes_before_assignment.sql",
            "min(assigned_at) AS first_assigned_at", "max(assigned_at) AS first_assigned_at",
            "the outcome is compared with the session's last assignment, not its first", STAGING),
    _change("assignment_at_registration_quarantined", "find_assignments_before_registration.sql",
            "WHERE c.assigned_at < e.registered_at", "WHERE c.assigned_at <= e.registered_at",
            "< made <=: an assignment at the registration instant is quarantined", STAGING),
    _change("duplicate_keeps_last_row", "find_duplicate_keys.sql",
            "ORDER BY s.partition_day, s.source_file, s.source_row",
            "ORDER BY s.partition_day DESC, s.source_file, s.source_row",
            "a repeated key keeps the latest day's row instead of the first", STAGING),
    _change("duplicate_quarantines_first_row_too", "find_duplicate_keys.sql",
            "FROM ranked WHERE k > 1", "FROM ranked WHERE k >= 1",
            "every copy of a repeated key is quarantined, the first one too", STAGING),
    _change("outcomes_of_known_sessions_held", "find_outcomes_of_unknown_sessions.sql",
            "ANTI JOIN staged_sessions", "SEMI JOIN staged_sessions",
            "anti-join made a semi-join: outcomes of known sessions are held back", STAGING),
    _change("undeclared_arm_rule_inverted", "find_undeclared_arms.sql",
            "WHERE NOT list_contains(", "WHERE list_contains(",
            "the declared-arm rule inverted", STAGING),
    _change("stale_cross_row_quarantine_kept", "delete_contract_quarantine.sql",
            " OR list_contains($cross_row_rules, rule)", "",
            "rows held by a cross-row rule are not re-checked, so a late session never frees its outcome", STAGING),
    _change("conservation_counts_superseded_files", "count_table_conservation.sql",
            "WHERE table_name = $table AND superseded_at IS NULL GROUP BY ALL", "WHERE table_name = $table GROUP BY ALL",
            "row conservation counts the raw rows of superseded files", STAGING),
    _change("pending_files_include_superseded", "select_pending_files.sql",
            "WHERE m.table_name = $table AND m.superseded_at IS NULL", "WHERE m.table_name = $table",
            "staging reads the superseded versions of a corrected file too", STAGING),
    # verification and experience
    _change("task_contract_ignored", "create_verification_records.sql",
            "coalesce(specific.authoritative_kinds, fallback.authoritative_kinds)",
            "coalesce(fallback.authoritative_kinds, specific.authoritative_kinds)",
            "the default evaluation contract overrides the task type's own", EXPERIENCE),
    _change("earliest_outcome_wins", "select_experience_candidates.sql",
            "ORDER BY recorded_at DESC, evaluator_id", "ORDER BY recorded_at, evaluator_id",
            "the first authoritative outcome of a session is used, not the latest", EXPERIENCE),
    _change("non_authoritative_outcome_verifies", "select_experience_candidates.sql",
            "FROM verification_records WHERE authoritative\n", "FROM verification_records\n",
            "a self-report or heuristic outcome verifies a session", EXPERIENCE),
    _change("delivered_arm_rule_dropped", "select_experience_candidates.sql",
            " OR delivered_arm IS DISTINCT FROM arm", "",
            "a session that delivered another arm than assigned stays in the experience", EXPERIENCE),
    _change("unit_rules_on_sessions", "select_experience_candidates.sql",
            "FROM row_rules WHERE randomization_unit = 'user' GROUP BY ALL",
            "FROM row_rules WHERE randomization_unit = 'session' GROUP BY ALL",
            "the whole-unit exclusions apply to session-randomized experiments instead of user ones", EXPERIENCE),
    _change("control_by_name", "create_experience.sql",
            "arm = control_arm AS is_control", "arm = 'control' AS is_control",
            "the control arm is taken to be the arm named 'control'", LOOK),
    # the look
    _change("srm_counts_sessions", "count_assigned_units.sql",
            "CASE WHEN x.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END AS unit", "x.session_id AS unit",
            "the sample-ratio test counts sessions of a user-randomized experiment, not users", LOOK),
    _change("srm_counts_after_look", "count_assigned_units.sql",
            "WHERE x.assigned_at < $as_of_end", "WHERE TRUE",
            "assignments after the look's end enter its sample-ratio counts", LOOK),
    _change("statistics_on_sessions", "aggregate_unit_statistics.sql",
            "CASE WHEN r.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END AS unit", "x.session_id AS unit",
            "a user-randomized experiment is analysed per session", LOOK),
    _change("null_value_counted", "aggregate_unit_statistics.sql",
            " AND m.value IS NOT NULL", "",
            "an outcome without a value of the metric counts as an observation of it", LOOK),
    _change("outcomes_after_look", "aggregate_unit_statistics.sql",
            "WHERE a.verified AND a.recorded_at < $as_of_end", "WHERE a.verified",
            "outcomes recorded after the look's end enter it", LOOK),
    _change("outcome_enters_on_assignment_day", "aggregate_unit_statistics.sql",
            "CAST(greatest(a.assigned_at, a.recorded_at) AS DATE) AS day", "CAST(a.assigned_at AS DATE) AS day",
            "an outcome enters the nights from its assignment day, before it was recorded", LOOK),
    _change("drift_watched_on_treatment", "find_control_drift.sql",
            "WHERE x.is_control AND", "WHERE NOT x.is_control AND",
            "baseline drift is looked for in the treatment arms instead of the control", LOOK),
    _change("users_in_both_arms_need_three", "count_users_in_both_arms.sql",
            "HAVING count(*) >= 2", "HAVING count(*) > 2",
            ">= made >: a user seen in two arms is not counted", LOOK),
    _change("burn_in_from_last_assignment", "select_first_assignments.sql",
            "coalesce(min(x.assigned_at)", "coalesce(max(x.assigned_at)",
            "days since the first assignment are counted from the last one", LOOK),
    _change("experience_exclusions_not_violations", "count_contract_violations.sql",
            "stage IN ('contract', 'experience')", "stage IN ('contract')",
            "assignments excluded at the experience stage are not counted as contract violations", LOOK),
    _change("first_snapshot_of_the_day", "select_snapshot_statistics.sql",
            'ORDER BY "at" DESC', 'ORDER BY "at"',
            "an aggregate export's first snapshot of a day is read instead of its last", LOOK),
)
