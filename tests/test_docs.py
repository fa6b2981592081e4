"""Documentation generated from the contracts stays equal to them."""

from pathlib import Path

from contracts.docs import BEGIN, END, landing_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_landing_doc_shows_the_contracts_as_they_are():
    text = (DOCS / "landing.md").read_text()
    block = text[text.index(BEGIN):text.index(END) + len(END)]
    assert block == landing_markdown(), "regenerate the tables of docs/landing.md from contracts.docs.landing_markdown()"


def test_testing_doc_names_the_planted_bug_of_every_kind_of_test_data():
    from benchmarks.planted_bugs import WIRING_BUGS

    text = (DOCS / "testing.md").read_text()
    assert [bug.name for bug in WIRING_BUGS if f"`{bug.name}`" not in text] == []
