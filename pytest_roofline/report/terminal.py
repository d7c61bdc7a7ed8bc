"""The ``roofline`` section of pytest's terminal summary."""

from __future__ import annotations

from collections.abc import Callable

from pytest_roofline.durations import format_seconds
from pytest_roofline.report.model import RunView, TestView

__all__ = ["render_terminal"]


def _ratio(test: TestView, quantile: str) -> str:
    ratio = test.ratio(quantile)
    return f"x{ratio:.3f}" if ratio is not None else "-"


def _line(test: TestView) -> str:
    summary = test.summary
    parts = [
        f"n={summary.n}" + (f" (batch {test.batch_size})" if test.batch_size > 1 else ""),
        f"p50 {format_seconds(summary.p50_s)}",
        f"p95 {format_seconds(summary.p95_s)}",
        f"p99 {format_seconds(summary.p99_s)}",
    ]
    if test.baseline is not None:
        parts.append(f"p95 {_ratio(test, 'p95')} p99 {_ratio(test, 'p99')} vs baseline")
    if test.roofline is not None:
        point = test.roofline
        bound_text: str = point.bound
        if point.efficiency is not None:
            bound_text += f" {point.efficiency:.0%} of roof"
        parts.append(bound_text)
    if test.decision:
        parts.insert(0, test.decision.upper())
    return f"{test.nodeid}: " + ", ".join(parts)


def render_terminal(
    view: RunView,
    *,
    write_sep: Callable[[str, str], object],
    write_line: Callable[[str], object],
    verbosity: int,
    files: list[str],
) -> None:
    """Write the run's summary; ``-q`` keeps it to the headline and the files written."""
    write_sep("=", "roofline")
    target = (view.target or {}).get("name", "unknown")
    headline = f"{len(view.tests)} measured test(s) on target {target}"
    if view.baseline_label:
        headline += f", compared with baseline {view.baseline_label!r} (run {view.baseline_run_id})"
    if view.decision:
        headline = f"decision: {view.decision.upper()} — " + headline
    write_line(headline)
    if verbosity >= 0:
        ordered = sorted(view.tests, key=lambda t: (t.decision in (None, "ship"), t.nodeid))
        for test in ordered:
            write_line(_line(test))
        for nodeid in view.missing_from_candidate:
            write_line(f"{nodeid}: in the baseline, not measured in this run")
        if view.tag_diff:
            changed = ", ".join(f"{k}: {b} -> {c}" for k, (b, c) in view.tag_diff.items())
            write_line(f"revision tags changed since the baseline: {changed}")
    for line in files:
        write_line(line)
