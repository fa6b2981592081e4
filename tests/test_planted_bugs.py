"""The planted bugs of benchmarks/mutation.py still apply: each finds its text once in its file."""

from pathlib import Path

import pytest

from benchmarks.planted_bugs import SQL_MUTANTS, WIRING_BUGS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("change", SQL_MUTANTS + WIRING_BUGS, ids=lambda c: c.name)
def test_a_planted_bug_finds_its_text_once(change):
    assert (ROOT / change.file).read_text().count(change.find) == 1
    assert all((ROOT / t.split("::")[0]).exists() for t in change.tests)
