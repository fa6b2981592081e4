"""Contract validation as vectorised SQL, generated from the table contracts.

A landed file reaches staging as one of three *source shapes*:

- ``json``: one JSON document per line (JSON Lines); the relation has ``record`` (the
  line) and every field is read from it with JSON types checked strictly (a number is not
  text, the text ``"1"`` is not a number);
- ``text``: named text columns (CSV, where every cell is text); a value must parse as the
  field's type;
- ``native``: typed columns (Parquet); a column of the field's type (or a safe widening)
  is taken as is, a text column must parse, any other type fails every non-null value.

:func:`candidate_select` turns a relation of one shape into the *candidate rows* of a
table: lineage, every field typed, and for a row that breaks a row-level rule its first
rule, every reason and its record as text. Row-level rules, in order, first match names
the rule and every reason is kept:

1. the file or line could not be read: ``unreadable_file``, ``invalid_encoding``,
   ``unpaired_surrogate`` (a JSON string escapes half of a UTF-16 surrogate pair, which no
   text can hold), ``malformed_record`` (not a JSON object, a CSV line with too few or too
   many cells);
   ``duplicate_field``: a key of the JSON object, or a column of the file, appears twice;
2. per field, in contract order: ``missing_field``, ``bad_type`` (a timestamp must be a
   date and time with a UTC offset of at most 18 hours: DuckDB's words ``epoch`` and
   ``infinity`` are refused, and so is ``+99:00``);
3. ``wrong_partition``: the event time falls on another UTC day than the folder;
4. per field, the domain: ``blank`` (nothing but white space or invisible characters),
   ``not_allowed``, ``not_finite`` (also a NaN or infinity inside a JSON field, an infinite
   timestamp), ``out_of_range``, ``too_deep`` (a JSON field nested deeper than its
   ``max_depth``: measured on its text, and no other rule then reads its nested values),
   ``bad_shape``, ``duplicate_field`` (a key repeated inside a JSON field),
   ``sensitive_value`` (an id that holds a secret or personal datum);
5. the table's row rules (``contracts.tables``).

Secrets and personal data (``zcl_assets.privacy``): a field marked ``free_text`` and every
JSON field are staged with each match replaced by its placeholder; a ``personal`` field is
pseudonymised when the policy has a key; any other text field holding a match is refused
(``sensitive_value``), since a placeholder would merge distinct ids. The raw record and
reasons of a refused row are redacted by the caller before they are stored.

Cross-row rules (keys, references between tables) run afterwards over the staged state
(``zcl_assets.ingest.staging``). Identifiers in the generated SQL come only from the
contracts; constants of the contracts are inlined as literals; landed values are never
pasted into SQL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contracts.schema import Field, TableContract, quote_identifier, sql_literal
from zcl_assets.privacy.policy import PrivacyPolicy

SHAPES: tuple[str, ...] = ("json", "text", "native")
SOURCE_ERROR_RULES: tuple[str, ...] = ("unreadable_file", "malformed_record", "duplicate_field")
"""Rules a reader may set on a ``text`` or ``native`` row (``__error_rule``, ``__error``)."""
JSON_ERROR_RULES: tuple[str, ...] = ("unreadable_file", "invalid_encoding", "unpaired_surrogate")
"""Rules a reader may set on a ``json`` row (``__error_rule``, ``__error``): the line is not read as JSON."""
NUMERIC_JSON_SHAPES: tuple[str, ...] = ("list", "object", "list_of_objects")
"""JSON shapes that may hold numbers and objects: checked for non-finite numbers and repeated keys."""
BLANK_PATTERN = r"^[\s\x{0B}\x{85}\p{Z}\p{Cf}]*$"
"""RE2: white space (ASCII, vertical tab, next line, Unicode separators) and invisible format
characters only, such as a tab, a no-break space or a zero-width space."""
CANDIDATE_LINEAGE: tuple[str, ...] = ("partition_day", "source_file", "source_row")
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'  # RE2: a JSON string, escapes included
_NOT_BRACKET = r"[^\[\]{}]"
_EMPTY_PAIR = r"\[\]|\{\}"

_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "HUGEINT")
_FLOAT_TYPES = ("FLOAT", "DOUBLE")
_TIMESTAMP_TYPES = ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS")


@dataclass(frozen=True)
class Source:
    """How the fields of one relation are held.

    Attributes:
        shape: ``json``, ``text`` or ``native`` (see the module docstring).
        columns: for ``text`` and ``native``, the relation's columns and their DuckDB
            types (``VARCHAR`` for text); a field without a column is absent.
        relation: SQL name of the relation (a registered frame or a table function call).
        errors: for ``text`` and ``native``, the relation also has ``__error_rule`` (one of
            ``SOURCE_ERROR_RULES``, NULL for a readable row) and ``__error`` (its reason).
    """

    shape: str
    relation: str
    columns: tuple[tuple[str, str], ...] = ()
    errors: bool = False

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"shape {self.shape!r} is not one of {SHAPES}")

    def column_type(self, name: str) -> str | None:
        for column, column_type in self.columns:
            if column == name:
                return column_type
        return None


@dataclass(frozen=True)
class _FieldSql:
    typed: str  # SQL of the typed value (NULL when absent or unparseable)
    present: str  # SQL: the source holds a non-null value
    text: str  # SQL: the source value as text, for reasons
    infallible: bool = False  # the typed value cannot fail (a column already of the field's type)


def _json_field(f: Field, i: int) -> _FieldSql:
    # One parse of the record gives every value as JSON (``v``) and as text (``s``), and one
    # small parse per value its JSON type (``jt``); casts then read the text.
    v, s, jt = f"v[{i}]", f"s[{i}]", f"jt[{i}]"
    present = f"({jt} IS NOT NULL AND {jt} <> 'NULL')"
    typed = {
        "VARCHAR": f"CASE WHEN {jt} = 'VARCHAR' THEN {s} END",
        "BIGINT": (
            f"CASE WHEN {jt} IN ('BIGINT', 'UBIGINT') THEN TRY_CAST({s} AS BIGINT) "
            f"WHEN {jt} = 'DOUBLE' THEN {_integral(f'TRY_CAST({s} AS DOUBLE)')} END"
        ),
        "DOUBLE": f"CASE WHEN {jt} IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST({s} AS DOUBLE) END",
        "BOOLEAN": f"CASE WHEN {jt} = 'BOOLEAN' THEN {s} = 'true' END",
        "TIMESTAMPTZ": f"CASE WHEN {jt} = 'VARCHAR' THEN {_timestamp(s)} END",
        "JSON": f"CASE WHEN {present} THEN {v} END",
    }[f.type]
    return _FieldSql(typed, present, f"CAST({v} AS VARCHAR)")


MAX_OFFSET_MINUTES = 18 * 60
"""Largest UTC offset of a timestamp: real offsets lie within -12:00 and +14:00, ISO 8601 tools
accept up to 18 hours; DuckDB reads up to 99, so `+99:00` would move an event by four days."""
_OFFSET = r"[0-9]{2}:?[0-9]{2}(?::?[0-9]{2}(?:\.[0-9]*)?)?\s*[+-]([0-9]{2}):?([0-9]{2})?(?::?[0-9]{2})?\s*$"
"""RE2: the hours (group 1) and minutes (group 2) of the UTC offset after a time (its seconds, if any, after)."""


def _timestamp(text_sql: str) -> str:
    """A timestamp parsed from text that starts with a digit, with a UTC offset of at most
    :data:`MAX_OFFSET_MINUTES`: DuckDB also reads words (``epoch``, ``infinity``,
    ``-infinity``), which no event time is, and offsets up to 99 hours."""
    hours, minutes = (f"coalesce(TRY_CAST(regexp_extract({text_sql}, '{_OFFSET}', {g}) AS INTEGER), 0)" for g in (1, 2))
    return (f"CASE WHEN unicode(ltrim({text_sql})) BETWEEN 48 AND 57 AND {hours} * 60 + {minutes} <= {MAX_OFFSET_MINUTES} "
            f"THEN TRY_CAST({text_sql} AS TIMESTAMPTZ) END")


def _integral(double_sql: str) -> str:
    return f"CASE WHEN {double_sql} = round({double_sql}) AND abs({double_sql}) < 9e15 THEN CAST({double_sql} AS BIGINT) END"


def _text_typed(f: Field, c: str) -> str:
    return {
        "VARCHAR": c,
        "BIGINT": _integral(f"TRY_CAST({c} AS DOUBLE)"),
        "DOUBLE": f"TRY_CAST({c} AS DOUBLE)",
        "BOOLEAN": f"TRY_CAST({c} AS BOOLEAN)",
        "TIMESTAMPTZ": _timestamp(c),
        "JSON": f"CASE WHEN json_valid({c}) THEN CAST({c} AS JSON) END",
    }[f.type]


def _text_field(f: Field) -> _FieldSql:
    """A field held in a text column (every CSV column, a VARCHAR column of Parquet): the
    value must parse as the field's type; an empty or blank cell is absent, except for text."""
    c = f"src.{quote_identifier(f.name)}"
    present = f"({c} IS NOT NULL)" if f.type == "VARCHAR" else f"({c} IS NOT NULL AND trim({c}) <> '')"
    typed = f"CASE WHEN {present} THEN {_text_typed(f, c)} END"
    return _FieldSql(typed, present, c)


