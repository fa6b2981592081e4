"""The planted bugs of benchmarks/mutation.py still apply: each finds its text once in its file."""

from pathlib import Path

import pytest

from benchmarks.mutation import EQUIVALENT
from benchmarks.planted_bugs import SQL_MUTANTS, WIRING_BUGS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("change", SQL_MUTANTS + WIRING_BUGS, ids=lambda c: c.name)
def test_a_planted_bug_finds_its_text_once(change):
    assert (ROOT / change.file).read_text().count(change.find) == 1
    assert all((ROOT / t.split("::")[0]).exists() for t in change.tests)


@pytest.mark.parametrize("name", sorted(EQUIVALENT))
def test_an_equivalent_mutant_is_explained_and_its_original_line_still_exists(name):
    # The mutation report excludes a listed mutant from the net score only while its change is
    # the recorded one; a source edit that removes the line retires the entry, and the docs list
    # every entry with its reason.
    module, _ = name.split(".x", 1)
    source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
    change, why = EQUIVALENT[name]
    removed = [line[1:] for line in change.splitlines() if line.startswith("-")]
    assert removed and all(line in source for line in removed)  # a line may occur twice (two alike steps)
    assert why and name.split(".")[-1] in (ROOT / "docs" / "testing.md").read_text()
