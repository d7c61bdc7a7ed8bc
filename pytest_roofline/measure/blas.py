"""BLAS thread pools: detect oversubscription, and limit the threads for a session.

Why: a multi-threaded BLAS call waits for all its threads. When another process holds one of
the CPUs, a thread is descheduled and the call waits for it: on a 2-vCPU VM an unchanged 128²
fp64 GEMM with two OpenBLAS threads went from 67 µs to 16-24 ms a call with a neighbour busy on
the other core (``docs/noise.md`` section 4), and an unchanged test was rolled back for it.
The pools are found with ``threadpoolctl`` (the library scikit-learn and numpy's own docs use for
this); ``--roofline-blas-threads=N`` applies ``threadpool_limits`` for the session and is
recorded as the revision tag :data:`BLAS_THREADS_TAG` (a baseline measured with other threads is
another layer). Never imports pytest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pytest_roofline.errors import ConfigError

__all__ = [
    "BLAS_THREADS_OPTION",
    "BLAS_THREADS_TAG",
    "MIN_OTHER_LOAD",
    "AppliedBlasThreads",
    "BlasPool",
    "apply_blas_threads",
    "blas_oversubscription",
    "blas_pools",
    "blas_threads",
    "check_blas_oversubscription",
    "usable_cpus",
]

BLAS_THREADS_OPTION = "--roofline-blas-threads"
BLAS_THREADS_TAG = "blas_threads"
"""Revision-tag key under which the applied limit is recorded (value: the thread count)."""

#: Other processes' load (1-minute load average less this process's own runnable thread) from
#: which a BLAS pool that needs every usable CPU counts as oversubscribed. Below half a CPU the
#: load average is mostly the sampling noise of short-lived processes.
MIN_OTHER_LOAD = 0.5

# threadpoolctl's internal_api names, as users know the libraries.
_DISPLAY = {
    "openblas": "OpenBLAS",
    "mkl": "MKL",
    "blis": "BLIS",
    "flexiblas": "FlexiBLAS",
    "accelerate": "Accelerate",
}


@dataclass(frozen=True, slots=True)
class BlasPool:
    """One BLAS library loaded in this process and its thread pool.

    :ivar library: threadpoolctl's ``internal_api`` (``openblas``, ``mkl``, ``blis``...).
    :ivar threads: threads the library will use for one call.
    :ivar version: library version, when known.
    :ivar path: the shared library's file.
    :ivar threading_layer: ``pthreads``, ``openmp``, ``tbb``..., when known.
    """

    library: str
    threads: int
    version: str | None
    path: str
    threading_layer: str | None = None

    @property
    def name(self) -> str:
        return _DISPLAY.get(self.library, self.library)

    def to_dict(self) -> dict[str, object]:
        return {
            "library": self.library,
            "threads": self.threads,
            "version": self.version,
            "path": self.path,
            "threading_layer": self.threading_layer,
        }


def _threadpool_info() -> list[dict[str, Any]]:
    try:
        import threadpoolctl
    except ImportError:
        return []
    info: list[dict[str, Any]] = threadpoolctl.threadpool_info()
    return info


def blas_pools(info: Sequence[Mapping[str, Any]] | None = None) -> tuple[BlasPool, ...]:
    """The BLAS pools loaded in this process (OpenMP pools and the like are left out).

    :param info: ``threadpoolctl.threadpool_info()`` output (read now when ``None``; empty
        without threadpoolctl or before any BLAS library is loaded: import numpy first).
    """
    rows = _threadpool_info() if info is None else info
    pools = []
    for row in rows:
        if row.get("user_api") != "blas":
            continue
        threads = row.get("num_threads")
        if not isinstance(threads, int) or isinstance(threads, bool):
            continue
        version = row.get("version")
        layer = row.get("threading_layer")
        pools.append(
            BlasPool(
                library=str(row.get("internal_api", "unknown")),
                threads=threads,
                version=None if version is None else str(version),
                path=str(row.get("filepath", "")),
                threading_layer=None if layer is None else str(layer),
            )
        )
    return tuple(pools)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; ``os.cpu_count`` where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def blas_oversubscription(
    pools: Sequence[BlasPool],
    *,
    usable_cpus: int,
    load_1m: float | None,
    own_load: float = 1.0,
) -> str | None:
    """Say why the BLAS pools are oversubscribed here, or return ``None``.

    A pool of more than one thread is oversubscribed when it has more threads than usable CPUs,
    or when its threads plus other processes' load exceed the usable CPUs and that load is at
    least :data:`MIN_OTHER_LOAD`: then a BLAS call's threads cannot all run at once and each
    call waits for the slowest.

    :param pools: from :func:`blas_pools`.
    :param usable_cpus: CPUs this process may use (:func:`usable_cpus`).
    :param load_1m: the 1-minute load average, or ``None`` when unknown (then only the
        threads-against-CPUs test applies).
    :param own_load: this process's share of that load (its main thread, busy: 1.0).
    """
    if usable_cpus < 1:
        raise ValueError(f"usable_cpus must be >= 1, got {usable_cpus!r}")
    others = None if load_1m is None else max(0.0, load_1m - own_load)
    problems = []
    for pool in pools:
        if pool.threads <= 1:
            continue
        cpus = f"{usable_cpus} usable CPU" + ("s" if usable_cpus != 1 else "")
        where = f"{pool.name} uses {pool.threads} threads on {cpus}"
        if pool.threads > usable_cpus:
            problems.append(f"{where} (more threads than CPUs)")
        elif (
            others is not None and others >= MIN_OTHER_LOAD and pool.threads + others > usable_cpus
        ):
            problems.append(f"{where} with load {others:.1f} from other processes")
    if not problems:
        return None
    return (
        "; ".join(problems)
        + ": a multi-threaded BLAS call waits for its slowest thread, so when another process "
        "holds a CPU one call can take 100x longer (an unchanged 2-thread 128² GEMM went from "
        f"67 µs to 16-24 ms on a shared 2-vCPU VM). Use {BLAS_THREADS_OPTION}=1 (recorded as a "
        "revision tag) for timings that hold up on a shared machine"
    )


def check_blas_oversubscription(
    *,
    info: Sequence[Mapping[str, Any]] | None = None,
    cpus: int | None = None,
    load_average: Callable[[], float | None] | None = None,
) -> str | None:
    """:func:`blas_oversubscription` for this process now (each input injectable)."""

    def real_load() -> float | None:
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):
            return None

    return blas_oversubscription(
        blas_pools(info),
        usable_cpus=cpus if cpus is not None else usable_cpus(),
        load_1m=(load_average or real_load)(),
    )


@dataclass(frozen=True, slots=True)
class AppliedBlasThreads:
    """A BLAS thread limit in force; :meth:`restore` undoes it.

    :ivar threads: the limit asked for.
    :ivar before: the pools before the limit.
    :ivar after: the pools with the limit in force (empty when no BLAS library was loaded, in
        which case nothing was limited: load numpy before applying).
    """

    threads: int
    before: tuple[BlasPool, ...]
    after: tuple[BlasPool, ...]
    _restore: Callable[[], object]

    @property
    def tag(self) -> tuple[str, str]:
        """The revision tag to record: ``("blas_threads", "<n>")``."""
        return BLAS_THREADS_TAG, str(self.threads)

    def restore(self) -> None:
        """Put the pools back to their thread counts before the limit."""
        self._restore()


def apply_blas_threads(threads: int) -> AppliedBlasThreads:
    """Limit every loaded BLAS pool to ``threads`` until :meth:`AppliedBlasThreads.restore`.

    Applies in this process only: each measuring process (xdist worker, paired-mode worker)
    applies it itself. Libraries loaded after the call are not limited.

    :raises ConfigError: for a count below 1, or when threadpoolctl is not installed.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"{BLAS_THREADS_OPTION}: expected a whole number >= 1, got {threads!r}")
    try:
        import threadpoolctl
    except ImportError as exc:
        raise ConfigError(
            f"{BLAS_THREADS_OPTION} needs the threadpoolctl package: pip install threadpoolctl"
        ) from exc
    before = blas_pools()
    limiter = threadpoolctl.threadpool_limits(limits=threads, user_api="blas")
    return AppliedBlasThreads(
        threads=threads,
        before=before,
        after=blas_pools(),
        _restore=limiter.restore_original_limits,
    )


@contextmanager
def blas_threads(threads: int) -> Iterator[AppliedBlasThreads]:
    """``with blas_threads(1): ...``: :func:`apply_blas_threads` for the block."""
    applied = apply_blas_threads(threads)
    try:
        yield applied
    finally:
        applied.restore()
