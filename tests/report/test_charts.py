"""Chart geometry and number labels (pure functions of their inputs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_roofline.gate.record import platform_cells
from pytest_roofline.hardware.presets import load_presets
from pytest_roofline.report import format as charts
from pytest_roofline.report.charts.latency import ecdf_chart, timeline_chart
from pytest_roofline.report.charts.roofline import PointInput, roofline_chart
from pytest_roofline.roofline import DeclaredWork

H100 = load_presets()["h100-sxm"]


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (6.7e13, "FLOP/s", "67 TFLOP/s"),
        (3.35e12, "B/s", "3.35 TB/s"),
        (0.125, "FLOP/B", "125 mFLOP/B"),
        (0.0, "B", "0 B"),
        (None, "B", "n/a"),
        (math.nan, "B", "n/a"),
    ],
)
def test_si_labels_carry_a_prefix_and_the_unit(
    value: float | None, unit: str, expected: str
) -> None:
    assert charts.si(value, unit) == expected


def test_ratios_percentages_and_intervals_format_for_reading() -> None:
    assert charts.format_ratio(1.0) == "×1.00"
    assert charts.format_ratio(1.5432) == "×1.54"
    assert charts.format_ratio(12.4) == "×12"
    assert charts.format_ratio(None) == "n/a"
    assert charts.format_percent(0.042) == "4.2%"
    assert charts.format_percent(0.42) == "42%"
    assert charts.format_interval(1.2, 1.45) == "[1.20, 1.45]"
    assert charts.format_interval(None, 1.0) == ""


def _points() -> list[PointInput]:
    return [
        PointInput(0.5, 1e12, 0.5, 1.5e12, "rollback", "a", "#memo-0"),
        PointInput(300.0, 4e14, None, None, "ship", "b"),
        PointInput(50.0, 6e13, 50.0, 6.1e13, "escalate", "c"),
        PointInput(None, None, None, None, "ship", "unknown bound"),
    ]


def test_the_roofline_chart_places_every_drawable_point_inside_the_plot() -> None:
    chart = roofline_chart(
        H100.peak_flops_per_s, H100.peak_bytes_per_s, _points(), used_precisions=["fp32"]
    )
    assert chart is not None
    box = chart.box
    assert chart.unplaced == 1
    assert len(chart.points) == 3
    for p in chart.points:
        assert box.left <= p.x <= box.right and box.top <= p.y <= box.bottom
    # Points that need review are drawn last (on top).
    assert [p.decision for p in chart.points] == ["ship", "escalate", "rollback"]
    xs = [t.pos for t in chart.x_ticks]
    assert xs == sorted(xs) and len(xs) >= 3


def test_equal_compute_peaks_share_one_roof_and_the_used_precision_is_emphasised() -> None:
    chart = roofline_chart(
        H100.peak_flops_per_s, H100.peak_bytes_per_s, _points(), used_precisions=["fp32"]
    )
    assert chart is not None
    compute = [r for r in chart.roofs if r.kind == "compute"]
    labels = [r.label for r in compute]
    assert any(label.startswith("fp64/fp32") for label in labels)
    assert len(compute) == len(set(H100.peak_flops_per_s.values()))
    assert [r.used for r in compute if r.label.startswith("fp64/fp32")] == [True]
    memory = [r for r in chart.roofs if r.kind == "memory"]
    assert len(memory) == 1 and memory[0].label.startswith("dram")
    # The bandwidth roof rises to the right (SVG y grows downwards).
    assert memory[0].y2 < memory[0].y1 and memory[0].x2 > memory[0].x1


def test_an_arrow_runs_from_the_baseline_point_towards_the_candidate() -> None:
    chart = roofline_chart(H100.peak_flops_per_s, H100.peak_bytes_per_s, _points())
    assert chart is not None
    moved = next(p for p in chart.points if p.decision == "rollback")
    assert moved.base_x is not None and moved.tip_y is not None and moved.base_y is not None
    # The candidate is lower than the baseline; the tip stops short of the marker.
    assert moved.base_y < moved.tip_y < moved.y
    still = next(p for p in chart.points if p.decision == "escalate")
    assert still.tip_x is None  # moved less than its own arrowhead: no arrow


def test_no_target_and_no_points_gives_no_chart() -> None:
    assert roofline_chart({}, {}, []) is None
    only_points = roofline_chart({}, {}, _points())
    assert only_points is not None and not only_points.roofs


def test_the_ecdf_marks_percentiles_on_a_tail_stretched_axis() -> None:
    rng = np.random.default_rng(0)
    chart = ecdf_chart(list(rng.lognormal(-7, 0.2, 400)), list(rng.lognormal(-7.2, 0.2, 400)))
    assert chart is not None
    labels = [t.label for t in chart.y_ticks]
    assert labels == ["0", "p50", "p90", "p95", "p99"]
    positions = [t.pos for t in chart.y_ticks]
    # p90 -> p99 is as tall as p50 -> p90 would be on a linear axis times ~5: the tail is visible.
    assert positions[3] - positions[4] > 0.15 * (positions[0] - positions[4])
    assert [s.cls for s in chart.series] == ["s-baseline", "s-candidate"]
    assert ecdf_chart([], None) is None
    assert ecdf_chart([float("nan"), -1.0], None) is None


def test_the_timeline_keeps_sample_order_and_draws_reference_levels() -> None:
    samples = [1e-3] * 50 + [2e-3] * 50
    chart = timeline_chart(samples, references={"baseline p95": 1.1e-3, "missing": None})
    assert chart is not None
    points = [tuple(map(float, p.split(","))) for p in chart.series[0].points.split()]
    assert points[0][0] < points[-1][0]
    assert points[0][1] > points[-1][1]  # slower later: higher on screen, smaller y
    assert [g.label for g in chart.guides] == ["baseline p95"]


def test_a_platform_cell_is_the_roofline_lower_bound_and_its_class() -> None:
    flops, bytes_moved = 2.0 * 4096**3, 3.0 * 4096**2 * 2
    gemm = DeclaredWork(flops=flops, bytes_moved=bytes_moved, precision="bf16")
    cell = platform_cells(gemm, {"h100": H100})["h100"]
    expected = max(
        flops / H100.peak_flops_per_s["bf16"], bytes_moved / H100.peak_bytes_per_s["dram"]
    )
    assert cell.seconds == pytest.approx(expected)
    assert cell.bound == "compute"
    copy = DeclaredWork(flops=1e6, bytes_moved=8e8, precision="fp32")
    assert platform_cells(copy, {"h100": H100})["h100"].bound == "memory"


def test_a_precision_the_preset_lacks_is_not_applicable() -> None:
    tpu = load_presets()["tpu-v5e"]
    work = DeclaredWork(flops=1e9, bytes_moved=1e6, precision="fp64")
    cell = platform_cells(work, {"tpu": tpu})["tpu"]
    assert (cell.seconds, cell.bound) == (None, None)  # the report shows both as "n/a"
