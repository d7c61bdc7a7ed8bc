"""STREAM-like copy and triad: memory-bound, measured in main memory and in the last-level cache.

The ``dram`` slices size each array as the host calibration sized its DRAM arrays (past the
caches; on a preset target, past every last-level cache together; at least 64 MiB), as STREAM
does, and count bytes to main memory. The ``llc`` slices keep
the three arrays within one last-level cache and place the kernel against the cache's roof
(``memory_level="llc"``): against the DRAM roof a cache-resident kernel would read as faster
than memory can go. Byte counts follow STREAM: copy moves 16 bytes an element, triad 24
(write-allocate traffic not counted).
"""

from __future__ import annotations

import numpy as np
import pytest
from sizing import llc_bytes, main_memory_bytes

# numpy has no fused triad; chunks this size keep the temporary product in the L2 cache, so
# main memory sees the 24 bytes an element of a fused kernel.
CHUNK = 32_768


def elements(workload, hardware) -> tuple[int, str]:
    """Elements per float64 array for this slice, and the memory level they live in."""
    level = workload.params["level"]
    if level == "dram":
        per_array = main_memory_bytes(hardware, workload.params["llc_multiple"])
    else:
        per_array = llc_bytes() * workload.params["llc_fraction"]
    return int(per_array) // 8, level


def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float) -> None:
    """a = b + scalar * c, chunk by chunk."""
    for start in range(0, a.size, CHUNK):
        stop = start + CHUNK
        np.multiply(c[start:stop], scalar, out=a[start:stop])
        np.add(a[start:stop], b[start:stop], out=a[start:stop])


@pytest.mark.roofline(slices="stream")
def test_copy(roofline, workload, hardware):
    n, level = elements(workload, hardware)
    source, target = np.arange(n, dtype=np.float64), np.empty(n)
    roofline.declare(flops=0, bytes_moved=16 * n, precision="fp64", memory_level=level)
    if level not in hardware.peak_bytes_per_s:
        pytest.skip(f"target {hardware.name!r} has no {level} bandwidth roof")
    roofline(np.copyto, target, source)
    assert target[-1] == n - 1


@pytest.mark.roofline(slices="stream")
def test_triad(roofline, workload, hardware):
    n, level = elements(workload, hardware)
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    roofline.declare(flops=2 * n, bytes_moved=24 * n, precision="fp64", memory_level=level)
    if level not in hardware.peak_bytes_per_s:
        pytest.skip(f"target {hardware.name!r} has no {level} bandwidth roof")
    roofline(triad, a, b, c, 3.0)
    assert a[0] == a[-1] == 7.0
