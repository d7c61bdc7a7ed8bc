"""The report in a real headless Chromium: no console errors, the table and chart in the DOM,
sorting and filtering work, the page reads with JavaScript off, injected markup stays inert,
and a screenshot is written for a human to look at.

Skipped only when no Chromium is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None
    with Browser(CHROMIUM, width=1400, height=1000) as instance:
        yield instance


TREND_TESTS = 3


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """40 tests; the first three carry the label's trend over four runs (this one last)."""
    made = make_document(40, seed=7)
    made["run"]["trend"] = {
        "label": "main",
        "last": 30,
        "runs": [
            *({"run_id": k, "commit": f"c{k}", "current": False} for k in (1, 2, 3)),
            {"run_id": None, "commit": "c4", "current": True},
        ],
    }
    for test in made["tests"][:TREND_TESTS]:
        test["trend"] = {
            **{f"p{q}_s": [1e-3, 1.1e-3, 1.3e-3, 1.3e-3] for q in (50, 95, 99)},
            **{f"p{q}_low_s": [0.9e-3, 1e-3, 1.2e-3, 1.2e-3] for q in (50, 95, 99)},
            **{f"p{q}_high_s": [1.1e-3, 1.2e-3, 1.4e-3, 1.4e-3] for q in (50, 95, 99)},
            "bound": ["memory"] * 4,
            "steps": [{"index": 2, "run_id": 3, "quantile": "p50", "ratio": 1.2,
                       "ci": [1.1, 1.3], "confirmed": True}],
        }  # fmt: skip
    return made


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, document: dict[str, Any]) -> Path:
    path = tmp_path_factory.mktemp("report") / "roofline.html"
    write_atomic(path, render_html(RunDocument.read(document)))
    return path


def test_the_harness_sees_console_errors_and_exceptions(tmp_path: Path) -> None:
    """A green browser test means something only if errors would have been caught."""
    assert CHROMIUM is not None
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><title>t</title><script>console.error('bad thing');"
        "undefinedFunction();</script>",
        encoding="utf-8",
    )
    with Browser(CHROMIUM) as fresh:
        fresh.open(page.as_uri())
        fresh.evaluate("1")  # let pending events arrive
        assert any("bad thing" in e for e in fresh.errors)
        assert any("undefinedFunction" in e for e in fresh.errors)


def _visible_rows(browser: Browser) -> int:
    count: int = browser.evaluate(
        "document.querySelectorAll('#test-table tbody tr:not([hidden])').length"
    )
    return count


def test_the_report_opens_from_a_file_url_without_console_errors(
    browser: Browser, report: Path, document: dict[str, Any]
) -> None:
    browser.open(report.as_uri())
    assert browser.errors == []
    assert browser.evaluate("document.querySelectorAll('#test-table tbody tr').length") == len(
        document["tests"]
    )
    assert browser.evaluate("document.querySelectorAll('svg.roofline circle').length") > 0
    assert browser.evaluate("document.querySelectorAll('article.memo svg.mini').length") > 0
    # The script ran (the CSP hash admitted it) and revealed the table controls.
    assert browser.evaluate("document.documentElement.classList.contains('js')") is True
    assert (
        browser.evaluate("getComputedStyle(document.getElementById('table-controls')).display")
        == "flex"
    )
    # Nothing tried to reach the network.
    resources = browser.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
    assert resources == []


def test_filtering_and_sorting_work_in_the_browser(
    browser: Browser, report: Path, document: dict[str, Any]
) -> None:
    browser.open(report.as_uri())
    counts = Counter(t["decision"] for t in document["tests"])
    browser.evaluate(
        "(() => { const s = document.getElementById('filter-decision'); s.value = 'rollback';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    assert _visible_rows(browser) == counts["rollback"]
    browser.evaluate(
        "(() => { const s = document.getElementById('filter-decision'); s.value = 'nonship';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    assert _visible_rows(browser) == counts["rollback"] + counts["escalate"]
    nodeid = document["tests"][5]["nodeid"]
    browser.evaluate(
        "(() => { const s = document.getElementById('filter-decision'); s.value = '';"
        " s.dispatchEvent(new Event('change'));"
        f" const t = document.getElementById('filter-text'); t.value = {nodeid.lower()!r};"
        " t.dispatchEvent(new Event('input')); })()"
    )
    assert _visible_rows(browser) == 1
    # Sort by p95 (column 2), ascending then descending; rows without a value stay last.
    browser.evaluate(
        "(() => { const t = document.getElementById('filter-text'); t.value = '';"
        " t.dispatchEvent(new Event('input'));"
        " document.querySelectorAll('#test-table thead th')[2].click(); })()"
    )
    ascending = browser.evaluate(
        "[...document.querySelectorAll('#test-table tbody tr')].map(r => parseFloat(r.cells[2].dataset.v))"
    )
    assert ascending == sorted(ascending)
    browser.evaluate("document.querySelectorAll('#test-table thead th')[2].click()")
    descending = browser.evaluate(
        "[...document.querySelectorAll('#test-table tbody tr')].map(r => parseFloat(r.cells[2].dataset.v))"
    )
    assert descending == sorted(ascending, reverse=True)
    assert browser.errors == []


def test_the_page_reads_with_javascript_off(
    browser: Browser, report: Path, document: dict[str, Any]
) -> None:
    browser.call("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        browser.open(report.as_uri())
        # DevTools evaluation still works with page scripts disabled; the page's own did not run.
        assert browser.evaluate("document.documentElement.classList.contains('js')") is False
        assert (
            browser.evaluate("getComputedStyle(document.getElementById('table-controls')).display")
            == "none"
        )
        assert _visible_rows(browser) == len(document["tests"])
        # The trend strips are there, collapsed, and open natively (no script) to drawn panels.
        assert (
            browser.evaluate("document.querySelectorAll('#test-table details.trend').length")
            == TREND_TESTS
        )
        assert browser.evaluate("document.querySelectorAll('details.trend[open]').length") == 0
        width = browser.evaluate(
            "(() => { const d = document.querySelector('#test-table details.trend');"
            " d.querySelector('summary').click();"
            " return d.open ? d.querySelector('svg.trend-panel').getBoundingClientRect().width"
            " : -1; })()"
        )
        assert width > 100
    finally:
        browser.call("Emulation.setScriptExecutionDisabled", {"value": False})
    assert browser.errors == []


def test_injected_markup_does_not_run(browser: Browser, tmp_path: Path) -> None:
    hostile = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">"\'&'
    path = tmp_path / "hostile.html"
    write_atomic(path, render_html(RunDocument.read(make_document(14, inject=hostile))))
    browser.open(path.as_uri())
    assert browser.evaluate("window.pwned === undefined") is True
    assert browser.evaluate("document.querySelectorAll('script').length") == 1
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    texts = browser.evaluate("[...document.querySelectorAll('.boundary')].map(e => e.textContent)")
    assert hostile in texts
    assert browser.errors == []


def test_a_screenshot_is_written_for_a_human(
    browser: Browser, report: Path, tmp_path: Path
) -> None:
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
    )
    browser.open(report.as_uri())
    shot = browser.screenshot(tmp_path / "roofline-report.png", max_height=5000)
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 50_000
    print(f"\nscreenshot of the report: {shot}")
    assert browser.errors == []
