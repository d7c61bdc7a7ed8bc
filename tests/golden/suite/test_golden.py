"""The golden suite: every decision path the reports render, with fake-clock timings."""

from __future__ import annotations

import pytest
from conftest import CANDIDATE


@pytest.mark.roofline(
    slices="gemm",
    owner="kernels-team",
    rollback="revert the tiling change (flag GEMM_TILE)",
    sla={"p99": "40ms"},
)
def test_gemm(roofline, workload, fake_call):
    n = workload.params["n"]
    roofline.declare(flops=2 * n**3, bytes_moved=3 * n * n * 4, precision="fp32")
    # The candidate's large GEMM falls off the compute roof: 2.5x slower.
    slow = 2.5 if CANDIDATE and n == 256 else 1.0
    roofline(fake_call(2 * n**3 / 6e10 * slow))
    roofline.record_quality("max_abs_err", 1e-6, higher_is_better=False, tolerance=1e-5)


def test_stream_triad(roofline, fake_call):
    n = 1_000_000
    roofline.declare(flops=2 * n, bytes_moved=24 * n, precision="fp64")
    # The candidate is 30% faster: an improvement.
    roofline(fake_call(24 * n / 1.5e10 * (0.7 if CANDIDATE else 1.0)))


@pytest.mark.roofline(
    owner={"performance engineer": "alice", "compiler owner": "bob"},
    rollback="revert the scheduler change",
    sla={"p95": "1.5ms"},
)
def test_tail_latency(roofline, fake_call):
    # The candidate keeps its median and grows a tail: 4% of calls 4x slower.
    roofline(fake_call(1e-3, tail=0.04 if CANDIDATE else 0.0, tail_factor=4.0))


def test_python_loop(roofline, fake_call):
    roofline(fake_call(2e-4, sigma=0.1))


@pytest.mark.skipif(CANDIDATE, reason="removed in the candidate")
def test_removed(roofline, fake_call):
    roofline(fake_call(5e-4))


@pytest.mark.skipif(not CANDIDATE, reason="new in the candidate")
def test_added(roofline, fake_call):
    roofline(fake_call(5e-4))
