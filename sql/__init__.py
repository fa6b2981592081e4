"""DuckDB SQL of the project, one statement per file, named ``verb_object.sql``.

Values are always bound as parameters (``?`` or ``$name``); identifiers come only from the
fixed lists in ``contracts.tables``. A rule that several statements apply is written once, as an
expression in ``sql/fragments/<name>.sql``, and each statement includes it as ``{{name}}``
(:func:`load_sql` puts it in, in parentheses), so DuckDB and Spark read the same text.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

INCLUDE = re.compile(r"\{\{(\w+)\}\}")
"""An included fragment: ``{{name}}`` stands for ``sql/fragments/<name>.sql``."""


@cache
def load_sql(name: str) -> str:
    """Text of ``sql/<name>.sql`` (or ``sql/<sub>/<name>.sql`` given as ``sub/name``).

    Raises ``FileNotFoundError`` when no such file ships with the package.
    """
    parts = name.split("/")
    node = resources.files(__package__)
    for part in parts[:-1]:
        node = node / part
    node = node / f"{parts[-1]}.sql"
    if not node.is_file():
        raise FileNotFoundError(f"no SQL file {name}.sql in package {__package__}")
    return INCLUDE.sub(lambda m: "(\n" + load_sql(f"fragments/{m.group(1)}").strip() + "\n)", node.read_text(encoding="utf-8"))
