"""Roofline placement: intensity, attainable performance, efficiency and the bound class.

Pure (standard library only). See :mod:`pytest_roofline.roofline` for the conventions.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_roofline.roofline.work import DEFAULT_PRECISION, DeclaredWork
from pytest_roofline.vocabulary import BOUND_CLASSES, BoundClass

__all__ = [
    "DEFAULT_OVERHEAD_EFFICIENCY",
    "DEFAULT_RIDGE_MARGIN",
    "DEFAULT_ROOF_TOLERANCE",
    "RooflinePoint",
    "attainable",
    "intensity",
    "place",
    "positive",
    "ridge",
]

#: Relative half-width of the band around the ridge inside which the class is ``ambiguous``.
#: 15%: analytic byte counts and roofs are both uncertain
#: by about that much, so a point that close to the ridge cannot be called either way.
DEFAULT_RIDGE_MARGIN = 0.15

#: Below this efficiency a kernel is ``overhead``-bound (bound by neither roof): more than 80% of
#: its time is not explained by moving its bytes or doing its FLOPs at the roof's rate (launch,
#: dispatch, Python, latency). Why 0.2 and not Nsight's 60% "latency issues" rule: datasheet
#: roofs are already 10-40% above what tuned code reaches (STREAM gets 85-93% of datasheet
#: bandwidth, GEMMs 60-90% of tensor peaks; AVX-512 runs below base clock), and run-to-run speed
#: moves by ±20-30% on shared machines (docs/noise.md), so a threshold near 0.6 would
#: flip merely unoptimised kernels in and out of ``overhead`` between runs. 0.2 on a point
#: estimate matches an "upper confidence bound < 0.3" rule under that noise (docs/roofline.md).
#: Measured on an H200 (torch, preset ``h200``): bf16/fp32/fp64 GEMMs at 0.89/0.76/0.96, a
#: 1 GiB copy at 0.88, a 4 MiB copy (15 µs, launch-dominated) at 0.12 -> overhead.
DEFAULT_OVERHEAD_EFFICIENCY = 0.2

#: Achieved performance may exceed the roof by this much before it is a data error: roofs are
#: rounded datasheet values or best-of-N measurements, and timers have jitter.
DEFAULT_ROOF_TOLERANCE = 0.05


def intensity(flops: float | None, bytes_moved: float | None) -> float | None:
    """Operational intensity in FLOP/byte.

    :returns: ``flops / bytes_moved``; ``None`` when either is undeclared or both are zero;
        ``math.inf`` for FLOPs with zero bytes (nothing to wait for: compute side).
    """
    if flops is None or bytes_moved is None:
        return None
    if bytes_moved == 0:
        return None if flops == 0 else math.inf
    return flops / bytes_moved


def positive(value: float, name: str) -> float:
    number = float(value)
    if not (number > 0 and math.isfinite(number)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return number


def ridge(peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """Ridge point in FLOP/byte: the intensity where the bandwidth roof meets the compute roof.

    :raises ValueError: unless both peaks are positive and finite.
    """
    return positive(peak_flops_per_s, "peak_flops_per_s") / positive(
        peak_bytes_per_s, "peak_bytes_per_s"
    )


def attainable(intensity: float, peak_flops_per_s: float, peak_bytes_per_s: float) -> float:
    """Attainable FLOP/s at ``intensity``: ``min(peak FLOP/s, intensity × peak bytes/s)``.

    :raises ValueError: for a negative or NaN intensity or non-positive peaks.
    """
    peak_f = positive(peak_flops_per_s, "peak_flops_per_s")
    peak_b = positive(peak_bytes_per_s, "peak_bytes_per_s")
    if math.isnan(intensity) or intensity < 0:
        raise ValueError(f"intensity must be >= 0, got {intensity!r}")
    if math.isinf(intensity):
        return peak_f
    return min(peak_f, intensity * peak_b)


@dataclass(frozen=True, slots=True)
class RooflinePoint:
    """One measured test placed on a roofline.

    Units: intensity FLOP/byte, rates per second, efficiency a fraction (1.0 = on the roof).
    ``data_error`` is set when the achieved rate is above a roof: the numbers contradict each
    other, and the message names the likely causes. ``note`` explains an ``unknown`` class or a
    default that was applied (``None`` when there is nothing to say).
    """

    intensity: float | None
    achieved_flops_per_s: float | None
    achieved_bytes_per_s: float | None
    attainable_flops_per_s: float | None
    efficiency: float | None
    bound: BoundClass
    ridge: float | None
    precision: str | None
    memory_level: str
    data_error: str | None
    note: str | None = None

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping.

        An infinite intensity (FLOPs declared with zero bytes) is written as ``None``: JSON has
        no infinity, and the ``bound`` already says ``compute``.
        """
        return {
            "intensity": _finite_or_none(self.intensity),
            "achieved_flops_per_s": self.achieved_flops_per_s,
            "achieved_bytes_per_s": self.achieved_bytes_per_s,
            "attainable_flops_per_s": self.attainable_flops_per_s,
            "efficiency": self.efficiency,
            "bound": self.bound,
            "ridge": self.ridge,
            "precision": self.precision,
            "memory_level": self.memory_level,
            "data_error": self.data_error,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> RooflinePoint:
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored.

        :raises ValueError: when ``bound`` is missing or not one of :data:`BOUND_CLASSES`, or a number
            field holds something that is not a number.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"roofline point: expected a mapping, got {type(data).__name__}")
        bound = data.get("bound")
        if bound not in BOUND_CLASSES:
            raise ValueError(
                f"roofline point: bound must be one of {list(BOUND_CLASSES)}, got {bound!r}"
            )

        def num(key: str) -> float | None:
            value = data.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"roofline point: {key} must be a number or null, got {value!r}")
            return float(value)

        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        return cls(
            intensity=num("intensity"),
            achieved_flops_per_s=num("achieved_flops_per_s"),
            achieved_bytes_per_s=num("achieved_bytes_per_s"),
            attainable_flops_per_s=num("attainable_flops_per_s"),
            efficiency=num("efficiency"),
            bound=bound,
            ridge=num("ridge"),
            precision=text("precision"),
            memory_level=text("memory_level") or "dram",
            data_error=text("data_error"),
            note=text("note"),
        )


