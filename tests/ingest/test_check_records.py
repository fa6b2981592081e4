"""check_records: the row-level problems of records before landing, as staging would find them.

Importers refuse a bad registration with it; here it is called on every kind of table it
serves, with the problems written out by hand from the contract (contracts/tables.py).
"""

from __future__ import annotations

from contracts.validate import check_records

OUTCOME = {"schema_version": 1, "session_id": "s1", "success": True, "time_minutes": 3.0, "tokens": 10.0,
           "score": 0.5, "recorded_at": "2026-01-01T12:00:00Z", "evaluator_id": "ev",
           "evaluator_version": "1", "evaluator_kind": "human"}


def test_a_valid_outcome_has_no_problem_whatever_its_time_zone():
    # 23:30 at UTC-2 is 01:30 UTC the next day: the record's partition is the UTC day, so the
    # partition-day rule passes; a time without an offset is read as UTC.
    records = [OUTCOME, dict(OUTCOME, recorded_at="2026-01-01T23:30:00-02:00"),
               dict(OUTCOME, recorded_at="2026-01-01T12:00:00")]
    assert check_records("outcomes", records) == [[], [], []]


def test_each_record_gets_its_own_problems():
    records = [dict(OUTCOME, evaluator_kind="robot"), OUTCOME, dict(OUTCOME, success=1)]
    assert check_records("outcomes", records) == [
        [("not_allowed", "evaluator_kind=robot is not one of evaluator, human, self_report, heuristic, unknown")],
        [],
        [("bad_type", "success=1 is not a valid BOOLEAN")],
    ]


def test_an_unreadable_event_time_is_a_problem_of_the_record_not_an_error():
    assert check_records("outcomes", [dict(OUTCOME, recorded_at="yesterday")]) == [
        [("bad_type", 'recorded_at="yesterday" is not a valid TIMESTAMPTZ')]]


def test_a_table_other_than_experiments_is_checked_by_its_own_contract():
    record = {"schema_version": 1, "admission_id": "a", "org_id": "o", "task_type": "t", "state": "landed",
              "at": "2026-01-01T00:00:00+00:00"}
    assert check_records("admission_events", [record, dict(record, state="admitted")]) == [
        [("not_allowed", "state=landed is not one of admitted, consumed, launched, blocked, terminal")], []]


def test_an_event_time_that_staging_reads_has_no_partition_problem():
    # DuckDB reads this time; datetime.fromisoformat does not (check_records once gave it the
    # fallback partition day 1970-01-01 and a false wrong_partition problem)
    assert check_records("outcomes", [dict(OUTCOME, recorded_at="2026-01-01 12:00:00 UTC")]) == [[]]


def test_a_value_with_a_colon_stays_in_its_reason():
    # the staged reason is "rule: text"; only the first ": " separates them
    assert check_records("outcomes", [dict(OUTCOME, evaluator_kind="robot: v2")]) == [
        [("not_allowed", "evaluator_kind=robot: v2 is not one of evaluator, human, self_report, heuristic, unknown")]]


def test_a_value_that_is_not_finite_is_named_with_its_value():
    assert check_records("outcomes", [dict(OUTCOME, score=float("nan")), dict(OUTCOME, tokens=float("inf"))]) == [
        [("not_finite", "score=nan is not finite")], [("not_finite", "tokens=inf is not finite")]]
    # -inf is below time_minutes' bound of 0 too, but a value that is not finite is not_finite's
    # alone: it is not also out of range
    assert check_records("outcomes", [dict(OUTCOME, time_minutes=float("-inf"))]) == [
        [("not_finite", "time_minutes=-inf is not finite")]]


def test_every_problem_of_one_record_is_listed_apart():
    # two rules broken by one outcome: each comes back as its own (rule, reason), in rule order
    assert check_records("outcomes", [dict(OUTCOME, evaluator_kind="robot", success=1)]) == [[
        ("bad_type", "success=1 is not a valid BOOLEAN"),
        ("not_allowed", "evaluator_kind=robot is not one of evaluator, human, self_report, heuristic, unknown"),
    ]]


def test_a_blank_text_is_named_blank():
    assert check_records("outcomes", [dict(OUTCOME, evaluator_id="   ")]) == [[("blank", "evaluator_id is blank")]]


def test_a_record_may_hold_python_datetimes():
    # an importer may pass datetime objects: they are written as text, as staging reads them
    import datetime as dt

    at = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
    assert check_records("outcomes", [dict(OUTCOME, recorded_at=at)]) == [[]]


def test_a_json_field_of_the_wrong_shape_says_what_it_got():
    from tests.ingest.valid_records import VALID

    registration = dict(VALID["experiments"], arms={"name": "a"})  # an object where a list belongs
    assert check_records("experiments", [registration]) == [
        [("bad_shape", 'arms must be a JSON list of objects, got {"name":"a"}')]]


def test_a_json_field_nested_beyond_the_contracts_depth_is_too_deep():
    from contracts.tables import MAX_JSON_DEPTH
    from tests.ingest.valid_records import VALID

    def arms(levels):  # the arms list, an arm, its payload, then `levels` lists: 3 + levels deep
        nested: list = []
        for _ in range(levels - 1):
            nested = [nested]
        return [{"name": "c", "payload": {"v": nested}, "allocation": 0.5}, {"name": "b", "payload": {}, "allocation": 0.5}]

    too_deep = [("too_deep", f"arms nests arrays and objects more than {MAX_JSON_DEPTH} levels deep, "
                             "the most a JSON field may nest")]
    records = [dict(VALID["experiments"], arms=arms(n)) for n in (MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH - 2, 200)]
    assert check_records("experiments", records) == [[], too_deep, too_deep]


def test_an_event_time_that_is_not_text_is_a_problem_of_its_record_alone():
    # a JSON object or list where a time belongs: bad_type for that record, while the valid
    # record beside it is read as before (the times are read together, as one list of text)
    records = [OUTCOME, dict(OUTCOME, recorded_at={"day": 1}), dict(OUTCOME, recorded_at=[2026])]
    assert check_records("outcomes", records) == [
        [],
        [("bad_type", 'recorded_at={"day":1} is not a valid TIMESTAMPTZ')],
        [("bad_type", "recorded_at=[2026] is not a valid TIMESTAMPTZ")],
    ]


def test_each_bound_of_a_field_says_which_side_it_is_on():
    from tests.ingest.valid_records import VALID

    # from contracts/tables.py: power in [0.5, 0.999], mde in (0, 1e12], alpha in [1e-6, 0.5];
    # the values on the closed ends (power 0.5 and 0.999, alpha 0.5 and 1e-6) are inside
    e = VALID["experiments"]
    records = [dict(e, power=0.4), dict(e, mde=0.0), dict(e, alpha=0.6), dict(e, power=1.0),
               dict(e, power=0.5), dict(e, alpha=0.5), dict(e, power=0.999), dict(e, alpha=1e-6), dict(e, alpha=9e-7)]
    assert check_records("experiments", records) == [
        [("out_of_range", "power=0.4 must be >= 0.5")],
        [("out_of_range", "mde=0.0 must be > 0")],
        [("out_of_range", "alpha=0.6 must be <= 0.5")],
        [("out_of_range", "power=1.0 must be <= 0.999")],
        [],
        [],
        [],
        [],
        [("out_of_range", "alpha=9e-07 must be >= 1e-06")],
    ]
