"""Axes for the report's SVG charts: the plotting box, scales (linear or log10) and ticks.

Plain arithmetic on floats; the templates draw the SVG from these values, so no markup is built
in Python and every label still goes through Jinja's autoescape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PlotBox", "Scale", "Tick", "decades", "linear_ticks", "log_ticks", "positive"]


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
class Scale:
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


def linear_ticks(scale: Scale, fmt: Callable[[float], str], count: int = 5) -> tuple[Tick, ...]:
    step = _nice_step(scale.high - scale.low, count)
    first = math.ceil(scale.low / step) * step
    ticks = []
    value = first
    while value <= scale.high + step * 1e-9:
        ticks.append(Tick(scale(value), fmt(value)))
        value += step
    return tuple(ticks)


def log_ticks(scale: Scale, fmt: Callable[[float], str], most: int = 8) -> tuple[Tick, ...]:
    low, high = math.floor(math.log10(scale.low)), math.ceil(math.log10(scale.high))
    every = max(1, math.ceil((high - low) / most))
    return tuple(
        Tick(scale(10.0**k), fmt(10.0**k))
        for k in range(low, high + 1, every)
        if scale.low * (1 - 1e-9) <= 10.0**k <= scale.high * (1 + 1e-9)
    )


def decades(values: Sequence[float], *, mindecades: int = 2) -> tuple[float, float]:
    """A log axis range: whole decades around ``values``, at least ``mindecades`` wide."""
    low = math.floor(math.log10(min(values)))
    high = math.ceil(math.log10(max(values)))
    if high == low:
        high += 1
    while high - low < mindecades:
        low -= 1
        if high - low < mindecades:
            high += 1
    return 10.0**low, 10.0**high


def positive(value: float | None) -> bool:
    """Whether ``value`` can be drawn on a log axis: a positive finite number."""
    return value is not None and math.isfinite(value) and value > 0
