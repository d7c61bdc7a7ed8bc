"""Formatting shared by every renderer: units, ratios, intervals, percentages, decision order.

Renderers (terminal, Markdown, HTML, the command's tables) read the run document
(:mod:`pytest_roofline.model.document`) and this module, nothing else of the package.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable

from pytest_roofline.model.document import QuantileChange, TestRecord
from pytest_roofline.text import terminal_safe
from pytest_roofline.units import format_seconds, si

__all__ = [
    "DECISION_ORDER",
    "KEEP_FASTER_ADVICE",
    "benchmark_line",
    "code_spans",
    "decision_name",
    "evidence_lines",
    "format_interval",
    "format_percent",
    "format_ratio",
    "format_seconds",
    "got_faster",
    "id_parts",
    "outcome_text",
    "review_key",
    "review_order",
    "si",
    "soak_line",
    "terminal_safe",
]

DECISION_ORDER: tuple[str, ...] = ("rollback", "escalate", "ship", "undecided")
"""Decisions in the order a reviewer works through them; a test without one is "undecided"."""


def decision_name(decision: str | None) -> str:
    """The decision, or ``"undecided"`` when there is none."""
    return decision if decision in DECISION_ORDER[:3] else "undecided"


def review_key(test: TestRecord) -> tuple[int, str]:
    """Sort key of review order: rollback, escalate, ship, undecided; by node id within each."""
    return DECISION_ORDER.index(decision_name(test.decision)), test.nodeid


def review_order(tests: Iterable[TestRecord]) -> list[TestRecord]:
    """Tests in review order (:func:`review_key`)."""
    return sorted(tests, key=review_key)


def format_ratio(ratio: float | None) -> str:
    """A candidate/baseline ratio as ``"×1.32"``."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio >= 10:
        return f"×{ratio:.0f}"
    return f"×{ratio:.2f}" if ratio >= 0.1 else f"×{ratio:.2g}"


