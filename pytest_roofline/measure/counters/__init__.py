"""Counter backends: wall time, ``getrusage``, Linux ``perf_event_open`` and NVIDIA NVML.

Probe once per session, then wrap each test's whole sampling loop (never a single sample)::

    session = CounterSession(default_backends())
    session.probe()                      # counter name -> ok / unsupported / denied / invalid
    with session.measure() as region:
        run_sampling_loop()
    reading = region.reading             # CounterReading: status, values, completeness, cpu_share
    session.close()

Counter names, units and statuses are listed in ``docs/counters.md``.
"""

from __future__ import annotations

from pytest_roofline.measure.counters.base import (
    COUNTER_STATUSES,
    TASK_CLOCK,
    WALL_S,
    BackendDetails,
    CounterBackend,
    CounterReading,
    CounterSession,
    CounterStatus,
    DeclaresCounters,
    RegionHandle,
    ReportsDetails,
)
from pytest_roofline.measure.counters.nvml import (
    NVML_COUNTERS,
    NvmlBackend,
    decode_throttle_reasons,
    gpu_present,
)
from pytest_roofline.measure.counters.perf_event import (
    PERF_COUNTERS,
    PerfEventBackend,
    classify_errno,
    parse_event_spec,
)
from pytest_roofline.measure.counters.rusage import RUSAGE_COUNTERS, RusageBackend

__all__ = [
    "COUNTER_STATUSES",
    "NVML_COUNTERS",
    "PERF_COUNTERS",
    "RUSAGE_COUNTERS",
    "TASK_CLOCK",
    "WALL_S",
    "BackendDetails",
    "CounterBackend",
    "CounterReading",
    "CounterSession",
    "CounterStatus",
    "DeclaresCounters",
    "NvmlBackend",
    "PerfEventBackend",
    "RegionHandle",
    "ReportsDetails",
    "RusageBackend",
    "classify_errno",
    "decode_throttle_reasons",
    "default_backends",
    "gpu_present",
    "parse_event_spec",
]


def default_backends(
    *, gpu: bool | None = None, perf_fp_event: str | None = None
) -> list[CounterBackend]:
    """The standard backends, ordered for :class:`CounterSession`.

    ``gpu``: ``None`` adds NVML when ``pynvml`` imports and reports a GPU (so a CPU-only machine
    does not count seven missing GPU counters against completeness); ``True`` always adds it
    (its counters then say why they are missing); ``False`` never. ``perf_fp_event``: the
    CPU's FLOP event for ``perf.fp_ops`` (see :class:`PerfEventBackend`).

    Order: NVML first and perf last, because the session starts backends in order and stops
    them in reverse: the slow NVML queries then stay outside the per-thread perf window.
    """
    backends: list[CounterBackend] = []
    if gpu or (gpu is None and gpu_present()):
        backends.append(NvmlBackend())
    backends.append(RusageBackend())
    backends.append(PerfEventBackend(fp_event=perf_fp_event))
    return backends
