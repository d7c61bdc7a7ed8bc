"""The log-log roofline chart: the target's roofs, each test a point, baseline → candidate arrows.

Nothing here decides anything: the chart plots what the run document says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_roofline.report.charts.axes import PlotBox, Scale, Tick, decades, log_ticks, positive
from pytest_roofline.report.format import si
from pytest_roofline.vocabulary import MEMORY_LEVELS, PRECISIONS

__all__ = ["POINT_RADIUS", "ChartPoint", "PointInput", "Roof", "RooflineChart", "roofline_chart"]


@dataclass(frozen=True, slots=True)
class PointInput:
    """A test as the roofline chart needs it (rates in FLOP/s, intensity in FLOP/byte)."""

    intensity: float | None
    achieved_flops_per_s: float | None
    baseline_intensity: float | None
    baseline_achieved_flops_per_s: float | None
    decision: str
    title: str
    href: str | None = None
    flagged: bool = False


@dataclass(frozen=True, slots=True)
class ChartPoint:
    """A plotted test and its baseline → candidate arrow (``None`` when there is none to draw).

    The arrow runs from ``base_x, base_y`` to ``tip_x, tip_y``, which stops short of the
    candidate's marker so the arrowhead stays visible.
    """

    x: float
    y: float
    decision: str
    title: str
    href: str | None
    base_x: float | None
    base_y: float | None
    tip_x: float | None
    tip_y: float | None
    flagged: bool


@dataclass(frozen=True, slots=True)
class Roof:
    """One roof segment (a compute ceiling or a bandwidth diagonal) and where its label goes."""

    kind: str  # "compute" or "memory"
    label: str
    x1: float
    y1: float
    x2: float
    y2: float
    label_x: float
    label_y: float
    angle: float
    used: bool


@dataclass(frozen=True, slots=True)
class RooflineChart:
    """Everything the template needs to draw the log-log roofline chart."""

    box: PlotBox
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    roofs: tuple[Roof, ...]
    points: tuple[ChartPoint, ...]
    unplaced: int


def _peaks(raw: Mapping[str, float], order: Sequence[str]) -> dict[str, float]:
    """The positive peaks of ``raw``, in the order tables list them."""
    return {
        name: raw[name]
        for name in sorted(raw, key=lambda n: order.index(n) if n in order else len(order))
        if positive(raw[name])
    }


def _spread_labels(ys: list[float], gap: float, top: float, bottom: float) -> list[float]:
    """Move label baselines apart so no two are closer than ``gap`` pixels (order kept)."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed = list(ys)
    previous = top - gap
    for i in order:
        placed[i] = max(placed[i], previous + gap)
        previous = placed[i]
    overflow = previous - bottom
    if overflow > 0:
        placed = [y - overflow for y in placed]
    return placed


def _compute_roofs(
    flops: Mapping[str, float],
    dram: float | None,
    x: Scale,
    y: Scale,
    box: PlotBox,
    used: set[str],
) -> list[Roof]:
    # Equal peaks (fp64 = fp32 on an H100, bf16 = fp16) are one line with a joint label.
    by_peak: dict[float, list[str]] = {}
    for precision, peak in flops.items():
        by_peak.setdefault(peak, []).append(precision)
    raw = []
    for peak, names in by_peak.items():
        start = x(max(peak / dram, x.low)) if dram else box.left
        unit = "OP/s" if all(n.startswith("int") for n in names) else "FLOP/s"
        label = f"{'/'.join(names)}  {si(peak, unit)}"
        raw.append((y(peak), start, label, bool(used & set(names))))
    label_ys = _spread_labels([r[0] - 4 for r in raw], 12, box.top + 10, box.bottom)
    return [
        Roof("compute", label, start, ypix, box.right, ypix, box.right - 4, ly, 0.0, is_used)
        for (ypix, start, label, is_used), ly in zip(raw, label_ys, strict=True)
    ]


def _memory_roofs(
    levels: Mapping[str, float],
    top_peak: float | None,
    x: Scale,
    y: Scale,
    box: PlotBox,
    used: set[str],
) -> list[Roof]:
    # In log-log space a bandwidth roof has slope 1; on screen its angle depends on the aspect.
    decades_x = math.log10(x.high / x.low)
    decades_y = math.log10(y.high / y.low)
    angle = -math.degrees(math.atan((box.inner_height / decades_y) / (box.inner_width / decades_x)))
    roofs = []
    for level, bandwidth in levels.items():
        x_start = max(x.low, y.low / bandwidth)
        x_end = min(x.high, (top_peak if top_peak else y.high) / bandwidth)
        if x_end <= x_start:
            continue
        x1, y1, x2, y2 = x(x_start), y(bandwidth * x_start), x(x_end), y(bandwidth * x_end)
        # The label sits a fifth of the way up the diagonal, just above it.
        lx, ly = x1 + 0.2 * (x2 - x1), y1 + 0.2 * (y2 - y1) - 6
        roofs.append(
            Roof(
                "memory",
                f"{level}  {si(bandwidth, 'B/s')}",
                x1,
                y1,
                x2,
                y2,
                round(lx, 1),
                round(ly, 1),
                round(angle, 1),
                level in used,
            )
        )
    return roofs


