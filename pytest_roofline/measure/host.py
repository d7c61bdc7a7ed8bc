"""Per-test host evidence: how much CPU the test got, how often it was preempted, what the host did.

Read around each measured test (a :class:`HostSnapshot` before and after; cheap reads of
``/proc`` and ``getrusage``, about 0.1 ms together) and kept with its result, so a slow window
can be explained: the process got less CPU than its threads wanted, the scheduler preempted it,
the hypervisor stole time (``steal`` in ``/proc/stat``), or other processes kept the CPUs busy.

Every figure carries a status. Something unreadable (no ``/proc`` off Linux, a kernel without a
steal column, a window shorter than one clock tick) is ``unsupported`` or ``invalid``, never an
exception. The paths and readers are injected so tests use fixture files. Never imports pytest.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from pytest_roofline.measure.counters.base import CounterStatus

__all__ = [
    "HOST_FIELDS",
    "HostEvidence",
    "HostProbe",
    "HostSnapshot",
    "HostWindow",
    "ProcStat",
    "read_loadavg",
    "read_proc_stat",
    "read_status_switches",
]

HOST_FIELDS: tuple[str, ...] = (
    "cpu_share",
    "involuntary_switches",
    "steal_share",
    "other_cpu_share",
    "load",
)
"""The figures a :class:`HostEvidence` has a status for."""


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The aggregate ``cpu`` line of ``/proc/stat``, in clock ticks summed over all CPUs.

    ``total`` is user + nice + system + idle + iowait + irq + softirq + steal (guest time is
    already inside user and nice, so it is not added again); ``idle`` includes iowait.
    """

    total: int
    idle: int
    steal: int | None


