"""The SQL that ``contracts.validate.candidate_select`` generates for typed (Parquet) columns.

A column already of its field's type (or a widening that cannot fail) is read as it is, and
no ``bad_type`` check is generated for it: at ten million rows each check is one predicate
more per row and field. A column that must be parsed or narrowed gets the check.
"""

from __future__ import annotations

import pytest

from contracts.schema import Field, TableContract
from contracts.validate import Source, candidate_select

FIELD_TYPES = ("VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN", "JSON")


def _bad_type_checks(column_types: dict[str, str]) -> set[str]:
    """The field types whose value gets a bad_type check, one field per type plus the event time."""
    fields = tuple(Field(f"f_{t.lower()}", t) for t in FIELD_TYPES) + (Field("at", "TIMESTAMPTZ"),)
    contract = TableContract("t", "at", fields, ("f_varchar",))
    columns = tuple((f.name, column_types[f.type]) for f in fields)
    sql = candidate_select(contract, Source("native", "rel", columns))
    return {t for t in (*FIELD_TYPES, "TIMESTAMPTZ") if f"is not a valid {t}'" in sql}


@pytest.mark.parametrize("timestamp", ["TIMESTAMP WITH TIME ZONE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS",
                                       "TIMESTAMP_NS"])
def test_columns_of_their_fields_types_get_no_bad_type_check(timestamp):
    same = {t: t for t in FIELD_TYPES} | {"TIMESTAMPTZ": timestamp}
    assert _bad_type_checks(same) == set()


@pytest.mark.parametrize("integer", ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER",
                                     "UBIGINT", "HUGEINT", "FLOAT", "DOUBLE"])
def test_a_double_field_reads_any_number_column_without_a_check(integer):
    columns = {t: t for t in FIELD_TYPES} | {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE", "DOUBLE": integer}
    assert _bad_type_checks(columns) == set()


def test_columns_that_must_be_parsed_or_narrowed_get_the_check():
    # text everywhere: every typed field parses it (a text field needs nothing); a BIGINT field
    # from a DOUBLE column must be whole; JSON from a list column is converted
    text = {t: "VARCHAR" for t in (*FIELD_TYPES, "TIMESTAMPTZ")}
    assert _bad_type_checks(text) == {"BIGINT", "DOUBLE", "BOOLEAN", "JSON", "TIMESTAMPTZ"}
    narrowed = {t: t for t in FIELD_TYPES} | {"TIMESTAMPTZ": "TIMESTAMP", "BIGINT": "DOUBLE", "JSON": "VARCHAR[]"}
    assert _bad_type_checks(narrowed) == {"BIGINT", "JSON"}


@pytest.mark.parametrize("shape, fits, misfits", [
    ("list", ['[]', '[1, "a"]'], ['{}', '"a"', '3']),
    ("object", ['{}', '{"a": [1]}'], ['[]', '"a"']),
    ("list_of_text", ['[]', '["a", "b"]'], ['[1]', '["a", 2]', '{}']),
    ("list_of_objects", ['[]', '[{"a": 1}]'], ['[1]', '[{"a": 1}, "b"]', '{}']),
])
def test_every_json_shape_a_field_may_declare_is_checked(shape, fits, misfits):
    # the bad_shape condition of a JSON field of each shape, evaluated by DuckDB on values that
    # fit it and values that do not (the shapes are listed in contracts.schema.JSON_SHAPES)
    import duckdb

    from contracts.schema import JSON_SHAPES
    from contracts.validate import _domain_rules

    assert shape in JSON_SHAPES
    rules = {rule: condition for rule, condition, _ in _domain_rules(Field("f", "JSON", json_shape=shape))}
    con = duckdb.connect()
    broken = [con.execute(f'SELECT {rules["bad_shape"]} FROM (SELECT CAST(? AS JSON) AS "__t_f") src', [v]).fetchone()[0]
              for v in fits + misfits]
    assert broken == [False] * len(fits) + [True] * len(misfits)


@pytest.mark.parametrize("value, depth", [
    ('[]', 1), ('[[["a"]]]', 3), ('{"a": [{"b": 1}]}', 3), ('[[], [], [], [], []]', 2),
    ('["[[[[", "{{{{"]', 1), ('["\\"[[[[", {"k]]": "}}"}]', 2),  # brackets inside strings, an escaped quote
    ('[[[[]]]]', 4), ('{"a": [{"b": []}]}', 4), ("[" * 10_000 + "]" * 10_000, 10_000),
])
def test_a_json_value_nested_beyond_its_bound_is_found_on_its_text(value, depth):
    # the depth beside each value is counted by hand: arrays and objects, one inside the other
    import duckdb

    from contracts.validate import _too_deep

    con = duckdb.connect()
    found = con.execute(f'SELECT {_too_deep(Field("f", "JSON", max_depth=3))} FROM (SELECT CAST(? AS JSON) AS "__t_f") src',
                        [value]).fetchone()[0]
    assert found == (depth > 3)


def test_a_source_of_an_unknown_shape_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^shape 'xml' is not one of \('json', 'text', 'native'\)$"):
        Source("xml", "rel")
