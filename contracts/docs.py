"""The field tables of ``docs/landing.md``, generated from the contracts so they cannot drift."""

from __future__ import annotations

from contracts.schema import Field, TableContract
from contracts.tables import CONTRACTS

BEGIN = "<!-- generated from contracts/tables.py: begin -->"
END = "<!-- generated from contracts/tables.py: end -->"


def _rule(f: Field) -> str:
    parts = ["required" if f.required else "optional"]
    if f.default is not None:
        parts.append(f"default `{f.default}`")
    if f.allowed is not None:
        parts.append("one of " + ", ".join(f"`{a}`" for a in f.allowed))
    for words, bound in ((">=", f.ge), (">", f.gt), ("<=", f.le), ("<", f.lt)):
        if bound is not None:
            parts.append(f"{words} {bound:g}")
    if f.type == "DOUBLE":
        parts.append("finite")
    if f.non_blank:
        parts.append("not blank")
    if f.json_shape is not None:
        parts.append(f"a JSON {f.json_shape.replace('_', ' ')}")
    if f.max_depth is not None:
        parts.append(f"nested at most {f.max_depth} levels deep")
    if f.doc:
        parts.append(f.doc)
    if f.free_text:
        parts.append("free text: a secret or personal datum in it is staged as its placeholder")
    if f.personal:
        parts.append("a person's id: pseudonymised when `ZCL_PSEUDONYM_KEY` is set")
    return "; ".join(parts)


def table_markdown(contract: TableContract) -> str:
    """One landing table's section: what a row is, partition day, key, fields and row rules."""
    lines = [
        f"### {contract.name}",
        "",
        f"One row is {contract.doc}. Partition day: the UTC day of `{contract.event_time}`; "
        f"key: ({', '.join(contract.key)}).",
        "",
        "| field | type | rule |",
        "|---|---|---|",
    ]
    lines += [f"| {f.name} | {f.type} | {_rule(f)} |" for f in contract.fields]
    if contract.row_rules:
        lines += ["", "Row rules, each refusing a row when: " + "; ".join(f"`{r.name}`: {r.reason}" for r in contract.row_rules) + "."]
    return "\n".join(lines)


def landing_markdown() -> str:
    """Every landing table's section, between the generated-block markers."""
    return "\n\n".join([BEGIN, *(table_markdown(c) for c in CONTRACTS.values()), END])
