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

__all__ = [
    "STREAM_BYTES_PER_ELEMENT",
    "HostKernels",
    "NumpyKernels",
    "dram_array_bytes",
    "past_the_caches",
    "reference_bytes",
    "sweep_until_clear",
]

_MIB = 2**20
# STREAM byte counts per element (write-allocate not counted, as STREAM reports).
STREAM_BYTES_PER_ELEMENT: Mapping[str, int] = {"copy": 16, "add": 24, "triad": 24}
# Triad is done in chunks this long so the temporary ``s * c`` stays in L2: numpy has no fused
# triad, and an unchunked temporary would stream through DRAM (40 B/element of real traffic).
_TRIAD_CHUNK = 32 * 1024
_GEMM_MIN_N = 256
_GEMM_MAX_N = 4096
# DRAM arrays are never smaller than this, whatever the caches say.
_DRAM_FLOOR = 64 * _MIB
# sysfs can report a last-level cache far bigger than what this process keeps resident: this
# project's 2-vCPU VM reports one 300 MiB L3, yet arrays of 64 and 128 MiB (32 MiB nearly so)
# read at main memory's speed there (docs/roofline.md). Twice the reported size costs seconds of page
# faults in every calibration and drift check, so a rule asking for more than _SWEEP[-1] per
# array is checked by a sweep (past_the_caches).
# The cache-resident reference must sit in the last-level cache but past every thread's
# private caches (up to 2 MiB of L2 a core on the CPUs in docs/roofline.md): a reference read
# at an L2 rate would let a big LLC holding the swept sizes pass for main memory. So each of
# its three arrays is 2 MiB per thread, at least 4 MiB, at most an eighth of one LLC instance
# and a quarter of the smallest swept size (else, e.g. beyond 8 threads, the sweep is not run
# and the caches' rule stands).
_REFERENCE_MIN = 4 * _MIB
_PRIVATE_PER_THREAD = 2 * _MIB
_SWEEP = (64 * _MIB, 128 * _MIB)
# The sweep's sizes and the cache-resident reference are timed in turn, round after round, and
# each keeps its best: this VM's bandwidth moves by +-50% within seconds, and sizes timed one
# after another compared different moments (measured: a best of 3 per size read 12.9-25 GB/s
# at the same size), while interleaved rounds mostly agree to a few percent.
_SWEEP_ROUNDS = 6
# A disturbance can hold one size's best down for all six rounds (a bursty neighbour on the
# other vCPU left 3 of 12 sweeps undecided, benchmarks/dram_sweep.py), and an undecided sweep
# keeps the caches' rule: 1 GiB arrays on this VM, whose page faults took a calibration from
# 3 s to 31 s. So an undecided sweep goes on, round by round, until it decides or has timed
# this many rounds; a round after the arrays exist costs 40-80 ms here. Under the neighbour,
# 23 of 24 sweeps decided (twice, at most 36 and 60 rounds; the one left took 4.2 s), against
# 9 of 12 in six rounds (docs/validation/dram_sweep_neighbour_stop33.txt).
_SWEEP_MAX_ROUNDS = 60
# Past the caches: every swept size below this share of the cache-resident rate (0.60-0.76
# measured here with 2 threads; main memory is slower than a last-level cache everywhere) ...
_OUT_OF_CACHE = 0.8
# ... and flat from one size to twice it: within 10%.
_PLATEAU = 0.9


def past_the_caches(reference: float, swept: Mapping[int, float]) -> int | None:
    """The largest swept array size (bytes) if the sweep shows main memory, else ``None``.

    Main memory shows when every swept size reads below ``_OUT_OF_CACHE`` times the
    cache-resident ``reference`` rate (the working sets have left the caches) and the rates
    are flat across the sizes (within ``_PLATEAU``: a cache still holding part of a working
    set makes the smaller sizes faster). Anything else keeps the caches' own rule.

    >>> GB = 1e9
    >>> past_the_caches(36.7 * GB, {64: 26.6 * GB, 128: 26.4 * GB})
    128
    >>> past_the_caches(60 * GB, {64: 57 * GB, 128: 55 * GB}) is None  # in the cache
    True
    """
    rates = list(swept.values())
    readings = [reference, *rates]
    if not rates or not all(r > 0 and math.isfinite(r) for r in readings):
        return None  # a clock that did not move, or nothing measured: no evidence either way
    if max(rates) > _OUT_OF_CACHE * reference or min(rates) < _PLATEAU * max(rates):
        return None
    return max(swept)


