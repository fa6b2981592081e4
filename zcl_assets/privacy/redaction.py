"""Redaction of secrets and personal data before anything is written (seed note 002).

A :class:`Redactor` holds an ordered list of :class:`Pattern`: API keys of the common
providers, bearer tokens, private key blocks, credential assignments, e-mail addresses, and
whatever a user adds (``ZCL_REDACTION_PATTERNS``, a YAML file). A matched value becomes a
typed placeholder, ``<redacted:email>``; a pattern may keep its leading group (``Bearer
<redacted:bearer_token>``) and its trailing one (``postgresql://zcl:<redacted:uri_password>@db``).

The same patterns run in two engines: Python's ``re`` (ASCII mode) for logs, reasons,
metadata and quarantined records, and DuckDB's RE2 (:meth:`Redactor.redact_sql`) for the
values staged in bulk. Patterns are written in the subset both engines read the same way:
no lookaround or backreferences, explicit character classes instead of case-insensitive
flags or Unicode properties (non-ASCII letters as ranges of the characters themselves,
``WORD_BEYOND_ASCII``), and repeats that cannot backtrack far: each pattern starts at a literal or a bounded
run (``{1,64}`` before ``@``) and ends in a greedy run, so Python's backtracking stays
linear in the text (RE2 is linear by construction).

:func:`redact_record` also hides the values of fields outside the contract: a quarantined
record keeps every field name it landed with, but only the contract's fields keep their
(redacted) values.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import duckdb
import yaml

PATTERNS_ENV = "ZCL_REDACTION_PATTERNS"
"""Environment variable naming a YAML file of extra patterns (``patterns: [{kind, regex}]``)."""

OUTSIDE_CONTRACT = "<redacted:not_in_contract>"
"""What a quarantined record holds in place of the value of a field outside the contract."""

_KIND = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def placeholder(kind: str) -> str:
    """The typed placeholder of a redacted value: ``<redacted:kind>``."""
    return f"<redacted:{kind}>"


def _any_case(word: str) -> str:
    """``api_key`` -> ``[Aa][Pp][Ii]_[Kk][Ee][Yy]``: case-insensitive in both engines."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


@dataclass(frozen=True)
class Pattern:
    """One kind of secret or personal data.

    Attributes:
        kind: the placeholder's type (``[a-z][a-z0-9_]*``): ``<redacted:kind>``.
        regex: the pattern, in the subset Python ``re`` (ASCII) and RE2 share.
        keep_prefix: the pattern's first group is kept before the placeholder.
        keep_suffix: the pattern's last group is kept after the placeholder.
    """

    kind: str
    regex: str
    keep_prefix: bool = False
    keep_suffix: bool = False

    def __post_init__(self) -> None:
        if not _KIND.match(self.kind):
            raise ValueError(f"redaction kind {self.kind!r} must match {_KIND.pattern}")
        groups = re.compile(self.regex, re.ASCII).groups  # raises re.error for a pattern Python cannot read
        if groups < self.keep_prefix + self.keep_suffix:
            raise ValueError(f"redaction pattern {self.kind!r} keeps {self.keep_prefix + self.keep_suffix} groups but has {groups}")

    @property
    def replacement(self) -> str:
        """The replacement text (``\\1`` keeps the prefix group, the last group the suffix; the same in
        both engines)."""
        suffix = f"\\{re.compile(self.regex, re.ASCII).groups}" if self.keep_suffix else ""
        return ("\\1" if self.keep_prefix else "") + placeholder(self.kind) + suffix


_BEYOND_ASCII = (
    (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x1FFF),  # Latin-1 letters (not its punctuation, no-break space, x or /) to Greek
    (0x2070, 0x2DFF),  # after General Punctuation (spaces, dashes, quotes, zero-width characters)
    (0x2E80, 0x2FFF),  # after Supplemental Punctuation: CJK radicals
    (0x3040, 0xD7FF),  # after CJK Symbols and Punctuation (the ideographic space, its commas and brackets): kana to Hangul
    (0xF900, 0xFE0F), (0xFE20, 0xFE2F), (0xFE70, 0xFEFE),  # after private use; no vertical or small punctuation, no BOM
    (0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0xFF66, 0xFFEF),  # fullwidth digits and letters, halfwidth forms
    (0x10000, 0x10FFFF),  # the supplementary planes
)
WORD_BEYOND_ASCII = "".join(f"{chr(first)}-{chr(last)}" for first, last in _BEYOND_ASCII)
"""The characters beyond ASCII that an internationalized e-mail address holds (RFC 6531 and
6532: UTF-8 in the local part and the domain), as ranges for a character class: letters,
marks and digits of every script, but not white space, punctuation, surrogates or private
use, so that an address ends where the text around it does. Written as the characters
themselves, which Python's ``re`` and RE2 read alike (Python has no ``\\p{L}``)."""

