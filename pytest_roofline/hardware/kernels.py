"""The calibration's kernels: STREAM-like bandwidth kernels and BLAS GEMMs, timed with numpy."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from pytest_roofline.hardware.machine import last_level_caches, memory_bytes

__all__ = ["STREAM_BYTES_PER_ELEMENT", "HostKernels", "NumpyKernels"]

_MIB = 2**20
# STREAM byte counts per element (write-allocate not counted, as STREAM reports).
STREAM_BYTES_PER_ELEMENT: Mapping[str, int] = {"copy": 16, "add": 24, "triad": 24}
# Triad is done in chunks this long so the temporary ``s * c`` stays in L2: numpy has no fused
# triad, and an unchunked temporary would stream through DRAM (40 B/element of real traffic).
_TRIAD_CHUNK = 32 * 1024
_GEMM_MIN_N = 256
_GEMM_MAX_N = 4096


class HostKernels(Protocol):
    """The measurements a calibration needs; :class:`NumpyKernels` is the real one.

    Rates are per timed repetition; tests substitute fixed numbers.
    """

    threads: int

    def bandwidth(self, level: str, kernels: Sequence[str], reps: int) -> dict[str, list[float]]:
        """Bytes/s per rep of each STREAM kernel on ``level``-sized arrays (``dram``/``llc``)."""

    def gemm(self, precision: str, reps: int, *, n: int | None = None) -> tuple[int, list[float]]:
        """FLOP/s per rep of an n×n matmul in ``precision`` (``n`` chosen when ``None``)."""

    def dispatch(self, reps: int) -> list[float]:
        """Seconds per call of a tiny numpy op, one figure per batch."""

    def sizes(self) -> dict[str, int]:
        """What was measured (array bytes per level)."""


def _round_n(n: float) -> int:
    return int(min(_GEMM_MAX_N, max(_GEMM_MIN_N, 64 * round(n / 64))))


class NumpyKernels:
    """Real measurements with numpy on this machine.

    :param threads: threads for the bandwidth kernels.
    :param clock: monotonic clock in seconds.
    :param gemm_seconds: target duration of one GEMM call (sets ``n``); short calls under-read
        the peak (blocking and thread start-up), long ones cost calibration time.
    """

    def __init__(
        self,
        *,
        threads: int,
        clock: Callable[[], float] = time.perf_counter,
        gemm_seconds: float = 0.05,
    ) -> None:
        self.threads = max(1, threads)
        self._clock = clock
        self._gemm_seconds = gemm_seconds
        self._sizes: dict[str, int] = {}
        llc, llc_total = last_level_caches()
        self._llc = llc or 32 * _MIB
        self._llc_total = llc_total or self._llc
        self._memory = memory_bytes() or 8 * 2**30

    def sizes(self) -> dict[str, int]:
        """Array bytes per level measured so far."""
        return dict(self._sizes)

    def _array_elements(self, level: str) -> int:
        if level == "llc":
            # Three arrays filling about 3/4 of one LLC instance.
            size = max(self._llc // 4, 256 * 1024)
        else:
            # Working set well beyond every LLC instance together, so no pass reuses the last
            # one's data; capped so a big-cache server does not spend its memory on this.
            size = max(2 * self._llc_total, 64 * _MIB)
            size = min(size, max(self._memory // 16, 16 * _MIB))
        return int(size // 8)

    def bandwidth(self, level: str, kernels: Sequence[str], reps: int) -> dict[str, list[float]]:
        """Bytes/s per rep of each of ``kernels`` (``copy``, ``add``, ``triad``) on ``level``."""
        n = self._array_elements(level)
        self._sizes[f"array_bytes.{level}"] = n * 8
        # np.full, not np.zeros: zeros are mapped lazily and would fault inside the timing.
        a = np.full(n, 0.0)
        b = np.full(n, 1.0)
        c = np.full(n, 2.0)
        bounds = np.linspace(0, n, self.threads + 1).astype(int)
        parts = [(a[lo:hi], b[lo:hi], c[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
        temps = [np.empty(_TRIAD_CHUNK) for _ in parts]
        # Cache-resident passes are short: repeat them inside one timing so the thread-pool
        # hand-off does not dominate.
        inner = max(1, math.ceil(64 * _MIB / (3 * n * 8))) if level == "llc" else 1
        out: dict[str, list[float]] = {}
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for name in kernels:
                kernel = _STREAM_KERNELS[name]
                work = [(kernel, part, temp) for part, temp in zip(parts, temps, strict=True)]

                def run(item: tuple[_Kernel, tuple[_Array, _Array, _Array], _Array]) -> None:
                    fn, (x, y, z), tmp = item
                    for _ in range(inner):
                        fn(x, y, z, tmp)

                rates: list[float] = []
                for rep in range(reps + 1):  # rep 0 warms up: page faults, pool start-up
                    start = self._clock()
                    if self.threads == 1:
                        run(work[0])
                    else:
                        list(pool.map(run, work))
                    elapsed = self._clock() - start
                    if rep and elapsed > 0:
                        rates.append(STREAM_BYTES_PER_ELEMENT[name] * n * inner / elapsed)
                out[name] = rates
        return out

    def _time_gemm(self, dtype: np.dtype[Any], n: int, calls: int) -> list[float]:
        x = np.full((n, n), 0.5, dtype=dtype)
        y = np.full((n, n), 0.25, dtype=dtype)
        z = np.empty((n, n), dtype=dtype)
        np.matmul(x, y, out=z)  # warm-up: BLAS thread pool, page faults
        times = []
        for _ in range(calls):
            start = self._clock()
            np.matmul(x, y, out=z)
            times.append(self._clock() - start)
        return times

    def gemm(self, precision: str, reps: int, *, n: int | None = None) -> tuple[int, list[float]]:
        """FLOP/s per rep of ``numpy.matmul`` on n×n ``precision`` matrices (2·n³ FLOPs)."""
        dtype = np.dtype({"fp64": np.float64, "fp32": np.float32}[precision])
        if n is None:
            # Grow n until one call takes about gemm_seconds (time ~ n³), in at most 3 steps.
            n = _GEMM_MIN_N * 2
            for _ in range(3):
                elapsed = min(self._time_gemm(dtype, n, 1))
                if elapsed >= 0.5 * self._gemm_seconds or n >= _GEMM_MAX_N:
                    break
                n = _round_n(n * (self._gemm_seconds / max(elapsed, 1e-6)) ** (1 / 3))
        times = self._time_gemm(dtype, n, reps)
        return n, [2.0 * n**3 / t for t in times if t > 0]

    def dispatch(self, reps: int) -> list[float]:
        """Seconds per call of ``numpy.add`` on 8 elements, best of ``reps`` batches."""
        x = np.ones(8)
        out = np.empty(8)
        calls = 2000
        result = []
        for _ in range(reps):
            start = self._clock()
            for _ in range(calls):
                np.add(x, x, out=out)
            result.append((self._clock() - start) / calls)
        return result


_Array = npt.NDArray[np.float64]
_Kernel = Callable[[_Array, _Array, _Array, _Array], None]


def _copy(a: _Array, b: _Array, c: _Array, tmp: _Array) -> None:
    np.copyto(a, b)


def _add(a: _Array, b: _Array, c: _Array, tmp: _Array) -> None:
    np.add(b, c, out=a)


def _triad(a: _Array, b: _Array, c: _Array, tmp: _Array) -> None:
    for lo in range(0, a.shape[0], _TRIAD_CHUNK):
        hi = min(lo + _TRIAD_CHUNK, a.shape[0])
        t = tmp[: hi - lo]
        np.multiply(c[lo:hi], 3.0, out=t)
        np.add(b[lo:hi], t, out=a[lo:hi])


_STREAM_KERNELS: Mapping[str, _Kernel] = {"copy": _copy, "add": _add, "triad": _triad}
