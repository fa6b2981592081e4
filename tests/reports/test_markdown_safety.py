"""No id, arm, metric, hypothesis or reason can add an image, a link or raw HTML to any Markdown the
project writes (the Dagster UI renders it with GitHub-flavoured Markdown), and no name can break a plot.

The oracle renders with markdown-it-py (CommonMark with tables, strikethrough, raw HTML and linkify,
a superset of what GitHub links) and also looks, in every run of text as the UI's renderer merges it,
for GitHub's literal autolinks (``www.``, ``http://``, ``a@b.c``). The only links allowed
are those to an experiment's page, the only images the plots the code draws.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tests.reports.views import comparison, view
from zcl_assets.defs.reports.metadata import failed_metadata
from zcl_assets.reports.index import attention_markdown, failed_row, index_markdown, index_row
from zcl_assets.reports.markdown import (
    JOINER,
    code_block,
    experiment_page,
    markdown_table,
    plots_markdown,
    text,
    verdict_markdown,
)
from zcl_assets.reports.plots import forest_plot, look_history

RENDERER = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["table", "strikethrough", "linkify"])
LITERAL_AUTOLINK = re.compile(r"(?i)https?://|www\.|[\w.+-]@[\w-]")
"""GitHub's literal autolinks: a URL after ``http(s)://`` or ``www.``, an e-mail address (``mailto:`` and
``xmpp:`` only prefix one)."""

NASTY = [
    "![pix](http://evil.example/track.png)", "[click](javascript:alert(1))", "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>", "www.evil.com", "WWW.Evil.Com/x", "https://evil.com/a?b=c", "a@b.com",
    "mailto:x@y.z", "]", ")", "](/evil)", "`code`", "```", "|", "| a | b |", "\n# heading", "\n- item", "> quote",
    "*bold*", "_it_", "~~s~~", "&amp;", "&#60;b&#62;", "\\", "\\[", "<http://evil.com>", "[a]: http://evil.com",
    "1. list", "    indented", "---", "evil.com", "xmpp:a@b.c", "!", "[", "](", "\r\n===",
]
WORDS = st.one_of(st.sampled_from(NASTY), st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12))
NAMES = st.lists(WORDS, min_size=1, max_size=4).map("".join)


def _runs(tokens) -> list[str]:
    """Every run of text as a renderer that merges escapes back into the text around them sees it."""
    runs, current = [], []
    for token in tokens:
        if token.type in ("text", "text_special", "code_inline"):
            current.append(token.content if token.type != "code_inline" else " ")
        else:
            runs.append("".join(current))
            current = []
        runs += _runs(token.children or [])
    return [*runs, "".join(current)]


def _walk(tokens):
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def assert_safe(markdown: str, pages: set[str]) -> list[tuple[str, str]]:
    """Raise unless ``markdown`` holds no raw HTML, no image but a drawn plot, no link but to one of ``pages``
    and no literal autolink; return each link's (target, text)."""
    tokens = RENDERER.parse(markdown)
    links, label = [], None
    for token in _walk(tokens):
        assert token.type not in ("html_block", "html_inline"), (token, markdown)
        if token.type == "image":
            assert token.attrGet("src").startswith("data:image/svg+xml;base64,"), markdown
        if token.type == "link_open":
            assert token.attrGet("href") in pages, (token.attrGet("href"), markdown)
            label = [token.attrGet("href"), ""]
        elif token.type == "link_close":
            links.append(tuple(label))
            label = None
        elif label is not None and token.type in ("text", "text_special"):
            label[1] += token.content
    for run in _runs(tokens):
        assert not LITERAL_AUTOLINK.search(run), (run, markdown)
    return links


def _normal(value: str) -> str:
    return " ".join(value.split()).replace("\0", "\ufffd")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(experiment=NAMES, arm=NAMES, control=NAMES, metric=NAMES, hypothesis=NAMES, reason=NAMES)
def test_no_name_or_reason_adds_an_image_a_link_or_html(experiment, arm, control, metric, hypothesis, reason):
    rows = [
        comparison(treatment_arm=arm, control_arm=control, decision_reason=reason, srm_fired=True, decision="invalid"),
        comparison(metric=metric, role="guardrail", is_primary=False, direction="decrease", treatment_arm=arm,
                   control_arm=control, cs_low=2500.0, cs_high=5000.0, decision=None),
    ]
    looked = view(experiment, rows, hypothesis=hypothesis, control_arm=control,
                  guardrails=[{"metric": metric, "direction": "decrease", "margin": 2000.0}])
    assert [a.kind for a in looked.alarms] == ["srm_mismatch", "guardrail_breached"]  # names appear in the alarms too
    page = experiment_page(experiment)
    forest, history = forest_plot(looked), look_history(looked)
    for svg in (forest, history):
        ET.fromstring(svg)  # well-formed whatever the names
    written = [
        verdict_markdown(looked),
        plots_markdown(looked, forest, history),
        markdown_table(pl.DataFrame({metric or "m": [experiment, arm], "reason": [reason, hypothesis]})),
        failed_metadata(experiment, f"KeyError: {reason}")["verdict"].value,
    ]
    for markdown in written:
        assert_safe(markdown, pages=set())  # no link at all
    for markdown in (index_markdown([index_row(looked)]), attention_markdown([index_row(looked)], "2026-10-28")):
        links = assert_safe(markdown, pages={page})
        assert [(target, label.replace(JOINER, "")) for target, label in links] == [(page, _normal(experiment))]
    assert_safe(attention_markdown([failed_row(experiment, reason)], "2026-10-28"), pages={page})


def test_escaped_text_reads_as_the_characters_it_escapes():
    for value in NASTY:
        tokens = RENDERER.parseInline(text(value))
        shown = "".join(t.content for t in _walk(tokens) if t.type in ("text", "text_special")).replace(JOINER, "")
        assert shown == _normal(value), value


@settings(max_examples=100, deadline=None)
@given(body=st.lists(NAMES, min_size=1, max_size=4).map("\n".join))
def test_a_text_chart_is_one_code_block_whatever_it_holds(body):
    tokens = RENDERER.parse(code_block(body))
    assert [t.type for t in tokens] == ["fence"] and tokens[0].content == body.replace("\r\n", "\n").replace("\r", "\n") + "\n"
