"""A trend strip per test: p50/p95/p99 with intervals over a label's last runs, steps marked.

Small, collapsed by default (``<details>`` without ``open``) and readable without JavaScript:
three inline SVG panels (one per quantile) on a log time axis, one dot per run with its 95%
interval as a vertical bar, a dashed line before the first run after each step (its title says
the step's size and commits), a triangle where the bound class changed, and this run (the
signoff report's strips end with it) as a larger ringed dot. Every text that comes from a run
(node ids, commits, bound classes) is escaped. The renderer reads only the values given
(:class:`TrendStrip`), as every renderer does; :func:`strip_of_record` builds one from a run
document's ``run.trend`` and ``tests[].trend`` (the signoff report), and
``pytest_roofline.cli.history`` builds them from the store's series and the history analysis.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_roofline.model.document import TestTrendRecord, TrendRunsRecord
from pytest_roofline.report.format import format_seconds

__all__ = ["TrendMark", "TrendStrip", "strip_of_record", "trend_page", "trend_strip_html"]

_QUANTILES = ("p50", "p95", "p99")

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
    ``current`` is the position of this run (drawn marked), if it is among them.
    """

    nodeid: str
    run_labels: tuple[str, ...]
    values_s: dict[str, tuple[float | None, ...]]
    low_s: dict[str, tuple[float | None, ...]]
    high_s: dict[str, tuple[float | None, ...]]
    marks: tuple[TrendMark, ...] = ()
    current: int | None = None


def _percent(ratio: float | None) -> str:
    return "?" if ratio is None or not math.isfinite(ratio) else f"{(ratio - 1.0) * 100:+.1f}%"


def strip_of_record(nodeid: str, runs: TrendRunsRecord, trend: TestTrendRecord) -> TrendStrip:
    """The strip of one test of a run document: its ``tests[].trend`` over ``run.trend.runs``.

    Columns shorter than the runs (a damaged document) read as runs without a value.
    """
    n = len(runs.runs)

    def column(name: str) -> tuple[float | None, ...]:
        values = trend.column(name)[:n]
        return (*values, *([None] * (n - len(values))))

    labels = tuple(
        "this run"
        if run.current
        else (f"#{run.run_id}" if run.run_id is not None else "?")
        + (f" ({run.commit[:10]})" if run.commit else "")
        for run in runs.runs
    )
    marks: list[TrendMark] = []
    for step in trend.steps:
        if step.index is None or not 0 <= step.index < n:
            continue
        low, high = step.ci if step.ci is not None else (None, None)
        state = "" if step.confirmed else " (not confirmed)"
        layer = (
            f", first failing layer {step.first_failing_layer}" if step.first_failing_layer else ""
        )
        marks.append(
            TrendMark(
                step.index,
                "step",
                f"{step.quantile or '?'} step {_percent(step.ratio)} [{_percent(low)}, "
                f"{_percent(high)}]{state} at {labels[step.index]}{layer}",
            )
        )
    previous = None
    for i, bound in enumerate(trend.bound[:n]):
        if bound is None:
            continue
        if previous is not None and bound != previous:
            marks.append(TrendMark(i, "bound", f"bound class {previous} -> {bound} at {labels[i]}"))
        previous = bound
    return TrendStrip(
        nodeid=nodeid,
        run_labels=labels,
        values_s={q: column(f"{q}_s") for q in _QUANTILES},
        low_s={q: column(f"{q}_low_s") for q in _QUANTILES},
        high_s={q: column(f"{q}_high_s") for q in _QUANTILES},
        marks=tuple(marks),
        current=runs.current_index,
    )


