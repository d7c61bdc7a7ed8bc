"""Run pytest with every output option, then parse what it wrote (the junitxml test's pattern)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.report.page import parse

from .test_gate import FAKE_CLOCK, set_costs

TESTS = """
import pytest

@pytest.mark.roofline(owner={"performance engineer": "alice", "compiler owner": "bob"}, rollback="revert <PR 1> & 'friends'")
def test_slow(roofline, work):
    roofline.declare(flops=1e6, bytes_moved=1e4, precision="fp32")
    roofline(work)

@pytest.mark.roofline(owner="team-b", rollback="revert PR 2")
def test_fine(roofline, work):
    roofline(work)
"""

TEST_KEYS = {
    "nodeid", "slice", "source", "owner", "rollback_boundary", "decision", "reasons", "first_failing_layer",
    "samples", "p50_s", "p95_s", "p99_s", "baseline", "change", "roofline", "counters", "sla", "quality", "replay",
}  # fmt: skip
CHANGE_KEYS = {"ratio", "ci_low", "ci_high", "p_value", "verdict"}
ROOFLINE_KEYS = {
    "intensity",
    "achieved_flops_per_s",
    "achieved_bytes_per_s",
    "efficiency",
    "bound",
    "baseline_bound",
    "bound_changed",
}
OBSERVABILITY_KEYS = {
    "counter_completeness",
    "trigger_coverage",
    "replay_success_rate",
    "sample_adequacy",
    "escape_risk",
    "slice_coverage",
}


@pytest.fixture
def reports(pytester: pytest.Pytester) -> tuple[pytest.RunResult, dict[str, Any], str, str]:
    """A baseline run, then a candidate where test_slow doubles: JSON, HTML and Markdown written."""
    pytester.makefile(
        ".yaml",
        roofline="target: ci\ntargets:\n  ci: {peak_flops_per_s: {fp32: 1.0e11}, peak_bytes_per_s: {dram: 1.0e10}}\n",
    )
    pytester.makeini("[pytest]\nroofline_budget = 0.5\nroofline_warmup = 1ms\n")
    pytester.makeconftest(FAKE_CLOCK)
    pytester.makepyfile(test_k=TESTS)
    set_costs(pytester, test_slow={"ms": 1.0}, test_fine={"ms": 1.0})
    pytester.runpytest(
        "--roofline", "--roofline-save=main", "--roofline-tag=model=<b>v1</b>"
    ).assert_outcomes(passed=2)
    set_costs(pytester, test_slow={"ms": 3.0}, test_fine={"ms": 1.0})
    result = pytester.runpytest(
        "--roofline", "--roofline-baseline=main", "--roofline-tag=model=<b>v2</b>",
        "--roofline-json=out/run.json", "--roofline-report=out/report.html", "--roofline-markdown=out/summary.md",
    )  # fmt: skip
    out = Path(pytester.path, "out")
    return (
        result,
        json.loads((out / "run.json").read_text()),
        (out / "report.html").read_text(),
        (out / "summary.md").read_text(),
    )


def test_the_json_document_follows_the_design_schema(
    reports: tuple[pytest.RunResult, dict[str, Any], str, str],
) -> None:
    result, document, _, _ = reports
    result.assert_outcomes(passed=1, failed=1)
    assert document["schema_version"] == 1
    assert document["decision"] in ("ship", "rollback", "escalate")
    assert {
        "label",
        "baseline_label",
        "tags",
        "tag_diff",
        "target",
        "started",
        "common_mode",
    } <= set(document["run"])
    assert set(document["observability"]) >= OBSERVABILITY_KEYS
    for test in document["tests"]:
        assert set(test) >= TEST_KEYS
        assert set(test["change"]["p95"]) >= CHANGE_KEYS
        assert test["decision"] in ("ship", "rollback", "escalate")
        assert set(test["counters"]) >= {"completeness", "status", "values"}
    slow = next(t for t in document["tests"] if t["nodeid"].endswith("test_slow"))
    assert set(slow["roofline"]) >= ROOFLINE_KEYS
    assert slow["roofline"]["bound"] in ("compute", "memory", "overhead", "ambiguous", "unknown")
    assert slow["decision"] == "rollback"
    assert document["run"]["tag_diff"]["model"] == {
        "baseline": "<b>v1</b>",
        "candidate": "<b>v2</b>",
        "layer": "model",
    }
    result.stdout.fnmatch_lines(
        [
            "*wrote JSON to*run.json",
            "*wrote HTML report to*report.html",
            "*wrote Markdown summary to*summary.md",
        ]
    )


def test_the_html_report_shows_every_test_decision_and_owner_with_untrusted_text_inert(
    reports: tuple[pytest.RunResult, dict[str, Any], str, str],
) -> None:
    _, document, html, _ = reports
    page = parse(html)
    text = page.text
    for test in document["tests"]:
        assert test["nodeid"] in text
    assert "rollback" in page.by_id("decision").text.lower()
    for owner in ("performance engineer: alice", "compiler owner: bob", "team-b"):
        assert owner in text
    assert "revert <PR 1> & 'friends'" in text  # shown as text...
    assert "<PR 1>" not in html  # ...because it was escaped
    assert "<b>v2</b>" in text and "<b>v2</b>" not in html
    assert len(page.find_all("script")) == 1
    assert page.find_all("svg")
    assert "http://" not in html and "https://" not in html


def test_the_markdown_summary_names_the_rollback_its_owner_and_the_report(
    reports: tuple[pytest.RunResult, dict[str, Any], str, str],
) -> None:
    _, _, _, markdown = reports
    assert "ROLLBACK" in markdown.upper()
    assert "test\\_slow" in markdown  # Markdown-escaped
    assert "alice" in markdown
    assert "report.html" in markdown