def _native_field(f: Field, column_type: str | None) -> _FieldSql:
    if column_type is None or column_type == '"NULL"' or column_type == "NULL":
        return _FieldSql("NULL", "false", "NULL")
    if column_type == "VARCHAR":
        text = _text_field(f)
        return _FieldSql(text.typed, text.present, text.text, infallible=f.type == "VARCHAR")
    c = f"src.{quote_identifier(f.name)}"
    present = f"({c} IS NOT NULL)"
    base = column_type.split("(")[0]
    # exact: the typed value below cannot fail, so no bad_type check is needed (a shortcut only)
    exact = (f.type, base) in {("BIGINT", "BIGINT"), ("BOOLEAN", "BOOLEAN"), ("JSON", "JSON")} or (
        f.type == "TIMESTAMPTZ" and column_type in _TIMESTAMP_TYPES) or (
        f.type == "DOUBLE" and base in _INTEGER_TYPES + _FLOAT_TYPES)
    typed = None
    if f.type == "BIGINT":
        if base in _INTEGER_TYPES:
            typed = f"TRY_CAST({c} AS BIGINT)"
        elif base in _FLOAT_TYPES or base == "DECIMAL":
            typed = _integral(f"CAST({c} AS DOUBLE)")
    elif f.type == "DOUBLE":
        if base in _INTEGER_TYPES or base in _FLOAT_TYPES or base == "DECIMAL":
            typed = f"CAST({c} AS DOUBLE)"
    elif f.type == "BOOLEAN" and base == "BOOLEAN":
        typed = c
    elif f.type == "TIMESTAMPTZ" and column_type in _TIMESTAMP_TYPES:
        typed = f"CAST({c} AS TIMESTAMPTZ)"
    elif f.type == "JSON":
        if column_type == "JSON":
            typed = c
        elif column_type.endswith("[]") or base in ("STRUCT", "MAP"):
            typed = f"to_json({c})"
    if typed is None:  # a column of another type: every value it holds is refused
        return _FieldSql("NULL", present, f"'a ' || {sql_literal(column_type)} || ' column'")
    return _FieldSql(typed, present, f"CAST({c} AS VARCHAR)", infallible=exact)


