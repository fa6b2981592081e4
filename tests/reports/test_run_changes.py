"""The block `zcl run` prints first: every rejected row counted once, by stage and rule, within 120 columns."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from zcl_assets.reports.landing import WIDTH, LandedRows, render_run_changes

rule_names = st.sampled_from(["bad_type", "missing_field", "not_finite", "duplicate_key", "outcome_before_assignment",
                              "unknown_session", "delivered_arm_with_experiment", "arm_not_declared", "malformed_record",
                              "unit_multiple_arms", "delivered_arm_mismatch", "unit_contaminated"])
counts = st.dictionaries(rule_names, st.integers(0, 10**7), max_size=12)
tables = st.dictionaries(st.sampled_from(["sessions", "assignments", "outcomes", "bogus_table"]),
                         st.builds(LandedRows, st.integers(0, 10**8), counts, counts, counts), max_size=4)


def _listed(text: str) -> dict[tuple[str, str, str], int]:
    """(table, kind, rule) -> count as the block prints them, read back from its lines."""
    found, table, kind = {}, None, None
    for line in text.splitlines()[1:-1]:
        head = re.match(r"  (\w+): [\d,]+(?: \([+-][\d,]+\))? staged; [\d,]+(?: \([+-][\d,]+\))? quarantined:?(.*)", line)
        if head:
            table, kind, rest = head.group(1), "quarantined", head.group(2)
        elif line.startswith("    excluded from the analysis, still staged:"):
            kind, rest = "excluded", line.split(":", 2)[2] if line.count(":") >= 2 else ""
        elif line.startswith("    files not read (their rows are in no count above):"):
            kind, rest = "unread_files", line.split(":", 2)[2] if line.count(":") >= 2 else ""
        else:
            rest = line
        for rule, n in re.findall(r"(\w+) ([\d,]+)(?: \([+-][\d,]+\))?", rest):
            found[(table, kind, rule)] = int(n.replace(",", ""))
    return found


@settings(max_examples=200)
@given(before=tables, after=tables)
def test_every_rule_with_rows_is_listed_once_whole_within_the_width(before, after):
    text = render_run_changes(before, after)
    if not text:
        assert not any(any((r.staged, any(r.quarantined.values()), any(r.excluded.values()), any(r.unread_files.values())))
                       for r in (*before.values(), *after.values()))
        return
    assert max(len(line) for line in text.splitlines()[:-1]) <= WIDTH
    want = {}
    for t in {*before, *after}:
        for kind in ("quarantined", "excluded", "unread_files"):
            now, was = getattr(after.get(t, LandedRows()), kind), getattr(before.get(t, LandedRows()), kind)
            want |= {(t, kind, rule): now.get(rule, 0) for rule in {*now, *was} if now.get(rule, 0) or was.get(rule, 0)}
    assert _listed(text) == want


def test_exclusions_are_apart_from_the_quarantine_and_do_not_reduce_the_staged_rows():
    before = {}
    after = {"assignments": LandedRows(294_478, {}, {"delivered_arm_mismatch": 3_893, "unit_multiple_arms": 1_895})}
    assert render_run_changes(before, after).splitlines()[1:4] == [
        "  assignments: 294,478 (+294,478) staged; 0 quarantined",
        "    excluded from the analysis, still staged: 5,788 (+5,788): delivered_arm_mismatch 3,893 (+3,893),",
        "      unit_multiple_arms 1,895 (+1,895)",
    ]
