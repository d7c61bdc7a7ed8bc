"""A soak: run a test's callable continuously for a long window and record its latency timeline.

After a test's normal measurement (``--roofline-soak=SECONDS`` or ``@pytest.mark.roofline(
soak="60s")``), :func:`run_soak` calls the same function for ``duration_s`` more, in the batch
size the measurement chose, and cuts the time into consecutive windows on a fixed grid (1 s, or
a thirtieth of the soak when that is longer, and at least six windows: :func:`window_length_s`). Each window keeps its
median per-call latency and sample count, not its samples: a 60 s soak of a 20 µs call takes
three million samples, and the analysis (:mod:`pytest_roofline.stats.soak`) compares windows.

At each window boundary :class:`SoakMonitor` reads what the host did in that window, so every
latency point has its host evidence beside it, aligned in time:

* the mean CPU clock over the CPUs (``/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq``)
  at the window's end; on a VM without frequency scaling the files do not exist, and the status
  ``unsupported`` is recorded as data (:class:`CpuFreqReader`);
* this process's CPU share and the machine's steal share over the window
  (:class:`~pytest_roofline.measure.host.HostProbe`, two ``/proc`` reads);
* the host canary (:mod:`~pytest_roofline.measure.canary`): a reading of its reference kernels,
  as a ratio to the session's level per kind, at a window's end whenever the canary's time so far
  stays within ``canary_share`` of the soak (3% by default; about 5 ms a reading here, so every
  window of 1 s gets one);
* on NVIDIA GPUs, NVML's SM clock, temperature, power and clock-event (throttle) reasons over
  the window (:class:`~pytest_roofline.measure.counters.nvml.NvmlBackend`, started and stopped
  around each window).

The probes run between windows, outside every timed call; their time is recorded
(:attr:`SoakMeasurement.probe_s`) so the overhead is a measured figure. Why after the
measurement and not as it: the gate compares the normal measurement with a baseline measured
the same way; a soaked test keeps that comparison exactly as it would be without the soak, and
the soak adds a separate, longer observation. Never imports pytest; the clock is injected.
"""

from __future__ import annotations

import glob
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from pytest_roofline.measure.canary import Canary
from pytest_roofline.measure.counters.base import CounterStatus
from pytest_roofline.measure.host import HostProbe, HostSnapshot

__all__ = [
    "SOAK_FIELDS",
    "SOAK_SCHEMA_VERSION",
    "CpuFreqReader",
    "GpuWindowReader",
    "SoakMeasurement",
    "SoakMonitor",
    "SoakWindow",
    "WindowHost",
    "run_soak",
    "window_length_s",
]

SOAK_SCHEMA_VERSION = 1
"""Version of :meth:`SoakMeasurement.to_dict`. 1: first version."""

SOAK_FIELDS: tuple[str, ...] = ("cpu_mhz", "cpu_share", "steal", "canary", "gpu")
"""The host figures a soak has a status for."""

#: Windows of at least a second: ``/proc/stat`` counts in 10 ms ticks, so a shorter window's
#: steal share is too coarse, and the canary would take a larger share.
MIN_WINDOW_S = 1.0
#: About thirty windows: enough for a reference (the first fifth) and blocks after it.
TARGET_WINDOWS = 30
CPUFREQ_GLOB = "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"


#: The analysis needs a reference (3 windows) and one block (3) after it.
MIN_WINDOWS = 6


def window_length_s(
    duration_s: float, *, min_window_s: float = MIN_WINDOW_S, windows: int = TARGET_WINDOWS
) -> float:
    """The window of a soak of ``duration_s``: ``max(min_window_s, duration_s / windows)``, but
    short enough for :data:`MIN_WINDOWS` windows (a soak under 6 s gets windows under 1 s)."""
    return min(max(min_window_s, duration_s / windows), duration_s / MIN_WINDOWS)