def _finite_or_none(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _check_peak(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    return positive(value, name)


def _rate(value: float) -> str:
    return f"{value:.3g}"


def _above_roof_message(
    *,
    compute_ratio: float | None,
    memory_ratio: float | None,
    precision: str,
    memory_level: str,
    peak_flops_per_s: float | None,
    peak_bytes_per_s: float | None,
    tolerance: float,
) -> str | None:
    """Describe an achieved rate above a roof, with the causes that usually produce it."""
    parts: list[str] = []
    limit = 1.0 + tolerance
    if compute_ratio is not None and compute_ratio > limit and peak_flops_per_s is not None:
        parts.append(
            f"achieved FLOP/s is {compute_ratio:.2f}x the {precision} compute roof "
            f"({_rate(peak_flops_per_s)} FLOP/s): the kernel may run at a faster precision "
            "than declared (TF32/BF16 tensor cores, autocast), the declared FLOPs may be too "
            "high (a formula counting work the library skips: Strassen-like algorithms, 2:4 "
            "structured sparsity, whose sparse peak is not a dense roof), or a config-target "
            "peak counts an FMA as 1 FLOP while declarations count it as 2"
        )
    if memory_ratio is not None and memory_ratio > limit and peak_bytes_per_s is not None:
        parts.append(
            f"achieved bytes/s is {memory_ratio:.2f}x the {memory_level} bandwidth roof "
            f"({_rate(peak_bytes_per_s)} B/s): the working set may be cache-resident (measured "
            f"against the {memory_level} roof; use a working set well beyond the last-level "
            "cache, or a cache-level roof), or the declared bytes count traffic that never "
            f"reaches {memory_level} (reused or broadcast operands)"
        )
    if not parts:
        return None
    return (
        "above the roof: "
        + "; ".join(parts)
        + "; also check that the timer waits for the work (sync= for asynchronous devices) "
        "and that the target is the hardware the test ran on"
    )


def place(
    work: DeclaredWork,
    seconds_per_call: float,
    *,
    peak_flops_per_s: float | None,
    peak_bytes_per_s: float | None,
    memory_level: str = "dram",
    ridge_margin: float = DEFAULT_RIDGE_MARGIN,
    overhead_efficiency: float = DEFAULT_OVERHEAD_EFFICIENCY,
    roof_tolerance: float = DEFAULT_ROOF_TOLERANCE,
) -> RooflinePoint:
    """Place one call's declared work, taking ``seconds_per_call``, against a pair of roofs.

    Rules, in order:

    1. Nothing declared (no FLOPs, no bytes) → ``unknown``.
    2. Both declared and both roofs given: intensity ``I`` against the ridge ``R`` with the
       band ``[R/(1+m), R·(1+m)]`` (``m = ridge_margin``, boundaries inclusive): inside →
       ``ambiguous``, below → ``memory``, above → ``compute``. Then, whatever the position,
       ``efficiency < overhead_efficiency`` → ``overhead`` (bound by neither roof: launch,
       dispatch, Python, latency).
    3. Only FLOPs declared: the intensity is unknown, so the class is ``unknown``; the
       efficiency is the compute utilisation (achieved ÷ peak FLOP/s, i.e. MFU), which is a
       lower bound on the roof efficiency. Only bytes declared: likewise ``unknown`` with the
       bandwidth utilisation. A pure data-movement kernel should declare ``flops=0``: it is
       then placed at intensity 0 on the memory roof.
    4. A roof missing for the declared precision or memory level → ``unknown`` (with a note);
       the remaining roof still gives a utilisation and an above-roof check.
    5. An achieved rate more than ``roof_tolerance`` above a roof keeps its class and sets
       ``data_error``, naming the likely causes.

    :param work: the declared work of one call.
    :param seconds_per_call: the time one call took (typically the median), in seconds.
    :param peak_flops_per_s: the dense compute roof for the work's precision, or ``None``.
    :param peak_bytes_per_s: the bandwidth roof of ``memory_level``, or ``None``.
    :param memory_level: the memory level the bytes and roof refer to.
    :param ridge_margin: relative half-width of the ambiguous band around the ridge.
    :param overhead_efficiency: efficiency below which the class is ``overhead``.
    :param roof_tolerance: how far above a roof the achieved rate may go before it is a data
        error.
    :raises ValueError: for a non-positive or non-finite ``seconds_per_call``, a non-positive
        peak, or parameters out of range.
    """
    if not (seconds_per_call > 0 and math.isfinite(seconds_per_call)):
        raise ValueError(f"seconds_per_call must be positive and finite, got {seconds_per_call!r}")
    peak_f = _check_peak(peak_flops_per_s, "peak_flops_per_s")
    peak_b = _check_peak(peak_bytes_per_s, "peak_bytes_per_s")
    if not (ridge_margin >= 0 and math.isfinite(ridge_margin)):
        raise ValueError(f"ridge_margin must be >= 0, got {ridge_margin!r}")
    if not 0 <= overhead_efficiency < 1:
        raise ValueError(f"overhead_efficiency must be in [0, 1), got {overhead_efficiency!r}")
    if not (roof_tolerance >= 0 and math.isfinite(roof_tolerance)):
        raise ValueError(f"roof_tolerance must be >= 0, got {roof_tolerance!r}")

    precision = work.precision or DEFAULT_PRECISION
    notes: list[str] = []
    if work.precision is None and work.flops is not None:
        notes.append(f"precision not declared: placed against the {DEFAULT_PRECISION} roof")
    ridge_value = ridge(peak_f, peak_b) if peak_f is not None and peak_b is not None else None

    if not work.declared:
        return RooflinePoint(
            intensity=None,
            achieved_flops_per_s=None,
            achieved_bytes_per_s=None,
            attainable_flops_per_s=None,
            efficiency=None,
            bound="unknown",
            ridge=ridge_value,
            precision=precision,
            memory_level=memory_level,
            data_error=None,
            note="no work declared (roofline.declare(flops=..., bytes_moved=...))",
        )

    point_intensity = intensity(work.flops, work.bytes_moved)
    achieved_f = None if work.flops is None else work.flops / seconds_per_call
    achieved_b = None if work.bytes_moved is None else work.bytes_moved / seconds_per_call
    # Utilisation of each roof; efficiency = achieved / min(roofs) = the larger of the two.
    compute_ratio = None if achieved_f is None or peak_f is None else achieved_f / peak_f
    memory_ratio = None if achieved_b is None or peak_b is None else achieved_b / peak_b
    ratios = [r for r in (compute_ratio, memory_ratio) if r is not None]
    efficiency = max(ratios) if ratios and (work.flops or work.bytes_moved) else None

    attainable_f: float | None = None
    if point_intensity is not None and peak_f is not None and peak_b is not None:
        attainable_f = attainable(point_intensity, peak_f, peak_b)
    elif work.flops is not None and peak_f is not None:
        attainable_f = peak_f  # the compute roof bounds every intensity
    elif point_intensity is not None and peak_b is not None and math.isfinite(point_intensity):
        attainable_f = point_intensity * peak_b

    if peak_f is None and work.flops is not None:
        notes.append(f"no {precision} compute roof on this target")
    if peak_b is None and work.bytes_moved is not None:
        notes.append(f"no {memory_level} bandwidth roof on this target")
    bound: BoundClass
    if point_intensity is None:
        bound = "unknown"
        missing = "bytes_moved" if work.bytes_moved is None else "flops"
        if work.flops == 0 and work.bytes_moved == 0:
            notes.append("zero FLOPs and zero bytes declared: no intensity")
        else:
            notes.append(
                f"{missing} not declared: intensity unknown; efficiency is the utilisation of "
                "the one roof that applies (a lower bound)"
            )
    elif ridge_value is None:
        bound = "unknown"  # a roof is missing (noted above)
    else:
        if point_intensity < ridge_value / (1.0 + ridge_margin):
            bound = "memory"
        elif point_intensity > ridge_value * (1.0 + ridge_margin):
            bound = "compute"
        else:
            bound = "ambiguous"
        if efficiency is not None and efficiency < overhead_efficiency:
            bound = "overhead"

    data_error = _above_roof_message(
        compute_ratio=compute_ratio,
        memory_ratio=memory_ratio,
        precision=precision,
        memory_level=memory_level,
        peak_flops_per_s=peak_f,
        peak_bytes_per_s=peak_b,
        tolerance=roof_tolerance,
    )
    return RooflinePoint(
        intensity=point_intensity,
        achieved_flops_per_s=achieved_f,
        achieved_bytes_per_s=achieved_b,
        attainable_flops_per_s=attainable_f,
        efficiency=efficiency,
        bound=bound,
        ridge=ridge_value,
        precision=precision,
        memory_level=memory_level,
        data_error=data_error,
        note="; ".join(notes) or None,
    )