def _field_sql(source: Source, f: Field, i: int) -> _FieldSql:
    if source.shape == "json":
        return _json_field(f, i)
    # text and native: a text source's columns are all VARCHAR, which the native reading
    # parses as text (``_text_field``)
    return _native_field(f, source.column_type(f.name))


def _typed(name: str) -> str:
    """The typed value of a field inside the generated query."""
    return f"src.{quote_identifier('__t_' + name)}"


def _domain_rules(f: Field, policy: PrivacyPolicy | None = None) -> list[tuple[str, str, str]]:
    """(rule, condition on the typed value ``x``, reason SQL) for the field's domain."""
    x = _typed(f.name)
    name = f.name
    shown = f"CAST({x} AS VARCHAR)"
    rules: list[tuple[str, str, str]] = []
    if f.non_blank:
        # a visible ASCII first character settles it without the regular expression
        blank = f"CASE WHEN unicode({x}) BETWEEN 33 AND 126 THEN false ELSE regexp_matches({x}, {sql_literal(BLANK_PATTERN)}) END"
        rules.append(("blank", blank, sql_literal(f"{name} is blank")))
    if f.allowed is not None:
        allowed = ", ".join(sql_literal(a) for a in f.allowed)
        listed = ", ".join(str(a) for a in f.allowed)
        rules.append(("not_allowed", f"{x} NOT IN ({allowed})", f"{sql_literal(name + '=')} || {shown} || {sql_literal(' is not one of ' + listed)}"))
    if f.type in ("DOUBLE", "TIMESTAMPTZ"):
        rules.append(("not_finite", f"NOT isfinite({x})", f"{sql_literal(name + '=')} || {shown} || ' is not finite'"))
    for op, bound, words in (("<", f.ge, ">="), ("<=", f.gt, ">"), (">", f.le, "<="), (">=", f.lt, "<")):
        if bound is not None:
            cond = f"isfinite({x}) AND {x} {op} {sql_literal(bound)}" if f.type == "DOUBLE" else f"{x} {op} {sql_literal(bound)}"
            rules.append(("out_of_range", cond, f"{sql_literal(name + '=')} || {shown} || {sql_literal(f' must be {words} {bound:g}')}"))
    if f.json_shape is not None:
        rules += _json_rules(f, x, shown)
    if _refuses_sensitive(f, policy):
        advice = f"; set ZCL_PSEUDONYM_KEY to pseudonymise {name}" if f.personal else ""
        rules.append(("sensitive_value", f"CASE WHEN src.__gate THEN {(policy or PrivacyPolicy()).redactor.detect_sql(x)} ELSE false END",
                      sql_literal(f"{name} holds a secret or personal datum (the record shows its kind), which is never staged{advice}")))
    return [(rule, f"({x} IS NOT NULL AND ({cond}))", reason) for rule, cond, reason in rules]


