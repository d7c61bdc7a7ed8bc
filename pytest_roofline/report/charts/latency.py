"""Latency charts of one test: the ECDF of its samples and their timeline, baseline beside candidate."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_roofline.report.charts.axes import PlotBox, Scale, Tick, linear_ticks, positive
from pytest_roofline.report.format import format_seconds

__all__ = ["Guide", "LineChart", "Series", "ecdf_chart", "timeline_chart"]


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
    low, high = float(values.min()), float(values.max())
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
