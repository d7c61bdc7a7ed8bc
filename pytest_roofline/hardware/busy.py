"""Whether the host is too busy to measure on: this process's CPU share and the load average."""

from __future__ import annotations

import os

from pytest_roofline.hardware.machine import available_cpus

__all__ = ["BUSY_CPU_SHARE", "BUSY_OTHER_LOAD_PER_CPU", "host_busy", "load_average"]

#: The host counts as busy when this process got less than this share of the CPU time its
#: BLAS threads could use during the GEMMs (others, or the hypervisor, took the rest). Measured
#: here: 0.94-1.0 on an idle host, 0.5-0.75 with one CPU-bound process beside it on 2 CPUs.
BUSY_CPU_SHARE = 0.85

#: ... or when the 1-minute load average, less this process's own runnable thread, exceeds
#: this many runnable tasks per CPU (one hog on a 2-CPU machine is 0.5 per CPU).
BUSY_OTHER_LOAD_PER_CPU = 0.25


def load_average() -> tuple[float, float, float] | None:
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
        cpus = cpu_count or available_cpus()
        others = load_average[0] - 1.0
        if others > BUSY_OTHER_LOAD_PER_CPU * cpus:
            reasons.append(
                f"1-minute load average {load_average[0]:.2f} on {cpus} CPU(s) "
                "(other work is running)"
            )
    return "; ".join(reasons) or None
