"""GEMM over sizes and precisions: compute-bound when large, bound by call overhead when small.

Each slice names a size and a storage precision; the quality of every product is measured
against an fp64 reference and recorded, so a precision change is judged on accuracy as well as
speed. The ``fp16`` slices store their operands in half precision and compute in fp32 (numpy
has no half-precision BLAS): the reduced-precision path of a CPU inference kernel. Their work is
placed against the fp32 roof, the arithmetic that runs, and their bytes are counted at 2 bytes
an element, the storage that moves.
"""

from __future__ import annotations

import numpy as np
import pytest
from demo_changes import injected

STORAGE = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}
COMPUTE = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float32}
# Allowed worsening of the relative error against the baseline, per storage precision: a few
# times the error a correct kernel of that precision makes at these sizes.
TOLERANCE = {"fp64": 1e-13, "fp32": 1e-5, "fp16": 5e-3}


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """C = A·B with one BLAS call (operands upcast first when stored below compute precision)."""
    if a.dtype != out.dtype:
        a, b = a.astype(out.dtype), b.astype(out.dtype)
    return np.matmul(a, b, out=out)


def matmul_by_columns(a: np.ndarray, columns: list[np.ndarray], out: np.ndarray) -> np.ndarray:
    """The injected layout change: B kept as separate columns, one matrix-vector product each.

    Same FLOPs, same result; but a GEMV reads all of A for 2 FLOPs per element, so the kernel
    is bound by bandwidth instead of arithmetic: it falls off the compute roof.
    """
    if a.dtype != out.dtype:
        a = a.astype(out.dtype)
    for j, column in enumerate(columns):
        np.matmul(a, column.astype(out.dtype, copy=False), out=out[:, j])
    return out


# A large GEMM takes milliseconds: a budget of its own gives its p50 comparison some 50 samples
# even when the run's budget is short (a marker's budget wins over --roofline-budget).
@pytest.mark.roofline(slices="gemm", budget="0.4s")
def test_gemm(roofline, workload, hardware):
    n, storage = workload.params["n"], workload.params["precision"]
    rng = np.random.default_rng(n)
    a64, b64 = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    reference = a64 @ b64
    a, b = a64.astype(STORAGE[storage]), b64.astype(STORAGE[storage])
    out = np.empty((n, n), dtype=COMPUTE[storage])
    itemsize = np.dtype(STORAGE[storage]).itemsize
    precision = "fp64" if storage == "fp64" else "fp32"
    roofline.declare(
        flops=2 * n**3,
        bytes_moved=2 * n * n * itemsize + n * n * out.itemsize,
        precision=precision,
    )
    if precision not in hardware.peak_flops_per_s:
        pytest.skip(f"target {hardware.name!r} has no {precision} compute roof")

    if injected("gemm-layout"):
        columns = [np.ascontiguousarray(b[:, j]) for j in range(n)]
        c = roofline(matmul_by_columns, a, columns, out)
    else:
        c = roofline(matmul, a, b, out)

    error = float(np.max(np.abs(c - reference)) / np.max(np.abs(reference)))
    roofline.record_quality(
        "max_rel_err", error, higher_is_better=False, tolerance=TOLERANCE[storage]
    )
    assert error < 100 * TOLERANCE[storage]
