"""The per-test trend strip: collapsed, script-free, steps and bound-class changes marked."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.cli import EXIT_OK, main
from pytest_roofline.cli.history import trend_strip_of
from pytest_roofline.report.html.trend import TrendMark, TrendStrip, trend_page, trend_strip_html
from pytest_roofline.store.series import SERIES_COLUMNS, SeriesRun, TestSeries
from pytest_roofline.vocabulary import BOUND_CLASSES

from .test_history_cli import STEP, STEP_AT, store_path  # noqa: F401  (the shared store)


def strip(nodeid: str = "t.py::k", marks: tuple[TrendMark, ...] = ()) -> TrendStrip:
    values = (1e-3, 1.1e-3, None, 1.3e-3)
    return TrendStrip(
        nodeid=nodeid,
        run_labels=("#1", "#2", "#3", "#4"),
        values_s={q: values for q in ("p50", "p95", "p99")},
        low_s={q: (0.9e-3, None, None, 1.2e-3) for q in ("p50", "p95", "p99")},
        high_s={q: (1.1e-3, None, None, 1.4e-3) for q in ("p50", "p95", "p99")},
        marks=marks,
    )


def test_a_strip_is_collapsed_and_needs_no_script() -> None:
    out = trend_strip_html(strip())
    assert out.startswith('<details class="trend"><summary>')
    assert "<details open" not in out and "<script" not in out
    assert out.count("<svg") == 3
    # One dot per run with a value (run #3 has none), two interval bars, all in one path each.
    assert out.count("h0") == 3 * 3
    assert out.count("<path") == 3 * 2
    # The numbers are written beside each panel: the other runs' range and the last run.
    assert (
        out.count('<span class="trend-text">2 runs 1 ms to 1.1 ms; #4 1.3 ms [1.2 ms, 1.4 ms]') == 3
    )


def test_steps_and_bound_changes_are_marked_with_their_text() -> None:
    marks = (
        TrendMark(2, "step", "p50 step +20.0% at run #3"),
        TrendMark(3, "bound", "bound class memory -> compute at run #4"),
    )
    out = trend_strip_html(strip(marks=marks))
    assert out.count('class="trend-step"') == 3 and out.count('class="trend-bound"') == 3
    assert "1 step, bound class changed 1x" in out
    assert "<li>p50 step +20.0% at run #3</li>" in out


def test_text_from_runs_is_escaped() -> None:
    out = trend_page("History of <main>", [strip("t.py::k[<script>alert(1)</script>]")])
    assert "<script>" not in out
    assert "&lt;script&gt;" in out and "History of &lt;main&gt;" in out


def test_a_strip_shows_the_last_runs_with_the_steps_placed_within_them() -> None:
    n = 10
    values = {c: np.full(n, np.nan) for c in SERIES_COLUMNS[:-1]}
    values["p50_s"] = np.linspace(1e-3, 2e-3, n)
    codes = np.array(
        [BOUND_CLASSES.index("memory")] * 7 + [BOUND_CLASSES.index("compute")] * 3, float
    )
    test = TestSeries("t", values, codes)
    runs = [SeriesRun(k + 1, k, 0.0, None, {}, {}) for k in range(n)]
    got = trend_strip_of(test, runs, None, last=4)
    assert got.run_labels == ("#7", "#8", "#9", "#10")
    assert got.values_s["p50"][0] == pytest.approx(values["p50_s"][6])
    assert got.low_s["p50"] == (None,) * 4
    (mark,) = got.marks
    assert (mark.index, mark.kind) == (1, "bound")
    assert "memory -> compute at run #8" in mark.text


def test_history_writes_a_page_of_strips_with_the_step_marked(
    store_path: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    out = tmp_path / "history.html"
    assert main(["history", "--store", str(store_path), "--label=main", f"--html={out}"]) == EXIT_OK
    page = out.read_text()
    assert page.count('<details class="trend">') == 3
    (section,) = re.findall(
        r'<details class="trend"><summary>tests/perf/test_k.py::test_step.*?</details>', page
    )
    assert "1 step" in section
    assert f"(index {STEP_AT})" not in section  # positions in the strip are not indices
    assert re.search(r"p50 step \+\d+\.\d% \[\+\d+\.\d%, \+\d+\.\d%\] at run #16", section)
    assert STEP in page
