"""Roofline math: hand-computed cases against a 100 FLOP/s, 10 B/s machine (ridge 10 FLOP/B)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import pytest

from pytest_roofline.errors import ConfigError
from pytest_roofline.roofline import (
    BOUND_CLASSES as BOUNDS,
)
from pytest_roofline.roofline import (
    DEFAULT_OVERHEAD_EFFICIENCY,
    DEFAULT_PRECISION,
    PRECISIONS,
    DeclaredWork,
    RooflinePoint,
    attainable,
    bound_change,
    declared_work,
    intensity,
    normalize_precision,
    place,
    ridge,
    work_change,
)

PEAK_F = 100.0  # FLOP/s
PEAK_B = 10.0  # B/s
RIDGE = 10.0  # FLOP/B
WHERE = "test_x.py::test_gemm[small]: roofline.declare()"


def work(
    flops: float | None, bytes_moved: float | None, precision: str | None = "fp32"
) -> DeclaredWork:
    return declared_work(flops, bytes_moved, precision, where=WHERE)


def put(w: DeclaredWork, seconds: float = 1.0, **kw: float) -> RooflinePoint:
    return place(w, seconds, peak_flops_per_s=PEAK_F, peak_bytes_per_s=PEAK_B, **kw)


# --- basic quantities --------------------------------------------------------------------
def test_ridge_is_peak_flops_over_peak_bandwidth() -> None:
    assert ridge(PEAK_F, PEAK_B) == RIDGE
    assert ridge(989.4e12, 3.35e12) == pytest.approx(295.343, rel=1e-5)


def test_attainable_is_the_lower_of_the_two_roofs() -> None:
    assert attainable(2.0, PEAK_F, PEAK_B) == 20.0  # memory roof: 2 FLOP/B x 10 B/s
    assert attainable(RIDGE, PEAK_F, PEAK_B) == 100.0  # both roofs meet at the ridge
    assert attainable(50.0, PEAK_F, PEAK_B) == 100.0  # compute roof
    assert attainable(math.inf, PEAK_F, PEAK_B) == 100.0
    assert attainable(0.0, PEAK_F, PEAK_B) == 0.0


def test_intensity_handles_undeclared_and_zero_bytes() -> None:
    assert intensity(50.0, 5.0) == 10.0
    assert intensity(None, 5.0) is None
    assert intensity(50.0, None) is None
    assert intensity(0.0, 0.0) is None
    assert intensity(5.0, 0.0) == math.inf
    assert intensity(0.0, 8.0) == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ridge(0.0, 1.0), "peak_flops_per_s must be a positive"),
        (lambda: ridge(1.0, -1.0), "peak_bytes_per_s must be a positive"),
        (lambda: ridge(math.inf, 1.0), "peak_flops_per_s"),
        (lambda: attainable(-1.0, 1.0, 1.0), "intensity must be >= 0"),
        (lambda: attainable(math.nan, 1.0, 1.0), "intensity must be >= 0"),
    ],
)
def test_math_rejects_impossible_inputs(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


# --- bound classes -----------------------------------------------------------------------
def test_a_kernel_below_the_band_is_memory_bound() -> None:
    point = put(work(25, 5))  # I = 5, attainable = min(100, 50) = 50, achieved 25
    assert point.bound == "memory"
    assert point.intensity == 5.0
    assert point.ridge == RIDGE
    assert point.attainable_flops_per_s == 50.0
    assert point.achieved_flops_per_s == 25.0
    assert point.achieved_bytes_per_s == 5.0
    assert point.efficiency == pytest.approx(0.5)
    assert point.data_error is None
    assert point.note is None


def test_a_kernel_above_the_band_is_compute_bound() -> None:
    point = put(work(40, 2))  # I = 20, attainable 100, achieved 40
    assert point.bound == "compute"
    assert point.attainable_flops_per_s == 100.0
    assert point.efficiency == pytest.approx(0.4)


def test_a_kernel_inside_the_band_is_ambiguous() -> None:
    point = put(work(50, 5))  # I = 10 = ridge
    assert point.bound == "ambiguous"
    assert point.efficiency == pytest.approx(0.5)


def test_the_band_edges_belong_to_the_band() -> None:
    low, high = RIDGE / 1.15, RIDGE * 1.15
    assert put(work(low * 5, 5)).bound == "ambiguous"
    assert put(work(high * 5, 5)).bound == "ambiguous"
    assert put(work(low * 0.99 * 5, 5)).bound == "memory"
    assert put(work(high * 1.01 * 5, 5)).bound == "compute"


def test_the_ridge_margin_sets_the_band_width() -> None:
    w = work(60, 5)  # I = 12: outside a 15% band, inside a 25% one
    assert put(w).bound == "compute"
    assert put(w, ridge_margin=0.25).bound == "ambiguous"
    assert put(work(45, 5), ridge_margin=0.0).bound == "memory"  # I = 9 < 10


def test_far_below_both_roofs_is_overhead_whatever_the_position() -> None:
    # Memory side: I = 5, 25 FLOPs in 10 s: 2.5 FLOP/s of an attainable 50 -> 5%.
    assert put(work(25, 5), 10.0).bound == "overhead"
    # Compute side and inside the band too.
    assert put(work(40, 2), 100.0).bound == "overhead"
    assert put(work(50, 5), 100.0).bound == "overhead"


def test_the_overhead_threshold_is_strict_and_configurable() -> None:
    w = work(25, 5)  # efficiency 0.5 at 1 s
    at_threshold = put(w, 1.0 / (DEFAULT_OVERHEAD_EFFICIENCY * 2))  # efficiency exactly 0.1
    assert at_threshold.efficiency == pytest.approx(DEFAULT_OVERHEAD_EFFICIENCY)
    assert at_threshold.bound == "memory"
    assert put(w, overhead_efficiency=0.6).bound == "overhead"
    assert put(w, overhead_efficiency=0.0).bound == "memory"


def test_efficiency_is_the_larger_utilisation_so_zero_flop_copies_are_placed() -> None:
    point = put(work(0, 8), 2.0)  # a copy kernel: 4 B/s of 10
    assert point.intensity == 0.0
    assert point.bound == "memory"
    assert point.efficiency == pytest.approx(0.4)
    assert point.attainable_flops_per_s == 0.0


def test_flops_with_zero_bytes_sit_on_the_compute_roof() -> None:
    point = put(work(50, 0))
    assert point.intensity == math.inf
    assert point.bound == "compute"
    assert point.efficiency == pytest.approx(0.5)
    assert point.to_dict()["intensity"] is None  # JSON has no infinity
    json.dumps(point.to_dict(), allow_nan=False)


# --- above the roof ----------------------------------------------------------------------
def test_above_the_compute_roof_keeps_the_class_and_names_likely_causes() -> None:
    point = put(work(40, 2), 0.1)  # 400 FLOP/s on a 100 FLOP/s roof
    assert point.bound == "compute"
    assert point.efficiency == pytest.approx(4.0)
    assert point.data_error is not None
    message = point.data_error
    assert "4.00x the fp32 compute roof" in message
    assert "precision" in message
    assert "FMA" in message
    assert "sparsity" in message
    assert "sync=" in message


def test_above_the_memory_roof_points_at_a_cache_resident_working_set() -> None:
    point = put(work(2, 5), 0.05)  # 100 B/s on a 10 B/s roof; 40 FLOP/s is under its roof
    assert point.bound == "memory"
    assert point.data_error is not None
    assert "10.00x the dram bandwidth roof" in point.data_error
    assert "cache-resident" in point.data_error
    assert "compute roof" not in point.data_error


def test_a_small_excess_within_the_tolerance_is_not_an_error() -> None:
    w = work(40, 2)
    assert put(w, 40 / 104).data_error is None  # 1.04x
    assert put(w, 40 / 106).data_error is not None  # 1.06x
    assert put(w, 40 / 106, roof_tolerance=0.10).data_error is None


# --- partial declarations ----------------------------------------------------------------
def test_nothing_declared_is_unknown() -> None:
    point = put(work(None, None))
    assert point.bound == "unknown"
    assert point.intensity is None
    assert point.efficiency is None
    assert point.achieved_flops_per_s is None
    assert point.ridge == RIDGE
    assert point.note is not None and "no work declared" in point.note


def test_flops_only_is_unknown_with_efficiency_against_the_compute_roof() -> None:
    point = put(work(30, None))
    assert point.bound == "unknown"
    assert point.intensity is None
    assert point.attainable_flops_per_s == PEAK_F
    assert point.efficiency == pytest.approx(0.3)  # MFU
    assert point.achieved_bytes_per_s is None
    assert point.note is not None and "bytes_moved not declared" in point.note


def test_flops_only_above_the_compute_roof_is_still_a_data_error() -> None:
    point = put(work(300, None))
    assert point.bound == "unknown"
    assert point.data_error is not None and "compute roof" in point.data_error


def test_bytes_only_is_unknown_with_efficiency_against_the_memory_roof() -> None:
    point = put(work(None, 4))
    assert point.bound == "unknown"
    assert point.efficiency == pytest.approx(0.4)
    assert point.achieved_flops_per_s is None
    assert point.attainable_flops_per_s is None
    assert point.note is not None and "flops not declared" in point.note
    assert put(work(None, 40)).data_error is not None


def test_zero_flops_and_zero_bytes_is_unknown_without_efficiency() -> None:
    point = put(work(0, 0))
    assert point.bound == "unknown"
    assert point.efficiency is None


def test_a_missing_roof_gives_unknown_with_the_other_roof_still_checked() -> None:
    no_compute = place(work(25, 5), 1.0, peak_flops_per_s=None, peak_bytes_per_s=PEAK_B)
    assert no_compute.bound == "unknown"
    assert no_compute.ridge is None
    assert no_compute.efficiency == pytest.approx(0.5)  # bandwidth utilisation
    assert no_compute.attainable_flops_per_s == 50.0
    assert no_compute.note is not None and "no fp32 compute roof" in no_compute.note
    no_memory = place(work(40, 2), 1.0, peak_flops_per_s=PEAK_F, peak_bytes_per_s=None)
    assert no_memory.bound == "unknown"
    assert no_memory.efficiency == pytest.approx(0.4)
    assert no_memory.note is not None and "no dram bandwidth roof" in no_memory.note


def test_undeclared_precision_is_placed_against_the_default_and_said_so() -> None:
    point = put(work(25, 5, precision=None))
    assert point.precision == DEFAULT_PRECISION == "fp32"
    assert point.note is not None and "precision not declared" in point.note
    assert work(25, 5, precision=None).precision is None  # the declaration stays honest


@pytest.mark.parametrize("seconds", [0.0, -1.0, math.nan, math.inf])
def test_place_rejects_a_non_positive_time(seconds: float) -> None:
    with pytest.raises(ValueError, match="seconds_per_call must be positive"):
        put(work(1, 1), seconds)


def test_place_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match="peak_flops_per_s"):
        place(work(1, 1), 1.0, peak_flops_per_s=0.0, peak_bytes_per_s=1.0)
    with pytest.raises(ValueError, match="ridge_margin"):
        put(work(1, 1), ridge_margin=-0.1)
    with pytest.raises(ValueError, match="overhead_efficiency"):
        put(work(1, 1), overhead_efficiency=1.0)
    with pytest.raises(ValueError, match="roof_tolerance"):
        put(work(1, 1), roof_tolerance=math.nan)


# --- declarations ------------------------------------------------------------------------
def test_declared_work_accepts_ints_fractions_and_numpy_scalars() -> None:
    numpy = pytest.importorskip("numpy")
    w = declared_work(2 * 256**3, numpy.int64(3 * 256 * 256 * 4), "FP32", where=WHERE)
    assert w.flops == 2 * 256**3
    assert isinstance(w.flops, float)
    assert w.bytes_moved == 3 * 256 * 256 * 4
    assert w.precision == "fp32"
    assert declared_work(Fraction(1, 2), numpy.float32(2.0), None, where=WHERE).flops == 0.5
    assert w.declared and not DeclaredWork().declared


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("float64", "fp64"),
        ("bfloat16", "bf16"),
        ("torch.float16", "fp16"),
        ("half", "fp16"),
        ("float8_e4m3fn", "fp8"),
        ("TF32", "tf32"),
        ("int8", "int8"),
        ("nvfp4", "fp4"),
    ],
)
def test_dtype_spellings_are_normalised(alias: str, canonical: str) -> None:
    assert normalize_precision(alias, where=WHERE) == canonical
    assert canonical in PRECISIONS


@pytest.mark.parametrize(
    ("flops", "bytes_moved", "precision", "expected"),
    [
        (-1, 8, "fp32", r"flops must be >= 0, got -1"),
        (1, -8.5, "fp32", r"bytes_moved must be >= 0, got -8.5"),
        (math.nan, 8, "fp32", r"flops must be finite, got nan"),
        (1, math.inf, "fp32", r"bytes_moved must be finite, got inf"),
        (10**400, 8, "fp32", r"flops must be finite"),
        (
            "1e9",
            8,
            "fp32",
            r"flops must be a number of FLOPs per call \(e.g. flops=2 \* n\*\*3\), "
            r"got '1e9' \(str\)",
        ),
        (True, 8, "fp32", r"flops must be a number of FLOPs per call .* got True \(bool\)"),
        (1, [8], "fp32", r"bytes_moved must be a number of bytes per call .* \(list\)"),
        (
            1,
            8,
            "fp33",
            r"unknown precision 'fp33'; valid: fp64, fp32, tf32, bf16, fp16, fp8, int8, fp4",
        ),
        (1, 8, 32, r"precision must be a string such as 'fp32', got 32 \(int\)"),
    ],
)
def test_bad_declarations_name_the_source_the_value_and_the_valid_form(
    flops: object, bytes_moved: object, precision: object, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        declared_work(flops, bytes_moved, precision, where=WHERE)
    assert str(info.value).startswith(WHERE + ": ")
    assert isinstance(info.value, ValueError)


def test_declared_work_round_trips_through_json() -> None:
    w = work(2e9, 1.5e6, "bf16")
    again = DeclaredWork.from_dict(json.loads(json.dumps(w.to_dict())))
    assert again == w
    assert DeclaredWork.from_dict(
        {"flops": None, "bytes_moved": 8, "precision": None, "new": 1}
    ) == work(None, 8, None)
    with pytest.raises(ConfigError, match="stored: flops must be >= 0"):
        DeclaredWork.from_dict({"flops": -1}, where="stored")


def test_a_declared_memory_level_is_normalised_kept_and_round_trips() -> None:
    w = declared_work(1.0, 8.0, "fp64", where=WHERE, memory_level="LLC")
    assert w.memory_level == "llc"
    assert DeclaredWork.from_dict(json.loads(json.dumps(w.to_dict()))) == w
    assert declared_work(1.0, 8.0, "fp64", where=WHERE, memory_level="hbm").memory_level == "dram"
    # Main memory is the default and is not written, so older records read the same.
    assert "memory_level" not in work(1.0, 8.0, "fp64").to_dict()
    with pytest.raises(ConfigError, match=r"t.py::k: memory_level must be one of dram, llc"):
        declared_work(1.0, 8.0, "fp64", where="t.py::k", memory_level="l3")


def test_declared_work_validates_when_built_directly() -> None:
    with pytest.raises(ConfigError, match="DeclaredWork: flops must be >= 0"):
        DeclaredWork(flops=-1.0)
    assert DeclaredWork(precision="float32").precision == "fp32"


# --- points ------------------------------------------------------------------------------
def test_a_point_round_trips_through_json() -> None:
    point = put(work(40, 2), 0.1)
    data = json.loads(json.dumps(point.to_dict(), allow_nan=False))
    assert RooflinePoint.from_dict(data) == point
    assert set(data) >= {
        "intensity",
        "achieved_flops_per_s",
        "achieved_bytes_per_s",
        "efficiency",
        "bound",
    }


def test_a_point_record_with_a_bad_bound_is_rejected() -> None:
    with pytest.raises(ValueError, match="bound must be one of"):
        RooflinePoint.from_dict({"bound": "latency"})
    with pytest.raises(ValueError, match="efficiency must be a number"):
        RooflinePoint.from_dict({"bound": "memory", "efficiency": "high"})


def test_bound_values_are_exactly_the_json_contract() -> None:
    assert BOUNDS == ("compute", "memory", "overhead", "ambiguous", "unknown")


def test_the_roofline_module_needs_neither_pytest_nor_numpy() -> None:
    code = (
        "import sys, pytest_roofline.roofline, pytest_roofline.hardware.target\n"
        "bad = {'pytest', '_pytest', 'numpy'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_one_sided_declaration_on_a_missing_roof_says_both() -> None:
    point = place(work(30, None), 1.0, peak_flops_per_s=None, peak_bytes_per_s=PEAK_B)
    assert point.bound == "unknown"
    assert point.efficiency is None
    assert point.note is not None
    assert "no fp32 compute roof" in point.note and "bytes_moved not declared" in point.note


# ------------------------------------------------------------------------------------------
# bound-class change
# ------------------------------------------------------------------------------------------
def test_a_bound_change_with_both_sides_outside_the_band_is_a_change() -> None:
    res = bound_change(0.5, 40.0, 10.0, base_class="memory", cand_class="compute")
    assert res.changed and not res.ambiguous


def test_a_bound_change_with_a_side_inside_the_band_is_ambiguous() -> None:
    res = bound_change(0.5, 10.5, 10.0, base_class="memory", cand_class="compute")
    assert not res.changed and res.ambiguous
    assert "candidate intensity" in res.reason


def test_overhead_is_a_clear_class_and_unknown_is_not_assessable() -> None:
    assert bound_change(0.5, 0.5, 10.0, base_class="memory", cand_class="overhead").changed
    res = bound_change(None, 0.5, 10.0, base_class="unknown", cand_class="memory")
    assert not res.changed and not res.ambiguous and "not assessable" in res.reason
    same = bound_change(0.5, 0.6, 10.0, base_class="memory", cand_class="memory")
    assert not same.changed and not same.ambiguous


def test_a_bound_change_rejects_an_unknown_class_and_a_missing_intensity() -> None:
    with pytest.raises(ValueError, match="`base_class` must be one of"):
        bound_change(0.5, 1.0, 10.0, base_class="fast", cand_class="memory")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`base_intensity` is required"):
        bound_change(None, 1.0, 10.0, base_class="memory", cand_class="memory")


@pytest.mark.parametrize(
    ("base", "cand", "changed"),
    [
        (DeclaredWork(1e6, 2e6, "fp64"), DeclaredWork(1e6, 2e6, "fp64"), {}),
        (DeclaredWork(1e6, 2e6, "fp64"), DeclaredWork(1e6 * (1 + 1e-12), 2e6, "fp64"), {}),
        (DeclaredWork(1e6, 2e6, "fp64"), DeclaredWork(1e6, 8e6, "fp64"), {"bytes_moved": (2e6, 8e6)}),
        (DeclaredWork(1e6, 2e6, "fp64"), DeclaredWork(3e6, 8e6, "fp64"), {"flops": (1e6, 3e6), "bytes_moved": (2e6, 8e6)}),
        (DeclaredWork(0.0, 2e6, "fp64"), DeclaredWork(5.0, 2e6, "fp64"), {"flops": (0.0, 5.0)}),
        # A precision change moves the bytes with the element size: judged as a precision change.
        (DeclaredWork(1e6, 2e6, "fp64"), DeclaredWork(1e6, 1e6, "fp32"), {}),
        # ... but FLOPs do not depend on it: twice the FLOPs is twice the problem.
        (DeclaredWork(1e6, 2e6, "fp64"), DeclaredWork(2e6, 2e6, "fp32"), {"flops": (1e6, 2e6)}),
        # Declaring bytes where none were declared changes what is known, not the work.
        (DeclaredWork(1e6, None, "fp64"), DeclaredWork(1e6, 2e6, "fp64"), {}),
        (None, DeclaredWork(1e6, 2e6, "fp64"), {}),
        (DeclaredWork(1e6, 2e6, "fp64"), None, {}),
    ],
)  # fmt: skip
def test_work_change_names_the_amounts_declared_on_both_sides_that_differ(
    base: DeclaredWork | None, cand: DeclaredWork | None, changed: dict[str, tuple[float, float]]
) -> None:
    assert work_change(base, cand) == changed
