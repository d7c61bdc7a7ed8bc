"""The label's trend in the signoff report: drawn from the run document alone (issue 14)."""

from __future__ import annotations

import json
import re

from pytest_roofline.model.document import (
    RunDocument,
    RunInfo,
    TestRecord,
    TestTrendRecord,
    TrendRun,
    TrendRunsRecord,
    TrendStepRecord,
)
from pytest_roofline.report.html import render_html
from pytest_roofline.report.html.trend import strip_of_record, trend_strip_html
from pytest_roofline.report.markdown import render_markdown

HOSTILE = "t.py::k[<script>alert(1)</script>]"


def _document(nodeid: str = "t.py::test_k", commit: str = "abc1234567ff") -> RunDocument:
    runs = TrendRunsRecord(
        label="main",
        last=30,
        runs=(
            TrendRun(run_id=11, commit=commit, started="2026-11-30T10:00:00+00:00"),
            TrendRun(run_id=12, commit=None, started="2026-11-30T11:00:00+00:00"),
            TrendRun(run_id=13, commit="<b>c3</b>", started="2026-11-30T12:00:00+00:00"),
            TrendRun(run_id=None, commit="c4", started="2026-12-01T09:00:00+00:00", current=True),
        ),
    )
    trend = TestTrendRecord(
        p50_s=(1.0e-3, 1.01e-3, 1.2e-3, 1.21e-3),
        p50_low_s=(0.99e-3, 1.0e-3, 1.19e-3, 1.2e-3),
        p50_high_s=(1.01e-3, 1.02e-3, 1.21e-3, 1.22e-3),
        p95_s=(1.5e-3, None, 1.6e-3, 1.7e-3),
        p95_low_s=(None, None, None, None),
        p95_high_s=(None, None, None, None),
        p99_s=(2e-3, 2e-3, 2e-3, 2e-3),
        p99_low_s=(),  # a short column reads as runs without an interval
        p99_high_s=(),
        bound=("memory", "memory", "compute", "compute"),
        steps=(
            TrendStepRecord(
                index=2,
                run_id=13,
                quantile="p50",
                ratio=1.19,
                ci=(1.17, 1.21),
                confirmed=True,
                first_failing_layer="data",
            ),
        ),
    )
    return RunDocument(
        decision="ship",
        run=RunInfo(label="pr", baseline_label="main", trend=runs),
        tests=(
            TestRecord(nodeid=nodeid, decision="ship", p50_s=1.21e-3, trend=trend),
            TestRecord(nodeid="t.py::test_new", decision="ship", p50_s=1e-3),
        ),
    )


def test_the_trend_survives_the_json_round_trip() -> None:
    document = _document()
    data = json.loads(json.dumps(document.to_json()))
    assert RunDocument.from_json(data) == document
    assert data["run"]["trend"]["runs"][-1] == {
        "run_id": None,
        "commit": "c4",
        "started": "2026-12-01T09:00:00+00:00",
        "current": True,
    }
    step = data["tests"][0]["trend"]["steps"][0]
    assert {k: step[k] for k in ("index", "quantile", "ratio", "ci", "confirmed")} == {
        "index": 2,
        "quantile": "p50",
        "ratio": 1.19,
        "ci": [1.17, 1.21],
        "confirmed": True,
    }
    # A test without a trend, and a run without one, write no key (older readers see nothing new).
    assert "trend" not in data["tests"][1]
    assert "trend" not in RunDocument().to_json()["run"]


