"""The soak timeline of a soaked test: latency per window with the host beside it.

One collapsed ``<details>`` per soaked test (no JavaScript): an inline SVG of each window's
median latency ÷ the reference windows' level on a log scale (the reference windows shaded,
the margin dashed, the first failing window marked in red with a vertical line), then a table
of every window: its start, median, ratio, samples and host evidence (CPU clock, CPU share,
steal, the worst canary kind, GPU temperature, SM clock, power and clock-event reasons). It
reads only the test's record (``tests[].soak``); every text is escaped by the template.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_roofline.model.document import SoakRecord, SoakWindowRecord, TestRecord
from pytest_roofline.report.format import (
    decision_name,
    format_percent,
    format_ratio,
    format_seconds,
    id_parts,
    soak_line,
)

__all__ = ["SoakChart", "SoakPoint", "SoakRow", "SoakView", "soak_view"]

_WIDTH, _HEIGHT, _LEFT, _RIGHT, _TOP, _BOTTOM = 560, 120, 44, 8, 8, 20


@dataclass(frozen=True, slots=True)
class SoakPoint:
    """One window on the chart."""

    index: int
    x: float
    y: float
    title: str
    failing: bool


@dataclass(frozen=True, slots=True)
class SoakChart:
    """Geometry of the timeline (pixels); ``None`` marks are not drawn."""

    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    points: tuple[SoakPoint, ...]
    polyline: str
    reference_x: float
    one_y: float
    margin_y: float | None
    fail_x: float | None
    y_ticks: tuple[tuple[float, str], ...]
    label: str


@dataclass(frozen=True, slots=True)
class SoakRow:
    """One window in the table, every cell preformatted."""

    index: int
    start: str
    p50: str
    ratio: str
    n: str
    cpu_mhz: str
    cpu_share: str
    steal: str
    canary: str
    gpu: str
    cls: str


@dataclass(frozen=True, slots=True)
class SoakView:
    """A soaked test's timeline section."""

    nodeid: str
    id_parts: tuple[str, ...]
    decision: str
    summary: str
    finding: str | None
    failing: int | None
    chart: SoakChart | None
    rows: tuple[SoakRow, ...]
    status: str
    notes: tuple[str, ...]
    overhead: str


def _canary(window: SoakWindowRecord) -> str:
    if not window.canary:
        return "—"
    kind = max(window.canary, key=lambda k: window.canary[k])
    return f"{kind} {format_ratio(window.canary[kind])}"


def _gpu(window: SoakWindowRecord) -> str:
    parts = []
    if window.gpu_temperature_c is not None:
        parts.append(f"{window.gpu_temperature_c:.0f} °C")
    if window.gpu_sm_clock_mhz is not None:
        parts.append(f"SM {window.gpu_sm_clock_mhz:.0f} MHz")
    if window.gpu_power_w is not None:
        parts.append(f"{window.gpu_power_w:.0f} W")
    if window.gpu_throttle:
        parts.append(", ".join(window.gpu_throttle))
    return " · ".join(parts) or "—"


def _row(index: int, window: SoakWindowRecord, failing: int | None, reference: int) -> SoakRow:
    cls = "soak-fail" if index == failing else "soak-ref" if index < reference else ""
    return SoakRow(
        index=index,
        start=f"+{window.offset_s or 0:.1f} s",
        p50=format_seconds(window.p50_s),
        ratio=format_ratio(window.ratio),
        n=str(window.n),
        cpu_mhz=f"{window.cpu_mhz:.0f} MHz" if window.cpu_mhz is not None else "—",
        cpu_share=f"{window.cpu_share:.2f}" if window.cpu_share is not None else "—",
        steal=format_percent(window.steal) if window.steal is not None else "—",
        canary=_canary(window),
        gpu=_gpu(window),
        cls=cls,
    )


def _chart(soak: SoakRecord, failing: int | None, reference: int) -> SoakChart | None:
    ratios = [w.ratio for w in soak.windows]
    seen = [r for r in ratios if r is not None and math.isfinite(r) and r > 0]
    if not seen:
        return None
    margin = 1 + soak.margin if soak.margin is not None else None
    lo = math.log(min([*seen, 1.0]))
    hi = math.log(max([*seen, 1.0, margin or 1.0]))
    span = hi - lo if hi > lo else 0.1
    lo, hi = lo - 0.08 * span, hi + 0.08 * span
    n = len(ratios)
    inner_w = _WIDTH - _LEFT - _RIGHT
    inner_h = _HEIGHT - _TOP - _BOTTOM

    def x(i: float) -> float:
        return round(_LEFT + (i + 0.5) * inner_w / n, 1)

    def y(r: float) -> float:
        return round(_TOP + (hi - math.log(r)) / (hi - lo) * inner_h, 1)

    points = []
    for i, (window, ratio) in enumerate(zip(soak.windows, ratios, strict=True)):
        if ratio is None or not math.isfinite(ratio) or ratio <= 0:
            continue
        title = (
            f"window {i} (+{window.offset_s or 0:.1f} s): p50 {format_seconds(window.p50_s)}, "
            f"{format_ratio(ratio)} of the reference, n={window.n}"
        )
        points.append(SoakPoint(i, x(i), y(ratio), title, i == failing))
    ticks = tuple((y(v), format_ratio(v)) for v in sorted({min(seen), 1.0, max(seen)}) if v > 0)
    return SoakChart(
        width=_WIDTH,
        height=_HEIGHT,
        left=_LEFT,
        right=_WIDTH - _RIGHT,
        top=_TOP,
        bottom=_HEIGHT - _BOTTOM,
        points=tuple(points),
        polyline=" ".join(f"{p.x},{p.y}" for p in points),
        reference_x=round(_LEFT + reference * inner_w / n, 1),
        one_y=y(1.0),
        margin_y=y(margin) if margin is not None else None,
        fail_x=x(failing) if failing is not None else None,
        y_ticks=ticks,
        label=f"median latency per window ÷ the first {reference} windows, {n} windows",
    )


def soak_view(test: TestRecord) -> SoakView | None:
    """The timeline section of ``test`` (``None`` when it was not soaked)."""
    soak = test.soak
    if soak is None:
        return None
    finding = soak.finding
    failing = finding.window if finding is not None else None
    reference = soak.reference or 0
    status = ", ".join(f"{k} {v}" for k, v in sorted(soak.status.items()))
    probes, canary = soak.probe_share, soak.canary_share
    return SoakView(
        nodeid=test.nodeid,
        id_parts=id_parts(test.nodeid),
        decision=decision_name(test.decision),
        summary=soak_line(test) or "",
        finding=finding.reason if finding is not None else None,
        failing=failing,
        chart=_chart(soak, failing, reference),
        rows=tuple(_row(i, w, failing, reference) for i, w in enumerate(soak.windows)),
        status=status,
        notes=soak.notes,
        overhead=(
            f"host probes took {format_percent(probes)} of the soak"
            + (f" (the canary {format_percent(canary)})" if canary is not None else "")
            if probes is not None
            else ""
        ),
    )
