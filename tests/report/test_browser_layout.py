"""The report's layout in a real headless Chromium at 1400 px: the test table stays inside its
card, test ids wrap only between path and parameter parts, every method heading sits with its
content, and each row's latency chart opens without JavaScript.

Skipped only when no Chromium is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_roofline.files import write_atomic
from pytest_roofline.model.document import RunDocument
from pytest_roofline.report.html import render_html
from tests.report.browser import Browser, find_chromium
from tests.report.documents import make_document

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="needs chromium (apt-get install chromium)"
)
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "expected" / "report.json"
WIDTH = 1400


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None
    with Browser(CHROMIUM, width=WIDTH, height=1000) as instance:
        yield instance


def _documents() -> dict[str, RunDocument]:
    long_owners = make_document(40, seed=7)
    for test in long_owners["tests"][:5]:
        test["owners"] = ["performance engineer: alice", "compiler owner: bob", "runtime-team"]
    return {
        # The golden run: short ids that used to break mid-word, a table that spilled.
        "golden": RunDocument.read(json.loads(GOLDEN.read_text(encoding="utf-8"))),
        "synthetic": RunDocument.read(long_owners),
    }


@pytest.fixture(scope="module", params=sorted(_documents()))
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("layout") / f"{request.param}.html"
    write_atomic(path, render_html(_documents()[request.param]))
    return path


def _open(browser: Browser, report: Path) -> None:
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
    )
    browser.open(report.as_uri())


def test_the_test_table_stays_inside_its_card_at_1400_px(browser: Browser, report: Path) -> None:
    _open(browser, report)
    box = browser.evaluate(
        """(() => {
        const table = document.getElementById('test-table');
        const panel = table.closest('.panel');
        const style = getComputedStyle(panel);
        return {
          table: table.getBoundingClientRect().right,
          inner: panel.getBoundingClientRect().right - parseFloat(style.paddingRight),
          page: document.documentElement.scrollWidth,
        };
    })()"""
    )
    assert box["table"] <= box["inner"] + 0.5, box
    assert box["page"] <= WIDTH, box
    assert browser.errors == []


# Where a line of a test id may begin: after "/" or "::", at "[", or after a "-" between parameters.
_LINE_STARTS = """(() => {
  const out = [];
  for (const span of document.querySelectorAll('#test-table td.test .id, article.memo .id')) {
    const text = span.textContent;
    const walker = document.createTreeWalker(span, NodeFilter.SHOW_TEXT);
    let offset = 0, lastTop = null;
    const starts = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i); range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (rect) {
          if (lastTop !== null && rect.top > lastTop + 2) { starts.push(offset + i); }
          lastTop = rect.top;
        }
      }
      offset += node.length;
    }
    out.push([text, starts]);
  }
  return out;
})()"""


def test_test_ids_wrap_only_between_their_parts(browser: Browser, report: Path) -> None:
    _open(browser, report)
    wrapped = 0
    for text, starts in browser.evaluate(_LINE_STARTS):
        for start in starts:
            wrapped += 1
            before, at = text[:start], text[start:]
            in_params = "[" in before
            assert (
                before.endswith(("/", "::"))
                or at.startswith("[")
                or (in_params and before.endswith("-"))
            ), (text, start)
    # The golden ids are short enough to fit; the synthetic ones in the memo headers too. The
    # check is only meaningful if some id wrapped somewhere, so the narrow table column must
    # have wrapped at least one.
    assert wrapped or "golden" in report.name
    assert browser.errors == []


def test_every_method_heading_sits_at_the_top_of_its_content(
    browser: Browser, report: Path
) -> None:
    _open(browser, report)
    pairs = browser.evaluate(
        """[...document.querySelectorAll('#method .method h3')].map(h => {
          const next = h.nextElementSibling;
          const a = h.getBoundingClientRect(), b = next ? next.getBoundingClientRect() : null;
          return [h.textContent, a.left, a.bottom, b && b.left, b && b.top];
        })"""
    )
    assert any(text.lower() == "floors and margins" for text, *_ in pairs)
    for text, left, bottom, next_left, next_top in pairs:
        assert next_left is not None, f"{text}: nothing follows the heading"
        assert abs(next_left - left) < 1, f"{text}: its content is in another column"
        assert 0 <= next_top - bottom < 40, f"{text}: its content is not right below it"


def test_a_rows_latency_chart_opens_without_javascript(browser: Browser, report: Path) -> None:
    browser.call("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        _open(browser, report)
        closed = browser.evaluate(
            "(() => { const d = document.querySelector('#test-table details.dist');"
            " return [d.open, d.getBoundingClientRect().height]; })()"
        )
        assert closed[0] is False and closed[1] < 20
        opened = browser.evaluate(
            "(() => { const d = document.querySelector('#test-table details.dist'); d.open = true;"
            " return d.getBoundingClientRect().height; })()"
        )
        assert opened > closed[1] + 40
    finally:
        browser.call("Emulation.setScriptExecutionDisabled", {"value": False})
    assert browser.errors == []