_CREDENTIAL_NAMES = ("password", "passwd", "secret", "api_key", "apikey", "api-key", "access_token", "auth_token", "client_secret")
_TOKEN = "[A-Za-z0-9._~+/=-]"

DEFAULT_PATTERNS: tuple[Pattern, ...] = (
    Pattern("private_key", r"-----BEGIN[A-Z ]*PRIVATE KEY-----[A-Za-z0-9+/= \t\r\n\\]*(?:-----END[A-Z ]*PRIVATE KEY-----)?"),
    # the password of a URI's user information (RFC 3986 section 3.2.1): scheme://user:password@host
    # (a password holding "@" runs to the last "@" before the path; "/", "?" and "#" must be
    # percent-encoded there, RFC 3986, and end it)
    Pattern("uri_password", r"([A-Za-z][A-Za-z0-9+.-]{0,30}://[^ \t\r\n/?#@:\"'<>]{0,256}:)[^ \t\r\n/?#\"'<>]{1,256}(@)",
            keep_prefix=True, keep_suffix=True),
    # the credentials of HTTP Basic authentication (RFC 7617) in an Authorization header; a bare
    # "basic" is a word ("a basic knowledge"), so the header's name must be there
    Pattern("basic_auth", rf"({_any_case('authorization')}[\"']?[ \t]*[:=][ \t]*[\"']?{_any_case('basic')}[ \t]+)[A-Za-z0-9+/=._~-]{{4,}}",
            keep_prefix=True),
    # a token after "Bearer" holds a digit: "the bearer of news" is not a credential
    Pattern("bearer_token", rf"({_any_case('bearer')}[ \t]+){_TOKEN}*[0-9]{_TOKEN}*", keep_prefix=True),
    Pattern("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    Pattern("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    Pattern("openai_key", r"\bsk-[A-Za-z0-9_-]{20,}"),  # sk-..., sk-proj-..., sk-svcacct-...
    Pattern("stripe_key", r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{10,}"),
    Pattern("aws_access_key_id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    Pattern("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    Pattern("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    Pattern("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    Pattern("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    Pattern(
        "credential",
        "((?:" + "|".join(_any_case(n) for n in _CREDENTIAL_NAMES) + ")[\"']?[ \t]*[:=][ \t]*[\"']?)[^ \t\r\n\"',;&]{4,}",
        keep_prefix=True,
    ),
    # a value named "token" holds a letter and a digit: "cost per token: 0.002" is no credential
    Pattern(
        "credential",
        rf"({_any_case('token')}[\"']?[ \t]*[:=][ \t]*[\"']?){_TOKEN}*(?:[0-9]{_TOKEN}*[A-Za-z]|[A-Za-z]{_TOKEN}*[0-9]){_TOKEN}*",
        keep_prefix=True,
    ),
    # RFC 5322 addresses and the internationalized ones of RFC 6531 (jürgen@exämple.de, 用户@例子.广告)
    Pattern("email", rf"[A-Za-z0-9._%+{WORD_BEYOND_ASCII}-]{{1,64}}@[A-Za-z0-9{WORD_BEYOND_ASCII}-]+"
                     rf"(?:\.[A-Za-z0-9{WORD_BEYOND_ASCII}-]+)*\.[A-Za-z{WORD_BEYOND_ASCII}]{{2,}}"),
)
"""The patterns every :class:`Redactor` starts with, most specific first (a private key
block before the keys it may contain, provider prefixes before the generic ones)."""


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Redactor:
    """Ordered patterns, applied one after the other (see the module docstring).

    Examples:
        >>> r = Redactor()
        >>> r.redact("mail alice@example.com, key sk-proj-abcdefghijklmnopqrstuvwx")
        'mail <redacted:email>, key <redacted:openai_key>'
        >>> r.redact("Authorization: Bearer abc.def-123456")
        'Authorization: Bearer <redacted:bearer_token>'
        >>> r.first_kind("nothing to see"), r.first_kind("AKIAIOSFODNN7EXAMPLE")
        (None, 'aws_access_key_id')
    """

    patterns: tuple[Pattern, ...] = DEFAULT_PATTERNS

    @cached_property
    def _compiled(self) -> list[tuple[re.Pattern[str], str, str]]:
        """The compiled patterns, kept on the instance: looking them up by ``patterns`` hashed every
        pattern of the tuple on every call, a third of the cost of redacting a quarantined record."""
        return _compile(self.patterns)

    @cached_property
    def _any_pattern(self) -> re.Pattern[str] | None:
        return _any_pattern(self.patterns)

    def redact(self, text: str | None) -> str | None:
        """``text`` with every match replaced by its placeholder (None stays None). A text in which no
        pattern matches is returned after one search for all of them at once (:func:`_any_pattern`),
        not one replacement per pattern: most texts hold nothing to redact."""
        if not text:
            return text
        if self._any_pattern is not None and not self._any_pattern.search(text):
            return text
        for compiled, replacement, _ in self._compiled:
            text = compiled.sub(replacement, text)
        return text

    def first_kind(self, text: str | None) -> str | None:
        """The kind of the first pattern that matches ``text``, or None."""
        if not text:
            return None
        for compiled, _, kind in self._compiled:
            if compiled.search(text):
                return kind
        return None

    def detect_sql(self, expression: str) -> str:
        """DuckDB boolean SQL: ``expression`` (VARCHAR) holds a match of some pattern."""
        combined = "|".join(f"(?:{p.regex})" for p in self.patterns)
        return f"regexp_matches({expression}, {_sql_text(combined)})"

    def kind_sql(self, expression: str) -> str:
        """DuckDB SQL of the first matching pattern's kind (NULL when none matches)."""
        cases = " ".join(f"WHEN regexp_matches({expression}, {_sql_text(p.regex)}) THEN {_sql_text(p.kind)}" for p in self.patterns)
        return f"CASE {cases} END"

    def redact_sql(self, expression: str) -> str:
        """DuckDB SQL of ``expression`` with every match replaced, as :meth:`redact` does."""
        for p in self.patterns:
            expression = f"regexp_replace({expression}, {_sql_text(p.regex)}, {_sql_text(p.replacement)}, 'g')"
        return expression


@cache
def _compile(patterns: tuple[Pattern, ...]) -> list[tuple[re.Pattern[str], str, str]]:
    return [(re.compile(p.regex, re.ASCII), p.replacement, p.kind) for p in patterns]


_GROUP_REFERENCE = re.compile(r"\\[1-9]|\(\?\(|\(\?P=")
"""A reference to a group (``\\1``, ``(?(1)...)``, ``(?P=name)``): its number would change in a joined regex."""


@cache
def _any_pattern(patterns: tuple[Pattern, ...]) -> re.Pattern[str] | None:
    """One regex that matches where any of ``patterns`` matches (their alternation: a search finds a
    match exactly when one of them matches somewhere), or None when they cannot be joined (a
    pattern with a flag that applies to the whole expression, or one that refers to a group: the
    documented patterns have neither, but a pattern built in code may)."""
    if any(_GROUP_REFERENCE.search(p.regex) for p in patterns):
        return None
    try:
        return re.compile("|".join(f"(?:{p.regex})" for p in patterns), re.ASCII)
    except re.error:
        return None


def load_patterns(path: Path) -> tuple[Pattern, ...]:
    """Extra patterns from a YAML file: ``patterns: [{kind: ..., regex: ..., keep_prefix: false, keep_suffix: false}]``.

    Raises:
        ValueError: the file is not such a list, or a kind or regex is invalid in Python or
            in RE2 (the message names the entry).
    """
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    entries = data.get("patterns") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected 'patterns:' with a list of {{kind, regex}}")
    patterns = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str) or not isinstance(entry.get("regex"), str):
            raise ValueError(f"{path}: pattern {i + 1} needs a text 'kind' and 'regex'")
        try:
            patterns.append(Pattern(entry["kind"], entry["regex"], bool(entry.get("keep_prefix", False)),
                                    bool(entry.get("keep_suffix", False))))
            _check_re2(entry["regex"])
        except (ValueError, re.error, duckdb.Error) as exc:
            raise ValueError(f"{path}: pattern {i + 1} ({entry['kind']}): {exc}") from exc
    return tuple(patterns)


def _check_re2(regex: str) -> None:
    """Raise ``duckdb.Error`` for a pattern DuckDB's RE2 cannot read (lookaround, backreferences)."""
    with duckdb.connect() as con:
        con.execute(f"SELECT regexp_matches('', {_sql_text(regex)})").fetchone()


@cache
def _redactor_for(path: str, mtime_ns: int) -> Redactor:
    extra = load_patterns(Path(path)) if path else ()
    return Redactor(DEFAULT_PATTERNS + extra)


def current_redactor() -> Redactor:
    """The redactor of this process: the defaults plus the file ``ZCL_REDACTION_PATTERNS`` names.

    Read when called (never at import); a changed file is read again.

    Raises:
        ValueError: the file is missing or invalid.
    """
    path = os.environ.get(PATTERNS_ENV, "")
    if not path:
        return _redactor_for("", 0)
    try:
        mtime = Path(path).stat().st_mtime_ns
    except OSError as exc:
        raise ValueError(f"{PATTERNS_ENV}={path}: {exc.strerror}") from exc
    return _redactor_for(path, mtime)


def redact(text: str | None) -> str | None:
    """``text`` redacted by :func:`current_redactor`: for logs, reasons and metadata."""
    return current_redactor().redact(text)


_PAIR = re.compile(r'"((?:[^"\\\n]|\\.){0,256})"([ \t]{0,8}:[ \t]{0,8})("(?:[^"\\\n]|\\.){0,65536}"?|[^,}\]\s]{1,4096})')


def _redact_value(value: object, redactor: Redactor) -> object:
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, list):
        return [_redact_value(v, redactor) for v in value]
    if isinstance(value, tuple):  # an object kept as its (key, value) pairs
        return tuple((redactor.redact(k), _redact_value(v, redactor)) for k, v in value)
    return value


SURROGATE = re.compile("[\ud800-\udfff]")
"""Half of a UTF-16 surrogate pair: no Unicode character, and no UTF-8 text can hold it."""


def _json_text(value: object) -> str:
    """JSON of a scalar, its non-ASCII characters as they are but an unpaired surrogate (a
    string that escaped one, which Python's ``json`` decodes) escaped again: no UTF-8 text
    can hold it."""
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def _dump(value: object) -> str:
    if isinstance(value, tuple):
        return "{" + ", ".join(f"{_json_text(k)}: {_dump(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dump(v) for v in value) + "]"
    return _json_text(value)


def redact_json(text: str | None, redactor: Redactor) -> str | None:
    """A JSON document with every string in it (keys too) redacted; always valid JSON.

    Examples:
        >>> redact_json('[{"name": "a", "payload": {"note": "ask bob@example.org"}}]', Redactor())
        '[{"name": "a", "payload": {"note": "ask <redacted:email>"}}]'
    """
    if text is None:
        return None
    try:
        return _dump(_redact_value(json.loads(text, object_pairs_hook=tuple), redactor))
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the walk can recurse
        return _json_text(redactor.redact(text))


def redact_record(record: str | None, fields: Iterable[str], redactor: Redactor) -> str | None:
    """A quarantined record as it may be stored: patterns redacted, outside fields hidden.

    A record that is a JSON object keeps every key, in order and with repeats; the values
    of keys outside ``fields`` become ``OUTSIDE_CONTRACT`` and the others are redacted by
    ``redactor``. Any other text (a truncated line, a record nested deeper than Python
    recurses) is redacted by pattern, and every ``"key": value`` pair it still holds is
    treated as in an object.

    Examples:
        >>> redact_record('{"session_id": "s1", "api_key": "hunter2"}', ["session_id"], Redactor())
        '{"session_id": "s1", "api_key": "<redacted:not_in_contract>"}'
        >>> redact_record('{"session_id": "a@b.org", "token": "x', ["session_id"], Redactor())
        '{"session_id": "<redacted:email>", "token": "<redacted:not_in_contract>"'
    """
    if record is None:
        return None
    known = set(fields)
    try:
        parsed = json.loads(record, object_pairs_hook=tuple)
        if isinstance(parsed, tuple):
            pairs = tuple((k, _redact_value(v, redactor) if k in known else OUTSIDE_CONTRACT) for k, v in parsed)
            return _dump(tuple((redactor.redact(k), v) for k, v in pairs))
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the walk can recurse
        pass

    def pair(match: re.Match[str]) -> str:
        try:
            key = json.loads(f'"{match.group(1)}"')
        except ValueError:
            key = None
        value = match.group(3) if key in known else json.dumps(OUTSIDE_CONTRACT)
        return f'"{match.group(1)}"{match.group(2)}{value}'

    return _PAIR.sub(pair, redactor.redact(record))
