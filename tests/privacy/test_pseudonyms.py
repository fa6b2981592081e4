"""Pseudonyms: HMAC-SHA-256 truncated to 128 bits, the same in Python and in the SQL function."""

import duckdb
import pytest

from zcl_assets.privacy.pseudonyms import KEY_ENV, MIN_KEY_BYTES, key_from_environment, pseudonym, register_function


@pytest.mark.parametrize("key, value, digest", [
    # RFC 4231, test cases 1 and 2 (HMAC-SHA-256): the pseudonym is "u_" + the first 32 hex digits
    (b"\x0b" * 20, "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"Jefe", "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
])
def test_a_pseudonym_is_the_keyed_hash_of_rfc_4231(key, value, digest):
    assert pseudonym(key, value) == "u_" + digest[:32]


def test_the_sql_function_gives_the_python_pseudonym_and_keeps_nulls():
    key = b"k" * MIN_KEY_BYTES
    with duckdb.connect() as con:
        register_function(con, key)
        rows = con.execute("SELECT zcl_pseudonym(x) FROM (VALUES ('alice@example.com'), (NULL), ('ü')) t(x)").fetchall()
    assert rows == [(pseudonym(key, "alice@example.com"),), (None,), (pseudonym(key, "ü"),)]


def test_another_key_gives_another_pseudonym():
    assert pseudonym(b"a" * 32, "alice") != pseudonym(b"b" * 32, "alice")


def test_a_short_key_is_refused_without_showing_it(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "tooshort")
    with pytest.raises(ValueError, match=f"holds 8 bytes; a pseudonym key needs at least {MIN_KEY_BYTES}") as caught:
        key_from_environment()
    assert "tooshort" not in str(caught.value)
    monkeypatch.setenv(KEY_ENV, "")
    assert key_from_environment() is None
