"""Latency charts of one test: the ECDF of its samples and their timeline, baseline beside candidate."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_roofline.report.charts.axes import PlotBox, Scale, Tick, linear_ticks, positive
from pytest_roofline.report.format import format_seconds

__all__ = [
    "SKETCH_FRAME",
    "Guide",
    "LineChart",
    "Series",
    "Sketch",
    "SketchFrame",
    "ecdf_chart",
    "ecdf_sketch",
    "sketch_frame",
    "timeline_chart",
]


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


def _finite_positive(values: Sequence[float | None] | None) -> np.ndarray:
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


def _seconds_scale(values: np.ndarray, pixel_low: float, pixel_high: float) -> Scale:
    return _seconds_range(float(values.min()), float(values.max()), pixel_low, pixel_high)


def _seconds_range(low: float, high: float, pixel_low: float, pixel_high: float) -> Scale:
    """The axis for positive durations from ``low`` to ``high``, padded a little."""
    # A log axis when the tail is long: a linear one would squash the body into a few pixels.
    if high / low > 8:
        return Scale(low * 0.9, high * 1.1, pixel_low, pixel_high, log=True)
    pad = (high - low) * 0.05 or low * 0.05
    return Scale(max(low - pad, 0.0), high + pad, pixel_low, pixel_high, log=False)


def _seconds_ticks(scale: Scale) -> tuple[Tick, ...]:
    if not scale.log:
        return linear_ticks(scale, format_seconds, count=5)
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
    candidate: Sequence[float | None] | None,
    baseline: Sequence[float | None] | None,
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
    y = Scale(0.0, top, box.bottom, box.top, log=False)
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
    candidate: Sequence[float | None] | None,
    *,
    references: Mapping[str, float | None] | None = None,
    width: float = 640,
    height: float = 240,
) -> LineChart | None:
    """Samples (seconds) in sample order, with horizontal reference lines (e.g. baseline p95)."""
    cand = _finite_positive(candidate)
    if not cand.size:
        return None
    refs = {k: float(v) for k, v in (references or {}).items() if v is not None and positive(v)}
    box = PlotBox(width, height, left=52, top=12, right=width - 24, bottom=height - 40)
    x = Scale(0.0, float(max(cand.size - 1, 1)), box.left, box.right, log=False)
    y = _seconds_scale(np.concatenate([cand, list(refs.values())]), box.bottom, box.top)
    guides = tuple(
        Guide(box.left, y(v), box.right, y(v), name, box.right - 4, y(v) - 3, "g-ref")
        for name, v in refs.items()
    )
    ticks = _seconds_ticks(y)
    return LineChart(
        box=box,
        x_ticks=linear_ticks(x, lambda v: f"{v:.0f}", count=4),
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


@dataclass(frozen=True, slots=True)
class SketchFrame:
    """What every row's sketch shares: the canvas, and the p50/p95/p99 levels on its fixed axis.

    The vertical axis of every sketch runs from 0 to p99.9 on the tail-stretched scale, so the
    frame is drawn the same way in every row and written once per page.
    """

    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    guides: str
    levels: tuple[Tick, ...]


@dataclass(frozen=True, slots=True)
class Sketch:
    """A row's small ECDF: a couple of dozen points per side and the ends of its latency axis.

    Small on purpose: every row of a 1000-test report carries one, so it stays under a
    kilobyte. The memo of a test that does not ship draws the full chart (:func:`ecdf_chart`).
    """

    series: tuple[Series, ...]
    low: str
    high: str
    label: str


#: Points per side of a row's sketch: enough for the shape of the distribution and its tail.
SKETCH_POINTS = 20
#: The sketch's vertical reach on the tail-stretched axis: p99.9.
_SKETCH_REACH = 3.0
SKETCH_FRAME: SketchFrame
"""The frame every sketch is drawn in (:func:`sketch_frame`)."""


def sketch_frame(width: float = 240, height: float = 76) -> SketchFrame:
    """The shared frame of the rows' sketches (``width`` × ``height`` pixels)."""
    left, right, top, bottom = 4.0, width - 4.0, 4.0, height - 15.0
    y = Scale(0.0, _SKETCH_REACH, bottom, top, log=False)
    levels = tuple(
        Tick(round(y(_tail(q)), 1), name)
        for q, name in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99"))
    )
    guides = "".join(f"M{left:g} {t.pos:g}H{right:g}" for t in levels)
    return SketchFrame(width, height, left, right, top, bottom, guides, levels)


