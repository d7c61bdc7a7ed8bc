"""Host calibration: measure this machine's roofs with numpy, cache them, check them for drift.

The ``host`` target is measured, not looked up (the ERT / likwid practice): datasheet peaks
say little about a 2-vCPU slice of a shared VM. What is measured (docs/roofline.md):

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
check that the host does not now read faster than its roofs; on a busy host it is flagged (or
refused). Never imports pytest.

Why one long module: the calibration procedure and its cache (key, validation of a cached
payload, drift probe) stay together: when a cached calibration may be reused is defined by how
the calibration measures.
"""

from __future__ import annotations

import math
import os
import statistics
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Protocol

import numpy as np

from pytest_roofline.errors import RooflineError, RooflineWarning
from pytest_roofline.hardware.busy import host_busy, load_average
from pytest_roofline.hardware.kernels import HostKernels, NumpyKernels
from pytest_roofline.hardware.machine import (
    available_cpus,
    blas_description,
    blas_threads_env,
    machine_fingerprint,
)
from pytest_roofline.hardware.target import HardwareTarget, Provenance

__all__ = [
    "CALIBRATION_VERSION",
    "DRIFT_TOLERANCE",
    "CalibrationCache",
    "HostCalibration",
    "calibrate_host",
    "calibration_key",
    "drift_probe",
    "host_calibration",
    "host_target",
]

#: Part of the cache key: bump when the method changes, so old calibrations stop matching.
CALIBRATION_VERSION = 1

#: A cached calibration is re-used unless the drift check reads a probed rate more than this
#: share above the cached one (one-sided; see :func:`_faster`). Between fresh processes on an
#: idle host the best-of-7 fp64 roof moved by 1-2% (2-vCPU VM) and 14% (16-CPU host), DRAM by 3%
#: (16-CPU host) (benchmarks/calibration.py), so a tighter tolerance would recalibrate on noise.
#: What it should catch moves the roofs by more: a calibration taken while busy (fp64 GEMM at
#: 12-37 instead of 107 GFLOP/s), or the 2-vCPU VM's DRAM share switching from ~37 to ~60 GB/s.
DRIFT_TOLERANCE = 0.25

_SCHEMA_VERSION = 1
_MIB = 2**20


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
                array_bytes=self.sizes.get(f"array_bytes.{level}"),
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


