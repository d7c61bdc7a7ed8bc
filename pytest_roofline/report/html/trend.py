"""A trend strip per test: p50/p95/p99 with intervals over a label's last runs, steps marked.

Small, collapsed by default (``<details>`` without ``open``) and readable without JavaScript:
three inline SVG panels (one per quantile) on a log time axis, one dot per run with its 95%
interval as a vertical bar, a dashed line before the first run after each step (its title says
the step's size and commits), and a triangle where the bound class changed. Every text that
comes from a run (node ids, commits, bound classes) is escaped. The renderer reads only the
values given (:class:`TrendStrip`), as every renderer does; building one from the store's series
and the history analysis is the caller's (``pytest_roofline.cli.history``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_roofline.report.format import format_seconds

__all__ = ["TrendMark", "TrendStrip", "trend_page", "trend_strip_html"]

_WIDTH, _HEIGHT, _PAD = 360, 64, 4


@dataclass(frozen=True, slots=True)
class TrendMark:
    """A mark at run position ``index`` (of the strip's runs): a step or a bound-class change."""

    index: int
    kind: str  # "step" or "bound"
    text: str


@dataclass(frozen=True, slots=True)
class TrendStrip:
    """One test over the last runs of a label, oldest first.

    ``values_s[q]``, ``low_s[q]``, ``high_s[q]`` for ``q`` in ``p50``, ``p95``, ``p99``: per run,
    ``None`` where the run has no value (or no interval). ``run_labels`` name each run (``#12``).
    """

    nodeid: str
    run_labels: tuple[str, ...]
    values_s: dict[str, tuple[float | None, ...]]
    low_s: dict[str, tuple[float | None, ...]]
    high_s: dict[str, tuple[float | None, ...]]
    marks: tuple[TrendMark, ...] = ()


def _finite(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def _panel(strip: TrendStrip, quantile: str) -> str:
    values = strip.values_s.get(quantile, ())
    lows = strip.low_s.get(quantile, ())
    highs = strip.high_s.get(quantile, ())
    seen = _finite([*values, *lows, *highs])
    n = len(strip.run_labels)
    if not seen or n == 0:
        return f'<p class="trend-empty">{quantile}: no values</p>'
    lo, hi = math.log(min(seen)), math.log(max(seen))
    span = hi - lo if hi > lo else 1.0

    def x(i: int) -> float:
        return _PAD + (i + 0.5) * (_WIDTH - 2 * _PAD) / n

    def y(v: float) -> float:
        return _HEIGHT - _PAD - (math.log(v) - lo) / span * (_HEIGHT - 2 * _PAD)

    parts = [
        f'<svg class="trend-panel" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" role="img" aria-label="{quantile} over {n} runs">'
    ]
    for mark in strip.marks:
        if not 0 <= mark.index < n:
            continue
        title = f"<title>{html.escape(mark.text)}</title>"
        if mark.kind == "step":
            mx = x(mark.index) - (_WIDTH - 2 * _PAD) / n / 2
            parts.append(
                f'<line class="trend-step" x1="{mx:.1f}" y1="0" x2="{mx:.1f}" y2="{_HEIGHT}" '
                f'stroke="#b45309" stroke-dasharray="3 2">{title}</line>'
            )
        else:
            cx = x(mark.index)
            parts.append(
                f'<path class="trend-bound" d="M{cx:.1f},0 l4,6 h-8 z" fill="#7c3aed">{title}</path>'
            )
    for i, label in enumerate(strip.run_labels):
        value = values[i] if i < len(values) else None
        if value is None or not math.isfinite(value) or value <= 0:
            continue
        low = lows[i] if i < len(lows) else None
        high = highs[i] if i < len(highs) else None
        text = f"{label}: {quantile} {format_seconds(value)}"
        if low is not None and high is not None and low > 0 and high > 0:
            text += f" [{format_seconds(low)}, {format_seconds(high)}]"
            parts.append(
                f'<line x1="{x(i):.1f}" y1="{y(high):.1f}" x2="{x(i):.1f}" y2="{y(low):.1f}" '
                'stroke="#94a3b8" stroke-width="2"/>'
            )
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(value):.1f}" r="2.2" fill="#1e3a8a">'
            f"<title>{html.escape(text)}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def trend_strip_html(strip: TrendStrip) -> str:
    """The strip as one collapsed ``<details>`` element (no script, inline SVG)."""
    steps = sum(1 for m in strip.marks if m.kind == "step")
    bounds = sum(1 for m in strip.marks if m.kind == "bound")
    summary = f"{strip.nodeid}: {len(strip.run_labels)} runs"
    if steps:
        summary += f", {steps} step{'s' if steps > 1 else ''}"
    if bounds:
        summary += f", bound class changed {bounds}x"
    rows = "".join(
        f'<div class="trend-row"><span class="trend-q">{q}</span>{_panel(strip, q)}</div>'
        for q in ("p50", "p95", "p99")
    )
    marks = "".join(f"<li>{html.escape(m.text)}</li>" for m in strip.marks)
    listing = f'<ul class="trend-marks">{marks}</ul>' if marks else ""
    return (
        f'<details class="trend"><summary>{html.escape(summary)}</summary>{rows}{listing}</details>'
    )


def trend_page(title: str, strips: Sequence[TrendStrip], lines: Sequence[str] = ()) -> str:
    """A small self-contained page of strips (``pytest-roofline history --html``)."""
    head = f"<pre>{html.escape(chr(10).join(lines))}</pre>" if lines else ""
    body = "".join(trend_strip_html(s) for s in strips) or "<p>no tests</p>"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>"
        "body{font:14px system-ui,sans-serif;margin:1.5em;color:#0f172a}"
        "details.trend{margin:.3em 0}summary{cursor:pointer}"
        ".trend-row{display:flex;align-items:center;gap:.5em}.trend-q{width:2.5em;color:#475569}"
        "</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{head}{body}</body></html>\n"
    )
