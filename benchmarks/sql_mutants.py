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
STAGING = (
    "tests/end_to_end/test_bad_input.py",
    "tests/ingest",
    "tests/end_to_end/test_simulated_pipeline.py",
    "tests/end_to_end/test_corrections.py",
    "tests/end_to_end/test_recovery.py",
)
EXPERIENCE = (
    "tests/end_to_end/test_bad_input.py",
    "tests/end_to_end/test_simulated_pipeline.py",
    "tests/end_to_end/test_ab_export_pipeline.py",
)
LOOK = (
    "tests/end_to_end/test_simulated_pipeline.py",
    "tests/end_to_end/test_ab_export_pipeline.py",
    "tests/end_to_end/test_any_landed_date.py",
)

SQL_MUTANTS: tuple[PlantedChange, ...] = (
    # contract rules that span rows (staging)
    PlantedChange("outcome_at_assignment_quarantined", "find_outcomes_before_assignment.sql",
                  "WHERE c.recorded_at < a.first_assigned_at", "WHERE c.recorded_at <= a.first_assigned_at",
                  "< made <=: an outcome recorded at the assignment instant is quarantined", STAGING),
    PlantedChange("outcome_checked_against_last_assignment", "find_outcomes_before_assignment.sql",
                  "min(assigned_at) AS first_assigned_at", "max(assigned_at) AS first_assigned_at",
                  "the outcome is compared with the session's last assignment, not its first", STAGING),
    PlantedChange("assignment_at_registration_quarantined", "find_assignments_before_registration.sql",
                  "WHERE c.assigned_at < e.registered_at", "WHERE c.assigned_at <= e.registered_at",
                  "< made <=: an assignment at the registration instant is quarantined", STAGING),
    PlantedChange("duplicate_keeps_last_row", "find_duplicate_keys.sql",
                  "ORDER BY s.partition_day, s.source_file, s.source_row",
                  "ORDER BY s.partition_day DESC, s.source_file, s.source_row",
                  "a repeated key keeps the latest day's row instead of the first", STAGING),
    PlantedChange("duplicate_quarantines_first_row_too", "find_duplicate_keys.sql",
                  "FROM ranked WHERE k > 1", "FROM ranked WHERE k >= 1",
                  "every copy of a repeated key is quarantined, the first one too", STAGING),
    PlantedChange("outcomes_of_unknown_sessions_kept", "find_outcomes_of_unknown_sessions.sql",
                  "ANTI JOIN staged_sessions", "SEMI JOIN staged_sessions",
                  "anti-join made a semi-join: outcomes of known sessions are held back", STAGING),
    PlantedChange("undeclared_arm_rule_dropped", "find_undeclared_arms.sql",
                  "WHERE NOT list_contains(", "WHERE list_contains(",
                  "the declared-arm rule inverted", STAGING),
    PlantedChange("stale_cross_row_quarantine_kept", "delete_contract_quarantine.sql",
                  " OR list_contains($cross_row_rules, rule)", "",
                  "rows held by a cross-row rule are not re-checked, so a late session never frees its outcome",
                  STAGING),
    PlantedChange("conservation_counts_superseded_files", "count_table_conservation.sql",
                  "WHERE table_name = $table AND superseded_at IS NULL GROUP BY ALL",
                  "WHERE table_name = $table GROUP BY ALL",
                  "row conservation counts the raw rows of superseded files", STAGING),
    PlantedChange("pending_files_include_superseded", "select_pending_files.sql",
                  "WHERE m.table_name = $table AND m.superseded_at IS NULL", "WHERE m.table_name = $table",
                  "staging reads superseded versions of a corrected file too", STAGING),
    # verification and experience
    PlantedChange("task_contract_ignored", "create_verification_records.sql",
                  "coalesce(specific.authoritative_kinds, fallback.authoritative_kinds)",
                  "coalesce(fallback.authoritative_kinds, specific.authoritative_kinds)",
                  "the default evaluation contract overrides the task type's own", EXPERIENCE),
    PlantedChange("earliest_outcome_wins", "select_experience_candidates.sql",
                  "ORDER BY recorded_at DESC, evaluator_id", "ORDER BY recorded_at, evaluator_id",
                  "the first authoritative outcome of a session is used, not the latest", EXPERIENCE),
    PlantedChange("non_authoritative_outcome_verifies", "select_experience_candidates.sql",
                  "FROM verification_records WHERE authoritative\n", "FROM verification_records\n",
                  "a self-report or heuristic outcome verifies a session", EXPERIENCE),
    PlantedChange("delivered_arm_rule_dropped", "select_experience_candidates.sql",
                  " OR delivered_arm IS DISTINCT FROM arm", "",
                  "a session that delivered another arm than assigned stays in the experience", EXPERIENCE),
    PlantedChange("unit_rules_on_sessions", "select_experience_candidates.sql",
                  "FROM row_rules WHERE randomization_unit = 'user' GROUP BY ALL",
                  "FROM row_rules WHERE randomization_unit = 'session' GROUP BY ALL",
                  "the whole-unit exclusions apply to session-randomized experiments instead of user ones",
                  EXPERIENCE),
    PlantedChange("control_by_name", "create_experience.sql",
                  "arm = control_arm AS is_control", "arm = 'control' AS is_control",
                  "the control arm is taken to be the arm named 'control'", LOOK),
    # the look
    PlantedChange("srm_counts_sessions", "count_assigned_units.sql",
                  "CASE WHEN x.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END",
                  "x.session_id",
                  "the sample-ratio test counts sessions of a user-randomized experiment, not users", LOOK),
    PlantedChange("srm_counts_after_look", "count_assigned_units.sql",
                  "WHERE x.assigned_at < $as_of_end", "WHERE TRUE",
                  "assignments after the look's end enter its sample-ratio counts", LOOK),
)