def _refuses_sensitive(f: Field, policy: PrivacyPolicy | None) -> bool:
    """An id (text, neither free text nor one of a fixed list) is refused when it holds a match,
    unless it is personal and pseudonymised."""
    pseudonymised = f.personal and policy is not None and policy.pseudonym_function is not None
    return f.type == "VARCHAR" and not f.free_text and f.allowed is None and not pseudonymised


def _json_rules(f: Field, x: str, shown: str) -> list[tuple[str, str, str]]:
    """The shape of a JSON field; for shapes that may hold numbers and objects, also no
    non-finite number (DuckDB reads ``NaN``, ``Infinity`` and ``1e999`` in JSON) and no key
    repeated inside an object (JSON readers silently keep one of them)."""
    shape_ok = {
        "list": f"json_type({x}) = 'ARRAY'",
        "object": f"json_type({x}) = 'OBJECT'",
        "list_of_text": (
            f"json_type({x}) = 'ARRAY' AND coalesce(list_bool_and(list_transform(json_extract({x}, '$[*]'), "
            "lambda e: json_type(e) = 'VARCHAR')), true)"
        ),
        "list_of_objects": (
            f"json_type({x}) = 'ARRAY' AND coalesce(list_bool_and(list_transform(json_extract({x}, '$[*]'), "
            "lambda e: json_type(e) = 'OBJECT')), true)"
        ),
    }[f.json_shape]
    words = f.json_shape.replace("_", " ")
    rules = [("bad_shape", f"NOT ({shape_ok})", f"{sql_literal(f.name + ' must be a JSON ' + words + ', got ')} || left({shown}, 200)")]
    if f.json_shape in NUMERIC_JSON_SHAPES:
        values = f"json_extract({x}, '$..*')"
        rules.append((
            "not_finite",
            f"coalesce(list_bool_or(list_transform({values}, lambda e: json_type(e) = 'DOUBLE' AND NOT isfinite(TRY_CAST(e AS DOUBLE)))), false)",
            sql_literal(f"{f.name} holds a number that is not finite (NaN or infinity)"),
        ))
        rules.append((
            "duplicate_field",
            f"coalesce(list_bool_or(list_transform(list_prepend({x}, {values}), lambda e: json_type(e) = 'OBJECT' "
            "AND len(json_keys(e)) <> len(list_distinct(json_keys(e))))), false)",
            sql_literal(f"{f.name} holds an object with a key that appears more than once"),
        ))
    if f.max_depth is None:
        return rules
    # a CASE evaluates its ELSE only on the rows its WHEN leaves: no rule walks a deeper value
    deep = _too_deep_flag(f.name)
    guarded = [(rule, f"CASE WHEN {deep} THEN false ELSE ({cond}) END", reason) for rule, cond, reason in rules]
    too_deep = sql_literal(f"{f.name} nests arrays and objects more than {f.max_depth} levels deep, "
                           "the most a JSON field may nest")
    return [("too_deep", deep, too_deep), *guarded]