def format_interval(low: float | None, high: float | None) -> str:
    """An interval of ratios as ``"[1.20, 1.45]"``; empty when either end is missing."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{low:.2f}, {high:.2f}]"


def format_percent(fraction: float | None) -> str:
    """A fraction as a percentage with one decimal below 10% (``"4.2%"``, ``"42%"``)."""
    if fraction is None or not math.isfinite(fraction):
        return "n/a"
    return f"{fraction:.1%}" if abs(fraction) < 0.1 else f"{fraction:.0%}"


def code_spans(text: str) -> tuple[tuple[str, bool], ...]:
    """``text`` split at backticks into ``(part, is_code)`` pieces.

    The gate writes commands in a next step between backticks (``"run `pytest-roofline runs`"``);
    each renderer shows them as code in its own way. An unmatched backtick leaves the rest as
    plain text.
    """
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one opens nothing
        parts = [*parts[:-2], parts[-2] + "`" + parts[-1]]
    return tuple((part, index % 2 == 1) for index, part in enumerate(parts) if part)


def got_faster(test: TestRecord) -> bool:
    """Every quantile compared with the baseline is faster, and none points at a regression.

    Such a test may still escalate (a precision change without quality evidence, several
    changed layers): then there is nothing to revert, and a reviewer must decide whether the
    faster result can be kept. A test with no baseline did not get faster.
    """
    ratios = [r for q in ("p50", "p95", "p99") if (r := test.ratio(q)) is not None]
    flagged = any(c.verdict in ("regression", "suspect") for c in (test.change or {}).values())
    return bool(ratios) and all(r < 1 for r in ratios) and not flagged


KEEP_FASTER_ADVICE = (
    "A human must decide whether the faster result can be kept despite the reasons above "
    "(resolve each one, e.g. record the missing evidence); to keep it, save this run as the "
    "new baseline (--roofline-save=LABEL)."
)
"""What a reviewer of an escalated test that got faster must decide, and how to keep it."""


@functools.lru_cache(maxsize=4096)
def id_parts(nodeid: str) -> tuple[str, ...]:
    """``nodeid`` cut where a line may break: after ``/`` and ``::``, before ``[``, and after
    ``-`` between parameters.

    The HTML report joins the parts with ``<wbr>``, so a long id wraps between its path,
    function and parameter parts instead of in the middle of a name.
    """
    head, bracket, params = nodeid.partition("[")
    parts = [p for p in _PATH_BREAKS.split(head) if p]
    if bracket:
        parts += [p for p in _PARAM_BREAKS.split(bracket + params) if p]
    return tuple(parts)


_PATH_BREAKS = re.compile(r"(?<=/)|(?<=::)")
_PARAM_BREAKS = re.compile(r"(?<=-)|(?<=::)")


_MARGIN_SOURCE = {
    "min_effect": "gate.min_effect",
    "history": "the label's history noise floor",
    "cap": "capped at gate.max_margin",
}
_STOP = {
    "decisive": "decided",
    "budget": "budget spent",
    "cap": "UNKNOWN until the sampling cap",
    "max_samples": "max_samples reached",
}


def outcome_text(change: QuantileChange) -> str:
    """The three-way outcome of one comparison (``DIFFERENT``/``SAME``/``UNKNOWN``, and
    ``improved``), or the verdict of a document older than the three-way rule."""
    if change.outcome is None:
        return change.verdict or ""
    if change.verdict == "insufficient":
        return "not assessed (too few samples)"
    word = change.outcome.upper()
    return f"{word}, improved" if change.improvement else word


def _quantile_evidence(name: str, change: QuantileChange) -> str:
    text = f"{name} {outcome_text(change)} {format_ratio(change.ratio)}"
    interval = format_interval(change.ci_low, change.ci_high)
    if interval:
        text += f" {interval}"
    if change.delta is not None and math.isfinite(change.delta):
        source = _MARGIN_SOURCE.get(change.margin_source or "", change.margin_source)
        text += f", margin +{change.delta:.0%}" + (f" from {source}" if source else "")
    return text


def evidence_lines(test: TestRecord) -> tuple[str, ...]:
    """What the decision of ``test`` rests on, one line each: every gated quantile's outcome and
    margin, the host canary's state, the paired confirmation, and why sampling stopped.

    Empty for a document older than the three-way rule (its renderings stay as they were).
    """
    changes = test.change or {}
    if not any(c.outcome is not None for c in changes.values()) and test.host is None:
        return ()
    lines = [_quantile_evidence(name, changes[name]) for name in sorted(changes)]
    host = test.host
    if host is not None and host.state:
        text = f"host {host.state}"
        if host.remeasured:
            text += f" (measured again after a disturbed window; {host.windows} windows)"
        if host.state == "disturbed" and host.reason:
            text += f": {host.reason.removeprefix('host disturbed ')}"
        if host.host_shift:
            text += f"; slower than at the baseline: {host.host_shift}"
        lines.append(text)
    confirmation = test.confirmation
    if confirmation is not None and confirmation.state:
        text = f"paired confirmation {confirmation.state}"
        details = []
        if confirmation.pairs is not None:
            details.append(f"{confirmation.pairs} window pairs")
        if confirmation.pairs_dropped:
            details.append(f"{confirmation.pairs_dropped} dropped for a disturbed host")
        if confirmation.stop:
            details.append(f"stopped: {confirmation.stop}")
        if details:
            text += f" ({', '.join(details)})"
        if confirmation.state == "unavailable" and confirmation.reason:
            text += f": {confirmation.reason}"
        lines.append(text)
    paired = test.paired
    if paired is not None and paired.pairs is not None:
        text = f"paired rounds: {paired.pairs} window pairs"
        if paired.pairs_dropped:
            text += f", {paired.pairs_dropped} dropped for a disturbed host"
        if paired.stop:
            text += f", stopped: {paired.stop}"
        lines.append(text)
    elif test.stop_reason:
        lines.append(f"sampling stopped: {_STOP.get(test.stop_reason, test.stop_reason)}")
    return tuple(lines)


_SOAK_KIND = {"throttling": "throttling onset", "drift": "latency drift"}


def benchmark_line(test: TestRecord) -> str | None:
    """pytest-benchmark's names and ``extra_info`` of a test measured through the ``benchmark``
    fixture, in one line (``None`` for other tests).

    >>> from pytest_roofline.model.document import BenchmarkInfo
    >>> benchmark_line(TestRecord(nodeid="t.py::test_s", benchmark=BenchmarkInfo(
    ...     group="sort", name="test_s", extra_info={"n": 1000})))
    "group 'sort', name 'test_s', extra_info n=1000"
    """
    info = test.benchmark
    if info is None:
        return None
    parts = [f"group {info.group!r}" if info.group else "no group"]
    if info.name:
        parts.append(f"name {info.name!r}")
    if info.extra_info:
        shown = ", ".join(
            f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}"
            for key, value in sorted(info.extra_info.items())
        )
        parts.append(f"extra_info {shown if len(shown) <= 200 else shown[:199] + '…'}")
    return ", ".join(parts)


def soak_line(test: TestRecord) -> str | None:
    """One line on a soaked test's timeline (``None`` when the test was not soaked).

    ``"soak 30 s, 30 windows of 1 s: throttling onset at window 14 (+14.0 s), p50 ×1.30
    [1.21, 1.40]"``, or ``...: stable (p50 within +5% of the first 6 windows)``.
    """
    soak = test.soak
    if soak is None:
        return None
    head = (
        f"soak {soak.duration_s or 0:g} s, {len(soak.windows)} windows of {soak.window_s or 0:g} s"
    )
    finding = soak.finding
    if finding is not None:
        text = (
            f"{head}: {_SOAK_KIND.get(finding.kind or '', finding.kind or 'finding')} at window "
            f"{finding.window} (+{finding.offset_s or 0:.1f} s), p50 {format_ratio(finding.ratio)}"
        )
        interval = format_interval(finding.ci_low, finding.ci_high)
        return f"{text} {interval}" if interval else text
    reference = soak.reference or 3
    if len(soak.windows) < reference + 3:
        return f"{head}: not analysed (too few windows)"
    if soak.transient_window is not None:
        return (
            f"{head}: no sustained rise (a transient {format_ratio(soak.transient_ratio)} from "
            f"window {soak.transient_window} did not last)"
        )
    within = f"within +{format_percent(soak.margin)} " if soak.margin is not None else ""
    return f"{head}: stable (p50 {within}of the first {reference} windows)"
