"""Three saved runs, then a compared run: the label's trend in the JSON, the HTML and the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .test_gate import FAKE_CLOCK, set_costs

TESTS = """
def test_a(roofline, work):
    roofline(work)

def test_b(roofline, work):
    roofline(work)
"""


def test_saved_runs_then_a_compared_run_carry_the_trend_in_json_and_html(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".yaml",
        roofline="target: ci\ntargets:\n  ci: {peak_flops_per_s: {fp32: 1.0e11}, peak_bytes_per_s: {dram: 1.0e10}}\n",
    )
    pytester.makeini("[pytest]\nroofline_budget = 0.3\nroofline_warmup = 1ms\n")
    pytester.makeconftest(FAKE_CLOCK)
    pytester.makepyfile(test_k=TESTS)
    set_costs(pytester, test_a={"ms": 1.0}, test_b={"ms": 2.0})
    for k in range(3):
        pytester.runpytest(
            "--roofline", "--roofline-save=main", f"--roofline-json=saved{k}.json"
        ).assert_outcomes(passed=2)
    first = json.loads(Path(pytester.path, "saved0.json").read_text())
    third = json.loads(Path(pytester.path, "saved2.json").read_text())
    # A label's first run has no trend; a later save shows the earlier runs and itself.
    assert "trend" not in first["run"] and "trend" not in first["tests"][0]
    assert [r["current"] for r in third["run"]["trend"]["runs"]] == [False, False, True]

    result = pytester.runpytest(
        "--roofline", "--roofline-baseline=main",
        "--roofline-json=out/run.json", "--roofline-report=out/report.html",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    document = json.loads(Path(pytester.path, "out/run.json").read_text())
    trend = document["run"]["trend"]
    assert trend["label"] == "main" and trend["last"] == 30
    runs = trend["runs"]
    assert [r["run_id"] for r in runs] == [1, 2, 3, None] and runs[-1]["current"]
    for test in document["tests"]:
        points = test["trend"]["p50_s"]
        assert len(points) == 4 and all(p is not None for p in points)
        # this run's point is its own p50 (to four significant digits)
        assert points[-1] == pytest.approx(test["p50_s"], rel=1e-3)
        assert test["trend"]["steps"] == []
    page = Path(pytester.path, "out/report.html").read_text()
    assert page.count('<details class="trend">') == 2
    assert '<details class="trend" open' not in page
    assert page.count('class="trend-current"') == 2 * 3

    # The store keeps the saved runs' documents without the trends.
    db = sqlite3.connect(Path(pytester.path, ".roofline", "store.sqlite"))
    (summary,) = db.execute("SELECT summary FROM runs WHERE id = 3").fetchone()
    db.close()
    stored = json.loads(summary)["document"]
    assert "trend" not in stored["run"] and all("trend" not in t for t in stored["tests"])