def _too_deep_flag(name: str) -> str:
    """The column that says a JSON field nests deeper than its ``max_depth`` (:func:`_too_deep`)."""
    return f"src.{quote_identifier('__deep_' + name)}"


def _too_deep(f: Field) -> str:
    """SQL: the JSON value of ``f`` nests more than ``f.max_depth`` arrays and objects.

    Measured on the text, never by walking the value: with the strings taken out and only the
    brackets kept, each pass that removes every empty pair (``[]``, ``{}``) takes exactly one
    level off, so ``max_depth`` passes leave nothing unless the value is deeper. A value of
    at most twice ``max_depth`` characters, or with no more opening brackets than
    ``max_depth``, cannot be deeper and needs no pass (most values; a CASE tests in order).
    """
    text = f"CAST({_typed(f.name)} AS VARCHAR)"
    opening = f"(length({text}) - length(replace(replace({text}, '[', ''), '{{', '')))"
    brackets = f"regexp_replace(regexp_replace({text}, {sql_literal(_JSON_STRING)}, '', 'g'), {sql_literal(_NOT_BRACKET)}, '', 'g')"
    for _ in range(f.max_depth):
        brackets = f"regexp_replace({brackets}, {sql_literal(_EMPTY_PAIR)}, '', 'g')"
    return (f"CASE WHEN length({text}) <= {2 * f.max_depth} THEN false WHEN {opening} <= {f.max_depth} THEN false "
            f"ELSE {brackets} <> '' END")


def _read_conditions(source: Source) -> tuple[list[tuple[str, str, str]], str]:
    """The rules of step 1 (the record could not be read whole) and the SQL of "readable"."""
    if source.shape == "json":
        repeated = "array_to_string(list_sort(list_distinct(list_filter(src.__keys, lambda k, i: list_position(src.__keys, k) < i))), ', ')"
        return [
            *((rule, f"src.__error_rule = {sql_literal(rule)}", "src.__error") for rule in JSON_ERROR_RULES),
            ("malformed_record", "src.__error_rule IS NULL AND NOT src.__is_object", "'not a JSON object'"),
            # more keys than contract fields present: unknown keys, or a key twice (then the exact check)
            ("duplicate_field", "CASE WHEN src.__is_object AND len(src.__keys) > list_count(src.jt) "
                                "THEN len(src.__keys) <> len(list_distinct(src.__keys)) ELSE false END",
             f"'key ' || {repeated} || ' appears more than once'"),
        ], "src.__error_rule IS NULL AND src.__is_object"
    if not source.errors:
        return [], "true"
    return [(rule, f"src.__error_rule = {sql_literal(rule)}", "src.__error") for rule in SOURCE_ERROR_RULES], "src.__error_rule IS NULL"


