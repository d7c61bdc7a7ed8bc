"""Chart geometry and number labels for the HTML report: numbers in, coordinates and text out.

Everything here is plain arithmetic on floats. The templates draw the SVG from these values, so
no markup is built in Python and every label still goes through Jinja's autoescape. Nothing here
decides anything: the roofline chart plots what the JSON document says, the platform matrix
projects declared work onto preset roofs with the same formula as :mod:`pytest_roofline.roofline`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_roofline.units import format_seconds
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.roofline import DEFAULT_PRECISION, MEMORY_LEVELS, PRECISIONS, DeclaredWork

__all__ = [
    "ChartPoint",
    "Guide",
    "LineChart",
    "MatrixCell",
    "PlotBox",
    "PointInput",
    "Roof",
    "RooflineChart",
    "Series",
    "Tick",
    "ecdf_chart",
    "format_interval",
    "format_percent",
    "format_ratio",
    "platform_cell",
    "roofline_chart",
    "si",
    "timeline_chart",
]

_SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


# --------------------------------------------------------------------------- number labels
def si(value: float | None, unit: str, *, digits: int = 3) -> str:
    """``value`` with an SI prefix and ``unit`` (``"67 TFLOP/s"``); ``"n/a"`` for no value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    for factor, prefix in _SI_PREFIXES:
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.{digits}g} {unit}"
    for factor, prefix in ((1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


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


# --------------------------------------------------------------------------- shared geometry
@dataclass(frozen=True, slots=True)
class PlotBox:
    """The SVG canvas and the plotting area inside it, in pixels."""

    width: float
    height: float
    left: float
    top: float
    right: float
    bottom: float

    @property
    def inner_width(self) -> float:
        return self.right - self.left

    @property
    def inner_height(self) -> float:
        return self.bottom - self.top


@dataclass(frozen=True, slots=True)
class Tick:
    """One axis tick: its pixel position along the axis and its label."""

    pos: float
    label: str


@dataclass(frozen=True, slots=True)
class _Scale:
    """Maps data values to pixels along one axis, linearly or by log10."""

    low: float
    high: float
    pixel_low: float
    pixel_high: float
    log: bool

    def __call__(self, value: float) -> float:
        low, high, v = self.low, self.high, value
        if self.log:
            low, high, v = math.log10(low), math.log10(high), math.log10(max(value, 1e-300))
        share = (v - low) / (high - low) if high > low else 0.5
        return round(self.pixel_low + share * (self.pixel_high - self.pixel_low), 1)

    def many(self, values: np.ndarray) -> np.ndarray:
        """Vectorised ``__call__`` (unrounded): charts of hundreds of samples per test."""
        low, high, v = self.low, self.high, values
        if self.log:
            low, high = math.log10(low), math.log10(high)
            v = np.log10(np.maximum(values, 1e-300))
        share = (v - low) / (high - low) if high > low else np.full_like(v, 0.5)
        return np.asarray(self.pixel_low + share * (self.pixel_high - self.pixel_low))


def _nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def _linear_ticks(scale: _Scale, fmt: Callable[[float], str], count: int = 5) -> tuple[Tick, ...]:
    step = _nice_step(scale.high - scale.low, count)
    first = math.ceil(scale.low / step) * step
    ticks = []
    value = first
    while value <= scale.high + step * 1e-9:
        ticks.append(Tick(scale(value), fmt(value)))
        value += step
    return tuple(ticks)


def _log_ticks(scale: _Scale, fmt: Callable[[float], str], most: int = 8) -> tuple[Tick, ...]:
    low, high = math.floor(math.log10(scale.low)), math.ceil(math.log10(scale.high))
    every = max(1, math.ceil((high - low) / most))
    return tuple(
        Tick(scale(10.0**k), fmt(10.0**k))
        for k in range(low, high + 1, every)
        if scale.low * (1 - 1e-9) <= 10.0**k <= scale.high * (1 + 1e-9)
    )


def _decades(values: Sequence[float], *, min_decades: int = 2) -> tuple[float, float]:
    """A log axis range: whole decades around ``values``, at least ``min_decades`` wide."""
    low = math.floor(math.log10(min(values)))
    high = math.ceil(math.log10(max(values)))
    if high == low:
        high += 1
    while high - low < min_decades:
        low -= 1
        if high - low < min_decades:
            high += 1
    return 10.0**low, 10.0**high


# --------------------------------------------------------------------------- roofline chart
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


def _positive(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def _peaks(target: Mapping[str, object] | None, key: str, order: Sequence[str]) -> dict[str, float]:
    raw = target.get(key) if target is not None else None
    if not isinstance(raw, Mapping):
        return {}
    peaks = {}
    for name in sorted(raw, key=lambda n: order.index(n) if n in order else len(order)):
        value = raw[name]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and _positive(value):
            peaks[str(name)] = float(value)
    return peaks


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
    x: _Scale,
    y: _Scale,
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
    x: _Scale,
    y: _Scale,
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


def _chart_point(p: PointInput, x: _Scale, y: _Scale) -> ChartPoint:
    cx, cy = x(p.intensity), y(p.achieved_flops_per_s)  # type: ignore[arg-type]
    base: tuple[float | None, float | None] = (None, None)
    tip = base
    if _positive(p.baseline_intensity) and _positive(p.baseline_achieved_flops_per_s):
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
    target: Mapping[str, object] | None,
    points: Sequence[PointInput],
    *,
    used_precisions: Sequence[str] = (),
    used_levels: Sequence[str] = ("dram",),
    width: float = 960,
    height: float = 520,
) -> RooflineChart | None:
    """Lay out a log-log roofline chart of ``points`` under ``target``'s roofs.

    Axes span whole decades around every point, baseline point and roof. Tests without a
    positive finite intensity and achieved FLOP/s cannot be drawn on log axes and are counted
    in ``unplaced``. Returns ``None`` when there is nothing at all to draw.
    """
    flops = _peaks(target, "peak_flops_per_s", PRECISIONS)
    levels = _peaks(target, "peak_bytes_per_s", MEMORY_LEVELS)
    drawable = [p for p in points if _positive(p.intensity) and _positive(p.achieved_flops_per_s)]
    if not drawable and not (flops and levels):
        return None
    xs: list[float] = []
    ys: list[float] = []
    for p in drawable:
        xs.append(p.intensity)  # type: ignore[arg-type]  # checked by _positive
        ys.append(p.achieved_flops_per_s)  # type: ignore[arg-type]
        if _positive(p.baseline_intensity) and _positive(p.baseline_achieved_flops_per_s):
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
    x_low, x_high = _decades(xs, min_decades=3)
    y_low, y_high = _decades(ys, min_decades=3)
    x = _Scale(x_low, x_high, box.left, box.right, log=True)
    y = _Scale(y_low, y_high, box.bottom, box.top, log=True)
    roofs = _memory_roofs(levels, max(flops.values(), default=None), x, y, box, set(used_levels))
    roofs += _compute_roofs(flops, dram, x, y, box, set(used_precisions))
    plotted = [_chart_point(p, x, y) for p in drawable]
    # Ship points first, so the points a reviewer must look at are drawn on top.
    rank = {"ship": 0, "undecided": 1, "escalate": 2, "rollback": 3}
    plotted.sort(key=lambda c: rank.get(c.decision, 1))
    return RooflineChart(
        box=box,
        x_ticks=_log_ticks(x, _intensity_label),
        y_ticks=_log_ticks(y, lambda v: si(v, "", digits=3).strip()),
        roofs=tuple(roofs),
        points=tuple(plotted),
        unplaced=len(points) - len(drawable),
    )


# --------------------------------------------------------------------------- ECDF, timeline
@dataclass(frozen=True, slots=True)
class Series:
    """One polyline: SVG ``points`` (``"x,y x,y ..."``), a CSS class and a legend label."""

    points: str
    cls: str
    label: str


@dataclass(frozen=True, slots=True)
class Guide:
    """A reference line (a quantile level, a baseline value) with its label."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str
    label_x: float
    label_y: float
    cls: str


@dataclass(frozen=True, slots=True)
class LineChart:
    """A small chart of polylines with axes and reference lines."""

    box: PlotBox
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    series: tuple[Series, ...]
    guides: tuple[Guide, ...]
    x_label: str
    y_label: str


def _finite_positive(values: Sequence[float] | None) -> np.ndarray:
    """The positive finite samples of ``values`` (anything else in a document is skipped)."""
    if not values:
        return np.empty(0)
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.asarray(
            [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)],
            dtype=np.float64,
        )
    if array.ndim != 1:
        return np.empty(0)
    return array[np.isfinite(array) & (array > 0)]


def _seconds_scale(values: np.ndarray, pixel_low: float, pixel_high: float) -> _Scale:
    low, high = float(values.min()), float(values.max())
    # A log axis when the tail is long: a linear one would squash the body into a few pixels.
    if high / low > 8:
        return _Scale(low * 0.9, high * 1.1, pixel_low, pixel_high, log=True)
    pad = (high - low) * 0.05 or low * 0.05
    return _Scale(max(low - pad, 0.0), high + pad, pixel_low, pixel_high, log=False)


def _seconds_ticks(scale: _Scale) -> tuple[Tick, ...]:
    if not scale.log:
        return _linear_ticks(scale, format_seconds, count=5)
    # 1-2-5 steps inside the range read better than decades alone on a one-decade axis.
    low, high = math.floor(math.log10(scale.low)), math.ceil(math.log10(scale.high))
    for mantissas in ((1.0, 2.0, 5.0), (1.0,)):
        values = [
            m * 10.0**k
            for k in range(low, high + 1)
            for m in mantissas
            if scale.low <= m * 10.0**k <= scale.high
        ]
        if len(values) <= 7:
            break
    if len(values) >= 2:
        return tuple(Tick(scale(v), format_seconds(v)) for v in values)
    # Less than two ticks inside: label the ends, which a reader needs to read values off.
    return tuple(Tick(scale(v), format_seconds(v)) for v in (scale.low, scale.high))


def _polyline(xs: np.ndarray, ys: np.ndarray) -> str:
    """SVG polyline points in whole pixels, dropping repeats: finer steps are invisible."""
    px = np.rint(xs).astype(np.int64)
    py = np.rint(ys).astype(np.int64)
    keep = np.ones(px.size, dtype=bool)
    keep[1:] = (px[1:] != px[:-1]) | (py[1:] != py[:-1])
    return " ".join(f"{a},{b}" for a, b in zip(px[keep].tolist(), py[keep].tolist(), strict=True))


#: Percentile levels labelled on the ECDF's tail-stretched axis.
_ECDF_LEVELS = (
    (0.0, "0"),
    (0.5, "p50"),
    (0.9, "p90"),
    (0.95, "p95"),
    (0.99, "p99"),
    (0.999, "p99.9"),
)


def _tail(share: float) -> float:
    """The ECDF's vertical coordinate: -log10(1 - F), so p90, p99, p99.9 are equally spaced."""
    return -math.log10(1.0 - share)


def ecdf_chart(
    candidate: Sequence[float] | None,
    baseline: Sequence[float] | None,
    *,
    width: float = 640,
    height: float = 240,
) -> LineChart | None:
    """ECDF of candidate and baseline samples (seconds) on a tail-stretched vertical axis.

    The vertical axis is ``-log10(1 - F)`` with ticks at p50, p90, p95, p99: on a linear axis
    the tail that the gate judges would occupy the top few pixels. Plotting positions are
    ``rank / (n + 1)``, so the largest sample stays finite.
    """
    cand = np.sort(_finite_positive(candidate))
    base = np.sort(_finite_positive(baseline))
    if not cand.size:
        return None
    box = PlotBox(width, height, left=52, top=12, right=width - 24, bottom=height - 40)
    x = _seconds_scale(np.concatenate([cand, base]), box.left, box.right)
    top = max(2.0, math.log10(max(cand.size, base.size) + 1))
    y = _Scale(0.0, top, box.bottom, box.top, log=False)
    series = []
    for values, cls, label in (
        (base, "s-baseline", "baseline"),
        (cand, "s-candidate", "candidate"),
    ):
        if not values.size:
            continue
        n = values.size
        tail = -np.log10(1.0 - np.arange(1, n + 1) / (n + 1))
        series.append(Series(_polyline(x.many(values), y.many(tail)), cls, f"{label} (n={n})"))
    guides = tuple(
        Guide(box.left, y(_tail(q)), box.right, y(_tail(q)), "", box.left, y(_tail(q)), "g-level")
        for q in (0.95, 0.99)
    )
    return LineChart(
        box=box,
        x_ticks=_seconds_ticks(x),
        y_ticks=tuple(Tick(y(_tail(q)), name) for q, name in _ECDF_LEVELS if _tail(q) <= top),
        series=tuple(series),
        guides=guides,
        x_label="latency per call",
        y_label="share of samples ≤ x (percentile)",
    )


def timeline_chart(
    candidate: Sequence[float] | None,
    *,
    references: Mapping[str, float | None] | None = None,
    width: float = 640,
    height: float = 240,
) -> LineChart | None:
    """Samples (seconds) in sample order, with horizontal reference lines (e.g. baseline p95)."""
    cand = _finite_positive(candidate)
    if not cand.size:
        return None
    refs = {k: float(v) for k, v in (references or {}).items() if v is not None and _positive(v)}
    box = PlotBox(width, height, left=52, top=12, right=width - 24, bottom=height - 40)
    x = _Scale(0.0, float(max(cand.size - 1, 1)), box.left, box.right, log=False)
    y = _seconds_scale(np.concatenate([cand, list(refs.values())]), box.bottom, box.top)
    guides = tuple(
        Guide(box.left, y(v), box.right, y(v), name, box.right - 4, y(v) - 3, "g-ref")
        for name, v in refs.items()
    )
    ticks = _seconds_ticks(y)
    return LineChart(
        box=box,
        x_ticks=_linear_ticks(x, lambda v: f"{v:.0f}", count=4),
        y_ticks=ticks,
        series=(
            Series(
                _polyline(x.many(np.arange(cand.size, dtype=np.float64)), y.many(cand)),
                "s-candidate",
                f"candidate (n={cand.size})",
            ),
        ),
        guides=guides,
        x_label="sample (in order taken)",
        y_label="latency",
    )


# --------------------------------------------------------------------------- platform matrix
@dataclass(frozen=True, slots=True)
class MatrixCell:
    """Declared work projected onto one target: time at the roof and the bound class there."""

    seconds: float | None
    time: str
    bound: str


def platform_cell(target: HardwareTarget, work: DeclaredWork) -> MatrixCell:
    """Project ``work`` onto ``target``: time at the roof and the class the work would have.

    Time at the roof = ``max(flops / peak FLOP/s[precision], bytes / peak bytes/s[dram])``, the
    roofline model's lower bound on one call. The class comes from :meth:`HardwareTarget.place`
    at that time (efficiency 1, so never ``overhead``). A precision the target has no roof for
    gives ``"n/a"``.
    """
    precision = work.precision or DEFAULT_PRECISION
    peak_flops = target.peak_flops_per_s.get(precision)
    peak_bytes = target.peak_bytes_per_s.get("dram")
    if work.flops and peak_flops is None:
        return MatrixCell(None, "n/a", "n/a")
    times = []
    if work.flops and peak_flops:
        times.append(work.flops / peak_flops)
    if work.bytes_moved and peak_bytes:
        times.append(work.bytes_moved / peak_bytes)
    if not times:
        return MatrixCell(None, "n/a", "n/a")
    seconds = max(times)
    point = target.place(work, seconds)
    return MatrixCell(seconds, format_seconds(seconds), point.bound)