def _intensity_label(value: float) -> str:
    # "0.01" reads as an intensity; "10 m" (milli-FLOP per byte) does not.
    return f"{value:g}" if 1e-4 <= value < 1e4 else si(value, "").strip()


#: Radius of a test's marker; arrows stop this far (plus a gap) from the candidate point.
POINT_RADIUS = 4.5


def _chart_point(p: PointInput, x: Scale, y: Scale) -> ChartPoint:
    cx, cy = x(p.intensity), y(p.achieved_flops_per_s)  # type: ignore[arg-type]
    base: tuple[float | None, float | None] = (None, None)
    tip = base
    if positive(p.baseline_intensity) and positive(p.baseline_achieved_flops_per_s):
        bx, by = x(p.baseline_intensity), y(p.baseline_achieved_flops_per_s)  # type: ignore[arg-type]
        length = math.hypot(cx - bx, cy - by)
        stop = POINT_RADIUS + 2.0
        # An arrow shorter than its own head says nothing: the point did not move visibly.
        if length > stop + 4.0:
            share = (length - stop) / length
            base = (bx, by)
            tip = (round(bx + share * (cx - bx), 1), round(by + share * (cy - by), 1))
    return ChartPoint(
        cx, cy, p.decision, p.title, p.href, base[0], base[1], tip[0], tip[1], p.flagged
    )


def roofline_chart(
    peak_flops_per_s: Mapping[str, float],
    peak_bytes_per_s: Mapping[str, float],
    points: Sequence[PointInput],
    *,
    used_precisions: Sequence[str] = (),
    used_levels: Sequence[str] = ("dram",),
    width: float = 960,
    height: float = 520,
) -> RooflineChart | None:
    """Lay out a log-log roofline chart of ``points`` under the target's roofs.

    Axes span whole decades around every point, baseline point and roof. Tests without a
    positive finite intensity and achieved FLOP/s cannot be drawn on log axes and are counted
    in ``unplaced``. Returns ``None`` when there is nothing at all to draw.
    """
    flops = _peaks(peak_flops_per_s, PRECISIONS)
    levels = _peaks(peak_bytes_per_s, MEMORY_LEVELS)
    drawable = [p for p in points if positive(p.intensity) and positive(p.achieved_flops_per_s)]
    if not drawable and not (flops and levels):
        return None
    xs: list[float] = []
    ys: list[float] = []
    for p in drawable:
        xs.append(p.intensity)  # type: ignore[arg-type]  # checked by _positive
        ys.append(p.achieved_flops_per_s)  # type: ignore[arg-type]
        if positive(p.baseline_intensity) and positive(p.baseline_achieved_flops_per_s):
            xs.append(p.baseline_intensity)  # type: ignore[arg-type]
            ys.append(p.baseline_achieved_flops_per_s)  # type: ignore[arg-type]
    dram = levels.get("dram")
    if flops:
        ys.extend(flops.values())
        if dram:
            xs.extend(peak / dram for peak in flops.values())
    if not xs:
        xs = [0.1, 100.0]
    box = PlotBox(width, height, left=78, top=18, right=width - 190, bottom=height - 52)
    x_low, x_high = decades(xs, mindecades=3)
    y_low, y_high = decades(ys, mindecades=3)
    x = Scale(x_low, x_high, box.left, box.right, log=True)
    y = Scale(y_low, y_high, box.bottom, box.top, log=True)
    roofs = _memory_roofs(levels, max(flops.values(), default=None), x, y, box, set(used_levels))
    roofs += _compute_roofs(flops, dram, x, y, box, set(used_precisions))
    plotted = [_chart_point(p, x, y) for p in drawable]
    # Ship points first, so the points a reviewer must look at are drawn on top.
    rank = {"ship": 0, "undecided": 1, "escalate": 2, "rollback": 3}
    plotted.sort(key=lambda c: rank.get(c.decision, 1))
    return RooflineChart(
        box=box,
        x_ticks=log_ticks(x, _intensity_label),
        y_ticks=log_ticks(y, lambda v: si(v, "", digits=3).strip()),
        roofs=tuple(roofs),
        points=tuple(plotted),
        unplaced=len(points) - len(drawable),
    )
