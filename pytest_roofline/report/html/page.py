"""The whole report page's view: banner, roofline chart, table, memos, platform matrix, method."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from pytest_roofline.model.document import DeclaredRecord, MethodRecord, RunDocument, TestRecord
from pytest_roofline.report.charts.latency import SKETCH_FRAME
from pytest_roofline.report.charts.roofline import PointInput, RooflineChart, roofline_chart
from pytest_roofline.report.format import (
    decision_name,
    format_percent,
    format_seconds,
    id_parts,
    review_key,
    si,
)
from pytest_roofline.report.html.banner import banner, paired_method
from pytest_roofline.report.html.memo import memo
from pytest_roofline.report.html.soak import soak_view
from pytest_roofline.report.html.table import table_row
from pytest_roofline.report.html.trend import strip_of_record, trend_strip_html
from pytest_roofline.report.html.view import (
    Fact,
    Matrix,
    MatrixCell,
    MatrixRow,
    MatrixTarget,
    ReportView,
)

__all__ = ["build_view"]


def _point_title(test: TestRecord, decision: str) -> str:
    point = test.roofline
    assert point is not None
    lines = [
        test.nodeid,
        f"{decision} · {point.bound} · {format_percent(point.efficiency)} of attainable",
        f"intensity {si(point.intensity, 'FLOP/B')}, "
        f"achieved {si(point.achieved_flops_per_s, 'FLOP/s')} "
        f"of {si(point.attainable_flops_per_s, 'FLOP/s')}",
    ]
    if point.baseline_achieved_flops_per_s is not None:
        lines.append(
            f"baseline: intensity {si(point.baseline_intensity, 'FLOP/B')}, "
            f"achieved {si(point.baseline_achieved_flops_per_s, 'FLOP/s')}"
            + (f" ({point.baseline_bound})" if point.baseline_bound else "")
        )
    return "\n".join(lines)


def _chart(document: RunDocument, memo_ids: Mapping[int, str]) -> RooflineChart | None:
    inputs = []
    precisions: set[str] = set()
    levels: set[str] = set()
    for index, test in enumerate(document.tests):
        point = test.roofline
        if point is None:
            continue
        decision = decision_name(test.decision)
        if point.precision is not None:
            precisions.add(point.precision)
        levels.add(point.memory_level or "dram")
        inputs.append(
            PointInput(
                intensity=point.intensity,
                achieved_flops_per_s=point.achieved_flops_per_s,
                baseline_intensity=point.baseline_intensity,
                baseline_achieved_flops_per_s=point.baseline_achieved_flops_per_s,
                decision=decision,
                title=_point_title(test, decision),
                href=f"#{memo_ids.get(index, f't-{index}')}",
                flagged=bool(point.data_error),
            )
        )
    target = document.run.target
    return roofline_chart(
        target.peak_flops_per_s if target else {},
        target.peak_bytes_per_s if target else {},
        inputs,
        used_precisions=sorted(precisions),
        used_levels=sorted(levels),
    )


def _work_text(work: DeclaredRecord) -> str:
    parts = []
    if work.flops is not None:
        parts.append(si(work.flops, "FLOP"))
    if work.bytes_moved is not None:
        parts.append(si(work.bytes_moved, "B"))
    parts.append(work.precision or "fp32 (default)")
    return " · ".join(parts)


def _matrix(document: RunDocument) -> Matrix:
    current = document.run.target.name if document.run.target else None
    platforms = document.run.platforms
    targets = tuple(
        MatrixTarget(
            p.name,
            f"{p.description or ''} · DRAM {si(p.dram_bytes_per_s, 'B/s')}".strip(" ·"),
            p.name == current,
        )
        for p in platforms
    )
    rows = []
    undeclared = 0
    for test in document.tests:
        work = test.declared
        if work is None or not (work.flops or work.bytes_moved):
            undeclared += 1
            continue
        cells = []
        for p in platforms:
            cell = test.platforms.get(p.name)
            seconds = cell.seconds if cell is not None else None
            bound = (cell.bound if cell is not None else None) or "n/a"
            cells.append(
                MatrixCell(
                    seconds,
                    format_seconds(seconds) if seconds is not None else "n/a",
                    bound,
                    "cell current" if p.name == current else "cell",
                )
            )
        rows.append(
            MatrixRow(
                test.nodeid,
                id_parts(test.nodeid),
                _work_text(work),
                format_seconds(test.p50_s),
                tuple(cells),
            )
        )
    return Matrix(targets, tuple(rows), undeclared)


def _method(method: MethodRecord) -> tuple[Fact, ...]:
    """The constants the run used."""
    floors = method.sample_floor
    facts = [
        Fact(
            "p95 sample floor",
            f"{floors.get('p95', 'n/a')} samples (below it p95 is 'insufficient')",
            "num",
        ),
        Fact("p99 sample floor", f"{floors.get('p99', 'n/a')} samples", "num"),
        Fact("Absolute floor", f"{format_seconds(method.abs_floor_s)} per call", "num"),
    ]
    if method.ridge_margin is not None:
        facts.append(
            Fact("Ridge band", f"±{method.ridge_margin:.0%} around the ridge is 'ambiguous'", "num")
        )
    if method.overhead_efficiency is not None:
        facts.append(
            Fact(
                "Overhead", f"efficiency below {method.overhead_efficiency:.0%} of the roof", "num"
            )
        )
    return tuple(facts)


ROW_TRENDS_UP_TO = 200
"""Runs of up to this many tests show every test's trend strip in its table row; larger runs
show the strips in the memos only (the tests to review), keeping a 1000-test report near its
5 MB target (a strip is about 4 kB: ``docs/report.md``)."""


def _trends(document: RunDocument, wanted: Collection[int]) -> dict[int, str]:
    """The trend strips over the label's last runs (``run.trend``) of the tests ``wanted``,
    by test index."""
    runs = document.run.trend
    if runs is None or not runs.runs:
        return {}
    heading = f"trend over the last runs of {runs.label or '?'}"
    tests = document.tests
    return {
        i: trend_strip_html(strip_of_record(tests[i].nodeid, runs, trend), heading=heading)
        for i in wanted
        if (trend := tests[i].trend) is not None
    }


def build_view(document: RunDocument) -> ReportView:
    """Build the presentation model of ``document`` (exposed for tests; no I/O)."""
    tests = document.tests
    order = sorted(range(len(tests)), key=lambda i: review_key(tests[i]))
    memo_ids = {
        i: f"memo-{i}"
        for i in order
        if decision_name(tests[i].decision) in ("rollback", "escalate")
    }
    top = banner(document)
    run = document.run
    trends = _trends(document, range(len(tests)) if len(tests) <= ROW_TRENDS_UP_TO else memo_ids)
    return ReportView(
        title=f"{top.decision.upper()} · {top.label} vs {top.baseline} · pytest-roofline",
        banner=top,
        chart=_chart(document, memo_ids),
        rows=tuple(
            replace(
                table_row(i, tests[i], memo_ids.get(i)),
                trend_html=trends.get(i, "") if len(tests) <= ROW_TRENDS_UP_TO else "",
            )
            for i in order
        ),
        memos=tuple(
            replace(memo(i, tests[i], top.tag_changes), trend_html=trends.get(i, ""))
            for i in memo_ids
        ),
        matrix=_matrix(document),
        gate=top.gate,
        method=_method(document.method),
        versions=tuple((k, v) for k, v in document.versions.items() if v is not None),
        generated=run.finished or run.started or "",
        paired=paired_method(run),
        sketch_frame=SKETCH_FRAME,
        soaks=tuple(view for i in order if (view := soak_view(tests[i])) is not None),
    )
