"""What machine this is: CPU model and features, CPU count, memory, caches, BLAS.

Read once from ``/proc`` and ``/sys`` (Linux) with portable fallbacks; the one place these are
parsed. Used for the calibration cache key, the run's machine identity and the revision tags.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import platform

import numpy as np

__all__ = [
    "available_cpus",
    "blas_description",
    "blas_threads_env",
    "cpu_model",
    "cpuinfo",
    "last_level_caches",
    "machine_fingerprint",
    "memory_bytes",
    "read_text",
]

_MIB = 2**20


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def cpuinfo() -> dict[str, str]:
    """Fields of the first processor block of /proc/cpuinfo (empty off Linux)."""
    text = read_text("/proc/cpuinfo") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def memory_bytes() -> int | None:
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


def last_level_caches() -> tuple[int | None, int | None]:
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
            level_text = read_text(f"{path}/level")
            kind = (read_text(f"{path}/type") or "").strip()
            size = _size_bytes(read_text(f"{path}/size") or "")
            shared = (read_text(f"{path}/shared_cpu_list") or cpu).strip()
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
    info = cpuinfo()
    parts = [platform.machine() or "unknown-arch", cpu_model()]
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
    memory = memory_bytes()
    if memory:
        parts.append(f"{round(memory / 2**30)} GiB")
    llc, _ = last_level_caches()
    if llc:
        parts.append(f"LLC {llc // _MIB} MiB")
    quota = (read_text("/sys/fs/cgroup/cpu.max") or "").strip()
    if quota and not quota.startswith("max"):
        parts.append(f"cpu.max {quota}")
    return " | ".join(parts)


def blas_description() -> str:
    try:
        # numpy >= 1.26 returns the build configuration; silence any printing of older ones.
        with contextlib.redirect_stdout(io.StringIO()):
            config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    except Exception:
        return "BLAS unknown"


def blas_threads_env() -> str:
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    return ",".join(f"{n}={os.environ[n]}" for n in names if n in os.environ)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` knows."""
    info = cpuinfo()
    return (
        info.get("model name")
        or info.get("Hardware")
        or info.get("uarch")
        or info.get("cpu")
        or platform.processor()
        or platform.machine()
        or "unknown CPU"
    )
