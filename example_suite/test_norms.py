"""Softmax and layer norm over the rows of a matrix: elementwise work, bound by memory.

Both run block by block (64 rows at a time), so the temporaries of numpy's separate passes stay
in cache and memory sees what a fused kernel moves: the input read once and the output written
once. Small slices live in the last-level cache and are placed against its roof; large ones go
to main memory.
"""

from __future__ import annotations

import numpy as np
import pytest
from demo_changes import injected
from sizing import memory_level

BLOCK = 64
EPS = 1e-5


def softmax(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Row-wise softmax, numerically stable (max subtracted first)."""
    for start in range(0, x.shape[0], BLOCK):
        rows, dest = x[start : start + BLOCK], out[start : start + BLOCK]
        np.subtract(rows, rows.max(axis=1, keepdims=True), out=dest)
        np.exp(dest, out=dest)
        dest /= dest.sum(axis=1, keepdims=True)
    return out


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Row-wise layer norm: (x - mean) / sqrt(var + eps) * gamma + beta."""
    for start in range(0, x.shape[0], BLOCK):
        rows, dest = x[start : start + BLOCK], out[start : start + BLOCK]
        np.subtract(rows, rows.mean(axis=1, keepdims=True), out=dest)
        scale = 1.0 / np.sqrt(np.mean(dest * dest, axis=1, keepdims=True) + EPS)
        dest *= scale
        dest *= gamma
        dest += beta
    return out


@pytest.mark.roofline(slices="rows")
def test_softmax(roofline, workload, hardware):
    rows, cols = workload.params["rows"], workload.params["cols"]
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
    out = np.empty_like(x)
    level = memory_level(2 * x.nbytes)
    # max, subtract, exp, sum, divide: 5 operations an element (exp counted as one).
    roofline.declare(
        flops=5 * x.size, bytes_moved=2 * x.nbytes, precision="fp32", memory_level=level
    )
    if level not in hardware.peak_bytes_per_s:
        pytest.skip(f"target {hardware.name!r} has no {level} bandwidth roof")
    result = roofline(softmax, x, out)
    assert np.allclose(result.sum(axis=1), 1.0, atol=1e-4)


@pytest.mark.roofline(slices="rows")
def test_layer_norm(roofline, workload, hardware):
    rows, cols = workload.params["rows"], workload.params["cols"]
    rng = np.random.default_rng(rows)
    x64 = rng.standard_normal((rows, cols)) * 3.0 + 1.0
    gamma64, beta64 = rng.standard_normal(cols), rng.standard_normal(cols)
    reference = (x64 - x64.mean(axis=1, keepdims=True)) / np.sqrt(
        x64.var(axis=1, keepdims=True) + EPS
    )
    reference = reference * gamma64 + beta64
    # The injected precision change computes in fp32 and drops its quality record: the gate
    # cannot tell whether the faster kernel is still accurate enough.
    dtype = np.float32 if injected("layernorm-fp32") else np.float64
    x, gamma, beta = x64.astype(dtype), gamma64.astype(dtype), beta64.astype(dtype)
    out = np.empty_like(x)
    level = memory_level(2 * x.nbytes)
    # mean, subtract, square, sum, scale, gamma, beta: 7 operations an element.
    roofline.declare(
        flops=7 * x.size,
        bytes_moved=2 * x.nbytes,
        precision="fp32" if dtype == np.float32 else "fp64",
        memory_level=level,
    )
    if level not in hardware.peak_bytes_per_s:
        pytest.skip(f"target {hardware.name!r} has no {level} bandwidth roof")
    result = roofline(layer_norm, x, gamma, beta, out)
    error = float(np.max(np.abs(result - reference)))
    if not injected("layernorm-fp32"):
        roofline.record_quality("max_abs_err", error, higher_is_better=False, tolerance=1e-9)
    assert error < 1e-3