def calibration_key(threads: int | None = None) -> str:
    """The cache key of a calibration: machine, numpy and BLAS versions, thread counts.

    :param threads: threads for the bandwidth kernels (default: the CPUs this process may use).
    :returns: a readable string, e.g. ``"host-calibration v1 | x86_64 | AMD EPYC ... |
        numpy 2.4.6 | scipy-openblas 0.3.31 | threads 2"``; BLAS thread variables
        (``OPENBLAS_NUM_THREADS``...) are appended when set, since they change the GEMM roof.
    """
    threads = threads or available_cpus()
    parts = [
        f"host-calibration v{CALIBRATION_VERSION}",
        machine_fingerprint(),
        f"numpy {np.__version__}",
        blas_description(),
        f"threads {threads}",
    ]
    env = blas_threads_env()
    if env:
        parts.append(env)
    return " | ".join(parts)


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
    load_average: Callable[[], tuple[float, float, float] | None] = load_average,
    now: Callable[[], float] = time.time,
    kernels: HostKernels | None = None,
    key: str | None = None,
    dram_array_bytes: int | None = None,
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
    :param dram_array_bytes: bytes per DRAM array, kept from this host's earlier calibration
        (default: chosen by the caches' rule and the sweep); ignored with ``kernels``.
    """
    threads = threads or available_cpus()
    started = clock()
    load_before = load_average()
    if kernels is None:
        kernels = NumpyKernels(
            threads=threads,
            clock=clock,
            gemm_seconds=0.02 if quick else 0.05,
            dram_array_bytes=dram_array_bytes,
        )
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
        cpu_count=available_cpus(),
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
            return min(int(value), available_cpus())
    return available_cpus()


# --------------------------------------------------------------------------- cache and drift
def drift_probe(calibration: HostCalibration, kernels: HostKernels) -> dict[str, float]:
    """Re-measure a little of ``calibration`` the same way: one DRAM kernel and one GEMM.

    DRAM ``add`` on arrays of the calibrated size and fp64 GEMM at the calibrated ``n``, best
    of 3 reps each (1.5-1.8 s on this project's 2-vCPU VM with 128 MiB arrays, 6.2 s with the
    600 MiB its reported cache asked for: most of it is the arrays' page faults).

    :returns: ``{"dram.add": bytes/s, "gemm.fp64": FLOP/s}``, keys as in ``calibration.rates``.
    """
    size = calibration.sizes.get("array_bytes.dram")
    dram = kernels.bandwidth("dram", ("add",), 3, array_bytes=size).get("add") or [math.nan]
    _, gemm = kernels.gemm("fp64", 3, n=calibration.sizes.get("gemm_n.fp64"))
    return {"dram.add": max(dram), "gemm.fp64": max(gemm or [math.nan])}


def _faster(calibration: HostCalibration, probe: Mapping[str, float]) -> dict[str, float]:
    """The probed rates above a cached roof by more than :data:`DRIFT_TOLERANCE` (now ÷ cached).

    One-sided on purpose: a roof is the best the machine reaches (best of N reps), and
    contention only ever slows a reading down, so a slower probe says the host is busy now,
    not that the roofs moved. Recalibrating on it measured the busy host, threw the result
    away (busy calibrations are not kept over idle ones) and cost every session ~2 s
    (measured: 8 of 8 sessions on the shared 2-vCPU VM recalibrated, probe ratios 0.33-1.0).
    A probe that beats the cached roof means the roofs are too low (calibrated while busy,
    or the machine got faster): then the host is calibrated again.
    """
    out: dict[str, float] = {}
    for key, now in probe.items():
        cached = calibration.rates.get(key)
        if not cached or not math.isfinite(now):
            continue
        ratio = now / cached
        if ratio > 1.0 + DRIFT_TOLERANCE:
            out[key] = ratio
    return out


def _default_warn(message: str) -> None:
    warnings.warn(message, RooflineWarning, stacklevel=3)


def _gemm_rate(calibration: HostCalibration) -> float:
    return calibration.rates.get("gemm.fp64", 0.0)


def host_calibration(
    cache: CalibrationCache | None,
    *,
    refresh: bool = False,
    refuse_busy: bool = False,
    warn: Callable[[str], None] = _default_warn,
    threads: int | None = None,
    key: str | None = None,
    calibrate: Callable[[int | None], HostCalibration] | None = None,
    probe: Callable[[HostCalibration], Mapping[str, float]] | None = None,
) -> HostCalibration:
    """The calibration to use for this session: cached while still valid, else measured.

    1. A cached calibration under this machine's key is re-used unless :func:`drift_probe`
       reads a DRAM or fp64 rate more than :data:`DRIFT_TOLERANCE` *above* it (its roofs are
       then too low). A slower reading keeps it: roofs are best cases, and a busy host reads
       slow. ``refresh`` skips the check and calibrates.
    2. An idle calibration is cached. A busy one never replaces an idle cached one (that is
       kept, with a warning). With no idle calibration to stand in, ``refuse_busy`` raises;
       otherwise the better of the busy ones (the higher fp64 GEMM rate) is used with a
       warning and cached marked busy, so the next session re-uses it instead of paying for
       another busy calibration, and recalibrates as soon as its probe reads faster.
    3. A recalibration keeps the cached calibration's DRAM array size; only ``refresh``
       chooses it again. Tests size their main-memory arrays from it (the example suite's
       ``dram`` slices), so a size chosen anew would change their work between two runs: in
       CI a busy host's sweep fell back to the caches' rule (600 MiB arrays, not 128), and an
       unchanged copy test read x4.59 slower.

    :param cache: where calibrations are kept (the result store), or ``None``.
    :param refresh: ignore the cached roofs and calibrate (a busy result still does not
        replace an idle cached calibration).
    :param refuse_busy: raise instead of using roofs measured on a busy host.
    :param warn: receives warnings (default: :class:`RooflineWarning` via ``warnings.warn``).
    :param threads: bandwidth threads (default: the CPUs this process may use).
    :param key: cache key (default :func:`calibration_key`).
    :param calibrate: measures the host, given the DRAM array bytes to keep (or ``None``)
        (default :func:`calibrate_host`).
    :param probe: the drift check (default :func:`drift_probe` with :class:`NumpyKernels`).
    :raises RooflineError: when the host is busy, ``refuse_busy`` is set and no idle
        calibration can stand in.
    """
    threads = threads or available_cpus()
    key = key or calibration_key(threads)
    if calibrate is None:

        def calibrate(dram_array_bytes: int | None) -> HostCalibration:
            return calibrate_host(threads=threads, key=key, dram_array_bytes=dram_array_bytes)

    if probe is None:

        def probe(calibration: HostCalibration) -> Mapping[str, float]:
            return drift_probe(calibration, NumpyKernels(threads=calibration.threads))

    cached: HostCalibration | None = None
    if cache is not None:
        payload = cache.get_calibration(key)
        if payload is not None:
            try:
                cached = HostCalibration.from_dict(payload)
            except (ValueError, TypeError, KeyError) as exc:
                warn(f"host calibration: ignoring the cached calibration ({exc}); recalibrating")
    usable = cached is not None and not refresh and not (cached.busy and refuse_busy)
    if usable and cached is not None and not _faster(cached, probe(cached)):
        if cached.busy:
            warn(
                f"the host roofs in use were calibrated on a busy host on {cached.date} "
                f"({cached.busy_reason}): they may be low. Run `pytest-roofline calibrate "
                "--refresh` on an idle machine, or pin a target (docs/roofline.md)"
            )
        return cached

    kept = None if refresh or cached is None else cached.sizes.get("array_bytes.dram")
    fresh = calibrate(kept)
    if not fresh.busy:
        if cache is not None:
            cache.put_calibration(key, fresh.to_dict())
        return fresh
    if cached is not None and not cached.busy:
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
    best = fresh if cached is None or _gemm_rate(fresh) >= _gemm_rate(cached) else cached
    if cache is not None:
        cache.put_calibration(key, best.to_dict())
    warn(
        f"host calibration ran on a busy host ({fresh.busy_reason}): its roofs may be low, so "
        "efficiencies read high and above-roof data errors may appear. It is cached marked "
        "busy: later sessions re-use it and calibrate again once the host reads faster; "
        "`pytest-roofline calibrate --refresh` on an idle machine replaces it"
    )
    return best


def host_target(
    cache: CalibrationCache | None,
    *,
    refresh: bool = False,
    refuse_busy: bool = False,
    warn: Callable[[str], None] = _default_warn,
    threads: int | None = None,
    key: str | None = None,
    calibrate: Callable[[int | None], HostCalibration] | None = None,
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