def _row_conditions(contract: TableContract, source: Source, parts: list[_FieldSql], policy: PrivacyPolicy | None) -> list[tuple[str, str, str]]:
    """Every row-level rule in order, as (rule, condition, reason SQL) (module docstring)."""
    conditions, readable = _read_conditions(source)
    for f, sql in zip(contract.fields, parts):
        if f.required and f.default is None:
            conditions.append(("missing_field", f"({readable}) AND NOT {sql.present}", sql_literal(f"required field {f.name} is missing or null")))
        if sql.infallible:
            continue
        conditions.append((
            "bad_type",
            f"{sql.present} AND {_typed(f.name)} IS NULL",
            f"{sql_literal(f.name + '=')} || left(coalesce({sql.text}, ''), 200) || {sql_literal(' is not a valid ' + f.type)}",
        ))
    event = _typed(contract.event_time)
    conditions.append((
        "wrong_partition",
        f"{event} IS NOT NULL AND CAST({event} AS DATE) <> src.__partition_day",
        f"{sql_literal(contract.event_time + ' falls on ')} || CAST(CAST({event} AS DATE) AS VARCHAR) "
        "|| ' UTC, not on the partition day ' || CAST(src.__partition_day AS VARCHAR)",
    ))
    for f in contract.fields:
        conditions.extend(_domain_rules(f, policy))
    for rule in contract.row_rules:  # over the fields of a readable record only (not a truncated line)
        conditions.append((rule.name, f"({readable}) AND NOT coalesce(({_qualify(rule.sql, contract)}), true)",
                           sql_literal(rule.reason)))
    return conditions


def _staged_value(f: Field, policy: PrivacyPolicy) -> str:
    """The value a field is staged with: a personal id pseudonymised when the policy has a key."""
    x = _typed(f.name)
    return f"{policy.pseudonym_function}({x})" if f.personal and policy.pseudonym_function else x


def redacted_in_place(f: Field) -> bool:
    """Free text and JSON are staged with their matches replaced (by the caller, see
    :func:`candidate_select`'s ``__sensitive``)."""
    return f.free_text or f.type == "JSON"