def sweep_until_clear(
    time_round: Callable[[], Mapping[int, float]],
    reference: int,
    *,
    rounds: int = _SWEEP_ROUNDS,
    max_rounds: int = _SWEEP_MAX_ROUNDS,
) -> tuple[float, dict[int, float]]:
    """Best rate per size over rounds of ``time_round`` (``{size: bytes/s}``, ``reference``
    among the sizes): ``rounds`` of them, then more while :func:`past_the_caches` cannot yet
    tell, up to ``max_rounds``.

    A best-of only rises with more rounds, towards each size's undisturbed rate, so the extra
    rounds can settle a sweep that a disturbance left undecided. Each extra round is one more
    look, though: in a cache that holds the swept sizes, a reference disturbed in the first
    rounds and clean later could pass them for main memory where six rounds kept the rule;
    their bests also rise towards the reference's, which makes that less likely as rounds go
    on. A round with no reading (a clock that did not move) ends the sweep.

    :returns: ``(reference's best, {swept size: best})``.
    """
    best: dict[int, float] = {}
    for done in range(1, max_rounds + 1):
        rates = time_round()
        if not all(rate > 0 and math.isfinite(rate) for rate in rates.values()):
            break  # no evidence to gather: past_the_caches refuses such readings
        for size, rate in rates.items():
            best[size] = max(best.get(size, 0.0), rate)
        swept = {size: rate for size, rate in best.items() if size != reference}
        if done >= rounds and past_the_caches(best.get(reference, 0.0), swept) is not None:
            break
    return best.pop(reference, 0.0), best


