"""Example performance tests: a compute-heavy GEMM, a streaming triad, a dispatch-bound reduction."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.roofline(
    slices="gemm",
    owner="kernels-team",
    rollback="revert the tiling change (flag GEMM_TILE)",
    sla={"p99": "250ms"},
)
def test_gemm(roofline, workload):
    n = workload.params["n"]
    a = np.ones((n, n), dtype=np.float32)
    out = np.empty_like(a)
    roofline.declare(flops=2 * n**3, bytes_moved=3 * n * n * 4, precision="fp32")
    c = roofline(np.matmul, a, a, out=out)
    roofline.record_quality(
        "max_abs_err", float(np.abs(c - n).max()), higher_is_better=False, tolerance=1e-3
    )


def _triad(a, b, c, scalar, chunk=32768):
    # numpy has no fused triad; chunking keeps the temporary in cache so DRAM sees 24 B/element.
    for start in range(0, a.size, chunk):
        stop = start + chunk
        np.multiply(c[start:stop], scalar, out=a[start:stop])
        np.add(a[start:stop], b[start:stop], out=a[start:stop])


@pytest.mark.roofline(
    slices="stream",
    owner={"performance engineer": "perf-oncall", "runtime owner": "numpy-runtime"},
    rollback="revert the allocator change",
)
def test_triad(roofline, workload):
    n = workload.params["n"]
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    roofline.declare(flops=2 * n, bytes_moved=3 * 8 * n, precision="fp64")
    roofline(_triad, a, b, c, 3.0)
    assert a[0] == 7.0


@pytest.mark.roofline(
    slices=[{"name": "tiny", "params": {"n": 64}}],
    owner="python-runtime",
    rollback="revert the dispatch change",
)
def test_small_reduction(roofline, workload):
    x = np.arange(workload.params["n"], dtype=np.float64)
    roofline.declare(flops=x.size, bytes_moved=x.nbytes, precision="fp64")
    total = roofline(np.sum, x)
    assert total == x.size * (x.size - 1) / 2
