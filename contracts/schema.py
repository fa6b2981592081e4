"""The building blocks of a table contract: fields, their domains and row rules.

A landing table is declared once (``contracts.tables``) as a :class:`TableContract`: its
fields with type, requiredness and domain, the event-time field that names the partition
day, the key, and the rules that involve several fields of one row. Everything else derives
from that declaration:

- the DuckDB DDL of the staged table (:func:`staged_ddl`);
- the typed read of a landed file and the row-level rules as vectorised SQL
  (``contracts.validate``);
- the pandera schema that audits the staged rows (``contracts.audit``);
- the field list of the landing documentation and the UI metadata.

Types are DuckDB type names: ``VARCHAR``, ``DOUBLE``, ``BIGINT``, ``BOOLEAN``,
``TIMESTAMPTZ`` and ``JSON``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TYPES: tuple[str, ...] = ("VARCHAR", "DOUBLE", "BIGINT", "BOOLEAN", "TIMESTAMPTZ", "JSON")
JSON_SHAPES: tuple[str, ...] = ("list", "object", "list_of_text", "list_of_objects")
LINEAGE: tuple[tuple[str, str], ...] = (
    ("partition_day", "DATE"),
    ("source_file", "VARCHAR"),
    ("source_row", "BIGINT"),
)
"""Lineage columns of every staged row: the landed day, the file name and its 1-based row."""


@dataclass(frozen=True)
class Field:
    """One field of a landing table.

    Attributes:
        name: the field (column, JSON key) name; the only identifiers ever placed in SQL.
        type: DuckDB type of the staged column (one of ``TYPES``).
        required: a row without a value (absent, JSON null, empty CSV cell) is quarantined
            as ``missing_field``.
        allowed: the value must be one of these (text or integer fields).
        ge, gt, le, lt: bounds of a numeric field (inclusive ``ge``/``le``, strict
            ``gt``/``lt``). Every ``DOUBLE`` must also be finite.
        non_blank: a text value must contain a non-space character.
        json_shape: the shape a ``JSON`` field must have: ``list``, ``object``,
            ``list_of_text`` or ``list_of_objects``.
        max_depth: a ``JSON`` value nests at most this many arrays and objects, one inside
            the other (``[]`` is 1 deep, ``[{"a": []}]`` 3); a deeper one is refused
            (``too_deep``) before any other rule walks its nested values.
        default: value used when a record leaves an optional field out (as the staged value).
        doc: one line for the landing documentation.
        free_text: words rather than an identifier (a hypothesis, a reason): a secret or
            personal datum inside is replaced by its placeholder and the row is staged. A
            text field that is not free text (an id, a name) and holds one is refused
            (``sensitive_value``): a placeholder would merge distinct ids. JSON fields are
            redacted in place, like free text.
        personal: identifies a person (a user id): pseudonymised at staging when a
            pseudonym key is set (``zcl_assets.privacy.pseudonyms``).
    """

    name: str
    type: str
    required: bool = True
    allowed: tuple[str, ...] | tuple[int, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    non_blank: bool = False
    json_shape: str | None = None
    max_depth: int | None = None
    default: object = None
    doc: str = ""
    free_text: bool = False
    personal: bool = False

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"field {self.name}: type {self.type!r} is not one of {TYPES}")
        if self.json_shape is not None and (self.type != "JSON" or self.json_shape not in JSON_SHAPES):
            raise ValueError(f"field {self.name}: json_shape needs type JSON and one of {JSON_SHAPES}")
        if self.max_depth is not None and (self.type != "JSON" or self.max_depth < 1):
            raise ValueError(f"field {self.name}: max_depth needs type JSON and a depth of at least 1")
        if self.allowed is not None and self.type not in ("VARCHAR", "BIGINT"):
            raise ValueError(f"field {self.name}: allowed values are for VARCHAR and BIGINT fields")
        if (self.free_text or self.personal) and self.type != "VARCHAR":
            raise ValueError(f"field {self.name}: free_text and personal are for VARCHAR fields")


@dataclass(frozen=True)
class RowRule:
    """A rule over several fields of one row.

    Attributes:
        name: the quarantine rule name.
        sql: a SQL boolean expression over the typed fields that is true (or null) for a
            valid row; written once, evaluated by DuckDB in staging and by polars
            (``pl.sql_expr``) in the pandera audit.
        reason: the quarantine reason shown for a row that breaks it.
    """

    name: str
    sql: str
    reason: str


@dataclass(frozen=True)
class TableContract:
    """A landing table: fields, partition day, key and row rules.

    Attributes:
        name: table name (``<landing>/<name>/<day>/``, ``staged_<name>``).
        event_time: the ``TIMESTAMPTZ`` field whose UTC day names the partition.
        fields: the fields, in landing-documentation order.
        key: fields that identify a row; a later row with the same key is a
            ``duplicate_key``.
        row_rules: rules over several fields of one row.
        doc: what one row is.
    """

    name: str
    event_time: str
    fields: tuple[Field, ...]
    key: tuple[str, ...]
    row_rules: tuple[RowRule, ...] = field(default=())
    doc: str = ""

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"table {self.name}: duplicate field names")
        for needed in (self.event_time, *self.key):
            if needed not in names:
                raise ValueError(f"table {self.name}: {needed} is not a field")
        if self.field(self.event_time).type != "TIMESTAMPTZ":
            raise ValueError(f"table {self.name}: event time {self.event_time} must be TIMESTAMPTZ")

    @property
    def field_names(self) -> list[str]:
        """Names of the fields, in order."""
        return [f.name for f in self.fields]

    @property
    def staged_table(self) -> str:
        """Name of the staged table in the warehouse."""
        return f"staged_{self.name}"

    @property
    def held_table(self) -> str:
        """Table of contract-valid rows held back by a cross-row rule (re-checked every run)."""
        return f"internal.held_{self.name}"

    def field(self, name: str) -> Field:
        """The field called ``name``; raises ``KeyError`` if there is none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"table {self.name} has no field {name}")


def quote_identifier(name: str) -> str:
    """A SQL identifier in double quotes (names come only from the contracts' fixed lists).

    A double quote inside the name is doubled, as SQL escapes it.

    Examples:
        >>> quote_identifier("score"), quote_identifier('a"b')
        ('"score"', '"a""b"')
    """
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: object) -> str:
    """A SQL literal for a constant of a contract (never for landed data).

    Examples:
        >>> sql_literal("it's"), sql_literal(0.5), sql_literal(True), sql_literal(False), sql_literal(3)
        ("'it''s'", '0.5', 'true', 'false', '3')
        >>> sql_literal([1])
        Traceback (most recent call last):
        ...
        TypeError: no SQL literal for list
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def staged_ddl(contract: TableContract, held: bool = False) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of the staged table: lineage, then every field.

    Required fields are ``NOT NULL``. With ``held``, the same shape for the held-back rows.

    Examples:
        >>> c = TableContract("t", "at", (Field("id", "VARCHAR"), Field("at", "TIMESTAMPTZ")), ("id",))
        >>> print(staged_ddl(c))
        CREATE TABLE IF NOT EXISTS staged_t (partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL, "id" VARCHAR NOT NULL, "at" TIMESTAMPTZ NOT NULL)
    """
    columns = [f"{name} {sql_type} NOT NULL" for name, sql_type in LINEAGE]
    columns += [f"{quote_identifier(f.name)} {f.type}{' NOT NULL' if f.required else ''}" for f in contract.fields]
    return f"CREATE TABLE IF NOT EXISTS {contract.held_table if held else contract.staged_table} ({', '.join(columns)})"
