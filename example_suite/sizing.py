"""Working-set sizes relative to this machine's last-level cache, and the level they live in.

STREAM's rule: to measure main memory, each array must be well past the caches (the host
calibration sizes its DRAM arrays the same way, and on a host whose reported cache is far
bigger than what a process keeps, finds by a sweep where main memory starts); a kernel whose
working set fits in the last-level cache is measured against the cache's roof instead
(``memory_level="llc"``), or it reads "above the DRAM roof".
"""

from __future__ import annotations

from pytest_roofline.hardware.machine import last_level_caches
from pytest_roofline.hardware.target import HardwareTarget

__all__ = ["DRAM_MIN_BYTES", "llc_bytes", "llc_total_bytes", "main_memory_bytes", "memory_level"]

#: Arrays meant for main memory are never smaller than this, whatever the caches say.
DRAM_MIN_BYTES = 64 * 2**20
_FALLBACK_LLC = 32 * 2**20


def llc_bytes() -> int:
    """One last-level cache (bytes): what a single-threaded kernel's working set can stay in."""
    return last_level_caches()[0] or _FALLBACK_LLC


def llc_total_bytes() -> int:
    """All last-level caches together (bytes): what a working set must exceed to reach DRAM."""
    return last_level_caches()[1] or llc_bytes()


def memory_level(working_set_bytes: float) -> str:
    """``"llc"`` for a working set within half of one LLC, else ``"dram"``."""
    return "llc" if working_set_bytes <= llc_bytes() / 2 else "dram"


def main_memory_bytes(hardware: HardwareTarget, llc_multiple: float) -> int:
    """Bytes per array for a kernel meant for main memory: the size the host calibration
    measured its DRAM roof on (past the caches by its sweep), else ``llc_multiple`` times
    every LLC together (a preset or configured target); at least ``DRAM_MIN_BYTES``."""
    dram = hardware.provenance.get("bytes.dram")
    measured = dram.array_bytes if dram is not None else None
    per_array = measured or llc_multiple * llc_total_bytes()
    return int(max(per_array, DRAM_MIN_BYTES))
