"""2-D convolution as im2col + GEMM: the patches are copied into a matrix, then one BLAS call.

The copy moves 9× the input (3×3 patches) but the GEMM does 2·K·C·9 FLOPs per output pixel,
so large layers stay compute-bound; a small layer is bound by call overhead.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

KERNEL = 3


def conv2d(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Valid 3×3 cross-correlation of x (C, H, W) with weights (K, C, 3, 3): (K, H-2, W-2)."""
    channels, height, width = x.shape
    patches = sliding_window_view(x, (KERNEL, KERNEL), axis=(1, 2))  # C, H', W', 3, 3
    columns = patches.transpose(0, 3, 4, 1, 2).reshape(channels * KERNEL * KERNEL, -1)
    out = weights.reshape(weights.shape[0], -1) @ columns
    return out.reshape(weights.shape[0], height - KERNEL + 1, width - KERNEL + 1)


@pytest.mark.roofline(slices="conv")
def test_conv2d(roofline, workload, hardware):
    c, size, k = workload.params["channels"], workload.params["size"], workload.params["filters"]
    rng = np.random.default_rng(c * size)
    x = rng.standard_normal((c, size, size)).astype(np.float32)
    weights = rng.standard_normal((k, c, KERNEL, KERNEL)).astype(np.float32)
    pixels = (size - KERNEL + 1) ** 2
    moved = x.nbytes + weights.nbytes + k * pixels * 4
    roofline.declare(
        flops=2 * k * c * KERNEL * KERNEL * pixels, bytes_moved=moved, precision="fp32"
    )
    if "fp32" not in hardware.peak_flops_per_s:
        pytest.skip(f"target {hardware.name!r} has no fp32 compute roof")
    y = roofline(conv2d, x, weights)
    # One output pixel, computed directly.
    direct = float(np.sum(x[:, 1 : 1 + KERNEL, 2 : 2 + KERNEL] * weights[-1]))
    assert y[-1, 1, 2] == pytest.approx(direct, rel=1e-4, abs=1e-4)