SKETCH_FRAME = sketch_frame()
_SKETCH_TAILS = np.linspace(0.0, _SKETCH_REACH, SKETCH_POINTS)
_SKETCH_SHARES = 1.0 - 10.0 ** (-_SKETCH_TAILS)


def _sorted_positive(values: Sequence[float | None] | None) -> np.ndarray:
    """The positive finite samples of ``values``, sorted (:func:`_finite_positive`, faster for
    the plain floats a document holds: every row of a large report needs it)."""
    if not values:
        return np.empty(0)
    try:
        array = np.fromiter(values, np.float64, len(values))
    except (TypeError, ValueError):
        return np.sort(_finite_positive(values))
    array.sort()
    # Sorted, the non-positive values come first and NaN last, with +inf just before it.
    first = int(np.searchsorted(array, 0.0, side="right"))
    end = int(np.searchsorted(array, np.inf, side="left"))
    return array[first:end]


@functools.lru_cache(maxsize=64)
def _sketch_ranks(n: int, bottom: float, top: float) -> tuple[np.ndarray, tuple[int, ...]]:
    """The order statistics a side of ``n`` samples is drawn through, and their heights.

    The order statistic of rank k sits at share k / (n + 1); levels past n / (n + 1) are beyond
    the largest sample and are left out. Cached: a report has a few distinct sample counts.
    """
    ranks = np.ceil(_SKETCH_SHARES * (n + 1)).astype(np.int64)
    usable = ranks <= n
    y = Scale(0.0, _SKETCH_REACH, bottom, top, log=False)
    heights = np.rint(y.many(_SKETCH_TAILS[usable])).astype(np.int64)
    return np.maximum(ranks[usable], 1) - 1, tuple(heights.tolist())


def ecdf_sketch(
    candidate: Sequence[float | None] | None,
    baseline: Sequence[float | None] | None,
    *,
    frame: SketchFrame = SKETCH_FRAME,
) -> Sketch | None:
    """The ECDF of candidate and baseline samples, drawn small in ``frame``.

    The vertical axis is ``-log10(1 - F)`` as in :func:`ecdf_chart`, up to p99.9; each side is
    drawn through its order statistics at :data:`SKETCH_POINTS` levels evenly spaced on that
    axis (plotting positions ``rank / (n + 1)``), so the tail gets as many points as the body,
    and a side stops at its largest sample.
    """
    cand = _sorted_positive(candidate)
    base = _sorted_positive(baseline)
    if not cand.size:
        return None
    low_s = float(min(cand[0], base[0])) if base.size else float(cand[0])
    high_s = float(max(cand[-1], base[-1])) if base.size else float(cand[-1])
    x = _seconds_range(low_s, high_s, frame.left, frame.right)
    series = []
    for values, cls, name in ((base, "s-baseline", "baseline"), (cand, "s-candidate", "candidate")):
        n = values.size
        if not n:
            continue
        indices, heights = _sketch_ranks(n, frame.bottom, frame.top)
        xs = np.rint(x.many(values[indices])).astype(np.int64).tolist()
        points = " ".join(f"{a},{b}" for a, b in zip(xs, heights, strict=True))
        series.append(Series(points, cls, f"{name} (n={n})"))
    low, high = format_seconds(low_s), format_seconds(high_s)
    return Sketch(
        series=tuple(series),
        low=low,
        high=high,
        label="ECDF of per-call latency: "
        + ", ".join(s.label for s in series)
        + f", {low} to {high}",
    )
