"""Linux ``perf_event_open(2)`` counters through ctypes: software events always, hardware when a
PMU is exposed.

One counter is opened per thread listed in ``/proc/self/task`` (``pid=tid, cpu=-1``), so a BLAS
or OpenMP pool that already exists is counted; ``inherit`` cannot do that (it only follows
threads created after opening). Counters are opened at each :meth:`PerfEventBackend.start`
and closed at :meth:`~PerfEventBackend.stop`, which re-scans the threads every region and never
keeps a descriptor on a thread id the kernel may have reused.

Counting mode, per counter and the same on every machine so that values compare across runs:
user mode only (``exclude_kernel=1``, what ``perf stat`` writes as ``:u``; allowed at
``perf_event_paranoid=2``) for everything except context switches and CPU migrations. Those two
are raised only from kernel context, so user-only counting would report a plausible-looking 0;
they are opened with kernel counting and are ``denied`` where that is not allowed
(``rusage.*_switches`` still covers context switches). ``task-clock`` counts all on-CPU time
regardless of mode.

Why one long module: mostly declarations: the ctypes binding of perf_event_open(2), the
attribute struct layout, the event tables and read formats, beside the one backend class that
uses them.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_roofline.errors import ConfigError
from pytest_roofline.hardware.machine import available_cpus
from pytest_roofline.measure.counters.base import BackendDetails, CounterStatus

__all__ = [
    "FP_OPS",
    "HARDWARE_EVENTS",
    "PERF_COUNTERS",
    "SOFTWARE_EVENTS",
    "PerfEventBackend",
    "PerfEventSpec",
    "PerfOpen",
    "classify_errno",
    "parse_event_spec",
]

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_RAW = 4

PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1

_BIT_DISABLED = 1 << 0
_BIT_EXCLUDE_KERNEL = 1 << 5
_BIT_EXCLUDE_HV = 1 << 6

PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401

_NR_PERF_EVENT_OPEN = {
    "x86_64": 298,
    "amd64": 298,
    "i386": 336,
    "i686": 336,
    "aarch64": 241,
    "arm64": 241,
    "riscv64": 241,
    "loongarch64": 241,
    "ppc64le": 319,
    "ppc64": 319,
    "s390x": 331,
    "armv7l": 364,
}

SYSFS_PMU_ROOT = Path("/sys/bus/event_source/devices")
_READ = struct.Struct("=QQQ")  # value, time_enabled, time_running


@dataclass(frozen=True, slots=True)
class PerfEventSpec:
    """One perf event and the counter it feeds.

    ``kernel``: the event is only ever raised in kernel context, so it is opened with kernel
    counting on. ``scale`` converts the raw count to the counter's unit (task-clock ns → s).
    """

    counter: str
    type: int
    config: int
    config1: int = 0
    config2: int = 0
    scale: float = 1.0
    kernel: bool = False
    hardware: bool = False


SOFTWARE_EVENTS: tuple[PerfEventSpec, ...] = (
    PerfEventSpec("perf.task_clock_s", PERF_TYPE_SOFTWARE, 1, scale=1e-9),
    PerfEventSpec("perf.page_faults", PERF_TYPE_SOFTWARE, 2),
    PerfEventSpec("perf.context_switches", PERF_TYPE_SOFTWARE, 3, kernel=True),
    PerfEventSpec("perf.cpu_migrations", PERF_TYPE_SOFTWARE, 4, kernel=True),
)
HARDWARE_EVENTS: tuple[PerfEventSpec, ...] = (
    PerfEventSpec("perf.cycles", PERF_TYPE_HARDWARE, 0, hardware=True),
    PerfEventSpec("perf.instructions", PERF_TYPE_HARDWARE, 1, hardware=True),
    PerfEventSpec("perf.cache_references", PERF_TYPE_HARDWARE, 2, hardware=True),
    PerfEventSpec("perf.cache_misses", PERF_TYPE_HARDWARE, 3, hardware=True),
    PerfEventSpec("perf.branch_misses", PERF_TYPE_HARDWARE, 5, hardware=True),
)
FP_OPS = "perf.fp_ops"
PERF_COUNTERS: tuple[str, ...] = (
    *(e.counter for e in SOFTWARE_EVENTS),
    *(e.counter for e in HARDWARE_EVENTS),
    FP_OPS,
)

PerfOpen = Callable[[PerfEventSpec, int], int]
"""Open ``spec`` on thread ``tid`` (0: the calling thread) and return the fd; raise ``OSError``."""


def classify_errno(err: int | None) -> tuple[CounterStatus, str]:
    """Map a ``perf_event_open`` errno to a status and a reason for the notes.

    Unsupported: the kernel or PMU does not provide the event (``ENOENT`` is what a VM without
    a PMU returns for hardware events, ``EINVAL``/``E2BIG`` an attr this kernel does not
    accept). Denied: ``EACCES`` (``perf_event_paranoid``, no ``CAP_PERFMON``) and ``EPERM``
    (seccomp in containers, or Debian's ``paranoid=3``). Anything else (``EMFILE``, ``EBUSY``,
    ...) is a failure of this attempt: invalid.
    """
    name = errno.errorcode.get(err, str(err)) if err is not None else "no errno"
    if err in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV, errno.EINVAL, errno.E2BIG):
        return "unsupported", f"{name}: not provided by this kernel/PMU"
    if err == errno.ENOSYS:
        return "unsupported", f"{name}: perf_event_open is not available"
    if err == errno.EACCES:
        return "denied", f"{name}: perf_event_paranoid or missing CAP_PERFMON"
    if err == errno.EPERM:
        return "denied", f"{name}: blocked by seccomp (containers) or perf_event_paranoid=3"
    return "invalid", f"{name}: {os.strerror(err) if err is not None else 'unknown error'}"


class _PerfEventAttr(ctypes.Structure):
    # struct perf_event_attr up to PERF_ATTR_SIZE_VER8 (136 bytes); the kernel accepts a larger
    # size than it knows as long as the tail is zero, and fills a smaller one with zeros.
    _fields_ = (
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("_rest", ctypes.c_uint8 * (136 - 72)),
    )


_syscall_cache: list[Callable[..., int] | None] = []


def _syscall() -> Callable[..., int] | None:
    if not _syscall_cache:
        fn: Callable[..., int] | None = None
        if sys.platform.startswith("linux") and platform.machine() in _NR_PERF_EVENT_OPEN:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                fn = libc.syscall
                fn.restype = ctypes.c_long
            except (OSError, AttributeError):
                fn = None
        _syscall_cache.append(fn)
    return _syscall_cache[0]


def _syscall_open(spec: PerfEventSpec, tid: int) -> int:
    fn = _syscall()
    if fn is None:
        raise OSError(errno.ENOSYS, "perf_event_open is not available on this platform")
    attr = _PerfEventAttr()
    attr.type = spec.type
    attr.size = ctypes.sizeof(_PerfEventAttr)
    attr.config = spec.config
    attr.config1 = spec.config1
    attr.config2 = spec.config2
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
    flags = _BIT_DISABLED | _BIT_EXCLUDE_HV
    if not spec.kernel:
        flags |= _BIT_EXCLUDE_KERNEL
    attr.flags = flags
    fd = int(
        fn(
            ctypes.c_long(_NR_PERF_EVENT_OPEN[platform.machine()]),
            ctypes.byref(attr),
            ctypes.c_int(tid),
            ctypes.c_int(-1),  # any CPU
            ctypes.c_int(-1),  # no group
            ctypes.c_ulong(0),
        )
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def _ioctl(fd: int, request: int) -> None:
    import fcntl  # Linux only; imported here so the module imports everywhere

    fcntl.ioctl(fd, request, 0)


def parse_event_spec(
    spec: str, *, counter: str = FP_OPS, sysfs_root: str | os.PathLike[str] = SYSFS_PMU_ROOT
) -> PerfEventSpec:
    """Encode a perf event written the way ``perf stat -e`` takes it.

    Accepted forms: ``r<hex>`` (raw code for the core PMU), ``<pmu>/<term>=<value>,.../``,
    ``<pmu>/<alias>/`` (an alias in ``<pmu>/events/``), or bare ``term=value,...`` for the
    ``cpu`` PMU. Terms are encoded with the PMU's own ``format/`` files, as ``perf`` does.
    Raises :class:`~pytest_roofline.errors.ConfigError` naming the spec and the valid forms.
    """
    root = Path(sysfs_root)
    text = spec.strip()

    def fail(why: str) -> ConfigError:
        return ConfigError(
            f"perf event {spec!r}: {why}; valid forms: 'r<hex>', '<pmu>/event=0x..,umask=0x../', "
            "'<pmu>/<alias>/' or 'event=0x..,umask=0x..'"
        )

    if len(text) > 1 and text[0] == "r" and all(c in "0123456789abcdefABCDEF" for c in text[1:]):
        return PerfEventSpec(counter, PERF_TYPE_RAW, int(text[1:], 16), hardware=True)
    if "/" in text:
        parts = text.strip("/").split("/")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise fail("expected '<pmu>/<terms>/'")
        pmu, terms = parts
    else:
        pmu, terms = "cpu", text
    pmu_dir = root / pmu
    try:
        pmu_type = int((pmu_dir / "type").read_text().strip())
    except (OSError, ValueError):
        raise fail(f"no PMU {pmu!r} under {root}") from None
    if "=" not in terms and "," not in terms:
        try:
            terms = (pmu_dir / "events" / terms).read_text().strip()
        except OSError:
            raise fail(f"PMU {pmu!r} has no event alias {terms!r}") from None
    fields = {"config": 0, "config1": 0, "config2": 0}
    for term in terms.split(","):
        key, _, raw_value = term.strip().partition("=")
        if not key:
            raise fail("empty term")
        try:
            value = int(raw_value, 0) if raw_value else 1
            fmt = (pmu_dir / "format" / key).read_text().strip()
        except ValueError:
            raise fail(f"term {key!r} has a value that is not an integer: {raw_value!r}") from None
        except OSError:
            raise fail(f"PMU {pmu!r} has no format term {key!r}") from None
        target, _, ranges = fmt.partition(":")
        if target not in fields:
            raise fail(f"format of {key!r} is {fmt!r}, which this encoder does not support")
        for part in ranges.split(","):
            lo_text, _, hi_text = part.partition("-")
            lo = int(lo_text)
            hi = int(hi_text) if hi_text else lo
            width = hi - lo + 1
            fields[target] |= (value & ((1 << width) - 1)) << lo
            value >>= width
        if value:
            raise fail(f"value of {key!r} does not fit its format {fmt!r}")
    return PerfEventSpec(
        counter,
        pmu_type,
        fields["config"],
        fields["config1"],
        fields["config2"],
        hardware=True,
    )


def _fd_budget() -> int:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 256
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 4096
    # A quarter of the process's descriptor limit: the test under measurement needs the rest.
    return max(16, min(4096, soft // 4))


def _core_pmu_present(root: Path) -> bool:
    """Whether sysfs lists a core PMU: ``cpu`` (x86, POWER, RISC-V), ``cpu_core``/``cpu_atom``
    (hybrid Intel), ``armv*`` (Arm), ``cpum_cf`` (s390)."""
    try:
        names = os.listdir(root)
    except OSError:
        return False
    return any(
        n in ("cpu", "cpu_core", "cpu_atom", "cpum_cf") or n.startswith("armv") for n in names
    )


def _paranoid() -> str:
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "unknown"


def _list_threads() -> list[int]:
    """Thread ids of this process, the calling thread first (it is never left out)."""
    me = threading.get_native_id()
    try:
        tids = sorted(int(t) for t in os.listdir("/proc/self/task") if t.isdigit())
    except OSError:
        return [me]
    return [me, *(t for t in tids if t != me)]


class PerfEventBackend:
    """Counters from ``perf_event_open(2)``; see the module docstring for the counting rules.

    Parameters
    ----------
    events
        Counter names to open (default: all of :data:`PERF_COUNTERS`).
    fp_event
        How to count ``perf.fp_ops``, in ``perf stat -e`` syntax (see :func:`parse_event_spec`);
        it must count FLOPs with an FMA as 2. Without it ``perf.fp_ops`` is ``unsupported``:
        no generic FLOP event exists, and a raw code guessed for the wrong CPU model would
        report a wrong number with status ok.
    sysfs_root, opener
        Injection points for tests.
    busy_fraction
        A thread whose task-clock is at least this share of the region's wall time counts
        towards :attr:`CounterReading.cpu_share`'s denominator; idle pool threads do not.
    """

    name = "perf"

    def __init__(
        self,
        events: Sequence[str] | None = None,
        *,
        fp_event: str | None = None,
        sysfs_root: str | os.PathLike[str] = SYSFS_PMU_ROOT,
        opener: PerfOpen | None = None,
        busy_fraction: float = 0.05,
    ) -> None:
        wanted = PERF_COUNTERS if events is None else tuple(dict.fromkeys(events))
        unknown = [e for e in wanted if e not in PERF_COUNTERS]
        if unknown:
            raise ConfigError(f"unknown perf counters {unknown}; known: {', '.join(PERF_COUNTERS)}")
        self.counters: tuple[str, ...] = wanted
        self._fp_event = fp_event
        self._sysfs_root = Path(sysfs_root)
        self._opener: PerfOpen = opener if opener is not None else _syscall_open
        self._available = opener is not None or _syscall() is not None
        self._busy_fraction = busy_fraction
        self._ok: list[PerfEventSpec] = []
        self._status: dict[str, CounterStatus] | None = None
        self._details = BackendDetails()
        # Region state: (tid, spec, fd) for every open counter.
        self._fds: list[tuple[int, PerfEventSpec, int]] = []
        self._anchors: list[int] = []
        self._tids: list[int] = []
        self._region_notes: list[str] = []
        self._t0_ns = 0
        self._cpu0_s = 0.0

    # -- probe -----------------------------------------------------------------------------
    def probe(self) -> Mapping[str, CounterStatus]:
        if self._status is not None:
            return dict(self._status)
        status: dict[str, CounterStatus] = {}
        notes: list[str] = []
        if not self._available:
            status = dict.fromkeys(self.counters, "unsupported")
            notes.append(
                f"perf: perf_event_open is not available here ({sys.platform}/"
                f"{platform.machine()}); perf counters unsupported"
            )
            return self._finish_probe(status, notes)

        specs: list[PerfEventSpec] = [
            e for e in (*SOFTWARE_EVENTS, *HARDWARE_EVENTS) if e.counter in self.counters
        ]
        if FP_OPS in self.counters:
            fp = self._fp_spec(notes)
            if fp is None:
                status[FP_OPS] = "unsupported" if self._fp_event is None else "invalid"
            else:
                specs.append(fp)

        failures: dict[str, tuple[CounterStatus, str]] = {}
        for spec in specs:
            try:
                fd = self._opener(spec, 0)
            except OSError as exc:
                failures[spec.counter] = classify_errno(exc.errno)
                status[spec.counter] = failures[spec.counter][0]
                continue
            if spec.type == PERF_TYPE_SOFTWARE:
                # Kept open (disabled, counting nothing) until close(): the kernel sets up a
                # software event type on its first open and tears it down on its last close
                # (a static key flip, ~60 µs each way), which would otherwise happen in every
                # region's start() and stop().
                self._anchors.append(fd)
            else:
                os.close(fd)
            status[spec.counter] = "ok"
            self._ok.append(spec)
        notes.extend(self._failure_notes(failures, specs))
        return self._finish_probe({c: status[c] for c in self.counters}, notes)

    def _finish_probe(
        self, status: dict[str, CounterStatus], notes: list[str]
    ) -> Mapping[str, CounterStatus]:
        self._status = status
        self._details = BackendDetails(notes=tuple(notes))
        return dict(status)

    def _fp_spec(self, notes: list[str]) -> PerfEventSpec | None:
        if self._fp_event is None:
            notes.append(
                "perf.fp_ops: no generic FLOP event exists; configure the CPU's FLOP event "
                "(fp_event, perf stat syntax) to count it"
            )
            return None
        try:
            return parse_event_spec(self._fp_event, sysfs_root=self._sysfs_root)
        except ConfigError as exc:
            notes.append(f"perf.fp_ops: {exc}")
            return None

    def _failure_notes(
        self, failures: Mapping[str, tuple[CounterStatus, str]], specs: Sequence[PerfEventSpec]
    ) -> list[str]:
        """One note per distinct failure, naming the counters it hit and what would fix it."""
        by_reason: dict[tuple[CounterStatus, str], list[str]] = {}
        for counter, failure in failures.items():
            by_reason.setdefault(failure, []).append(counter)
        hardware = {s.counter for s in specs if s.hardware}
        kernel_only = {s.counter for s in specs if s.kernel}
        notes: list[str] = []
        for (status, reason), counters in by_reason.items():
            if len(counters) == len(specs) and len(specs) > 1:
                label = "perf: every event"
            elif set(counters) == hardware and len(counters) > 1:
                label = "perf: hardware events"
            else:
                label = ", ".join(counters)
            hint = ""
            if status == "unsupported" and hardware & set(counters):
                hint = self._pmu_hint()
            elif status == "denied":
                hint = f"; perf_event_paranoid={_paranoid()}"
                if set(counters) <= kernel_only:
                    hint += (
                        "; these need kernel-mode counting (perf_event_paranoid <= 1 or "
                        "CAP_PERFMON); rusage.*_switches still counts context switches"
                    )
            notes.append(f"{label}: {status} ({reason}){hint}")
        return notes

    def _pmu_hint(self) -> str:
        if not _core_pmu_present(self._sysfs_root):
            return f"; no CPU PMU under {self._sysfs_root} (usual in VMs without PMU passthrough)"
        return ""

    # -- region ----------------------------------------------------------------------------
    def start(self) -> None:
        self.probe()
        self._close_fds()  # a region left open by a failed stop() must not leak
        self._region_notes = []
        if not self._ok:
            self._tids = []
            return
        tids = _list_threads()
        budget_threads = max(1, _fd_budget() // len(self._ok))
        if len(tids) > budget_threads:
            self._region_notes.append(
                f"perf: {len(tids) - budget_threads} of {len(tids)} threads not covered "
                f"(descriptor budget of {budget_threads * len(self._ok)})"
            )
            tids = tids[:budget_threads]
        covered: list[int] = []
        try:
            for tid in tids:
                opened = self._open_thread(tid)
                if opened:
                    covered.append(tid)
            self._tids = covered
            for _, _, fd in self._fds:
                # Fresh descriptors start at zero, so RESET would be a wasted syscall.
                _ioctl(fd, PERF_EVENT_IOC_ENABLE)
        except BaseException:
            self._close_fds()
            raise
        self._cpu0_s = time.process_time()
        self._t0_ns = time.perf_counter_ns()

    def _open_thread(self, tid: int) -> bool:
        opened: list[tuple[int, PerfEventSpec, int]] = []
        for spec in self._ok:
            try:
                fd = self._opener(spec, tid)
            except OSError as exc:
                if exc.errno == errno.ESRCH:  # the thread exited since the scan: nothing to count
                    for _, _, fd in opened:
                        os.close(fd)
                    return False
                self._region_notes.append(
                    f"{spec.counter}: thread {tid} not counted ({classify_errno(exc.errno)[1]})"
                )
                continue
            opened.append((tid, spec, fd))
        self._fds.extend(opened)
        return bool(opened)

    def stop(self) -> Mapping[str, float]:
        if not self._ok:
            self._details = BackendDetails(notes=tuple(self._region_notes))
            return {}
        wall_ns = max(1, time.perf_counter_ns() - self._t0_ns)
        try:
            for _, _, fd in self._fds:
                _ioctl(fd, PERF_EVENT_IOC_DISABLE)
            readings = [
                (tid, spec, _READ.unpack(os.read(fd, _READ.size))) for tid, spec, fd in self._fds
            ]
        finally:
            self._close_fds()
        notes = list(self._region_notes)
        totals: dict[str, list[float]] = {}  # counter -> [scaled value, enabled, running, lost]
        busy_ns: dict[int, int] = {}
        for tid, spec, (value, enabled, running) in readings:
            acc = totals.setdefault(spec.counter, [0.0, 0.0, 0.0, 0.0])
            acc[1] += enabled
            acc[2] += running
            if running:
                acc[0] += value * (enabled / running) * spec.scale
            elif enabled:
                acc[3] += 1  # enabled but never on the PMU: its share is unknown
            if spec.counter == "perf.task_clock_s":
                busy_ns[tid] = value
        values: dict[str, float] = {}
        for spec in self._ok:
            if spec.counter not in totals:
                continue
            scaled, enabled, running, lost = totals[spec.counter]
            if lost:
                notes.append(
                    f"{spec.counter}: never scheduled on the PMU on {int(lost)} thread(s) "
                    "(multiplexing); no value"
                )
                continue
            values[spec.counter] = scaled
            if enabled and running / enabled < 0.999:
                notes.append(
                    f"{spec.counter}: on the PMU {running / enabled:.0%} of the region "
                    "(multiplexing); value scaled by time_enabled/time_running"
                )
        started = set(self._tids)
        new = [t for t in _list_threads() if t not in started]
        # Threads that started and ended inside the region are gone from /proc by now; the
        # process CPU clock (which keeps exited threads' time) still shows their work.
        process_cpu_s = time.process_time() - self._cpu0_s
        task_clock_s = sum(busy_ns.values()) * 1e-9
        uncovered_s = process_cpu_s - task_clock_s
        if new or (uncovered_s > 0.002 and uncovered_s > 0.05 * process_cpu_s):
            notes.append(
                f"perf: {max(0.0, uncovered_s):.3f} s of process CPU time ran on threads the "
                f"counters did not cover ({len(new)} started during the region and still "
                "running); task-clock undercounts, rusage.* covers them"
            )
        busy = sum(1 for ns in busy_ns.values() if ns >= self._busy_fraction * wall_ns)
        self._details = BackendDetails(
            notes=tuple(notes),
            threads=len(self._tids),
            busy_threads=min(max(1, busy), available_cpus()),
        )
        return values

    def details(self) -> BackendDetails:
        return self._details

    def close(self) -> None:
        self._close_fds()
        self._ok = []
        anchors, self._anchors = self._anchors, []
        for fd in anchors:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _close_fds(self) -> None:
        fds, self._fds = self._fds, []
        for _, _, fd in fds:
            with contextlib.suppress(OSError):  # already closed: nothing leaks
                os.close(fd)
