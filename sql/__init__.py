"""DuckDB SQL of the project, one statement per file, named ``verb_object.sql``.

Values are always bound as parameters (``?`` or ``$name``); identifiers come only from the
fixed lists in ``contracts.tables``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


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
    return node.read_text(encoding="utf-8")