def test_a_strip_from_the_document_marks_this_run_last_and_the_step_and_bound_change() -> None:
    document = _document()
    assert document.run.trend is not None and document.tests[0].trend is not None
    strip = strip_of_record(document.tests[0].nodeid, document.run.trend, document.tests[0].trend)
    assert strip.current == 3
    assert strip.run_labels[-1] == "this run"
    assert strip.values_s["p99"] == (2e-3,) * 4 and strip.low_s["p99"] == (None,) * 4
    out = trend_strip_html(strip, heading="trend")
    assert out.startswith('<details class="trend"><summary>trend: 4 runs, this run last (marked)')
    assert out.count('class="trend-current"') == 3  # one per quantile panel
    assert (
        "p50 step +19.0% [+17.0%, +21.0%] at #13 (&lt;b&gt;c3&lt;/b&gt;), first failing layer data"
        in out
    )
    assert "bound class memory -&gt; compute at #13" in out
    # p95 of run #12 has no value: 2 dots and the marked current run.
    p95 = re.search(r'aria-label="p95 over 4 runs">(.*?)</svg>', out)
    assert p95 is not None and p95.group(1).count("h0") == 2
    assert "<title>this run: p95 1.7 ms</title>" in p95.group(1)
    assert "2 runs 1.5 ms to 1.6 ms; this run 1.7 ms" in out


def test_the_html_report_shows_the_strip_collapsed_in_the_test_row_and_escapes_run_text() -> None:
    page = render_html(_document(nodeid=HOSTILE, commit="<img src=x onerror=alert(1)>"))
    assert page.count('<details class="trend">') == 1  # one test has a trend
    assert '<details class="trend" open' not in page
    assert "<script>alert(1)" not in page and "<img src=x" not in page and "<b>c3" not in page
    assert "&lt;b&gt;c3&lt;/b&gt;" in page
    row = re.search(r'<tr id="t-0".*?</tr>', page, re.S)
    assert row is not None and '<details class="trend">' in row.group(0)
    assert "trend over the last runs of main: 4 runs" in row.group(0)


def test_a_non_ship_test_shows_its_strip_in_its_memo_too() -> None:
    document = _document()
    flagged = RunDocument(
        decision="escalate",
        run=document.run,
        tests=(
            TestRecord(
                nodeid="t.py::test_k",
                decision="escalate",
                reasons=("p95 unknown",),
                trend=document.tests[0].trend,
            ),
        ),
    )
    page = render_html(flagged)
    memo = re.search(r'<article class="memo.*?</article>', page, re.S)
    assert memo is not None and '<details class="trend">' in memo.group(0)
    assert page.count('<details class="trend">') == 2


def test_a_report_without_a_trend_has_no_strip() -> None:
    document = _document()
    plain = RunDocument(decision="ship", tests=document.tests[1:])
    assert 'class="trend' not in render_html(plain)
    assert "Steps over the last" not in render_markdown(plain)


def test_markdown_lists_one_line_per_test_with_a_step_and_nothing_for_the_others() -> None:
    text = render_markdown(_document(nodeid=HOSTILE))
    assert "Steps over the last 4 runs of `main` (this run last" in text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("- ")]
    assert line.endswith(r": p50 +19.0% \[+17.0%, +21.0%\] at run #13")
    assert "<script>" not in line and "&lt;script&gt;" in line
    assert "test_new" not in text


def test_a_run_beyond_the_row_limit_shows_strips_in_the_memos_only() -> None:
    from pytest_roofline.report.html.page import ROW_TRENDS_UP_TO

    document = _document()
    trend = document.tests[0].trend
    shipped = tuple(
        TestRecord(nodeid=f"t.py::test_{i}", decision="ship", p50_s=1e-3, trend=trend)
        for i in range(ROW_TRENDS_UP_TO)
    )
    flagged = TestRecord(
        nodeid="t.py::test_flagged", decision="escalate", reasons=("p95 unknown",), trend=trend
    )
    small = RunDocument(decision="escalate", run=document.run, tests=(*shipped[:-1], flagged))
    large = RunDocument(decision="escalate", run=document.run, tests=(*shipped, flagged))
    # Every row and the one memo at the limit; past it only the memo (a strip is ~4 kB a test).
    assert render_html(small).count('<details class="trend">') == ROW_TRENDS_UP_TO + 1
    page = render_html(large)
    assert page.count('<details class="trend">') == 1
    memo = re.search(r'<article class="memo.*?</article>', page, re.S)
    assert memo is not None and '<details class="trend">' in memo.group(0)
