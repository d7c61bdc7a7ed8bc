"""The ``roofline`` section of pytest's terminal summary, and the section a gated test fails with."""

from __future__ import annotations

from collections.abc import Callable

from pytest_roofline.model.document import RunDocument, TestRecord
from pytest_roofline.report.format import (
    KEEP_FASTER_ADVICE,
    benchmark_line,
    evidence_lines,
    format_seconds,
    got_faster,
    review_order,
    soak_line,
    terminal_safe,
)

__all__ = ["memo_text", "render_terminal"]


def _ratio(test: TestRecord, quantile: str) -> str:
    ratio = test.ratio(quantile)
    return f"x{ratio:.3f}" if ratio is not None else "-"


def _line(test: TestRecord) -> str:
    parts = [
        f"n={test.samples}" + (f" (batch {test.batch_size})" if test.batch_size > 1 else ""),
        f"p50 {format_seconds(test.p50_s)}",
        f"p95 {format_seconds(test.p95_s)}",
        f"p99 {format_seconds(test.p99_s)}",
    ]
    if test.baseline is not None:
        parts.append(f"p95 {_ratio(test, 'p95')} p99 {_ratio(test, 'p99')} vs baseline")
    point = test.roofline
    if point is not None:
        bound_text: str = point.bound
        if point.efficiency is not None:
            bound_text += f" {point.efficiency:.0%} of roof"
        if point.data_error:
            bound_text += " (data error: above the roof)"
        parts.append(bound_text)
    head = f"{test.decision.upper()} " if test.decision else ""
    return f"{head}{test.nodeid}: " + ", ".join(parts)


def memo_text(test: TestRecord) -> str:
    """The ``roofline`` section of a gated test: symptom, mechanism, owner, boundary, replay."""
    owners = ", ".join(test.owners) or "none defined (set owner= on the marker)"
    lines = [
        f"pytest-roofline: {(test.decision or '').upper()} {test.nodeid}",
        f"Symptom:   {test.symptom or 'n/a'}",
        f"Mechanism: {test.mechanism or 'n/a'}",
    ]
    for reason in test.reasons[1:]:
        lines.append(f"Also:      {reason}")
    if test.first_failing_layer:
        lines.append(
            f"Layer:     {test.first_failing_layer} (first changed layer since the baseline)"
        )
    boundary = test.rollback_boundary or "none defined (set rollback= on the marker)"
    if got_faster(test):
        # An improvement that escalated: reverting it is not the question.
        boundary = f"nothing to revert: the test got faster. {KEEP_FASTER_ADVICE}"
    for line in evidence_lines(test):
        lines.append(f"Evidence:  {line}")
    benchmark = benchmark_line(test)
    if benchmark:
        lines.append(f"Benchmark: {benchmark}")
    lines += [
        f"Owner:     {owners}",
        f"Rollback:  {boundary}",
        f"Replay:    {test.replay_command or ''}",
    ]
    # Each line is escaped on its own: the memo's own line breaks stay, none from user text.
    return "\n".join(terminal_safe(line) for line in lines)


def render_terminal(
    document: RunDocument,
    *,
    write_sep: Callable[..., object],
    write_line: Callable[[str], object],
    verbosity: int,
    files: list[str],
) -> None:
    """Write the run's summary: decision and non-ship tests first; ``-q`` keeps it to a few lines.

    Every line passes through :func:`~pytest_roofline.report.format.terminal_safe`.
    """

    def emit(text: str) -> None:
        write_line(terminal_safe(text))

    write_sep("=", "roofline")
    run = document.run
    target = (run.target.name if run.target else None) or "unknown"
    headline = f"{len(document.tests)} measured test(s) on target {target}"
    if run.baseline_label:
        headline += f", compared with baseline {run.baseline_label!r} (run {run.baseline_run_id})"
    if document.decision:
        counts = {
            d: sum(t.decision == d for t in document.tests)
            for d in ("rollback", "escalate", "ship")
        }
        summary = ", ".join(f"{n} {d}" for d, n in counts.items() if n)
        headline = f"decision: {document.decision.upper()} ({summary}) - {headline}"
    emit(headline)
    ordered = review_order(document.tests)
    for test in ordered:
        if test.decision in ("rollback", "escalate"):
            emit(_line(test))
            for reason in test.reasons[: 3 if verbosity > 0 else 1]:
                emit(f"    {reason}")
            evidence = evidence_lines(test)
            if evidence:
                emit(f"    evidence: {'; '.join(evidence)}")
            if (soaked := soak_line(test)) is not None:
                emit(f"    {soaked}")
    if verbosity >= 0:
        for test in ordered:
            if test.decision not in ("rollback", "escalate"):
                emit(_line(test))
                if (soaked := soak_line(test)) is not None:
                    emit(f"    {soaked}")
        for nodeid in run.missing_from_candidate:
            emit(f"{nodeid}: in the baseline, not measured in this run")
        if run.tag_diff:
            changed = ", ".join(
                f"{k}: {c.baseline} -> {c.candidate}" for k, c in run.tag_diff.items()
            )
            emit(f"revision tags changed since the baseline: {changed}")
        for reason in document.reasons:
            emit(f"run: {reason}")
    # What to do about a run-level reason is shown at every verbosity: it is the action.
    for step in document.next_steps:
        emit(f"next: {step}")
    for entry in files:
        emit(entry)
