"""The ``roofline`` section of pytest's terminal summary, and the section a gated test fails with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_roofline.units import format_seconds
from pytest_roofline.report.model import RunView, TestView

__all__ = ["memo_text", "render_terminal"]

_ORDER = {"rollback": 0, "escalate": 1, "ship": 2, None: 3}


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
    point = test.outcome.get("roofline")
    if point:
        bound_text = str(point.get("bound"))
        if point.get("efficiency") is not None:
            bound_text += f" {point['efficiency']:.0%} of roof"
        if point.get("data_error"):
            bound_text += " (data error: above the roof)"
        parts.append(bound_text)
    head = f"{test.decision.upper()} " if test.decision else ""
    return f"{head}{test.nodeid}: " + ", ".join(parts)


def memo_text(nodeid: str, outcome: Mapping[str, Any]) -> str:
    """The ``roofline`` section of a gated test: symptom, mechanism, owner, boundary, replay."""
    owners = ", ".join(outcome.get("owners") or []) or "none defined (set owner= on the marker)"
    lines = [
        f"pytest-roofline: {str(outcome.get('decision', '')).upper()} {nodeid}",
        f"Symptom:   {outcome.get('symptom') or 'n/a'}",
        f"Mechanism: {outcome.get('mechanism') or 'n/a'}",
    ]
    for reason in (outcome.get("reasons") or [])[1:]:
        lines.append(f"Also:      {reason}")
    if outcome.get("first_failing_layer"):
        lines.append(
            f"Layer:     {outcome['first_failing_layer']} (first changed layer since the baseline)"
        )
    boundary = outcome.get("rollback_boundary") or "none defined (set rollback= on the marker)"
    lines += [
        f"Owner:     {owners}",
        f"Rollback:  {boundary}",
        f"Replay:    {outcome.get('replay_command', '')}",
    ]
    return "\n".join(lines)


def render_terminal(
    view: RunView,
    *,
    write_sep: Callable[..., object],
    write_line: Callable[[str], object],
    verbosity: int,
    files: list[str],
) -> None:
    """Write the run's summary: decision and non-ship tests first; ``-q`` keeps it to a few lines."""
    write_sep("=", "roofline")
    target = (view.target or {}).get("name", "unknown")
    headline = f"{len(view.tests)} measured test(s) on target {target}"
    if view.baseline_label:
        headline += f", compared with baseline {view.baseline_label!r} (run {view.baseline_run_id})"
    if view.decision:
        counts = {
            d: sum(t.decision == d for t in view.tests) for d in ("rollback", "escalate", "ship")
        }
        summary = ", ".join(f"{n} {d}" for d, n in counts.items() if n)
        headline = f"decision: {view.decision.upper()} ({summary}) - {headline}"
    write_line(headline)
    ordered = sorted(view.tests, key=lambda t: (_ORDER.get(t.decision, 3), t.nodeid))
    for test in ordered:
        if test.decision in ("rollback", "escalate"):
            write_line(_line(test))
            for reason in test.reasons[: 3 if verbosity > 0 else 1]:
                write_line(f"    {reason}")
    if verbosity >= 0:
        for test in ordered:
            if test.decision not in ("rollback", "escalate"):
                write_line(_line(test))
        for nodeid in view.missing_from_candidate:
            write_line(f"{nodeid}: in the baseline, not measured in this run")
        if view.tag_diff:
            changed = ", ".join(f"{k}: {b} -> {c}" for k, (b, c, _) in view.tag_diff.items())
            write_line(f"revision tags changed since the baseline: {changed}")
        for reason in view.reasons:
            write_line(f"run: {reason}")
    for line in files:
        write_line(line)