def candidate_select(contract: TableContract, source: Source, policy: PrivacyPolicy | None = None) -> str:
    """SQL selecting the candidate rows of ``contract`` from one relation of ``source``.

    The relation must have ``__partition_day`` (DATE), ``__source_file`` and
    ``__source_row`` columns (double underscores keep them apart from a file's own
    columns). For the ``json`` shape it also has ``__record`` (VARCHAR: the line),
    ``__error_rule`` (VARCHAR: one of ``JSON_ERROR_RULES`` when the file or line could not be
    read, else NULL; for ``invalid_encoding`` ``__record`` holds the line with the bad bytes
    escaped) and ``__error`` (VARCHAR: why); a file that cannot be read at all is one such row. For
    the ``text`` and ``native`` shapes the fields are columns named as the fields (and,
    with ``source.errors``, ``__error_rule`` and ``__error``).

    ``policy`` (default: the default patterns, no pseudonyms) says how sensitive values
    are staged (module docstring); with a pseudonym key its SQL function must be
    registered on the connection (``zcl_assets.privacy.pseudonyms.register_function``).

    Returns:
        A SELECT yielding ``partition_day, source_file, source_row``, every contract field
        typed (``NULL`` where absent or unparseable), ``__rule`` (first rule broken, NULL
        for a valid row), ``__reason`` (every rule broken, ``rule: reason; ...``) and
        ``__record`` (the row as landed, as text, for a row that broke a rule; NULL
        otherwise). The double underscores keep them apart from fields such as ``reason``.
        ``__sensitive`` is true when a free-text or JSON field (:func:`redacted_in_place`)
        holds a match. The caller redacts those values, and every ``__reason`` and
        ``__record``, before storing them (they may quote landed values).
    """
    policy = policy or PrivacyPolicy()
    fields = contract.fields
    parts = [_field_sql(source, f, i) for i, f in enumerate(fields, start=1)]
    conditions = _row_conditions(contract, source, parts, policy)
    typed_columns = []
    for f, sql in zip(fields, parts):
        value = sql.typed
        if f.default is not None:
            value = f"CASE WHEN NOT {sql.present} THEN {sql_literal(f.default)} ELSE {value} END"
        typed_columns.append(f"CAST({value} AS {f.type}) AS {quote_identifier('__t_' + f.name)}")
    # each condition once, as a column; the rule, the reasons and the record read the columns
    flags = [f"coalesce({cond}, false) AS __c{i}" for i, (_, cond, _) in enumerate(conditions)]
    broken = " OR ".join(f"__c{i}" for i in range(len(conditions)))
    rule_case = " ".join(f"WHEN __c{i} THEN {sql_literal(rule)}" for i, (rule, _, _) in enumerate(conditions))
    reasons = ", ".join(
        f"CASE WHEN __c{i} THEN {sql_literal(rule + ': ')} || coalesce({reason}, '') END" for i, (rule, _, reason) in enumerate(conditions)
    )
    if source.shape == "json":
        record = "src.__record"
    else:
        # every column the file holds, so a quarantined row keeps all it landed with (a relation
        # without columns never has rows: Parquet refuses such a file, a CSV has no cells)
        packed = ", ".join(f"{quote_identifier(c)} := src.{quote_identifier(c)}" for c, _ in source.columns)
        record = f"CAST(to_json(struct_pack({packed})) AS VARCHAR)" if source.columns else "NULL"
    field_list = ", ".join(f"{_staged_value(f, policy)} AS {quote_identifier(f.name)}" for f in fields)
    texts = [f"CAST({_typed(f.name)} AS VARCHAR)" for f in fields if redacted_in_place(f)]
    in_place = " OR ".join(f"coalesce({policy.redactor.detect_sql(t)}, false)" for t in texts)
    sensitive = f"CASE WHEN src.__gate THEN {in_place} ELSE false END" if texts else "false"
    deep = "".join(f", {_too_deep(f)} AS {quote_identifier('__deep_' + f.name)}" for f in fields if f.max_depth is not None)
    return (
        f"SELECT src.__partition_day AS partition_day, src.__source_file AS source_file, src.__source_row AS source_row, {field_list},\n"
        f"  CASE WHEN {broken} THEN CASE {rule_case} END END AS __rule,\n"
        f"  CASE WHEN {broken} THEN concat_ws('; ', {reasons}) END AS __reason,\n"
        f"  CASE WHEN {broken} THEN {record} END AS __record,\n"
        f"  {sensitive} AS __sensitive\n"
        f"FROM (SELECT src.*, {', '.join(flags)} FROM (SELECT src.*, {_gate(contract, policy)} AS __gate{deep} FROM "
        f"(SELECT src.*, {', '.join(typed_columns)} FROM {_prepared_relation(contract, source)} src) src) src) src"
    )


def _gate(contract: TableContract, policy: PrivacyPolicy) -> str:
    """SQL: some text or JSON field of the row holds a match, tested once on all of them
    joined by a separator no pattern matches within a field; only then is each field tested
    (one regular expression a row instead of one a field)."""
    scanned = [f for f in contract.fields if redacted_in_place(f) or _refuses_sensitive(f, policy)]
    if not scanned:
        return "false"
    joined = ", ".join(f"CAST({_typed(f.name)} AS VARCHAR)" for f in scanned)
    return f"coalesce({policy.redactor.detect_sql(f'concat_ws(chr(31), {joined})')}, false)"


