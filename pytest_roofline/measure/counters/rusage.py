"""``getrusage(RUSAGE_SELF)`` counters: always available on POSIX, no permissions needed.

``RUSAGE_SELF`` (the whole process) rather than ``RUSAGE_THREAD``: the measured work often runs
on BLAS/OpenMP pool threads or threads the test starts itself, which a per-thread figure of the
calling thread would miss. The cost is that unrelated threads in the process (a timeout
watchdog, xdist's I/O thread) are included; they are usually idle. Child processes are not
counted (that would be ``RUSAGE_CHILDREN``, and only for children already waited for).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from pytest_roofline.measure.counters.base import BackendDetails, CounterStatus

__all__ = ["RUSAGE_COUNTERS", "RusageBackend"]

RUSAGE_COUNTERS: tuple[str, ...] = (
    "rusage.user_s",
    "rusage.system_s",
    "rusage.max_rss_bytes",
    "rusage.minor_faults",
    "rusage.major_faults",
    "rusage.voluntary_switches",
    "rusage.involuntary_switches",
)

# ru_maxrss is KiB on Linux and the BSDs, bytes on macOS.
_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024


class RusageBackend:
    """Process-wide resource usage over the region.

    Every counter is the difference between the values at ``stop()`` and ``start()``, except
    ``rusage.max_rss_bytes``: the kernel keeps only the process's lifetime peak, so it is that
    peak at the end of the region (a region shows up in it only when it sets a new peak).
    """

    name = "rusage"
    counters: tuple[str, ...] = RUSAGE_COUNTERS

    def __init__(self) -> None:
        self._resource: ModuleType | None = None
        self._start: Any = None
        self._details = BackendDetails()

    def probe(self) -> Mapping[str, CounterStatus]:
        try:
            import resource
        except ImportError:  # Windows
            self._details = BackendDetails(notes=("rusage: no getrusage on this platform",))
            return dict.fromkeys(RUSAGE_COUNTERS, "unsupported")
        try:
            resource.getrusage(resource.RUSAGE_SELF)
        except (OSError, ValueError) as exc:
            self._details = BackendDetails(notes=(f"rusage: getrusage failed: {exc}",))
            return dict.fromkeys(RUSAGE_COUNTERS, "invalid")
        self._resource = resource
        return dict.fromkeys(RUSAGE_COUNTERS, "ok")

    def start(self) -> None:
        if self._resource is None:
            self.probe()
        if self._resource is None:
            raise RuntimeError("getrusage is not available")
        self._start = self._resource.getrusage(self._resource.RUSAGE_SELF)

    def stop(self) -> Mapping[str, float]:
        start, self._start = self._start, None
        if start is None or self._resource is None:
            raise RuntimeError("RusageBackend.stop() without start()")
        end = self._resource.getrusage(self._resource.RUSAGE_SELF)
        return {
            "rusage.user_s": end.ru_utime - start.ru_utime,
            "rusage.system_s": end.ru_stime - start.ru_stime,
            "rusage.max_rss_bytes": float(end.ru_maxrss * _MAXRSS_UNIT),
            "rusage.minor_faults": float(end.ru_minflt - start.ru_minflt),
            "rusage.major_faults": float(end.ru_majflt - start.ru_majflt),
            "rusage.voluntary_switches": float(end.ru_nvcsw - start.ru_nvcsw),
            "rusage.involuntary_switches": float(end.ru_nivcsw - start.ru_nivcsw),
        }

    def details(self) -> BackendDetails:
        return self._details

    def close(self) -> None:
        self._start = None