def read_proc_stat(path: str = "/proc/stat") -> ProcStat | None:
    """Parse the ``cpu`` line of ``/proc/stat``; ``None`` when it is unreadable or malformed."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("cpu "):
                    break
            else:
                return None
    except OSError:
        return None
    try:
        ticks = [int(v) for v in line.split()[1:]]
    except ValueError:
        return None
    if len(ticks) < 4:
        return None
    # Columns: user nice system idle iowait irq softirq steal guest guest_nice (proc(5)); steal
    # appeared in Linux 2.6.11, iowait/irq/softirq in 2.5/2.6.
    counted = ticks[:8]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return ProcStat(total=sum(counted), idle=idle, steal=ticks[7] if len(ticks) > 7 else None)


def read_loadavg(path: str = "/proc/loadavg") -> tuple[float, int | None] | None:
    """The 1-minute load average and the number of runnable tasks now (this reader included).

    ``/proc/loadavg`` reads like ``1.44 0.97 0.48 2/86 9595``; the fourth field is runnable /
    total scheduling entities. Falls back to ``os.getloadavg()`` (no runnable count) only when
    ``path`` is the real file; ``None`` when nothing is readable.
    """
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            fields = handle.read().split()
        load = float(fields[0])
        runnable: int | None = None
        if len(fields) > 3 and "/" in fields[3]:
            runnable = int(fields[3].split("/")[0])
        return load, runnable
    except (OSError, ValueError, IndexError):
        pass
    if path == "/proc/loadavg":
        try:
            return os.getloadavg()[0], None
        except (AttributeError, OSError):
            return None
    return None


def read_status_switches(path: str = "/proc/self/status") -> int | None:
    """``nonvoluntary_ctxt_switches`` from a ``/proc/<pid>/status`` file, or ``None``.

    Only the thread group leader's count (the main thread): the fallback when ``getrusage``,
    which sums every thread of the process, is not available.
    """
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    return int(line.split(":", 1)[1].strip())
    except (OSError, ValueError):
        return None
    return None


def _rusage_involuntary_switches() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    try:
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw)
    except (OSError, ValueError):
        return None


def _clock_ticks_per_s() -> int | None:
    try:
        ticks = os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError):
        return None
    return ticks if ticks > 0 else None


@dataclass(frozen=True, slots=True)
class HostSnapshot:
    """Raw host counters at one moment; two of them make a :class:`HostEvidence`."""

    at_ns: int
    cpu_s: float | None
    involuntary_switches: int | None
    switches_source: str | None
    stat: ProcStat | None
    load_1m: float | None
    runnable_tasks: int | None


@dataclass(frozen=True, slots=True)
class HostEvidence:
    """What the host did during one test window.

    :ivar wall_s: the window's wall time.
    :ivar cpu_s: CPU time of this process (all threads) during the window.
    :ivar cpu_share: ``cpu_s / wall_s``: CPUs' worth of time the process used (above 1 with
        several busy threads; divide by the threads the test keeps busy for a share in [0, 1]).
    :ivar involuntary_switches: times the scheduler preempted a thread of this process
        (``getrusage`` ``ru_nivcsw``; the main thread only when read from ``/proc/self/status``).
    :ivar steal_share: steal ticks ÷ all ticks of all CPUs in the window: the share of the
        machine's CPU time the hypervisor gave to other guests.
    :ivar other_cpu_share: busy ticks not of this process (and not steal) ÷ all ticks: how much
        of the machine other processes used. Clamped to [0, 1]; tick-accounting is coarse.
    :ivar stat_ticks: all ticks of all CPUs in the window (the resolution of the two shares: at
        100 ticks/s on 2 CPUs, a 0.5 s window has 100).
    :ivar load_1m: 1-minute load average at the end of the window.
    :ivar runnable_tasks: runnable tasks at the end of the window (this reader included).
    :ivar status: a status for every name in :data:`HOST_FIELDS`.
    :ivar notes: why a figure is missing or coarse.
    """

    wall_s: float
    cpu_s: float | None
    cpu_share: float | None
    involuntary_switches: int | None
    steal_share: float | None
    other_cpu_share: float | None
    stat_ticks: int | None
    load_1m: float | None
    runnable_tasks: int | None
    status: Mapping[str, CounterStatus]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "cpu_share": self.cpu_share,
            "involuntary_switches": self.involuntary_switches,
            "steal_share": self.steal_share,
            "other_cpu_share": self.other_cpu_share,
            "stat_ticks": self.stat_ticks,
            "load_1m": self.load_1m,
            "runnable_tasks": self.runnable_tasks,
            "status": dict(self.status),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> HostEvidence:
        """Rebuild from :meth:`to_dict` (a figure of the wrong type reads as missing)."""

        def number(key: str) -> float | None:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            return float(value)

        def count(key: str) -> int | None:
            value = number(key)
            return None if value is None else int(value)

        status = data.get("status")
        notes = data.get("notes")
        return cls(
            wall_s=number("wall_s") or 0.0,
            cpu_s=number("cpu_s"),
            cpu_share=number("cpu_share"),
            involuntary_switches=count("involuntary_switches"),
            steal_share=number("steal_share"),
            other_cpu_share=number("other_cpu_share"),
            stat_ticks=count("stat_ticks"),
            load_1m=number("load_1m"),
            runnable_tasks=count("runnable_tasks"),
            status={
                str(k): v
                for k, v in (status.items() if isinstance(status, Mapping) else ())
                if v in ("ok", "unsupported", "denied", "invalid")
            },
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
        )


@dataclass(slots=True)
class HostWindow:
    """Filled in when a :meth:`HostProbe.around` block ends."""

    before: HostSnapshot
    evidence: HostEvidence | None = field(default=None)


class HostProbe:
    """Reads host counters; :meth:`evidence` turns two snapshots into a :class:`HostEvidence`.

    :param stat_path: ``/proc/stat``.
    :param status_path: ``/proc/self/status`` (only read when ``involuntary_switches`` gives
        ``None``).
    :param loadavg_path: ``/proc/loadavg``.
    :param clock: monotonic nanoseconds for the window's wall time.
    :param cpu_time: this process's CPU seconds, all threads (``time.process_time``).
    :param involuntary_switches: the process's involuntary context switches (``getrusage``), or
        ``None`` when unavailable.
    :param clock_ticks_per_s: ``/proc/stat`` ticks per second (``SC_CLK_TCK``).
    """

    def __init__(
        self,
        *,
        stat_path: str = "/proc/stat",
        status_path: str = "/proc/self/status",
        loadavg_path: str = "/proc/loadavg",
        clock: Callable[[], int] = time.perf_counter_ns,
        cpu_time: Callable[[], float] = time.process_time,
        involuntary_switches: Callable[[], int | None] = _rusage_involuntary_switches,
        clock_ticks_per_s: int | None = None,
    ) -> None:
        self._stat_path = stat_path
        self._status_path = status_path
        self._loadavg_path = loadavg_path
        self._clock = clock
        self._cpu_time = cpu_time
        self._switches = involuntary_switches
        self._hz = clock_ticks_per_s if clock_ticks_per_s is not None else _clock_ticks_per_s()

    def snapshot(self) -> HostSnapshot:
        """Read every counter now; unreadable ones are ``None``."""
        switches = self._switches()
        source: str | None = "rusage"
        if switches is None:
            switches = read_status_switches(self._status_path)
            source = "proc_status" if switches is not None else None
        load = read_loadavg(self._loadavg_path)
        try:
            cpu_s: float | None = self._cpu_time()
        except OSError:
            cpu_s = None
        return HostSnapshot(
            at_ns=self._clock(),
            cpu_s=cpu_s,
            involuntary_switches=switches,
            switches_source=source,
            stat=read_proc_stat(self._stat_path),
            load_1m=None if load is None else load[0],
            runnable_tasks=None if load is None else load[1],
        )

    @contextlib.contextmanager
    def around(self) -> Iterator[HostWindow]:
        """Snapshot before and after the block; the evidence is on the yielded window after it."""
        window = HostWindow(before=self.snapshot())
        try:
            yield window
        finally:
            window.evidence = self.evidence(window.before, self.snapshot())

    def evidence(self, before: HostSnapshot, after: HostSnapshot) -> HostEvidence:
        """The host's figures between two snapshots (a status for each)."""
        status: dict[str, CounterStatus] = {}
        notes: list[str] = []
        wall_s = (after.at_ns - before.at_ns) / 1e9

        cpu_s: float | None = None
        cpu_share: float | None = None
        if before.cpu_s is None or after.cpu_s is None:
            status["cpu_share"] = "unsupported"
            notes.append("cpu_share: process CPU time unreadable")
        elif wall_s <= 0 or after.cpu_s < before.cpu_s:
            status["cpu_share"] = "invalid"
            notes.append("cpu_share: empty window or CPU time went backwards")
        else:
            cpu_s = after.cpu_s - before.cpu_s
            cpu_share = cpu_s / wall_s
            status["cpu_share"] = "ok"

        switches: int | None = None
        if before.involuntary_switches is None or after.involuntary_switches is None:
            status["involuntary_switches"] = "unsupported"
            notes.append("involuntary_switches: neither getrusage nor /proc/self/status readable")
        elif (
            before.switches_source != after.switches_source
            or after.involuntary_switches < before.involuntary_switches
        ):
            status["involuntary_switches"] = "invalid"
            notes.append("involuntary_switches: counter source changed or went backwards")
        else:
            switches = after.involuntary_switches - before.involuntary_switches
            status["involuntary_switches"] = "ok"
            if after.switches_source == "proc_status":
                notes.append("involuntary_switches: main thread only (/proc/self/status)")

        steal_share: float | None = None
        other_share: float | None = None
        stat_ticks: int | None = None
        b, a = before.stat, after.stat
        if b is None or a is None:
            status["steal_share"] = status["other_cpu_share"] = "unsupported"
            notes.append("steal_share, other_cpu_share: /proc/stat unreadable")
        else:
            stat_ticks = a.total - b.total
            if stat_ticks <= 0 or a.idle < b.idle:
                status["steal_share"] = status["other_cpu_share"] = "invalid"
                notes.append(
                    "steal_share, other_cpu_share: no clock tick elapsed in the window "
                    "(too short for /proc/stat) or counters went backwards"
                )
            else:
                steal = None if a.steal is None or b.steal is None else a.steal - b.steal
                if steal is None:
                    status["steal_share"] = "unsupported"
                    notes.append("steal_share: this kernel's /proc/stat has no steal column")
                elif steal < 0:
                    status["steal_share"] = "invalid"
                else:
                    steal_share = steal / stat_ticks
                    status["steal_share"] = "ok"
                if cpu_s is None or self._hz is None:
                    status["other_cpu_share"] = "unsupported"
                    notes.append("other_cpu_share: needs process CPU time and SC_CLK_TCK")
                else:
                    busy = stat_ticks - (a.idle - b.idle) - (steal or 0)
                    others = busy - cpu_s * self._hz
                    other_share = min(1.0, max(0.0, others / stat_ticks))
                    status["other_cpu_share"] = "ok"

        if after.load_1m is None:
            status["load"] = "unsupported"
            notes.append("load: /proc/loadavg and os.getloadavg unreadable")
        else:
            status["load"] = "ok"

        return HostEvidence(
            wall_s=wall_s,
            cpu_s=cpu_s,
            cpu_share=cpu_share,
            involuntary_switches=switches,
            steal_share=steal_share,
            other_cpu_share=other_share,
            stat_ticks=stat_ticks,
            load_1m=after.load_1m,
            runnable_tasks=after.runnable_tasks,
            status=status,
            notes=tuple(notes),
        )
