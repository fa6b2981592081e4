"""Redaction: each kind of secret becomes its typed placeholder, in Python and in DuckDB alike.

The example secrets below are made up in the documented formats of each provider (none is a
real credential): OpenAI ``sk-`` and ``sk-proj-`` keys, Anthropic ``sk-ant-``, AWS access key
ids (``AKIA`` + 16), GitHub tokens (``ghp_`` + 36, ``github_pat_``), Slack tokens
(``xoxb-``), Google API keys (``AIza`` + 35), Stripe keys, a JWT, a bearer token, a PEM
private key block and e-mail addresses.
"""

import json
import re

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zcl_assets.privacy.redaction import (
    DEFAULT_PATTERNS,
    OUTSIDE_CONTRACT,
    PATTERNS_ENV,
    Pattern,
    Redactor,
    current_redactor,
    load_patterns,
    redact_json,
    redact_record,
)

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MaF0\n-----END RSA PRIVATE KEY-----"
SECRETS = {
    "openai_key": ["sk-" + "A1b2C3d4E5f6G7h8I9j0" * 2 + "KlMn", "sk-proj-" + "aB3_dE6-gH9jK2mN5pQ8sT1vW4yZ7" * 3],
    "anthropic_key": ["sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0" * 2],
    "aws_access_key_id": ["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"],
    "github_token": ["ghp_" + "R2d2C3poR2d2C3poR2d2C3poR2d2C3poR2d2", "github_pat_11ABCDEFG0" + "abcdefghij" * 6],
    "slack_token": ["xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"],
    "slack_webhook": ["https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"],
    "google_api_key": ["AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"],
    "stripe_key": ["sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "rk_test_" + "51H8xyzABCDEFGHIJ"],
    "jwt": ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"],
    "private_key": [PEM],
    "email": ["alice@example.com", "bob.smith+tag@mail.example.co.uk",
              # RFC 6531: internationalized local parts and domains
              "jürgen@exämple.de", "josé.garcía@correo.es", "用户@例子.广告", "δοκιμή@παράδειγμα.δοκιμή", "x@mail.भारत"],
}


@pytest.mark.parametrize("kind, secret", [(k, s) for k, values in SECRETS.items() for s in values])
def test_each_kind_of_secret_becomes_its_typed_placeholder(kind, secret):
    text = f"before {secret} after"
    assert Redactor().redact(text) == f"before <redacted:{kind}> after"


@pytest.mark.parametrize("text, redacted", [
    ("Authorization: Bearer abc.def-12345", "Authorization: Bearer <redacted:bearer_token>"),
    ("curl -H 'authorization: bearer 9f8e7d6c5b4a'", "curl -H 'authorization: bearer <redacted:bearer_token>'"),
    ('{"password": "hunter2!"}', '{"password": "<redacted:credential>"}'),
    ("api_key=Zm9vYmFy;", "api_key=<redacted:credential>;"),
])
def test_a_prefix_that_names_the_secret_is_kept(text, redacted):
    assert Redactor().redact(text) == redacted


def _redacted_alike(redactor, text):
    """``text`` redacted by ``redactor`` in Python, asserted equal to DuckDB's redaction of it."""
    with duckdb.connect() as con:
        in_duckdb = con.execute(f"SELECT {redactor.redact_sql('$t')}", {"t": text}).fetchone()[0]
    assert redactor.redact(text) == in_duckdb
    return in_duckdb


@pytest.mark.parametrize("text, redacted", [
    # a password in a URI's user information (RFC 3986 3.2.1): scheme, user and host stay
    ("dsn postgresql://zcl:S3cretPw0rd@10.0.0.5:5432/zcl ok", "dsn postgresql://zcl:<redacted:uri_password>@10.0.0.5:5432/zcl ok"),
    ("mongodb+srv://app:p%40ss:w0rd@cluster0.example.net/db", "mongodb+srv://app:<redacted:uri_password>@cluster0.example.net/db"),
    # HTTP Basic credentials (RFC 7617) in an Authorization header, with or without digits
    ("Authorization: Basic dXNlcjpQbGFudGVkUGFzcw==", "Authorization: Basic <redacted:basic_auth>"),
    ('{"authorization": "basic dXNlcjpwYXNz"}', '{"authorization": "basic <redacted:basic_auth>"}'),
    # a token assigned by name
    ("token: ghx_R2d2C3poR2d2C3po", "token: <redacted:credential>"),
    ("TOKEN='abcd1234'", "TOKEN='<redacted:credential>'"),
])
def test_a_uri_password_basic_credentials_and_a_named_token_are_redacted_alike_in_python_and_duckdb(text, redacted):
    assert _redacted_alike(Redactor(), text) == redacted


@pytest.mark.parametrize("text", [
    "the bearer of bad news", "task-customer-support-tickets", "sess-2026-10-01-000123", "user 42", "u_3fa9c1",
    "gpt-4o-mini", "pkg@1.2.3", "a@b", "control", "2026-10-01T09:14:03+00:00", "a basic knowledge of order",
    "http://localhost:8080/a@b", "https://example.com:443/x", "tokens: 500", "cost per token: roughly 0.002", "basic dXNlcjpwYXNz",
])
def test_ordinary_ids_and_words_are_left_alone(text):
    assert Redactor().redact(text) == text


@pytest.mark.parametrize("text, redacted", [
    ("write to jürgen@exämple.de.", "write to <redacted:email>."),
    ("«josé.garcía@correo.es»", "«<redacted:email>»"),  # the guillemets are no part of the address
    ("\u201cbob@example.com\u201d", "\u201c<redacted:email>\u201d"),  # nor are curly quotes
    ("to\u00a0ana@ex.org", "to\u00a0<redacted:email>"),  # nor a no-break space
    ("联系：用户@例子.广告。谢谢", "联系：<redacted:email>。谢谢"),  # nor CJK punctuation
])
def test_an_internationalized_address_is_redacted_whole_and_alike_in_python_and_duckdb(text, redacted):
    assert _redacted_alike(Redactor(), text) == redacted


# text built from the characters the patterns look at, so that matches are frequent
_PIECES = st.sampled_from(["sk-", "sk-proj-", "AKIA", "ghp_", "xoxb-", "Bearer ", "bearer\t", "@", ".", "com", "example",
                           "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "\n", "eyJ", "password=", " ", '"',
                           "AIza", "sk_live_", "_", "-", "://", ":", "Authorization: Basic ", "token=", "ü", "例", "भा", "\u00a0", "\u201c", "\u3000", "\U0001f600"])
_TEXT = st.lists(st.one_of(_PIECES, st.text(alphabet="aZ09_-.+/=", min_size=1, max_size=30)), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_python_and_duckdb_redact_alike(text):
    # the same patterns run in Python (logs, reasons, records) and in DuckDB's RE2 (staged values)
    redactor = Redactor()
    with duckdb.connect() as con:
        detected, redacted = con.execute(f"SELECT {redactor.detect_sql('$t')}, {redactor.redact_sql('$t')}", {"t": text}).fetchone()
    assert redacted == redactor.redact(text)
    assert detected == (redactor.first_kind(text) is not None)


def test_a_pattern_that_cannot_be_joined_with_the_others_still_redacts():
    # "(?i)" cannot be joined with the other patterns into one search (Python 3.11 refuses a global
    # flag inside a group), so each pattern is applied on its own, as for every text that holds a match
    redactor = Redactor(DEFAULT_PATTERNS + (Pattern("animal", "(?i)zebra"),))
    assert redactor.redact("a ZEBRA and alice@example.com") == "a <redacted:animal> and <redacted:email>"
    assert redactor.redact("a horse") == "a horse"
    # nor can a pattern that refers to its own group by number (it would refer to another's once joined)
    doubled = Redactor(DEFAULT_PATTERNS + (Pattern("doubled", r"\b([a-z])\1\b"),))
    assert doubled.redact("zz a aa") == "<redacted:doubled> a <redacted:doubled>"


def test_a_record_keeps_its_field_names_but_only_the_contracts_values():
    record = json.dumps({"session_id": "s1", "api_key": "opaque-value", "note": {"deep": "x"}, "user_id": "alice@example.com"})
    kept = json.loads(redact_record(record, ["session_id", "user_id"], Redactor()))
    assert kept == {"session_id": "s1", "api_key": OUTSIDE_CONTRACT, "note": OUTSIDE_CONTRACT, "user_id": "<redacted:email>"}


def test_a_record_that_is_not_json_still_loses_the_values_of_unknown_fields():
    truncated = '{"session_id": "s1", "token": "opaque-value", "user_id": "carol@example.org", "succ'
    assert redact_record(truncated, ["session_id", "user_id"], Redactor()) == (
        '{"session_id": "s1", "token": "<redacted:not_in_contract>", "user_id": "<redacted:email>", "succ')


def test_a_record_nested_deeper_than_python_recurses_is_redacted_by_pattern():
    # 500 levels parse but are too deep to walk (the walk recurses twice a level): redacted as
    # text, as a record too deep to parse or a truncated line is, instead of stopping the night
    depth = 500
    nested = "[" * depth + '"bob@example.org"' + "]" * depth
    record = '{"arms": ' + nested + ', "token": "opaque-value"}'
    assert redact_record(record, ["arms"], Redactor()) == (
        '{"arms": ' + "[" * depth + '"<redacted:email>"' + "]" * depth + ', "token": "<redacted:not_in_contract>"}')
    # a JSON field's value becomes the JSON string of its redacted text
    assert redact_json(nested, Redactor()) == '"' + "[" * depth + '\\"<redacted:email>\\"' + "]" * depth + '"'


def test_a_record_with_a_repeated_key_keeps_both_and_redacts_both():
    record = '{"user_id": "a@example.com", "user_id": "b@example.com"}'
    assert redact_record(record, ["user_id"], Redactor()) == '{"user_id": "<redacted:email>", "user_id": "<redacted:email>"}'



def test_a_record_that_escapes_an_unpaired_surrogate_stays_text_that_utf8_can_hold():
    # json.loads turns the six characters \ud800 into a lone surrogate; written back as it is, the
    # record could not be encoded (UnicodeEncodeError in every later step), so the escape is kept
    record = '{"session_id": "s\\ud800", "note": "x", "model": "\\ud83d\\ude00 caf\u00e9 a@example.com"}'
    redacted = redact_record(record, ["session_id", "model"], Redactor())
    assert redacted == '{"session_id": "s\\ud800", "note": "<redacted:not_in_contract>", "model": "\N{GRINNING FACE} caf\u00e9 <redacted:email>"}'
    assert redacted.encode("utf-8")
    assert redact_json('["\\udfff"]', Redactor()) == '["\\udfff"]'


def test_json_values_are_redacted_inside_and_stay_json():
    arms = json.dumps([{"name": "a", "payload": {"prompt": f"use {SECRETS['openai_key'][1]}"}, "allocation": 0.5}])
    redacted = redact_json(arms, Redactor())
    assert json.loads(redacted)[0]["payload"]["prompt"] == "use <redacted:openai_key>"


def test_a_user_adds_patterns_with_a_yaml_file(tmp_path, monkeypatch):
    path = tmp_path / "patterns.yaml"
    path.write_text("patterns:\n  - kind: employee_id\n    regex: 'EMP-[0-9]{6}'\n")
    monkeypatch.setenv(PATTERNS_ENV, str(path))
    redactor = current_redactor()
    assert redactor.patterns[: len(DEFAULT_PATTERNS)] == DEFAULT_PATTERNS
    assert redactor.redact("owner EMP-123456, mail dave@example.com") == "owner <redacted:employee_id>, mail <redacted:email>"



def test_a_users_pattern_may_keep_its_first_and_last_groups(tmp_path):
    path = tmp_path / "patterns.yaml"
    path.write_text("patterns:\n  - kind: pin\n    regex: '(pin )[0-9]{4}( ok)'\n    keep_prefix: true\n    keep_suffix: true\n")
    assert _redacted_alike(Redactor(load_patterns(path)), "the pin 1234 ok.") == "the pin <redacted:pin> ok."


@pytest.mark.parametrize("regex, prefix", [(r"(pin )([0-9]{2})[0-9]{2}( ok)", True), (r"(?:pin )([0-9]{4})( ok)", False)])
def test_the_kept_suffix_is_the_last_group_whatever_groups_come_before(regex, prefix):
    redactor = Redactor((Pattern("pin", regex, keep_prefix=prefix, keep_suffix=True),))
    assert _redacted_alike(redactor, "the pin 1234 ok.") == ("the pin <redacted:pin> ok." if prefix else "the <redacted:pin> ok.")


def test_a_pattern_that_keeps_more_groups_than_it_has_is_refused():
    with pytest.raises(ValueError, match="keeps 2 groups but has 1"):
        Pattern("pin", r"(pin )[0-9]{4}", keep_prefix=True, keep_suffix=True)


@pytest.mark.parametrize("text, message", [
    ("patterns: nope", "expected 'patterns:'"),
    ("patterns:\n  - kind: Bad Kind\n    regex: 'x'", "pattern 1 (Bad Kind): redaction kind"),
    ("patterns:\n  - kind: ok\n    regex: '(unclosed'", "pattern 1 (ok): missing )"),
    ("patterns:\n  - regex: 'x'", "pattern 1 needs a text 'kind' and 'regex'"),
    ("patterns:\n  - kind: ok\n    regex: 'x(?=y)'", "pattern 1 (ok): "),  # Python reads a lookahead, RE2 does not
])
def test_a_bad_pattern_file_is_a_clear_error(tmp_path, text, message):
    path = tmp_path / "patterns.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)):
        load_patterns(path)


def test_a_missing_pattern_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(PATTERNS_ENV, str(tmp_path / "absent.yaml"))
    with pytest.raises(ValueError, match="ZCL_REDACTION_PATTERNS=.*absent.yaml: No such file"):
        current_redactor()


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=4))
def test_one_test_of_the_joined_fields_finds_every_field_that_holds_a_match(fields):
    # staging tests a row once, on its text fields joined by chr(31), and each field only
    # when that finds something (contracts.validate._gate): the join must never hide a match
    redactor = Redactor()
    values = ", ".join(f"$f{i}" for i in range(len(fields)))
    params = {f"f{i}": v for i, v in enumerate(fields)}
    with duckdb.connect() as con:
        joined = con.execute(f"SELECT {redactor.detect_sql(f'concat_ws(chr(31), {values})')}", params).fetchone()[0]
    assert joined or not any(redactor.first_kind(v) for v in fields)