def _prepared_relation(contract: TableContract, source: Source) -> str:
    if source.shape != "json":
        return source.relation
    paths = "[" + ", ".join(sql_literal(f'$."{f.name}"') for f in contract.fields) + "]"
    return (
        "(SELECT __partition_day, __source_file, __source_row, __record, __error_rule, __error, __is_object, "
        f"v, CASE WHEN __is_object THEN json_extract_string(__record, {paths}) END AS s, "
        "CASE WHEN __is_object THEN json_keys(__record) END AS __keys, "
        "list_transform(v, lambda x: json_type(x)) AS jt FROM ("
        f"SELECT *, CASE WHEN __is_object THEN json_extract(__record, {paths}) END AS v FROM ("
        f"SELECT *, CASE WHEN json_valid(__record) THEN json_type(__record) = 'OBJECT' ELSE false END AS __is_object "
        f"FROM {source.relation})))"
    )


def _qualify(expression: str, contract: TableContract) -> str:
    """Row-rule SQL with field names bound to the typed values of the generated query."""
    names = sorted(contract.field_names, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.'\"])(" + "|".join(re.escape(n) for n in names) + r")(?![\w'\"])")
    return pattern.sub(lambda m: _typed(m.group(1)), expression)


def check_records(table: str, records: list[dict]) -> list[list[tuple[str, str]]]:
    """Every row-level problem of each record, as the pipeline would find it (no warehouse).

    Runs the same generated SQL as staging on an in-memory DuckDB, each record in the
    partition of its own event-time day, plus the registration structure checks for
    ``experiments``. Importers use it to refuse a registration before landing it.

    Args:
        table: a landing table.
        records: JSON-ready dicts, one per row.

    Returns:
        One list per record of ``(rule, reason)``; empty for a record that passes.

    Raises:
        KeyError: unknown table.

    Examples:
        >>> check_records("admission_events", [{"schema_version": 1, "admission_id": "a", "org_id": "o",
        ...     "task_type": "t", "state": "landed", "at": "2026-01-01T00:00:00+00:00"}])[0][0][0]
        'not_allowed'
    """
    import datetime as dt
    import json

    import duckdb
    import polars as pl

    from contracts.registration import registration_problems
    from contracts.tables import CONTRACTS
    from zcl_assets.ingest.readers import flag_unpaired_surrogates

    contract = CONTRACTS[table]
    lines = [json.dumps(r, default=str) for r in records]
    # each record in the partition of its event time's UTC day, read as staging reads it (a
    # JSON string cast to TIMESTAMPTZ by DuckDB); an unreadable time gets a day of its own,
    # and its bad_type problem
    held = [json.loads(line).get(contract.event_time) for line in lines]  # as the landed line holds it
    times = [value if isinstance(value, str) else None for value in held]
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        (read,) = con.execute("SELECT list_transform(CAST($t AS VARCHAR[]), x -> CAST(TRY_CAST(x AS TIMESTAMPTZ) AS DATE))",
                              {"t": times}).fetchone()
    days = [d or dt.date(1970, 1, 1) for d in read]
    frame = flag_unpaired_surrogates(pl.DataFrame(
        {"__partition_day": days, "__source_file": ["check"] * len(lines), "__source_row": list(range(1, len(lines) + 1)),
         "__record": lines, "__error_rule": [None] * len(lines), "__error": [None] * len(lines)},
        schema={"__partition_day": pl.Date, "__source_file": pl.String, "__source_row": pl.Int64, "__record": pl.String,
                "__error_rule": pl.String, "__error": pl.String},
    ))
    problems: list[list[tuple[str, str]]] = [[] for _ in records]
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.register("records", frame)
        rows = con.execute(
            f"SELECT source_row, __reason, CAST(arms AS VARCHAR), control_arm, CAST(guardrails AS VARCHAR), "
            f"CAST(metric_caps AS VARCHAR) FROM ({candidate_select(contract, Source('json', 'records'))})"
            if table == "experiments" else
            f"SELECT source_row, __reason FROM ({candidate_select(contract, Source('json', 'records'))})"
        ).fetchall()
    for row in rows:
        found = problems[row[0] - 1]
        if row[1]:
            found += [tuple(part.split(": ", 1)) for part in row[1].split("; ")]
        elif table == "experiments":
            found += registration_problems(*row[2:])
    return problems
