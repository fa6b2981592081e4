"""A wrong table declaration is refused when it is made, with the reason (contracts.schema)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.schema import JSON_SHAPES, TYPES, Field, RowRule, TableContract


@given(st.text(max_size=12).filter(lambda t: t not in TYPES))
def test_a_field_of_an_unknown_type_is_refused(kind):
    with pytest.raises(ValueError, match=r"field f: type .* is not one of"):
        Field("f", kind)


@pytest.mark.parametrize("kind", TYPES)
def test_every_known_type_is_accepted(kind):
    assert Field("f", kind).type == kind


@pytest.mark.parametrize("kind, shape", [("VARCHAR", "list"), ("JSON", "tree"), ("JSON", "")])
def test_a_json_shape_needs_a_json_field_and_a_known_shape(kind, shape):
    with pytest.raises(ValueError, match="field f: json_shape needs type JSON"):
        Field("f", kind, json_shape=shape)


@pytest.mark.parametrize("shape", JSON_SHAPES)
def test_every_known_json_shape_is_accepted(shape):
    assert Field("f", "JSON", json_shape=shape).json_shape == shape


@pytest.mark.parametrize("kind, depth", [("VARCHAR", 3), ("JSON", 0)])
def test_a_nesting_depth_needs_a_json_field_and_at_least_one_level(kind, depth):
    with pytest.raises(ValueError, match="field f: max_depth needs type JSON and a depth of at least 1"):
        Field("f", kind, max_depth=depth)


def test_every_json_field_of_the_landing_tables_is_bounded_by_the_contracts_depth():
    from contracts.tables import CONTRACTS, MAX_JSON_DEPTH

    depths = {(t, f.name): f.max_depth for t, c in CONTRACTS.items() for f in c.fields if f.type == "JSON"}
    assert depths == {("experiments", "arms"): MAX_JSON_DEPTH, ("experiments", "guardrails"): MAX_JSON_DEPTH,
                      ("experiments", "metric_caps"): MAX_JSON_DEPTH, ("experiment_events", "allocation"): MAX_JSON_DEPTH,
                      ("sessions", "context_doc_ids"): MAX_JSON_DEPTH}


@pytest.mark.parametrize("kind", ["DOUBLE", "BOOLEAN", "TIMESTAMPTZ", "JSON"])
def test_allowed_values_are_refused_outside_text_and_integer_fields(kind):
    with pytest.raises(ValueError, match="field f: allowed values are for VARCHAR and BIGINT fields"):
        Field("f", kind, allowed=("a",))


@pytest.mark.parametrize("kind", ["VARCHAR", "BIGINT"])
def test_allowed_values_are_accepted_for_text_and_integer_fields(kind):
    assert Field("f", kind, allowed=("a",)).allowed == ("a",)


AT = Field("at", "TIMESTAMPTZ")
ID = Field("id", "VARCHAR")


def test_a_valid_contract_is_accepted():
    table = TableContract("t", "at", (ID, AT), ("id",), (RowRule("r", "true", "never"),))
    assert (table.field_names, table.staged_table, table.field("at")) == (["id", "at"], "staged_t", AT)
    with pytest.raises(KeyError):
        table.field("missing")


def test_duplicate_field_names_are_refused():
    with pytest.raises(ValueError, match="table t: duplicate field names"):
        TableContract("t", "at", (ID, AT, Field("id", "BIGINT")), ("id",))


@pytest.mark.parametrize("event_time, key, missing", [("when", ("id",), "when"), ("at", ("id", "other"), "other")])
def test_an_event_time_or_key_that_is_not_a_field_is_refused(event_time, key, missing):
    with pytest.raises(ValueError, match=f"table t: {missing} is not a field"):
        TableContract("t", event_time, (ID, AT), key)


def test_an_event_time_that_is_not_a_timestamp_is_refused():
    with pytest.raises(ValueError, match="table t: event time id must be TIMESTAMPTZ"):
        TableContract("t", "id", (ID, AT), ("id",))


def test_asking_a_contract_for_a_field_it_does_not_have_names_both():
    from contracts.tables import CONTRACTS

    outcomes = CONTRACTS["outcomes"]
    assert outcomes.field("tokens").name == "tokens"
    with pytest.raises(KeyError, match="^'table outcomes has no field cost'$"):
        outcomes.field("cost")