def _finite(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def _value_text(value: float, low: float | None, high: float | None) -> str:
    text = format_seconds(value)
    if low is not None and high is not None and low > 0 and high > 0:
        text += f" [{format_seconds(low)}, {format_seconds(high)}]"
    return text


def _panel_text(strip: TrendStrip, quantile: str) -> str:
    """The panel in words: the range over the other runs and this run's value (or the last)."""
    values = strip.values_s.get(quantile, ())
    lows = strip.low_s.get(quantile, ())
    highs = strip.high_s.get(quantile, ())
    n = len(strip.run_labels)
    last = strip.current if strip.current is not None else n - 1

    def at(column: Sequence[float | None], i: int) -> float | None:
        v = column[i] if 0 <= i < len(column) else None
        return v if v is not None and math.isfinite(v) and v > 0 else None

    others = [v for i in range(n) if i != last and (v := at(values, i)) is not None]
    parts = []
    if others:
        parts.append(
            f"{len(others)} runs {format_seconds(min(others))} to {format_seconds(max(others))}"
        )
    value = at(values, last)
    if value is not None:
        parts.append(
            f"{strip.run_labels[last]} {_value_text(value, at(lows, last), at(highs, last))}"
        )
    return "; ".join(parts) or "no values"


def _panel(strip: TrendStrip, quantile: str, text: str) -> str:
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

    scale = (_HEIGHT - 2 * _PAD) / span
    top = _HEIGHT - _PAD + lo * scale
    log = math.log

    def y(v: float) -> float:
        return top - log(v) * scale

    parts = [
        f'<svg class="trend-panel" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" role="img" aria-label="{quantile} over {n} runs">'
        f"<title>{text}</title>"
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
    # One path for every interval bar and one for every dot (a zero-length segment with a round
    # cap): a 1000-test report carries 90 points per test, and an element with its own title
    # per point made each strip about 20 kB. The numbers are in the text beside the panel.
    bars, dots = [], []
    current_dot = ""
    for i in range(n):
        value = values[i] if i < len(values) else None
        if value is None or not math.isfinite(value) or value <= 0:
            continue
        low = lows[i] if i < len(lows) else None
        high = highs[i] if i < len(highs) else None
        if low is not None and high is not None and low > 0 and high > 0:
            bars.append(f"M{x(i):.0f} {y(high):.0f}V{y(low):.0f}")
        if i == strip.current:
            text = f"{strip.run_labels[i]}: {quantile} {_value_text(value, low, high)}"
            current_dot = (
                f'<circle class="trend-current" cx="{x(i):.0f}" cy="{y(value):.0f}" r="3.6" '
                f'fill="#c2410c" stroke="#7c2d12" stroke-width="1.2"><title>'
                f"{html.escape(text)}</title></circle>"
            )
        else:
            dots.append(f"M{x(i):.0f} {y(value):.0f}h0")
    if bars:
        parts.append(f'<path d="{"".join(bars)}" stroke="#94a3b8" stroke-width="2"/>')
    if dots:
        parts.append(
            f'<path class="trend-dots" d="{"".join(dots)}" stroke="#1e3a8a" stroke-width="4.4" '
            'stroke-linecap="round"/>'
        )
    parts.append(current_dot)
    parts.append("</svg>")
    return "".join(parts)


def trend_strip_html(strip: TrendStrip, *, heading: str | None = None) -> str:
    """The strip as one collapsed ``<details>`` element (no script, inline SVG).

    ``heading`` opens the summary instead of the node id (the signoff report's row already
    names the test).
    """
    steps = sum(1 for m in strip.marks if m.kind == "step")
    bounds = sum(1 for m in strip.marks if m.kind == "bound")
    summary = f"{strip.nodeid if heading is None else heading}: {len(strip.run_labels)} runs"
    if strip.current is not None:
        summary += ", this run last (marked)"
    if steps:
        summary += f", {steps} step{'s' if steps > 1 else ''}"
    if bounds:
        summary += f", bound class changed {bounds}x"
    texts = {q: html.escape(_panel_text(strip, q)) for q in _QUANTILES}
    rows = "".join(
        f'<div class="trend-row"><span class="trend-q">{q}</span>{_panel(strip, q, texts[q])}'
        f'<span class="trend-text">{texts[q]}</span></div>'
        for q in _QUANTILES
    )
    marks = "".join(f"<li>{html.escape(m.text)}</li>" for m in strip.marks)
    listing = f'<ul class="trend-marks">{marks}</ul>' if marks else ""
    return (
        f'<details class="trend"><summary>{html.escape(summary)}</summary>{rows}{listing}</details>'
    )


def _table(caption: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return (
        f"<h2>{html.escape(caption)}</h2><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def trend_page(
    title: str,
    strips: Sequence[TrendStrip],
    lines: Sequence[str] = (),
    *,
    tables: Sequence[tuple[str, Sequence[str], Sequence[Sequence[str]]]] = (),
) -> str:
    """A small self-contained page of strips (``pytest-roofline history --html``), after the
    terminal ``lines`` and any ``tables`` (caption, headers, rows of text)."""
    head = f"<pre>{html.escape(chr(10).join(lines))}</pre>" if lines else ""
    sections = "".join(_table(*table) for table in tables)
    body = "".join(trend_strip_html(s) for s in strips) or "<p>no tests</p>"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>"
        "body{font:14px system-ui,sans-serif;margin:1.5em;color:#0f172a}"
        "details.trend{margin:.3em 0}summary{cursor:pointer}"
        ".trend-row{display:flex;align-items:center;gap:.5em}.trend-q{width:2.5em;color:#475569}"
        ".trend-text{color:#475569;font-size:12px}"
        "table{border-collapse:collapse;margin:.5em 0 1em}"
        "th,td{border:1px solid #cbd5e1;padding:.2em .5em;text-align:left;font-size:13px}"
        "</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{head}{sections}{body}</body></html>\n"
    )