@dataclass(frozen=True, slots=True)
class WindowHost:
    """What the host did in one window (``None``: not read; see the soak's status).

    :ivar cpu_mhz: mean current clock over the CPUs at the window's end.
    :ivar cpu_share: this process's CPU time ÷ the window's wall time (all threads).
    :ivar steal: steal ticks ÷ all ticks of all CPUs in the window.
    :ivar canary: kind -> canary reading ÷ the session's level (empty: no reading this window).
    :ivar gpu: NVML values over the window, named as the NVML backend names them without the
        ``nvml.`` prefix (``sm_clock_mhz``, ``temperature_c``, ``power_w``, ``throttle_reasons``).
    """

    cpu_mhz: float | None = None
    cpu_share: float | None = None
    steal: float | None = None
    canary: Mapping[str, float] = field(default_factory=dict)
    gpu: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SoakWindow:
    """One window of a soak: its place in time, its median latency, and the host beside it.

    :ivar offset_s: the window's start, seconds after the soak began.
    :ivar duration_s: the window's length (the last one may be shorter).
    :ivar n: samples (batches) timed in the window.
    :ivar p50_s: median per-call latency of those samples (``None`` without samples).
    :ivar host: the host's figures for the window.
    """

    offset_s: float
    duration_s: float
    n: int
    p50_s: float | None
    host: WindowHost = field(default_factory=WindowHost)

    def to_dict(self) -> dict[str, object]:
        host = self.host
        return {
            "offset_s": self.offset_s,
            "duration_s": self.duration_s,
            "n": self.n,
            "p50_s": self.p50_s,
            "cpu_mhz": host.cpu_mhz,
            "cpu_share": host.cpu_share,
            "steal": host.steal,
            "canary": dict(host.canary),
            "gpu": dict(host.gpu),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> SoakWindow:
        return cls(
            offset_s=_number(data, "offset_s") or 0.0,
            duration_s=_number(data, "duration_s") or 0.0,
            n=int(_number(data, "n") or 0),
            p50_s=_number(data, "p50_s"),
            host=WindowHost(
                cpu_mhz=_number(data, "cpu_mhz"),
                cpu_share=_number(data, "cpu_share"),
                steal=_number(data, "steal"),
                canary=_numbers(data, "canary"),
                gpu=_numbers(data, "gpu"),
            ),
        )


@dataclass(frozen=True, slots=True)
class SoakMeasurement:
    """A test's soak: its windows and how the host figures were read.

    :ivar duration_s: the soak asked for.
    :ivar window_s: the window grid.
    :ivar elapsed_s: wall time the soak took (its clock).
    :ivar batch_size: calls per timed sample (the measurement's).
    :ivar windows: the windows, in time order.
    :ivar status: a status for each of :data:`SOAK_FIELDS`.
    :ivar notes: why a figure is missing.
    :ivar probe_s: time spent reading the host between windows (all probes).
    :ivar canary_s: of which the canary's readings.
    :ivar canary_floors: kind -> the canary's floor (a ratio beyond which a reading is slow).
    """

    duration_s: float
    window_s: float
    elapsed_s: float
    batch_size: int
    windows: tuple[SoakWindow, ...]
    status: Mapping[str, CounterStatus] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    probe_s: float = 0.0
    canary_s: float = 0.0
    canary_floors: Mapping[str, float] = field(default_factory=dict)
    schema_version: int = SOAK_SCHEMA_VERSION

    @property
    def p50_s(self) -> np.ndarray:
        """Each window's median latency (NaN for a window without samples)."""
        return np.array(
            [w.p50_s if w.p50_s is not None else math.nan for w in self.windows], dtype=np.float64
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": self.schema_version,
            "duration_s": self.duration_s,
            "window_s": self.window_s,
            "elapsed_s": self.elapsed_s,
            "batch_size": self.batch_size,
            "windows": [w.to_dict() for w in self.windows],
            "status": dict(self.status),
            "notes": list(self.notes),
            "probe_s": self.probe_s,
            "canary_s": self.canary_s,
            "canary_floors": dict(self.canary_floors),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> SoakMeasurement:
        """Rebuild from :meth:`to_dict`; a newer version raises ``ValueError``."""
        version = data.get("schema_version")
        if version != SOAK_SCHEMA_VERSION:
            raise ValueError(
                f"soak: schema_version {version!r} is not supported (reads {SOAK_SCHEMA_VERSION})"
            )
        windows = data.get("windows")
        status = data.get("status")
        notes = data.get("notes")
        return cls(
            duration_s=_number(data, "duration_s") or 0.0,
            window_s=_number(data, "window_s") or 0.0,
            elapsed_s=_number(data, "elapsed_s") or 0.0,
            batch_size=int(_number(data, "batch_size") or 1),
            windows=tuple(
                SoakWindow.from_dict(w)
                for w in (windows if isinstance(windows, list) else [])
                if isinstance(w, Mapping)
            ),
            status={
                str(k): v
                for k, v in (status.items() if isinstance(status, Mapping) else ())
                if v in ("ok", "unsupported", "denied", "invalid")
            },
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
            probe_s=_number(data, "probe_s") or 0.0,
            canary_s=_number(data, "canary_s") or 0.0,
            canary_floors=_numbers(data, "canary_floors"),
        )


# --------------------------------------------------------------------------- host readers
class CpuFreqReader:
    """The mean current CPU clock over the CPUs, in MHz, from ``cpufreq`` in sysfs.

    :param pattern: glob of the per-CPU ``scaling_cur_freq`` files (kHz).
    """

    def __init__(self, pattern: str = CPUFREQ_GLOB) -> None:
        self._paths = sorted(glob.glob(pattern))
        self.status: CounterStatus = "ok" if self._paths else "unsupported"
        self.note: str | None = (
            None
            if self._paths
            else "cpu_mhz: no cpufreq files in /sys (a VM or kernel without frequency scaling)"
        )

    def read(self) -> float | None:
        """The mean clock now, or ``None`` (and a status other than ``ok``) when unreadable."""
        if not self._paths:
            return None
        values = []
        for path in self._paths:
            try:
                with open(path, encoding="ascii") as handle:
                    values.append(int(handle.read().strip()) / 1000.0)
            except PermissionError:
                self.status, self.note = "denied", f"cpu_mhz: {path}: permission denied"
            except (OSError, ValueError):
                self.status, self.note = "invalid", f"cpu_mhz: {path}: unreadable or not a number"
        return float(np.mean(values)) if values else None


class GpuWindowReader(Protocol):
    """What the soak needs of a GPU counter backend (the NVML backend is one)."""

    def probe(self) -> Mapping[str, CounterStatus]: ...

    def start(self) -> None: ...

    def stop(self) -> Mapping[str, float]: ...


class SoakMonitor:
    """Reads the host at each window boundary of a soak (see the module docstring).

    :param probe: CPU share and steal (``None``: not read).
    :param cpufreq: CPU clock (``None``: not read).
    :param gpu: an NVML backend, probed here (``None`` or every counter unsupported: no GPU).
    :param canary: the measuring process's started canary (``None``: off).
    :param canary_share: the canary's readings stay within this share of the soak's time.
    :param clock: the soak's clock, integer nanoseconds (the canary's budget is kept on it).
    """

    def __init__(
        self,
        *,
        probe: HostProbe | None = None,
        cpufreq: CpuFreqReader | None = None,
        gpu: GpuWindowReader | None = None,
        canary: Canary | None = None,
        canary_share: float = 0.03,
        clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        if not 0 < canary_share < 1:
            raise ValueError(f"canary_share must be in (0, 1), got {canary_share!r}")
        self._probe = probe
        self._cpufreq = cpufreq
        self._canary = canary
        self._share = canary_share
        self._clock = clock
        self._notes: list[str] = []
        self._gpu: GpuWindowReader | None = None
        self.gpu_status: CounterStatus = "unsupported"
        if gpu is not None:
            status = gpu.probe()
            wanted = ("nvml.sm_clock_mhz", "nvml.temperature_c", "nvml.throttle_reasons")
            if any(status.get(name) == "ok" for name in wanted):
                self._gpu, self.gpu_status = gpu, "ok"
            else:
                states = {status.get(name, "unsupported") for name in wanted}
                self.gpu_status = "denied" if "denied" in states else "unsupported"
                self._notes.append(f"gpu: NVML counters {self.gpu_status} (no NVIDIA GPU read)")
        else:
            self._notes.append("gpu: no NVML backend (no NVIDIA GPU, or nvidia-ml-py absent)")
        self._before: HostSnapshot | None = None
        self._begin_ns = 0
        self.probe_ns = 0
        self.canary_ns = 0
        self._readings = 0

    def start(self) -> None:
        """Take the first snapshot (the first window's start)."""
        self._begin_ns = self._clock()
        self._before = self._probe.snapshot() if self._probe is not None else None
        if self._gpu is not None:
            self._gpu.start()

    def close_window(self) -> WindowHost:
        """The host's figures since the last boundary; the next window starts now."""
        begin = self._clock()
        cpu_share = steal = None
        if self._probe is not None and self._before is not None:
            after = self._probe.snapshot()
            evidence = self._probe.evidence(self._before, after)
            cpu_share, steal = evidence.cpu_share, evidence.steal_share
            self._before = after
        gpu: dict[str, float] = {}
        if self._gpu is not None:
            values = self._gpu.stop()
            gpu = {
                key.removeprefix("nvml."): value
                for key, value in values.items()
                if key.removeprefix("nvml.")
                in ("sm_clock_mhz", "temperature_c", "power_w", "throttle_reasons")
            }
            self._gpu.start()
        cpu_mhz = self._cpufreq.read() if self._cpufreq is not None else None
        canary = self._read_canary()
        self.probe_ns += self._clock() - begin
        return WindowHost(cpu_mhz=cpu_mhz, cpu_share=cpu_share, steal=steal, canary=canary, gpu=gpu)

    def _read_canary(self) -> dict[str, float]:
        canary = self._canary
        if canary is None:
            return {}
        elapsed = self._clock() - self._begin_ns
        # The next reading must keep the canary within its share of the soak so far.
        expected = self.canary_ns / max(1, self._readings) if self._readings else 0
        if self.canary_ns + expected > self._share * elapsed:
            return {}
        begin = self._clock()
        reading = canary.read()
        self.canary_ns += self._clock() - begin
        self._readings += 1
        level = canary.level.levels_s
        return {k: v / level[k] for k, v in reading.levels_s.items() if level.get(k, 0.0) > 0}

    def status(self) -> dict[str, CounterStatus]:
        """A status for each of :data:`SOAK_FIELDS`."""
        probe_ok: CounterStatus = "ok" if self._probe is not None else "unsupported"
        return {
            "cpu_mhz": self._cpufreq.status if self._cpufreq is not None else "unsupported",
            "cpu_share": probe_ok,
            "steal": probe_ok,
            "canary": "ok" if self._canary is not None else "unsupported",
            "gpu": self.gpu_status,
        }

    def notes(self) -> tuple[str, ...]:
        notes = list(self._notes)
        if self._cpufreq is not None and self._cpufreq.note:
            notes.append(self._cpufreq.note)
        if self._probe is None:
            notes.append("cpu_share, steal: host counters not read")
        if self._canary is None:
            notes.append("canary: off (--roofline-no-canary, or a clock without a canary)")
        return tuple(notes)

    def canary_floors(self) -> dict[str, float]:
        return dict(self._canary.level.floors) if self._canary is not None else {}


# --------------------------------------------------------------------------- the loop
def run_soak(
    fn: Callable[..., Any],
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    duration_s: float,
    batch_size: int = 1,
    clock: Callable[[], int] = time.perf_counter_ns,
    sync: Callable[[], object] | None = None,
    monitor: SoakMonitor | None = None,
    window_s: float | None = None,
) -> tuple[Any, SoakMeasurement]:
    """Call ``fn`` for ``duration_s`` in batches of ``batch_size``, window by window.

    Exceptions from ``fn`` or ``sync`` propagate. Returns ``fn``'s last result and the soak.

    :param window_s: the window grid (default :func:`window_length_s`).
    """
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration_s must be a positive number of seconds, got {duration_s!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
    window_s = window_length_s(duration_s) if window_s is None else window_s
    kwargs = dict(kwargs or {})
    window_ns = int(window_s * 1e9)
    monitor = monitor or SoakMonitor(clock=clock)
    windows: list[SoakWindow] = []
    samples: list[float] = []
    result: Any = None
    monitor.start()
    begin = clock()
    end = begin + int(duration_s * 1e9)
    boundary = min(begin + window_ns, end)
    window_start = begin
    while True:
        start = clock()
        for _ in range(batch_size):
            result = fn(*args, **kwargs)
        if sync is not None:
            sync()
        stop = clock()
        samples.append((stop - start) / batch_size / 1e9)
        if stop < boundary:
            continue
        host = monitor.close_window()
        windows.append(
            SoakWindow(
                offset_s=(window_start - begin) / 1e9,
                duration_s=(stop - window_start) / 1e9,
                n=len(samples),
                p50_s=float(np.median(samples)),
                host=host,
            )
        )
        samples = []
        if stop >= end:
            break
        # The grid stays fixed; a call longer than a window skips the boundaries it covered.
        while boundary <= stop:
            boundary = min(boundary + window_ns, end)
        window_start = clock()
    return result, SoakMeasurement(
        duration_s=duration_s,
        window_s=window_s,
        elapsed_s=(clock() - begin) / 1e9,
        batch_size=batch_size,
        windows=tuple(windows),
        status=monitor.status(),
        notes=monitor.notes(),
        probe_s=monitor.probe_ns / 1e9,
        canary_s=monitor.canary_ns / 1e9,
        canary_floors=monitor.canary_floors(),
    )


def _number(data: Mapping[str, object], key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _numbers(data: Mapping[str, object], key: str) -> dict[str, float]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        return {}
    out = {}
    for k, v in value.items():
        if not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(float(v)):
            out[str(k)] = float(v)
    return out