def reference_bytes(threads: int, llc: int) -> int | None:
    """Bytes per array of the sweep's cache-resident reference for ``threads`` threads and a
    last-level cache instance of ``llc`` bytes, or ``None`` when no size is both past the
    threads' private caches and well inside the LLC and below the swept sizes.

    >>> reference_bytes(2, 300 * 2**20) // 2**20
    4
    >>> reference_bytes(16, 300 * 2**20) is None  # 16 x 2 MiB = 32 MiB: too close to 64 MiB
    True
    """
    size = max(_REFERENCE_MIN, threads * _PRIVATE_PER_THREAD)
    return size if size <= min(llc // 8, _SWEEP[0] // 4) else None


def dram_array_bytes(
    rule: int, sweep: Callable[[int], tuple[float, dict[int, float]]], reference: int | None
) -> int:
    """Bytes per array for the DRAM roof: the caches' ``rule``, or the sweep's largest size
    when the rule asks for more and :func:`past_the_caches` finds main memory there.

    :param sweep: ``sweep(reference)`` gives ``(reference rate, {size: rate})`` in bytes/s;
        measured only when needed.
    :param reference: :func:`reference_bytes`; ``None`` keeps the rule.
    """
    if rule <= _SWEEP[-1] or reference is None:
        return rule
    rate, swept = sweep(reference)
    return past_the_caches(rate, swept) or rule


class HostKernels(Protocol):
    """The measurements a calibration needs; :class:`NumpyKernels` is the real one.

    Rates are per timed repetition; tests substitute fixed numbers.
    """

    threads: int

    def bandwidth(
        self, level: str, kernels: Sequence[str], reps: int, *, array_bytes: int | None = None
    ) -> dict[str, list[float]]:
        """Bytes/s per rep of each STREAM kernel on ``level``-sized arrays (``dram``/``llc``),
        or on arrays of ``array_bytes`` each (a drift check repeats its calibration's size)."""

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
    :param dram_array_bytes: bytes per DRAM array, kept from an earlier calibration of this
        host; ``None`` chooses them (:meth:`_dram_bytes_for_host`).
    """

    def __init__(
        self,
        *,
        threads: int,
        clock: Callable[[], float] = time.perf_counter,
        gemm_seconds: float = 0.05,
        dram_array_bytes: int | None = None,
    ) -> None:
        self.threads = max(1, threads)
        self._clock = clock
        self._gemm_seconds = gemm_seconds
        self._sizes: dict[str, int] = {}
        llc, llc_total = last_level_caches()
        self._llc = llc or 32 * _MIB
        self._llc_total = llc_total or self._llc
        self._memory = memory_bytes() or 8 * 2**30
        self._dram_bytes: int | None = dram_array_bytes

    def sizes(self) -> dict[str, int]:
        """Array bytes per level measured so far."""
        return dict(self._sizes)

    def _array_elements(self, level: str) -> int:
        if level == "llc":
            # Three arrays filling about 3/4 of one LLC instance.
            return int(max(self._llc // 4, 256 * 1024) // 8)
        if self._dram_bytes is None:
            self._dram_bytes = self._dram_bytes_for_host()
        return self._dram_bytes // 8

    def _dram_bytes_for_host(self) -> int:
        """Bytes per DRAM array: :func:`dram_array_bytes` of the caches' rule (a working set
        well beyond every LLC instance together, so no pass reuses the last one's data; capped
        so a big-cache server does not spend its memory on this)."""
        rule = max(2 * self._llc_total, _DRAM_FLOOR)
        rule = int(min(rule, max(self._memory // 16, 16 * _MIB)))
        return dram_array_bytes(rule, self._sweep, reference_bytes(self.threads, self._llc))

    def _sweep(self, reference: int) -> tuple[float, dict[int, float]]:
        """``add`` rates of the cache-resident reference (``reference`` bytes an array) and
        the sweep's sizes, timed in turn round after round on prefixes of one set of arrays,
        best per size (:func:`sweep_until_clear`)."""
        arrays = _arrays(_SWEEP[-1] // 8)
        temps = self._temps()
        sizes = (reference, *_SWEEP)
        with ThreadPoolExecutor(max_workers=self.threads) as pool:

            def time_round() -> dict[int, float]:
                rates = {}
                for size in sizes:
                    n = size // 8
                    prefix = [x[:n] for x in arrays]
                    if size == reference:
                        # The larger sizes' passes have pushed the reference out of the cache:
                        # one untimed pass brings it back, or its rate would be part memory's.
                        self._timed(pool, "add", prefix, 1, temps)
                    rates[size] = self._timed(pool, "add", prefix, _inner(n), temps)
                return rates

            time_round()  # warms up: the arrays' first touch and the pool's threads
            return sweep_until_clear(time_round, reference)

    def _temps(self) -> list[_Array]:
        """One triad scratch buffer per thread, allocated once (not inside a timing)."""
        return [np.empty(_TRIAD_CHUNK) for _ in range(self.threads)]

    def bandwidth(
        self, level: str, kernels: Sequence[str], reps: int, *, array_bytes: int | None = None
    ) -> dict[str, list[float]]:
        """Bytes/s per rep of each of ``kernels`` (``copy``, ``add``, ``triad``) on ``level``,
        on arrays of ``array_bytes`` each when given (a drift check repeats its calibration's)."""
        n = int(array_bytes // 8) if array_bytes else self._array_elements(level)
        self._sizes[f"array_bytes.{level}"] = n * 8
        inner = _inner(n) if level == "llc" else 1
        arrays = _arrays(n)
        temps = self._temps()
        out: dict[str, list[float]] = {}
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for name in kernels:
                rates = [
                    self._timed(pool, name, arrays, inner, temps)
                    for _ in range(reps + 1)  # rep 0 warms up: page faults, pool start-up
                ]
                out[name] = [rate for rate in rates[1:] if rate > 0]
        return out

    def _timed(
        self,
        pool: ThreadPoolExecutor,
        name: str,
        arrays: Sequence[_Array],
        inner: int,
        temps: Sequence[_Array],
    ) -> float:
        """Bytes/s of ``inner`` passes of STREAM kernel ``name`` over ``arrays``, split over
        the threads, each with its scratch buffer from ``temps`` (0 when the clock did not
        move)."""
        kernel = _STREAM_KERNELS[name]
        a, b, c = arrays
        n = a.size
        bounds = np.linspace(0, n, self.threads + 1).astype(int)
        work = [
            (a[lo:hi], b[lo:hi], c[lo:hi], temp)
            for (lo, hi), temp in zip(itertools.pairwise(bounds), temps, strict=True)
        ]

        def run(item: tuple[_Array, _Array, _Array, _Array]) -> None:
            for _ in range(inner):
                kernel(*item)

        start = self._clock()
        if self.threads == 1:
            run(work[0])
        else:
            list(pool.map(run, work))
        elapsed = self._clock() - start
        return STREAM_BYTES_PER_ELEMENT[name] * n * inner / elapsed if elapsed > 0 else 0.0

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


def _arrays(n: int) -> tuple[_Array, _Array, _Array]:
    # np.full, not np.zeros: zeros are mapped lazily and would fault inside the timing.
    return np.full(n, 0.0), np.full(n, 1.0), np.full(n, 2.0)


def _inner(n: int) -> int:
    """Passes per timing over three arrays of ``n`` elements: cache-resident passes are short,
    so they are repeated inside one timing and the thread-pool hand-off does not dominate."""
    return max(1, math.ceil(64 * _MIB / (3 * n * 8)))
