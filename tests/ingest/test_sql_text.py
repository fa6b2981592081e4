"""The SQL text built from contract constants (contracts.schema): read back by DuckDB as written.

Hypothesis draws the names and values; DuckDB is the reference for what the text means.
"""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from contracts.schema import quote_identifier, sql_literal

# DuckDB's text cannot hold NUL; every other character may appear in a name or a constant
TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=20)


@given(TEXT.filter(lambda t: t != ""))
@example('say "hi"')
def test_a_quoted_identifier_names_the_column_it_was_given(name):
    with duckdb.connect() as con:
        assert con.execute(f"SELECT 1 AS {quote_identifier(name)}").description[0][0] == name


@given(st.one_of(TEXT, st.booleans(), st.integers(-(2**62), 2**62),
                 st.floats(allow_nan=False, allow_infinity=False)))
@example("it's")
@example(False)
def test_a_literal_reads_back_as_its_value(value):
    with duckdb.connect() as con:
        (got,) = con.execute(f"SELECT {sql_literal(value)}").fetchone()
    if isinstance(value, float):  # DuckDB reads 0.5 as a DECIMAL and 1e-300 as a DOUBLE: the same number
        assert float(got) == value
    else:
        assert got == value and type(got) is type(value)


@pytest.mark.parametrize("value, name", [(None, "NoneType"), ([1], "list"), ({"a": 1}, "dict"), (b"x", "bytes")])
def test_a_value_without_a_literal_is_refused_by_its_type(value, name):
    with pytest.raises(TypeError, match=f"^no SQL literal for {name}$"):
        sql_literal(value)
