"""The Markdown summary for CI step summaries and PR comments."""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_roofline.model.document import RunDocument
from pytest_roofline.report.markdown import code, escape, render_markdown
from tests.report.documents import make_document, minimal_document


def _table_rows(markdown: str) -> list[str]:
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    return lines[1:]  # without the header


def test_the_headline_names_the_decision_the_runs_and_the_counts() -> None:
    document = make_document(30, seed=1)
    text = render_markdown(RunDocument.read(document))
    counts = Counter(t["decision"] for t in document["tests"])
    first = text.splitlines()[0]
    assert first == "## pytest-roofline: **ROLLBACK**"
    assert "**pr-1234** vs **main** (run 41) on **h100-sxm** · 30 tests:" in text
    for decision in ("rollback", "escalate", "ship"):
        assert f"{counts[decision]} {decision}" in text


def test_every_non_ship_test_is_listed_with_ratio_interval_owner_and_reason() -> None:
    document = make_document(30, seed=1)
    rows = _table_rows(render_markdown(RunDocument.read(document)))
    non_ship = sorted(
        (t for t in document["tests"] if t["decision"] != "ship"),
        key=lambda t: (t["decision"] != "rollback", t["nodeid"]),
    )
    assert len(rows) == len(non_ship)
    for row, test in zip(rows, non_ship, strict=True):
        assert row.startswith(f"| **{test['decision'].upper()}** | {escape(test['nodeid'])} |")
        if test["change"]:
            ratio = test["change"]["p95"]["ratio"]
            assert f"×{ratio:.2f} \\[{test['change']['p95']['ci_low']:.2f}, " in row
        else:
            assert "no baseline" in row
        owners = ", ".join(test["owners"])
        assert (escape(owners) if owners else "_none defined_") in row
        assert escape(test["reasons"][0]) in row


def test_ship_tests_are_counted_not_listed() -> None:
    document = make_document(30, seed=1)
    text = render_markdown(RunDocument.read(document))
    for test in document["tests"]:
        if test["decision"] == "ship":
            assert escape(test["nodeid"]) not in text


def test_the_summary_points_at_the_html_report() -> None:
    text = render_markdown(RunDocument.read(make_document(12)), report_path="reports/roofline.html")
    assert "`reports/roofline.html`" in text.splitlines()[-1]
    assert "--roofline-report=PATH" in render_markdown(RunDocument.read(make_document(12)))


def test_long_lists_are_cut_and_the_rest_counted() -> None:
    document = make_document(12)
    text = render_markdown(RunDocument.read(document), max_tests=2)
    non_ship = sum(t["decision"] != "ship" for t in document["tests"])
    assert len(_table_rows(text)) == 2
    assert f"…and {non_ship - 2} more non-ship test(s)" in text


def test_untrusted_text_cannot_add_markup_html_links_or_table_cells() -> None:
    hostile = "<script>alert(1)</script> | **bold** [x](http://evil) `code` &amp;"
    text = render_markdown(RunDocument.read(make_document(12, inject=hostile)))
    assert "<" not in text and ">" not in text.replace("→", "")
    assert "http://" not in text
    for row in _table_rows(text):
        # Eight unescaped pipes: seven cells, whatever the cells contain.
        unescaped = sum(1 for i, c in enumerate(row) if c == "|" and (i == 0 or row[i - 1] != "\\"))
        assert unescaped == 8, row
    assert "\\*\\*bold\\*\\*" in text and "\\[x\\]" in text and "\\`code\\`" in text


@pytest.mark.parametrize(
    ("text", "line_start", "expected"),
    [
        ("a_b", False, "a\\_b"),
        ("2.0.2", False, "2.0.2"),
        ("1. first", True, "1\\. first"),
        ("# heading", True, "\\# heading"),
        ("multi\nline", False, "multi line"),
        ("see www.example.org", False, "see www\\.example.org"),
    ],
)
def test_escape(text: str, line_start: bool, expected: str) -> None:
    assert escape(text, line_start=line_start) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a/b.html", "`a/b.html`"),
        ("odd`name", "``odd`name``"),
        ("`x`", "`` `x` ``"),
        ("a|b", "`a\\|b`"),
    ],
)
def test_code_spans_hold_any_text_literally(text: str, expected: str) -> None:
    assert code(text) == expected


def test_a_minimal_document_still_summarises() -> None:
    text = render_markdown(RunDocument.read(minimal_document()))
    assert text.startswith("## pytest-roofline: **NO DECISION**")
    assert "no baseline" in text and "1 tests" in text
    assert "No test needs review." in text


def test_an_empty_run_says_so() -> None:
    assert "No measured tests in this run." in render_markdown(RunDocument.read({"tests": []}))
