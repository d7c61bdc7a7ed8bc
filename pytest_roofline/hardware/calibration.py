"""Host calibration: measure this machine's roofs with numpy, cache them, check them for drift.

The ``host`` target is measured, not looked up (the ERT / likwid practice): datasheet peaks
say little about a 2-vCPU slice of a shared VM. What is measured (research/roofline.md §4):

- **DRAM bandwidth**: STREAM-like ``copy``, ``add`` and ``triad`` kernels over three float64
  arrays whose total size is several times the last-level cache, split over ``threads``
  threads (numpy ufuncs release the GIL). Bytes per element follow STREAM (copy 16, add and
  triad 24; write-allocate traffic not counted). The roof is the best kernel's best rep.
- **LLC bandwidth** (full calibration only): the same kernels on arrays that fit the LLC.
- **Compute**: ``numpy.matmul`` (BLAS GEMM, all its threads) in fp64 and fp32, 2·n³ FLOPs per
  call, ``n`` chosen so one call takes tens of milliseconds.
- **Dispatch floor**: the time of one tiny numpy call (the per-call overhead below which
  nothing can go; not a roof, reported alongside).

Roofs are best-of-N (STREAM practice: the best rep is the one least disturbed). A calibration
is cached per :func:`calibration_key` (machine, numpy/BLAS, threads) and re-used after a short
drift check; on a busy host it is flagged (or refused). Never imports pytest.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import math
import os
import platform
import statistics
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from pytest_roofline.errors import RooflineError, RooflineWarning
from pytest_roofline.hardware.target import HardwareTarget, Provenance

__all__ = [
    "BUSY_CPU_SHARE",
    "BUSY_OTHER_LOAD_PER_CPU",
    "CALIBRATION_VERSION",
    "DRIFT_TOLERANCE",
    "CalibrationCache",
    "HostCalibration",
    "HostKernels",
    "NumpyKernels",
    "calibrate_host",
    "calibration_key",
    "drift_probe",
    "format_roofs",
    "host_busy",
    "host_calibration",
    "host_target",
    "machine_fingerprint",
]

#: Part of the cache key: bump when the method changes, so old calibrations stop matching.
CALIBRATION_VERSION = 1

#: A cached calibration is re-used while the drift check reads every probed rate within this
#: relative distance of the cached one (ratio in [1/1.25, 1.25]). Between fresh processes on an
#: idle host the best-of-7 fp64 roof moved by 1-2% (2-vCPU VM) and 14% (16-CPU host), DRAM by 3%
#: (16-CPU host) (benchmarks/calibration.py), and the probe's best-of-3 reads a little lower, so
#: a tighter tolerance would recalibrate on noise. What it should catch moves the roofs by more:
#: the 2-vCPU VM's DRAM roof switches between ~37 and ~60 GB/s as its memory share changes.
DRIFT_TOLERANCE = 0.25

#: The host counts as busy when this process got less than this share of the CPU time its
#: BLAS threads could use during the GEMMs (others, or the hypervisor, took the rest). Measured
#: here: 0.94-1.0 on an idle host, 0.5-0.75 with one CPU-bound process beside it on 2 CPUs.
BUSY_CPU_SHARE = 0.85

#: ... or when the 1-minute load average, less this process's own runnable thread, exceeds
#: this many runnable tasks per CPU (one hog on a 2-CPU machine is 0.5 per CPU).
BUSY_OTHER_LOAD_PER_CPU = 0.25

_SCHEMA_VERSION = 1
_MIB = 2**20
# STREAM byte counts per element (write-allocate not counted, as STREAM reports).
_STREAM_BYTES_PER_ELEMENT: Mapping[str, int] = {"copy": 16, "add": 24, "triad": 24}
# Triad is done in chunks this long so the temporary ``s * c`` stays in L2: numpy has no fused
# triad, and an unchunked temporary would stream through DRAM (40 B/element of real traffic).
_TRIAD_CHUNK = 32 * 1024
_GEMM_MIN_N = 256
_GEMM_MAX_N = 4096


class CalibrationCache(Protocol):
    """Where calibrations are kept between sessions (the result store implements it)."""

    def get_calibration(self, key: str) -> Mapping[str, object] | None:
        """Return the payload stored under ``key``, or ``None``."""

    def put_calibration(self, key: str, payload: Mapping[str, object]) -> None:
        """Store ``payload`` (JSON-ready) under ``key``, replacing any earlier one."""


@dataclass(frozen=True, slots=True)
class HostCalibration:
    """One calibration of this host.

    :ivar peak_flops_per_s: ``fp64`` and ``fp32`` GEMM peaks (best rep), FLOP/s.
    :ivar peak_bytes_per_s: ``dram`` (and ``llc`` after a full calibration), bytes/s.
    :ivar dispatch_floor_s: seconds per call of a tiny numpy op (best batch).
    :ivar seconds_taken: wall time the calibration took.
    :ivar threads: threads used for the bandwidth kernels (BLAS uses its own pool).
    :ivar key: the :func:`calibration_key` it was taken under.
    :ivar busy: whether the host looked busy while calibrating (see :func:`host_busy`).
    :ivar busy_reason: why, or ``None``.
    :ivar created: unix time of the calibration.
    :ivar spread: per roof (``"flops.fp64"``, ``"bytes.dram"``, ``"dispatch_floor"``...), the
        relative spread (max - min) / median of the reps of the kernel that set the roof.
    :ivar rates: best rate of every kernel measured (``"dram.add"`` bytes/s, ``"gemm.fp64"``
        FLOP/s, ...): what the drift check compares with.
    :ivar sizes: what was measured: ``"gemm_n.fp64"``, ``"array_bytes.dram"``, ...
    :ivar reps: timed repetitions per kernel.
    """

    peak_flops_per_s: Mapping[str, float]
    peak_bytes_per_s: Mapping[str, float]
    dispatch_floor_s: float
    seconds_taken: float
    threads: int
    key: str
    busy: bool
    busy_reason: str | None
    created: float
    spread: Mapping[str, float]
    rates: Mapping[str, float] = field(default_factory=dict)
    sizes: Mapping[str, int] = field(default_factory=dict)
    reps: int = 0

    @property
    def date(self) -> str:
        """ISO date (UTC) of the calibration."""
        return datetime.fromtimestamp(self.created, tz=timezone.utc).date().isoformat()

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping, with ``schema_version``."""
        return {
            "schema_version": _SCHEMA_VERSION,
            "peak_flops_per_s": dict(self.peak_flops_per_s),
            "peak_bytes_per_s": dict(self.peak_bytes_per_s),
            "dispatch_floor_s": self.dispatch_floor_s,
            "seconds_taken": self.seconds_taken,
            "threads": self.threads,
            "key": self.key,
            "busy": self.busy,
            "busy_reason": self.busy_reason,
            "created": self.created,
            "spread": dict(self.spread),
            "rates": dict(self.rates),
            "sizes": dict(self.sizes),
            "reps": self.reps,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> HostCalibration:
        """Rebuild from :meth:`to_dict` output.

        :raises ValueError: for another schema version or a malformed payload.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"calibration payload: expected a mapping, got {type(data).__name__}")
        if data.get("schema_version") != _SCHEMA_VERSION:
            raise ValueError(
                f"calibration payload: schema_version {data.get('schema_version')!r}, "
                f"expected {_SCHEMA_VERSION}"
            )

        def number(key: str) -> float:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"calibration payload: {key} must be a number, got {value!r}")
            return float(value)

        def numbers_map(key: str) -> dict[str, float]:
            value = data.get(key, {})
            if not isinstance(value, Mapping):
                raise ValueError(f"calibration payload: {key} must be a mapping")
            out: dict[str, float] = {}
            for k, v in value.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ValueError(f"calibration payload: {key}.{k} must be a number")
                out[str(k)] = float(v)
            return out

        reason = data.get("busy_reason")
        return cls(
            peak_flops_per_s=numbers_map("peak_flops_per_s"),
            peak_bytes_per_s=numbers_map("peak_bytes_per_s"),
            dispatch_floor_s=number("dispatch_floor_s"),
            seconds_taken=number("seconds_taken"),
            threads=int(number("threads")),
            key=str(data.get("key", "")),
            busy=bool(data.get("busy", False)),
            busy_reason=None if reason is None else str(reason),
            created=number("created"),
            spread=numbers_map("spread"),
            rates=numbers_map("rates"),
            sizes={k: int(v) for k, v in numbers_map("sizes").items()},
            reps=int(number("reps")) if "reps" in data else 0,
        )

    def to_target(self) -> HardwareTarget:
        """The measured :class:`HardwareTarget` named ``host`` (``source="measured"``).

        Provenance per roof: ``"host calibration <date>"`` with a note on how it was measured;
        the dispatch floor rides along as provenance key ``"dispatch_floor"`` (unit ``s``).
        """
        source = f"host calibration {self.date}"
        busy = f"; host busy while calibrating: {self.busy_reason}" if self.busy else ""
        provenance: dict[str, Provenance] = {}
        for precision, value in self.peak_flops_per_s.items():
            n = self.sizes.get(f"gemm_n.{precision}")
            provenance[f"flops.{precision}"] = Provenance(
                value=value,
                unit="FLOP/s",
                sparse=False,
                source=source,
                date=self.date,
                note=f"best of {self.reps} numpy matmul"
                + (f" n={n}" if n else "")
                + f"; rep spread {self.spread.get(f'flops.{precision}', math.nan):.0%}{busy}",
            )
        for level, value in self.peak_bytes_per_s.items():
            kernels = {
                k.split(".", 1)[1]: v for k, v in self.rates.items() if k.startswith(f"{level}.")
            }
            best = max(kernels, key=kernels.__getitem__) if kernels else "?"
            size = self.sizes.get(f"array_bytes.{level}", 0) / _MIB
            provenance[f"bytes.{level}"] = Provenance(
                value=value,
                unit="B/s",
                sparse=False,
                source=source,
                date=self.date,
                note=f"best of {self.reps} STREAM-like passes ({', '.join(kernels) or '?'}; best: "
                f"{best}), 3 x {size:.0f} MiB float64 arrays, {self.threads} thread(s); rep "
                f"spread {self.spread.get(f'bytes.{level}', math.nan):.0%}{busy}",
            )
        provenance["dispatch_floor"] = Provenance(
            value=self.dispatch_floor_s,
            unit="s",
            sparse=False,
            source=source,
            date=self.date,
            note="per-call time of a tiny numpy op (an overhead floor, not a roof)",
        )
        return HardwareTarget(
            name="host",
            peak_flops_per_s=dict(self.peak_flops_per_s),
            peak_bytes_per_s=dict(self.peak_bytes_per_s),
            source="measured",
            provenance=provenance,
            description=f"this host, measured {self.date}: {self.key}",
        )


# --------------------------------------------------------------------------- machine identity
def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _cpuinfo() -> dict[str, str]:
    """Fields of the first processor block of /proc/cpuinfo (empty off Linux)."""
    text = _read_text("/proc/cpuinfo") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def _size_bytes(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1].upper(), 1)
    digits = text.rstrip("KMGkmg")
    return int(digits) * scale if digits.isdigit() else None


def _last_level_caches() -> tuple[int | None, int | None]:
    """(size of one last-level cache, total over distinct instances) from sysfs, in bytes.

    The total matters for sizing DRAM arrays: on a many-chiplet CPU each instance is small but
    together they can hold hundreds of MiB.
    """
    base = "/sys/devices/system/cpu"
    try:
        cpus = [d for d in os.listdir(base) if d.startswith("cpu") and d[3:].isdigit()]
    except OSError:
        return None, None
    best_level = 0
    instances: dict[tuple[int, str], int] = {}
    for cpu in cpus:
        cache_dir = f"{base}/{cpu}/cache"
        try:
            indices = [d for d in os.listdir(cache_dir) if d.startswith("index")]
        except OSError:
            continue
        for index in indices:
            path = f"{cache_dir}/{index}"
            level_text = _read_text(f"{path}/level")
            kind = (_read_text(f"{path}/type") or "").strip()
            size = _size_bytes(_read_text(f"{path}/size") or "")
            shared = (_read_text(f"{path}/shared_cpu_list") or cpu).strip()
            if level_text is None or size is None or kind == "Instruction":
                continue
            level = int(level_text.strip())
            best_level = max(best_level, level)
            instances[(level, shared)] = size
    sizes = [size for (level, _), size in instances.items() if level == best_level]
    if not sizes:
        return None, None
    return max(sizes), sum(sizes)


def machine_fingerprint() -> str:
    """Describe this machine's hardware for the calibration cache key.

    Contains: architecture; CPU model, and on x86 family/model/stepping; a short digest of the
    CPU feature flags (in a VM the model name can be generic, the exposed flags are not); the
    number of CPUs; physical memory rounded to GiB; the last-level cache size; the cgroup CPU
    quota when there is one. Not the hostname, so re-created containers and identical CI
    runners share a key; not the kernel or Python version, which do not change roofs (the
    drift check catches what the key misses).
    """
    info = _cpuinfo()
    model = (
        info.get("model name")
        or info.get("Hardware")
        or info.get("uarch")
        or info.get("cpu")
        or platform.processor()
        or "unknown CPU"
    )
    parts = [platform.machine() or "unknown-arch", model]
    if "cpu family" in info:
        parts.append(
            f"family {info.get('cpu family')} model {info.get('model', '?')} "
            f"stepping {info.get('stepping', '?')}"
        )
    elif "CPU part" in info:
        parts.append(f"implementer {info.get('CPU implementer', '?')} part {info['CPU part']}")
    flags = info.get("flags") or info.get("Features")
    if flags:
        digest = hashlib.sha256(" ".join(sorted(flags.split())).encode()).hexdigest()[:8]
        parts.append(f"flags {digest}")
    parts.append(f"{os.cpu_count() or 1} CPUs")
    memory = _memory_bytes()
    if memory:
        parts.append(f"{round(memory / 2**30)} GiB")
    llc, _ = _last_level_caches()
    if llc:
        parts.append(f"LLC {llc // _MIB} MiB")
    quota = (_read_text("/sys/fs/cgroup/cpu.max") or "").strip()
    if quota and not quota.startswith("max"):
        parts.append(f"cpu.max {quota}")
    return " | ".join(parts)


def _blas_description() -> str:
    try:
        # numpy >= 1.26 returns the build configuration; silence any printing of older ones.
        with contextlib.redirect_stdout(io.StringIO()):
            config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    except Exception:
        return "BLAS unknown"


def _blas_threads_env() -> str:
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    return ",".join(f"{n}={os.environ[n]}" for n in names if n in os.environ)


def calibration_key(threads: int | None = None) -> str:
    """The cache key of a calibration: machine, numpy and BLAS versions, thread counts.

    :param threads: threads for the bandwidth kernels (default: the CPUs this process may use).
    :returns: a readable string, e.g. ``"host-calibration v1 | x86_64 | AMD EPYC ... |
        numpy 2.4.6 | scipy-openblas 0.3.31 | threads 2"``; BLAS thread variables
        (``OPENBLAS_NUM_THREADS``...) are appended when set, since they change the GEMM roof.
    """
    threads = threads or _available_cpus()
    parts = [
        f"host-calibration v{CALIBRATION_VERSION}",
        machine_fingerprint(),
        f"numpy {np.__version__}",
        _blas_description(),
        f"threads {threads}",
    ]
    env = _blas_threads_env()
    if env:
        parts.append(env)
    return " | ".join(parts)


# --------------------------------------------------------------------------- busy detection
def _load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def host_busy(
    *,
    cpu_share: float | None = None,
    threads: int = 1,
    load_average: tuple[float, float, float] | None = None,
    cpu_count: int | None = None,
) -> str | None:
    """Say why the host looks too busy to calibrate on, or return ``None``.

    Two signals: the CPU share this process got while running ``threads`` busy threads
    (process CPU time ÷ (wall time × threads); below :data:`BUSY_CPU_SHARE` others or the
    hypervisor took the rest), and the 1-minute load average less this process's own thread
    (above :data:`BUSY_OTHER_LOAD_PER_CPU` per CPU).

    :param cpu_share: measured share, or ``None`` to skip that signal.
    :param threads: threads the share refers to (for the message).
    :param load_average: ``os.getloadavg()`` taken before calibrating, or ``None`` to skip.
    :param cpu_count: CPUs available to this process (default: its affinity mask).
    """
    reasons: list[str] = []
    if cpu_share is not None and cpu_share < BUSY_CPU_SHARE:
        reasons.append(
            f"this process got {cpu_share:.0%} of the CPU time its {threads} thread(s) could use "
            "(other processes or the hypervisor took the rest)"
        )
    if load_average is not None:
        cpus = cpu_count or _available_cpus()
        others = load_average[0] - 1.0
        if others > BUSY_OTHER_LOAD_PER_CPU * cpus:
            reasons.append(
                f"1-minute load average {load_average[0]:.2f} on {cpus} CPU(s) "
                "(other work is running)"
            )
    return "; ".join(reasons) or None


# --------------------------------------------------------------------------- kernels
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
        llc, llc_total = _last_level_caches()
        self._llc = llc or 32 * _MIB
        self._llc_total = llc_total or self._llc
        self._memory = _memory_bytes() or 8 * 2**30

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
                        rates.append(_STREAM_BYTES_PER_ELEMENT[name] * n * inner / elapsed)
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


def _spread(values: Sequence[float]) -> float:
    """(max - min) / median: how far apart the reps were (0 = identical)."""
    if len(values) < 2:
        return 0.0
    median = statistics.median(values)
    return (max(values) - min(values)) / median if median > 0 else math.inf


def _process_cpu_seconds() -> float:
    # CLOCK_PROCESS_CPUTIME_ID: all threads, nanosecond resolution (os.times ticks at 10 ms).
    return time.process_time()


def calibrate_host(
    *,
    quick: bool = False,
    threads: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
    cpu_time: Callable[[], float] = _process_cpu_seconds,
    load_average: Callable[[], tuple[float, float, float] | None] = _load_average,
    now: Callable[[], float] = time.time,
    kernels: HostKernels | None = None,
    key: str | None = None,
) -> HostCalibration:
    """Measure this host's roofs.

    Full: DRAM ``copy``/``add``/``triad`` and LLC ``copy``/``add`` bandwidth, fp64 and fp32
    GEMM, dispatch floor; 7 timed reps each (14 for LLC), about 1.5-3 s on a 2-CPU machine.
    ``quick``: DRAM ``add`` only, shorter GEMMs, 3 reps, no LLC roof (well under a second; for
    tests and smoke checks).

    :param threads: threads for the bandwidth kernels (default: the CPUs this process may use).
    :param clock: monotonic clock (seconds) for every timing.
    :param cpu_time: process CPU time (seconds, all threads) for the busy check.
    :param load_average: returns ``os.getloadavg()`` or ``None``; read before measuring.
    :param now: wall clock for ``created``.
    :param kernels: the measurements (default :class:`NumpyKernels`); tests pass fakes.
    :param key: the cache key to record (default :func:`calibration_key`).
    """
    threads = threads or _available_cpus()
    started = clock()
    load_before = load_average()
    if kernels is None:
        kernels = NumpyKernels(threads=threads, clock=clock, gemm_seconds=0.02 if quick else 0.05)
    reps = 3 if quick else 7

    dram_kernels = ("add",) if quick else ("copy", "add", "triad")
    bandwidth = {"dram": kernels.bandwidth("dram", dram_kernels, reps)}
    if not quick:
        bandwidth["llc"] = kernels.bandwidth("llc", ("copy", "add"), 2 * reps)

    # The busy check's CPU share is taken over the GEMMs only: they keep every BLAS thread
    # busy, so an idle host gives a share near 1 (0.94-1.0 measured here) and a competing
    # process clearly less (0.5-0.75 with one CPU hog on 2 CPUs). The bandwidth phases include
    # single-threaded allocation and pool hand-offs, which would blur that line.
    blas_threads = _blas_threads(threads)
    gemm: dict[str, tuple[int, list[float]]] = {}
    gemm_wall = gemm_cpu = 0.0
    for precision in ("fp64", "fp32"):
        wall0, cpu0 = clock(), cpu_time()
        gemm[precision] = kernels.gemm(precision, reps)
        gemm_wall += clock() - wall0
        gemm_cpu += cpu_time() - cpu0
    dispatch = kernels.dispatch(reps)

    rates: dict[str, float] = {}
    spread: dict[str, float] = {}
    peak_bytes: dict[str, float] = {}
    for level, per_kernel in bandwidth.items():
        per_kernel = {name: reps_ for name, reps_ in per_kernel.items() if reps_}
        if not per_kernel:
            continue
        for name, values in per_kernel.items():
            rates[f"{level}.{name}"] = max(values)
        winner = max(per_kernel, key=lambda name: max(per_kernel[name]))
        peak_bytes[level] = max(per_kernel[winner])
        spread[f"bytes.{level}"] = _spread(per_kernel[winner])
    if "dram" not in peak_bytes:
        raise RooflineError("host calibration: the DRAM bandwidth kernels produced no timing")
    peak_flops: dict[str, float] = {}
    sizes = dict(kernels.sizes())
    for precision, (n, values) in gemm.items():
        if not values:
            raise RooflineError(f"host calibration: the {precision} GEMM produced no timing")
        peak_flops[precision] = max(values)
        rates[f"gemm.{precision}"] = max(values)
        spread[f"flops.{precision}"] = _spread(values)
        sizes[f"gemm_n.{precision}"] = n
    floor = min(dispatch) if dispatch else math.nan
    spread["dispatch_floor"] = _spread(dispatch)

    share = gemm_cpu / (gemm_wall * blas_threads) if gemm_wall > 0 else None
    reason = host_busy(
        cpu_share=share,
        threads=blas_threads,
        load_average=load_before,
        cpu_count=_available_cpus(),
    )
    return HostCalibration(
        peak_flops_per_s=peak_flops,
        peak_bytes_per_s=peak_bytes,
        dispatch_floor_s=floor,
        seconds_taken=clock() - started,
        threads=threads,
        key=key or calibration_key(threads),
        busy=reason is not None,
        busy_reason=reason,
        created=now(),
        spread=spread,
        rates=rates,
        sizes=sizes,
        reps=reps,
    )


def _blas_threads(threads: int) -> int:
    """Threads the BLAS pool will use: its environment variable if set, else every CPU."""
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return min(int(value), _available_cpus())
    return _available_cpus()


# --------------------------------------------------------------------------- cache and drift
def drift_probe(calibration: HostCalibration, kernels: HostKernels) -> dict[str, float]:
    """Re-measure a little of ``calibration`` the same way: one DRAM kernel and one GEMM.

    DRAM ``add`` on arrays of the calibrated size and fp64 GEMM at the calibrated ``n``, best
    of 3 reps each (about 0.3-0.5 s on a 2-CPU machine).

    :returns: ``{"dram.add": bytes/s, "gemm.fp64": FLOP/s}``, keys as in ``calibration.rates``.
    """
    dram = kernels.bandwidth("dram", ("add",), 3).get("add") or [math.nan]
    _, gemm = kernels.gemm("fp64", 3, n=calibration.sizes.get("gemm_n.fp64"))
    return {"dram.add": max(dram), "gemm.fp64": max(gemm or [math.nan])}


def _drifted(calibration: HostCalibration, probe: Mapping[str, float]) -> dict[str, float]:
    """The probed rates outside :data:`DRIFT_TOLERANCE`, as ratio now ÷ cached."""
    out: dict[str, float] = {}
    for key, now in probe.items():
        cached = calibration.rates.get(key)
        if not cached:
            continue
        ratio = now / cached
        if not (1.0 / (1.0 + DRIFT_TOLERANCE) <= ratio <= 1.0 + DRIFT_TOLERANCE):
            out[key] = ratio
    return out


def _default_warn(message: str) -> None:
    warnings.warn(message, RooflineWarning, stacklevel=3)


def host_calibration(
    cache: CalibrationCache | None,
    *,
    refresh: bool = False,
    refuse_busy: bool = False,
    warn: Callable[[str], None] = _default_warn,
    threads: int | None = None,
    key: str | None = None,
    calibrate: Callable[[], HostCalibration] | None = None,
    probe: Callable[[HostCalibration], Mapping[str, float]] | None = None,
) -> HostCalibration:
    """The calibration to use for this session: cached when still valid, else measured.

    1. A cached calibration under this machine's key is re-used when :func:`drift_probe`
       reads its DRAM and fp64 rates within :data:`DRIFT_TOLERANCE`; otherwise (or with
       ``refresh``, or when nothing is cached) the host is calibrated again.
    2. A calibration on an idle host is cached. One on a busy host is not (the next session
       tries again): when a cached one exists it is kept instead, with a warning; otherwise
       ``refuse_busy`` raises, and without it the busy calibration is used with a warning.

    :param cache: where calibrations are kept (the result store), or ``None``.
    :param refresh: ignore the cache and calibrate.
    :param refuse_busy: raise instead of using roofs measured on a busy host.
    :param warn: receives warnings (default: :class:`RooflineWarning` via ``warnings.warn``).
    :param threads: bandwidth threads (default: the CPUs this process may use).
    :param key: cache key (default :func:`calibration_key`).
    :param calibrate: measures the host (default :func:`calibrate_host`).
    :param probe: the drift check (default :func:`drift_probe` with :class:`NumpyKernels`).
    :raises RooflineError: when the host is busy, ``refuse_busy`` is set and no cached
        calibration can stand in.
    """
    threads = threads or _available_cpus()
    key = key or calibration_key(threads)
    if calibrate is None:

        def calibrate() -> HostCalibration:
            return calibrate_host(threads=threads, key=key)

    if probe is None:

        def probe(calibration: HostCalibration) -> Mapping[str, float]:
            return drift_probe(calibration, NumpyKernels(threads=calibration.threads))

    cached: HostCalibration | None = None
    if cache is not None and not refresh:
        payload = cache.get_calibration(key)
        if payload is not None:
            try:
                cached = HostCalibration.from_dict(payload)
            except (ValueError, TypeError, KeyError) as exc:
                warn(f"host calibration: ignoring the cached calibration ({exc}); recalibrating")
        if cached is not None and not _drifted(cached, probe(cached)):
            return cached

    fresh = calibrate()
    if not fresh.busy:
        if cache is not None:
            cache.put_calibration(key, fresh.to_dict())
        return fresh
    if cached is not None:
        warn(
            f"host is busy ({fresh.busy_reason}): keeping the host roofs calibrated on "
            f"{cached.date} instead of today's lower reading"
        )
        return cached
    if refuse_busy:
        raise RooflineError(
            f"host calibration refused: the host is busy ({fresh.busy_reason}). Calibrate on an "
            "idle machine (nothing else running), or choose a preset or config target "
            "instead of 'host'"
        )
    warn(
        f"host calibration ran on a busy host ({fresh.busy_reason}): its roofs may be low, so "
        "efficiencies read high and above-roof data errors may appear; it is not cached, the "
        "next session calibrates again"
    )
    return fresh


def host_target(
    cache: CalibrationCache | None,
    *,
    refresh: bool = False,
    refuse_busy: bool = False,
    warn: Callable[[str], None] = _default_warn,
    threads: int | None = None,
    key: str | None = None,
    calibrate: Callable[[], HostCalibration] | None = None,
    probe: Callable[[HostCalibration], Mapping[str, float]] | None = None,
) -> HardwareTarget:
    """The measured ``host`` target: :func:`host_calibration` as a :class:`HardwareTarget`.

    Takes the same arguments as :func:`host_calibration`.
    """
    return host_calibration(
        cache,
        refresh=refresh,
        refuse_busy=refuse_busy,
        warn=warn,
        threads=threads,
        key=key,
        calibrate=calibrate,
        probe=probe,
    ).to_target()


# --------------------------------------------------------------------------- display
def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_roofs(target: HardwareTarget) -> str:
    """A plain-text table of ``target``'s roofs, ridges and provenance.

    One row per compute roof (with its ridge against DRAM), per bandwidth roof, per sparse
    peak (marked as never used), and the dispatch floor of measured targets.
    """
    lines = [f"hardware target {target.name} ({target.source}): {target.description}".rstrip()]
    rows: list[tuple[str, str, str, str]] = [("roof", "peak", "ridge vs dram", "source")]

    def origin(key: str) -> str:
        prov = target.provenance.get(key)
        if prov is None:
            return ""
        text = prov.source + (
            f" ({prov.date})" if prov.date and prov.date not in prov.source else ""
        )
        return f"{text}: {prov.note}" if prov.note else text

    for precision, value in target.peak_flops_per_s.items():
        unit = "OP/s" if precision.startswith("int") else "FLOP/s"
        rows.append(
            (
                f"compute {precision}",
                _si(value, unit),
                f"{target.ridge(precision):.3g} FLOP/B",
                origin(f"flops.{precision}"),
            )
        )
    for level, value in target.peak_bytes_per_s.items():
        rows.append((f"bandwidth {level}", _si(value, "B/s"), "", origin(f"bytes.{level}")))
    for precision, value in target.sparse_peak_flops_per_s.items():
        rows.append(
            (
                f"sparse {precision} (never a roof)",
                _si(value, "OP/s" if precision.startswith("int") else "FLOP/s"),
                "",
                origin(f"sparse_flops.{precision}"),
            )
        )
    floor = target.provenance.get("dispatch_floor")
    if floor is not None:
        rows.append(
            ("dispatch floor", f"{floor.value * 1e6:.3g} us/call", "", origin("dispatch_floor"))
        )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(3)]
        lines.append(("  " + "  ".join(cells) + "  " + row[3]).rstrip())
    return "\n".join(lines)
