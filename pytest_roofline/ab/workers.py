"""Paired mode on persistent workers: two pytest sessions, alternating short windows per test.

Measured on this project's shared machine (``docs/noise.md`` section 4): the noise that
separates two pytest runs is mostly time-varying host disturbance, which fine-grained
alternation cancels. So one persistent pytest worker per revision collects once, and this
controller hands the two workers alternating windows of a test, in ABBA order (window pair
``p`` is baseline-then-candidate for even ``p`` and candidate-then-baseline for odd ``p``),
until the caller's stopping rule says the test is decided or ``max_pairs`` is reached; with
several tests (:meth:`PairedWorkers.measure_tests`), each round gives every undecided test of
a module one window pair, so each test's pairs spread over its module's whole time.

The workers are driven through execnet, as pytest-xdist drives its own: a ``popen`` gateway
per side with that side's interpreter, and :mod:`pytest_roofline.plugin.ab_worker`'s source executed
in it (:func:`execnet.Gateway.remote_exec`). The worker runs pytest with the plugin's own
measurement path (the ``roofline`` fixture under a per-window budget).

No pytest import here and no statistics: the caller decides when a test is done
(``should_continue``) and what the windows mean (:mod:`pytest_roofline.stats.paired`).

Typical use::

    with PairedWorkers(baseline_spec, candidate_spec, WindowSettings()) as workers:
        run = workers.run(should_continue=rule)
    for nodeid, test in run.tests.items():
        test.base_windows, test.cand_windows  # one sample array per window and side

Why one long module: the controller side of the paired workers' execnet protocol (start,
collect, windows, stop, and error messages naming side and test); the worker side is
plugin/ab_worker.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

import numpy as np

from pytest_roofline.ab.pairs import pair_severity, paired_windows, pairs_to_drop
from pytest_roofline.errors import RooflineError
from pytest_roofline.measure.canary import PairedWindow, WindowJudgement

__all__ = [
    "FIRST_WARMUP_S",
    "LAYOUT_SHIFT_BYTES",
    "SIDES",
    "CollectInfo",
    "PairedWorkers",
    "PairedWorkersRun",
    "ShouldContinue",
    "SideSpec",
    "SoloWorker",
    "TestWindows",
    "Window",
    "WindowSettings",
    "WorkerError",
    "balanced_order",
    "fixture_groups",
    "pair_cpu",
    "pair_order",
    "pair_orders",
    "round_order",
    "run_paired_workers",
    "usable_cpus",
]

Side = Literal["baseline", "candidate"]
SIDES: tuple[Side, Side] = ("baseline", "candidate")
WORKER_MODULE = "pytest_roofline.plugin.ab_worker"
PROTOCOL_VERSION = 4  # ab_worker.PROTOCOL_VERSION; the worker runs this package's source
_TAIL_CHARS = 3000
# Up to 4 MiB (1024 pages) of heap before each window. Measured on the 2-vCPU VM
# (benchmarks/layout_shift.py): two fresh workers alternating np.add windows over 200 000
# float64 arrays allocated per window differed by a log ratio of sd 0.097 over 16 runs without
# a shift (5 beyond x0.92-x1.08), 0.024 (none) with up to 4 MiB, and 0.032 (1 of 25) with up to
# 1 MiB (docs/paired.md, "Where a window's memory lands").
LAYOUT_SHIFT_BYTES = 4 << 20
# A test's first window on a worker warms up for at least 10 ms (rather than the plugin's
# default roofline_warmup of 50 ms) and then on while the calls keep getting faster. Its six
# first windows (three worker pairs, two sides) cost about 4 s of a 31-second A/A run of the
# validation fixture, the 50 ms warm-ups about 3 s of it; measured, the change saved 2.6 s
# (docs/paired.md, "A shorter first warm-up").
FIRST_WARMUP_S = 0.01

ShouldContinue = Callable[
    [str, Sequence[np.ndarray], Sequence[np.ndarray], Sequence[int], int], bool
]
"""``should_continue(nodeid, base_windows, cand_windows, worker_pairs, dropped)``: whether test
``nodeid`` needs more window pairs; consulted from ``min_pairs`` on, every ``look_every`` pairs,
never past ``max_pairs``. The arrays are each window's per-call samples (seconds), in window
order, of the pairs kept (with ``drop_disturbed``, pairs whose window was disturbed on either
side are left out while at least ``min_pairs`` remain: :mod:`pytest_roofline.ab.pairs`);
``worker_pairs`` says which pair of worker processes measured each kept pair (0-based,
``pair % worker_pairs``); ``dropped`` counts the pairs run so far and left out, so the pairs run
are the kept ones plus ``dropped`` (a busy host holds a regression to the process floor:
:func:`pytest_roofline.gate.confirm.held_to_process_floor`)."""

StopWhy = Literal["decided", "max_pairs", "error"]


class WorkerError(RooflineError):
    """A worker could not start, collect or run: the message names the side (and the test).

    :ivar side: ``"baseline"`` or ``"candidate"``.
    :ivar nodeid: the test in progress, or ``None`` (start-up, collection, shutdown).
    """

    def __init__(self, message: str, *, side: Side, nodeid: str | None = None) -> None:
        super().__init__(message)
        self.side = side
        self.nodeid = nodeid


@dataclass(frozen=True, slots=True)
class SideSpec:
    """How to start one side's worker.

    :param python: the side's interpreter (it needs pytest and pytest-roofline; execnet is
        only needed here, on the controller).
    :param workdir: where pytest runs (the side's tree, or the same relative directory of it).
    :param sys_path: the side's import roots, put after the working directory and ahead of
        the user's ``PYTHONPATH`` and site-packages (what ``ab._side_env`` puts on
        ``PYTHONPATH`` for a subprocess).
    :param env: environment variables set in the worker (e.g. that ``PYTHONPATH``, for the
        test's own subprocesses).
    :param pytest_args: the user's pytest arguments (test paths relative to ``workdir``).
    :param store_path: the worker's scratch store (its host calibration cache); one per side.
    """

    side: Side
    python: str
    workdir: Path
    sys_path: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    pytest_args: tuple[str, ...] = ()
    store_path: Path | None = None


@dataclass(frozen=True, slots=True)
class WindowSettings:
    """How the controller alternates windows.

    :param window_s: sampling budget of one window, seconds (the plugin's budget per run).
    :param min_pairs: window pairs every test gets before ``should_continue`` is asked.
    :param max_pairs: window pairs at most per test.
    :param look_every: pairs between two calls of ``should_continue`` (2: after whole ABBA
        blocks, so that a linear drift of machine speed cancels at every look).
    :param first_warmup_s: minimum warm-up of a test's first window on each worker while the
        plugin's ``roofline_warmup`` is at its default; the settling warm-up then goes on while
        the calls keep getting faster (at most 0.5 s), in steps of half this minimum. A
        ``roofline_warmup`` set to another value is used as given; ``None``: always the
        plugin's (0.05 s by default).
    :param rewarm_s: warm-up of every later window (caches after the other side's window).
    :param rewarm_settles: a later window's warm-up goes on past ``rewarm_s`` until the calls
        stop getting faster (the plugin's settling warm-up); ``False``: exactly ``rewarm_s`` (at
        least one call). Measured on A/A pairs of the validation fixture
        (``benchmarks/paired_rewarm.py``, docs/paired.md "Shorter re-warm-ups"): a fixed 2 ms
        left the per-pair spread of p50, p95 and p99 no wider than the settling 10 ms (which
        took 14.6 ms a window on average), and a later window took 77.8 ms against 88.2 ms.
    :param window_timeout_s: a window that has not answered by then (a hung test) kills the
        worker and fails the run, naming the side and test.
    :param start_timeout_s: time for a worker to start and collect.
    :param drop_disturbed: leave pairs with a host-disturbed window (either side's canary) out
        of what ``should_continue`` sees and of :attr:`TestWindows.kept`, keeping at least
        ``min_pairs`` (:func:`pytest_roofline.ab.pairs.pairs_to_drop`).
    :param max_replacements: pairs run beyond ``max_pairs`` to replace dropped ones (``None``:
        half of ``max_pairs``), so a disturbed host costs time before it costs the decision.
    :param layout_shift_bytes: the largest heap block a worker holds through a window, drawn
        uniformly per window (0: none), so that where a test's memory lands is drawn again in
        every window rather than once per process (``plugin.ab_worker``; docs/paired.md, "Where
        a window's memory lands").
    :param worker_pairs: pairs of worker processes (one per side each) that take the window
        pairs in turn (pair ``p`` on worker pair ``p % worker_pairs``), so that one test's
        comparison spans several processes per side and what one process does to a test for
        its whole life shows as one worker pair disagreeing (``gate.worker_agreement``).
    :param pin_cpus: hold both windows of a pair on one CPU, each worker pair's own pairs
        taking the CPUs this process may use in turn, two per CPU (:func:`pair_cpu`); a test's
        first window on each worker is not held (``plugin.ab_worker.on_cpu``), nor are a
        test's later pairs once either side's windows all used several CPUs
        (``PARALLEL_CPU_SHARE``).
    """

    window_s: float = 0.2
    min_pairs: int = 4
    max_pairs: int = 20
    look_every: int = 2
    first_warmup_s: float | None = FIRST_WARMUP_S
    rewarm_s: float = 0.002
    rewarm_settles: bool = False
    window_timeout_s: float = 300.0
    start_timeout_s: float = 300.0
    drop_disturbed: bool = True
    max_replacements: int | None = None
    layout_shift_bytes: int = LAYOUT_SHIFT_BYTES
    worker_pairs: int = 1
    pin_cpus: bool = True

    @property
    def replacement_limit(self) -> int:
        """Pairs that may replace dropped ones (none without ``drop_disturbed``)."""
        if not self.drop_disturbed:
            return 0
        return self.max_pairs // 2 if self.max_replacements is None else self.max_replacements

    def __post_init__(self) -> None:
        if not (self.window_s > 0 and np.isfinite(self.window_s)):
            raise ValueError(f"window_s must be a positive duration, got {self.window_s!r}")
        if not 1 <= self.min_pairs <= self.max_pairs:
            raise ValueError(
                f"need 1 <= min_pairs <= max_pairs, got {self.min_pairs} and {self.max_pairs}"
            )
        if self.look_every < 1:
            raise ValueError(f"look_every must be at least 1, got {self.look_every}")
        if self.layout_shift_bytes < 0:
            raise ValueError(f"layout_shift_bytes must be >= 0, got {self.layout_shift_bytes}")
        if self.worker_pairs < 1:
            raise ValueError(f"worker_pairs must be at least 1, got {self.worker_pairs}")
        if self.max_replacements is not None and self.max_replacements < 0:
            raise ValueError(f"max_replacements must be >= 0, got {self.max_replacements}")
        if self.rewarm_s < 0 or (self.first_warmup_s is not None and self.first_warmup_s < 0):
            raise ValueError("warm-up times must be >= 0")


@dataclass(frozen=True, slots=True)
class CollectInfo:
    """What one worker collected (sent once, after collection)."""

    side: Side
    pid: int
    python: str
    rootdir: str
    ids: tuple[str, ...]
    measured: tuple[str, ...]
    budgets_s: Mapping[str, float]
    probe: Mapping[str, Any]
    startup_s: float
    tags: Mapping[str, str] = field(default_factory=dict)
    target: Mapping[str, Any] = field(default_factory=dict)
    machine: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Window:
    """One window of one test on one side.

    ``started_ns``/``finished_ns`` are the worker's ``time.monotonic_ns()`` around the test's
    protocol run (set-up, sampling, teardown): one clock for both workers on Linux and macOS.
    ``canary`` is the worker's host canary judgement of the window (``None``: canary off) and
    ``canary_s`` the time its readings took, outside the window; ``layout_shift_bytes`` the
    heap block the worker held through it (where the test's memory landed this time);
    ``worker_pair`` which pair of worker processes ran it (:attr:`WindowSettings.worker_pairs`);
    ``cpu`` the CPU its main thread was held on (``None``: not held; :attr:`WindowSettings.pin_cpus`).
    """

    side: Side
    nodeid: str
    pair: int
    index: int
    samples_s: np.ndarray
    batch_size: int
    stop_reason: str
    sampling_s: float
    warmup_s: float
    wall_s: float
    started_ns: int
    finished_ns: int
    cpu_share: float | None
    result: Mapping[str, Any]
    canary: WindowJudgement | None = None
    canary_s: float = 0.0
    layout_shift_bytes: int = 0
    worker_pair: int = 0
    cpu: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class TestWindows:
    """Every window of one test, and why its alternation stopped.

    :ivar base_windows: the baseline's per-call samples, one array per window.
    :ivar cand_windows: the candidate's, same count when the test completed.
    :ivar windows: both sides' windows in the order they ran.
    :ivar stop: ``decided`` (``should_continue`` said no), ``max_pairs`` or ``error``.
    :ivar error: for ``error``, which side failed how (the test's own message).
    :ivar dropped: indices of the pairs left out for a host-disturbed window (ascending).
    :ivar error_outcome: for ``error``, the failing window's outcome (``failed``, ``skipped``,
        ``unmeasured``, ``error``, ``missing``).
    """

    __test__ = False  # not a pytest test class

    nodeid: str
    windows: tuple[Window, ...]
    pairs: int
    stop: StopWhy
    wall_s: float
    error: str | None = None
    dropped: tuple[int, ...] = ()
    error_outcome: str | None = None

    @property
    def complete_pairs(self) -> int:
        """Pairs with a window on both sides (the last pair of an ``error`` may be half)."""
        return min(len(self.base_windows), len(self.cand_windows))

    @property
    def kept(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The baseline's and the candidate's windows of the complete pairs not dropped."""
        gone = set(self.dropped)
        n = self.complete_pairs
        base = [a for i, a in enumerate(self.base_windows[:n]) if i not in gone]
        cand = [a for i, a in enumerate(self.cand_windows[:n]) if i not in gone]
        return base, cand

    @property
    def kept_worker_pairs(self) -> tuple[int, ...]:
        """Which pair of worker processes measured each kept pair (as :attr:`kept` orders them)."""
        gone = set(self.dropped)
        n = self.complete_pairs
        base = [w.worker_pair for w in self.windows if w.side == "baseline"]
        return tuple(k for i, k in enumerate(base[:n]) if i not in gone)

    @property
    def kept_order(self) -> tuple[str, ...]:
        """Each kept pair's order, ``AB`` (baseline first: :func:`balanced_order`) or ``BA``."""
        gone = set(self.dropped)
        orders = pair_orders(self.windows)[: self.complete_pairs]
        return tuple(order for i, order in enumerate(orders) if i not in gone)

    @property
    def paired_canary(self) -> tuple[PairedWindow, ...]:
        """Each complete pair's canary judgements (A: baseline, B: candidate)."""
        base = [w.canary for w in self.windows if w.side == "baseline"]
        cand = [w.canary for w in self.windows if w.side == "candidate"]
        return paired_windows(base, cand)

    @property
    def canary_s(self) -> float:
        """Time both workers' canary readings took around this test's windows."""
        return sum(w.canary_s for w in self.windows)

    @property
    def base_windows(self) -> list[np.ndarray]:
        return [w.samples_s for w in self.windows if w.side == "baseline"]

    @property
    def cand_windows(self) -> list[np.ndarray]:
        return [w.samples_s for w in self.windows if w.side == "candidate"]

    @property
    def last_result(self) -> dict[Side, Mapping[str, Any]]:
        """Each side's last window payload (declared work, quality, counters; no samples)."""
        out: dict[Side, Mapping[str, Any]] = {}
        for w in self.windows:
            out[w.side] = w.result
        return out


@dataclass(frozen=True, slots=True, eq=False)
class PairedWorkersRun:
    """The outcome of :meth:`PairedWorkers.run`."""

    tests: Mapping[str, TestWindows]
    collected: Mapping[Side, CollectInfo]
    only_baseline: tuple[str, ...]
    only_candidate: tuple[str, ...]
    unmeasured: tuple[str, ...]
    startup_s: float
    wall_s: float


def pair_cpu(pair: int, cpus: Sequence[int], worker_pairs: int = 1) -> int | None:
    """The CPU both windows of window pair ``pair`` are held on: each worker pair's own pairs
    (pair ``p`` runs on worker pair ``p % worker_pairs``) take the CPUs in turn, two pairs
    each, so every worker pair runs on every CPU; ``None`` for fewer than two CPUs.

    >>> [pair_cpu(p, (0, 1)) for p in range(6)]
    [0, 0, 1, 1, 0, 0]
    >>> [pair_cpu(p, (0, 1), worker_pairs=3) for p in range(12)]
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    >>> pair_cpu(3, (5,)) is None
    True
    """
    if len(cpus) < 2:
        return None
    return cpus[(pair // worker_pairs // 2) % len(cpus)]


PARALLEL_CPU_SHARE = 1.2
"""A side all of whose windows so far had a CPU share (process CPU time over the window's wall
time) above this runs the test's work on several CPUs (threads or a BLAS pool), and the test's
later pairs are not held on one CPU: threads a test starts in a held window share its one CPU,
so a candidate that lost its parallelism would read the same as its baseline. Every window
must show it, since single 20 ms windows of a serial test read 2.0 here."""


def usable_cpus() -> tuple[int, ...]:
    """The CPUs this process may run on, in order (empty where the platform cannot say)."""
    getter = getattr(os, "sched_getaffinity", None)
    return tuple(sorted(getter(0))) if getter is not None else ()


def pair_order(pair: int) -> tuple[Side, Side]:
    """ABBA: baseline first in even pairs, candidate first in odd ones (the order of a run in
    which no pair is dropped: :func:`balanced_order`)."""
    return ("baseline", "candidate") if pair % 2 == 0 else ("candidate", "baseline")


def balanced_order(kept: Sequence[str], previous: str | None) -> tuple[Side, Side]:
    """The next window pair's order: the one fewer of the ``kept`` pairs have (``"AB"``:
    baseline first), else the other of the ``previous`` pair run's (ABBA).

    The first window of a pair reads slower for some kernels (``np.add`` p95 3.8%, 6.6% under
    the bursty neighbour: docs/paired.md, "The first window of a pair"), which the per-pair
    ratios cancel only while the kept pairs hold both orders alike. Alternating by pair number
    let the canary's drops unbalance them (a median 10.6% of the kept pairs off, at most 60%,
    under the neighbour at stop 40). Which pairs are dropped depends on the canary only, so
    choosing the order from the kept ones does not tie it to the ratios. With no pair dropped
    this is :func:`pair_order`.

    >>> [balanced_order(k, p) for k, p in [([], None), (["AB"], "AB"), (["AB", "BA"], "BA")]]
    [('baseline', 'candidate'), ('candidate', 'baseline'), ('baseline', 'candidate')]
    >>> balanced_order(["AB", "BA", "BA"], "BA")  # an AB pair was dropped: AB again
    ('baseline', 'candidate')
    """
    ab, ba = kept.count("AB"), kept.count("BA")
    first_is_baseline = ab < ba or (ab == ba and previous != "AB")
    return ("baseline", "candidate") if first_is_baseline else ("candidate", "baseline")


def pair_orders(windows: Sequence[Window]) -> list[str]:
    """Each window pair's order in ``windows`` (one test's, in the order they ran): ``"AB"``
    when its baseline window ran first."""
    first: dict[int, Side] = {}
    for w in windows:
        first.setdefault(w.pair, w.side)
    return ["AB" if first[pair] == "baseline" else "BA" for pair in sorted(first)]


def _worker_source() -> str:
    spec = importlib.util.find_spec(WORKER_MODULE)
    if spec is None or spec.origin is None:
        raise RooflineError(f"cannot find {WORKER_MODULE}'s source to start paired workers")
    return Path(spec.origin).read_text(encoding="utf-8")


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    return text[-_TAIL_CHARS:]


class _Worker:
    """One side's gateway, channel and scratch stderr file."""

    def __init__(
        self,
        spec: SideSpec,
        group: Any,
        scratch: Path,
        settings: WindowSettings,
        *,
        number: int = 0,
    ) -> None:
        import execnet

        self.spec = spec
        self.side: Side = spec.side
        self.number = number
        self.stderr_path = scratch / f"worker-{spec.side}-{number}.stderr"
        self._execnet = execnet
        self.info: CollectInfo | None = None
        self.exit_status: int | None = None
        started = time.perf_counter()
        if not spec.workdir.is_dir():
            raise WorkerError(
                f"the {self.side} side's working directory {spec.workdir} does not exist",
                side=self.side,
            )
        # The python= value is split like a shell word list by execnet; chdir, environment and
        # sys.path travel in the first message instead of the spec (any character is safe there).
        xspec = f"execmodel=main_thread_only//popen//python={spec.python}//id={spec.side}-{number}"
        try:
            self.gateway = group.makegateway(xspec)
        except Exception as exc:  # execnet raises plain exceptions for a missing interpreter
            raise WorkerError(
                f"the {self.side} worker could not start {spec.python}: {exc}", side=self.side
            ) from None
        self.channel = self.gateway.remote_exec(_worker_source())
        store = spec.store_path or (scratch / f"store-{spec.side}.sqlite")
        args = [
            "-q", "-p", "no:cacheprovider", "--roofline", f"--roofline-store={store}",
            f"--roofline-budget={settings.window_s * settings.max_pairs!r}", "--roofline-gate=never",
            "--roofline-no-summary", *spec.pytest_args,
        ]  # fmt: skip
        # The host canary stays on (unless the user's arguments turn it off): alternation puts
        # a host shift on both sides, but a burst that hits one window only is seen by the
        # canary readings around that window, and its pair is dropped (ab.pairs).
        self.channel.send(
            {
                "chdir": str(spec.workdir),
                "sys_path": [str(p) for p in spec.sys_path],
                "env": dict(spec.env),
                "args": args,
                "stderr_path": str(self.stderr_path),
                "rewarm_s": settings.rewarm_s,
                "rewarm_settles": settings.rewarm_settles,
                "first_warmup_s": settings.first_warmup_s,
                "layout_shift_bytes": settings.layout_shift_bytes,
            }
        )
        self._started = started

    @property
    def pid(self) -> int | None:
        popen = getattr(getattr(self.gateway, "_io", None), "popen", None)
        return getattr(popen, "pid", None)

    def _failure(self, what: str, nodeid: str | None = None) -> WorkerError:
        tail = _tail(self.stderr_path)
        detail = f"\n--- {self.side} worker stderr (tail) ---\n{tail}" if tail else ""
        return WorkerError(f"{what}{detail}", side=self.side, nodeid=nodeid)

    def receive(
        self, timeout: float, *, doing: str, nodeid: str | None = None, allow_exit: bool = False
    ) -> tuple[Any, ...]:
        """The next message, or a :class:`WorkerError` saying the worker died or hung.

        ``("exited", status)`` is an error unless ``allow_exit``.
        """
        channel = self.channel
        try:
            message = channel.receive(timeout)
        except channel.TimeoutError:
            raise self._failure(
                f"the {self.side} worker did not answer within {timeout:g} s while {doing}",
                nodeid,
            ) from None
        except (EOFError, OSError):
            raise self._failure(
                f"the {self.side} worker died while {doing} (its process ended)", nodeid
            ) from None
        except self._execnet.RemoteError as exc:
            raise self._failure(
                f"the {self.side} worker failed while {doing}:\n{str(exc).strip()[-_TAIL_CHARS:]}",
                nodeid,
            ) from None
        if not isinstance(message, tuple) or not message:
            raise self._failure(f"the {self.side} worker sent {message!r} while {doing}", nodeid)
        if message[0] == "exited":
            self.exit_status = int(message[1])
            if allow_exit:
                return message
            raise self._failure(
                f"the {self.side} worker's pytest ended (exit status {self.exit_status}) while "
                f"{doing}",
                nodeid,
            )
        return message

    def collected(self, timeout: float) -> CollectInfo:
        _, data = self.receive(timeout, doing="starting pytest and collecting")
        if data.get("protocol") != PROTOCOL_VERSION:
            raise self._failure(
                f"the {self.side} worker speaks protocol {data.get('protocol')!r}, not "
                f"{PROTOCOL_VERSION}"
            )
        if data["errors"]:
            shown = "\n".join(data["errors"])[-_TAIL_CHARS:]
            raise self._failure(
                f"the {self.side} side has collection errors in {self.spec.workdir}:\n{shown}"
            )
        self.info = CollectInfo(
            side=self.side,
            pid=int(data["pid"]),
            python=str(data["python"]),
            rootdir=str(data["rootdir"]),
            ids=tuple(data["ids"]),
            measured=tuple(data["measured"]),
            budgets_s=dict(data["budgets"]),
            probe=json.loads(data["probe"]),
            startup_s=time.perf_counter() - self._started,
            tags={str(k): str(v) for k, v in dict(data.get("tags") or {}).items()},
            target=dict(json.loads(data.get("target") or "{}")),
            machine=str(data.get("machine") or ""),
        )
        return self.info

    def window(
        self, nodeid: str, seconds: float, timeout: float, cpu: int | None = None
    ) -> dict[str, Any]:
        try:
            self.channel.send(("window", nodeid, seconds, cpu))
        except (OSError, EOFError, ValueError):
            raise self._failure(
                f"the {self.side} worker is gone (sending a window of {nodeid})", nodeid
            ) from None
        kind, reply = self.receive(timeout, doing=f"running a window of {nodeid}", nodeid=nodeid)
        if kind != "window" or reply.get("nodeid") != nodeid:
            raise self._failure(
                f"the {self.side} worker answered {kind!r} for {reply.get('nodeid')!r} to a "
                f"window of {nodeid}",
                nodeid,
            )
        return dict(reply)

    def ask_stop(self) -> bool:
        """Ask the worker to tear down and end its session (:meth:`stopped` waits for it).

        ``False`` when the worker had already ended.
        """
        if self.exit_status is not None or self.channel.isclosed():
            return False
        try:
            self.channel.send(("stop",))
        except (OSError, EOFError, ValueError):
            return False
        return True

    def stopped(self, timeout: float) -> Mapping[str, Any]:
        """Wait for the worker asked to stop to end its session, ``timeout`` seconds in all;
        its final probe record."""
        until = time.monotonic() + timeout
        kind, data = self.receive(timeout, doing="tearing down")
        if kind != "stopped":
            raise self._failure(f"the {self.side} worker answered {kind!r} to stop")
        left = max(0.1, until - time.monotonic())
        self.receive(left, doing="ending its pytest session", allow_exit=True)
        return dict(json.loads(data["probe"]))


WORKERS_SCRATCH_PREFIX = "roofline-workers-"
KILL_AFTER_S = 10.0
"""How long stopping workers may take before what is left is killed."""


def _execnet() -> Any:
    try:
        import execnet
    except ImportError:
        raise RooflineError(
            "paired mode drives its workers with execnet, which is not installed here: "
            "pip install execnet (it comes with pytest-xdist)"
        ) from None
    return execnet


def _end(group: Any, scratch: tempfile.TemporaryDirectory[str] | None, *, kill: bool) -> None:
    """Exit every gateway of ``group`` (wait a little, then kill what is left); remove ``scratch``."""
    if group is not None:
        group.terminate(timeout=KILL_AFTER_S if not kill else 1.0)
    if scratch is not None:
        scratch.cleanup()


_W = TypeVar("_W", bound="_Workers")


class _Workers(ABC):
    """Started on entering (killed if that fails), stopped on leaving: politely, unless an
    exception (or ``KeyboardInterrupt``) is leaving with it."""

    @abstractmethod
    def start(self) -> None:
        """Start the workers and wait for their collections."""

    @abstractmethod
    def close(self, *, kill: bool = False) -> None:
        """Stop the workers (politely unless ``kill``) and remove their scratch directory."""

    def __enter__(self: _W) -> _W:
        try:
            self.start()
        except BaseException:
            self.close(kill=True)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(kill=exc_type is not None)


class SoloWorker(_Workers):
    """One persistent pytest worker on one tree, asked for single windows of a test.

    A replay in a fresh process (:mod:`pytest_roofline.plugin.fresh_replay`) measures a test
    again here, in a process that did not take the first look, under a paired worker's window
    protocol (:mod:`pytest_roofline.plugin.ab_worker`). A context manager, as
    :class:`PairedWorkers`: entering starts the worker and waits for its collection.
    """

    def __init__(
        self,
        spec: SideSpec,
        settings: WindowSettings | None = None,
        *,
        log: Callable[[str], None] = lambda line: None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.spec = spec
        self.settings = settings or WindowSettings()
        self._log = log
        self._clock = clock
        self._group: Any = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._worker: _Worker | None = None
        self._windows = 0
        self.collected: CollectInfo | None = None

    def start(self) -> None:
        """Start the worker and wait for its collection."""
        execnet = _execnet()
        self._scratch = tempfile.TemporaryDirectory(prefix=WORKERS_SCRATCH_PREFIX)
        self._group = execnet.Group()
        self._worker = _Worker(self.spec, self._group, Path(self._scratch.name), self.settings)
        info = self.collected = self._worker.collected(self.settings.start_timeout_s)
        self._log(
            f"{self.spec.side} worker (pid {info.pid}): collected {len(info.ids)} tests, "
            f"{len(info.measured)} measured, in {info.startup_s:.1f} s"
        )

    def window(self, nodeid: str, seconds: float) -> Window | str:
        """One window of ``nodeid`` lasting about ``seconds``; the test's own message (a ``str``)
        when it did not pass. A worker that dies or hangs raises :class:`WorkerError`."""
        if self._worker is None:
            raise RuntimeError("SoloWorker.window before start")
        began = self._clock()
        reply = self._worker.window(nodeid, seconds, self.settings.window_timeout_s)
        wall = self._clock() - began
        if reply.get("outcome") != "passed":
            return f"{nodeid} {reply.get('outcome')}: {str(reply.get('message', '')).strip()}"
        self._windows += 1
        return _window(self.spec.side, nodeid, 0, self._windows - 1, reply, wall)

    def close(self, *, kill: bool = False) -> None:
        """Stop the worker (politely unless ``kill``) and remove the scratch directory."""
        try:
            if not kill and self._worker is not None and self._worker.ask_stop():
                try:
                    self._worker.stopped(KILL_AFTER_S)
                except WorkerError as exc:
                    self._log(f"{self.spec.side} worker did not stop cleanly: {exc}")
        finally:
            _end(self._group, self._scratch, kill=kill)
            self._group = None
            self._scratch = None
            self._worker = None


class PairedWorkers(_Workers):
    """Two persistent pytest workers and the ABBA alternation between them; with
    ``settings.worker_pairs`` above 1, that many pairs of them, taking the window pairs in turn.

    A context manager: entering starts every worker (in parallel) and waits until all have
    collected; leaving stops them, and kills any that does not end within a few seconds (also
    on an exception or ``KeyboardInterrupt``). :attr:`collected` and :attr:`final_probes` are
    the first pair's; :attr:`collected_pairs` and :attr:`final_probe_pairs` every pair's.

    :param baseline: how to start the baseline's worker (``side="baseline"``).
    :param candidate: the candidate's (``side="candidate"``).
    :param settings: window length, pair limits, warm-up, time-outs.
    :param log: receives one line per step.
    :param clock: wall clock for the timing facts (seconds).
    """

    KILL_AFTER_S = KILL_AFTER_S

    def __init__(
        self,
        baseline: SideSpec,
        candidate: SideSpec,
        settings: WindowSettings | None = None,
        *,
        log: Callable[[str], None] = lambda line: None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if baseline.side != "baseline" or candidate.side != "candidate":
            raise ValueError("PairedWorkers(baseline, candidate): sides given in the wrong order")
        self.specs: dict[Side, SideSpec] = {"baseline": baseline, "candidate": candidate}
        self.settings = settings or WindowSettings()
        self._log = log
        self._clock = clock
        self._pairs: list[dict[Side, _Worker]] = []
        self._group: Any = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.collected_pairs: list[dict[Side, CollectInfo]] = []
        self.startup_s = 0.0
        self.final_probe_pairs: list[dict[Side, Mapping[str, Any]]] = []
        # The CPUs window pairs are held on in turn: none unless asked, or with one CPU.
        cpus = usable_cpus() if self.settings.pin_cpus else ()
        self.cpus: tuple[int, ...] = cpus if len(cpus) >= 2 else ()

    @property
    def collected(self) -> dict[Side, CollectInfo]:
        """The first pair's collections (every pair runs the same trees and arguments)."""
        return self.collected_pairs[0] if self.collected_pairs else {}

    @property
    def final_probes(self) -> dict[Side, Mapping[str, Any]]:
        """The first pair's final probe records (what its tests imported while they ran)."""
        return self.final_probe_pairs[0] if self.final_probe_pairs else {}

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start both workers and wait for their collections; see :meth:`__enter__`."""
        execnet = _execnet()

        began = self._clock()
        self._scratch = tempfile.TemporaryDirectory(prefix=WORKERS_SCRATCH_PREFIX)
        scratch = Path(self._scratch.name)
        self._group = execnet.Group()
        # All start before any is waited for: interpreters, imports and collections overlap.
        count = self.settings.worker_pairs
        for number in range(count):
            self._pairs.append(
                {
                    side: _Worker(
                        self.specs[side], self._group, scratch, self.settings, number=number
                    )
                    for side in SIDES
                }
            )
        for number, workers in enumerate(self._pairs):
            infos: dict[Side, CollectInfo] = {}
            for side in SIDES:
                info = infos[side] = workers[side].collected(self.settings.start_timeout_s)
                which = f" {number + 1} of {count}" if count > 1 else ""
                self._log(
                    f"{side} worker{which} (pid {info.pid}): collected {len(info.ids)} tests, "
                    f"{len(info.measured)} measured, in {info.startup_s:.1f} s"
                )
            self.collected_pairs.append(infos)
        self.startup_s = self._clock() - began

    def close(self, *, kill: bool = False) -> None:
        """Stop the workers (politely unless ``kill``) and remove the scratch directory."""
        try:
            if not kill:
                # Every worker is asked first, so their teardowns and import records (a fraction
                # of a second each) overlap instead of adding up.
                asked = [
                    {side: worker.ask_stop() for side, worker in workers.items()}
                    for workers in self._pairs
                ]
                # One deadline for all: hung workers do not add their waits up.
                deadline = time.monotonic() + self.KILL_AFTER_S
                for workers, running in zip(self._pairs, asked, strict=True):
                    probes: dict[Side, Mapping[str, Any]] = {}
                    for side, worker in workers.items():
                        if not running[side]:
                            continue
                        try:
                            probes[side] = worker.stopped(max(0.1, deadline - time.monotonic()))
                        except WorkerError as exc:
                            self._log(f"{side} worker did not stop cleanly: {exc}")
                    self.final_probe_pairs.append(probes)
        finally:
            _end(self._group, self._scratch, kill=kill)
            self._group = None
            self._pairs = []
            self._scratch = None

    @property
    def pids(self) -> dict[Side, int | None]:
        """The first pair's worker processes."""
        return {side: w.pid for side, w in (self._pairs[0] if self._pairs else {}).items()}

    # -- measuring ----------------------------------------------------------------------------
    def common_tests(self) -> tuple[list[str], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """Tests both sides measure (candidate order), those only one side has, and unmeasured.

        :returns: ``(both, only_baseline, only_candidate, unmeasured)``; ``unmeasured`` are
            collected on both sides but use the ``roofline`` fixture on neither or one side only.
        """
        base, cand = self.collected["baseline"], self.collected["candidate"]
        base_ids, cand_ids = set(base.ids), set(cand.ids)
        only_base = tuple(n for n in base.ids if n not in cand_ids)
        only_cand = tuple(n for n in cand.ids if n not in base_ids)
        base_measured = set(base.measured)
        both = [n for n in cand.measured if n in base_measured]
        chosen = set(both)
        unmeasured = tuple(n for n in cand.ids if n in base_ids and n not in chosen)
        return both, only_base, only_cand, unmeasured

    def measure_test(
        self,
        nodeid: str,
        should_continue: ShouldContinue | None = None,
        *,
        window_s: float | None = None,
    ) -> TestWindows:
        """Alternate windows of ``nodeid`` (ABBA) until decided, ``max_pairs``, or an error.

        :param window_s: this test's window budget (default ``settings.window_s``): a slow test
            whose tail quantiles need more samples per window than the default budget gives.

        A test that fails, errors or skips on either side ends with ``stop="error"`` and the
        side's message; the workers stay usable. A worker that dies or hangs raises
        :class:`WorkerError`.
        """
        alternation = _Alternation(self, nodeid, should_continue, window_s)
        while not alternation.done:
            alternation.step()
        return alternation.result()

    def measure_tests(
        self,
        nodeids: Sequence[str],
        should_continue: ShouldContinue | None = None,
        *,
        window_s: Mapping[str, float] | None = None,
        finished: Callable[[str, TestWindows], None] = lambda nodeid, test: None,
    ) -> dict[str, TestWindows]:
        """:meth:`measure_test` for every test in ``nodeids``, their window pairs interleaved.

        The tests go in groups that share a module (or class: :func:`fixture_groups`), one
        group after another; within a group each round gives every test still undecided one
        window pair (:func:`round_order`), so a test's pairs spread over its group's whole time
        instead of a few seconds of it: a stretch of time when the host favoured one side
        (docs/paired.md, "Interleaved tests") then reaches a few of each test's pairs, not all
        of one test's. Interleaving stops at the module because a window of a test in another
        module would tear the first module's fixtures down (``plugin.ab_worker``), and module
        and class fixtures are set up once per group as before. A decided test drops out;
        ``finished`` is called as each one ends.

        :param window_s: per test, its window budget (default ``settings.window_s``).
        """
        budgets = window_s or {}
        unique = list(dict.fromkeys(nodeids))
        alternations = {n: _Alternation(self, n, should_continue, budgets.get(n)) for n in unique}
        for group in fixture_groups(unique):
            active = list(group)
            turn = 0
            while active:
                for nodeid in round_order(active, turn):
                    alternation = alternations[nodeid]
                    alternation.step()
                    if alternation.done:
                        finished(nodeid, alternation.result())
                active = [n for n in active if not alternations[n].done]
                turn += 1
        return {n: alternations[n].result() for n in unique}

    def _dropped(self, windows: Sequence[Window]) -> tuple[int, ...]:
        """The complete pairs to leave out for a disturbed host (none without ``drop_disturbed``)."""
        if not self.settings.drop_disturbed:
            return ()
        base = [w.canary for w in windows if w.side == "baseline"]
        cand = [w.canary for w in windows if w.side == "candidate"]
        severity = [pair_severity(a, b) for a, b in zip(base, cand, strict=False)]
        return pairs_to_drop(severity, self.settings.min_pairs)

    def run(
        self,
        *,
        should_continue: ShouldContinue | None = None,
        nodeids: Iterable[str] | None = None,
    ) -> PairedWorkersRun:
        """Measure every test both sides measure (or ``nodeids``), interleaved (:meth:`measure_tests`)."""
        began = self._clock()
        both, only_base, only_cand, unmeasured = self.common_tests()
        if only_base or only_cand:
            self._log(
                f"collections differ: {len(only_base)} test(s) only in the baseline, "
                f"{len(only_cand)} only in the candidate; they are not compared"
            )
        selected = both
        if nodeids is not None:
            selected = list(nodeids)
            for nodeid in selected:
                for side in SIDES:
                    if nodeid not in self.collected[side].measured:
                        raise WorkerError(
                            f"{nodeid} is not a measured test on the {side} side (it is not "
                            "collected there, or does not use the roofline fixture)",
                            side=side,
                            nodeid=nodeid,
                        )
        done = 0

        def finished(nodeid: str, test: TestWindows) -> None:
            nonlocal done
            done += 1
            self._log(
                f"[{done}/{len(selected)}] {nodeid}: {test.pairs} pairs in {test.wall_s:.1f} s "
                f"({test.stop}{': ' + test.error.splitlines()[0] if test.error else ''})"
            )

        tests = self.measure_tests(selected, should_continue, finished=finished)
        return PairedWorkersRun(
            tests=tests,
            collected=dict(self.collected),
            only_baseline=only_base,
            only_candidate=only_cand,
            unmeasured=unmeasured,
            startup_s=self.startup_s,
            wall_s=self._clock() - began + self.startup_s,
        )


def fixture_groups(nodeids: Sequence[str]) -> list[list[str]]:
    """Runs of consecutive tests with the same parent (module, or class within it).

    A worker tears down the fixtures a window's test does not share with the previous one; a
    parametrized test's cases share their parent. So interleaving within a group keeps its
    module and class fixtures set up, and the groups run one after another.

    >>> fixture_groups(["a.py::t[1]", "a.py::t[2]", "a.py::u", "a.py::C::v", "b.py::t"])
    [['a.py::t[1]', 'a.py::t[2]', 'a.py::u'], ['a.py::C::v'], ['b.py::t']]
    >>> fixture_groups(["a.py::t[x::y]", "a.py::u", "a.py::t[z]"])
    [['a.py::t[x::y]', 'a.py::u', 'a.py::t[z]']]
    """
    groups: list[tuple[str, list[str]]] = []
    for nodeid in nodeids:
        # The parameter id may hold any characters, "::" too: the parent is cut before it.
        name = nodeid.split("[", 1)[0]
        parent = name.rsplit("::", 1)[0] if "::" in name else name
        if groups and groups[-1][0] == parent:
            groups[-1][1].append(nodeid)
        else:
            groups.append((parent, [nodeid]))
    return [members for _, members in groups]


def round_order(active: Sequence[str], turn: int) -> list[str]:
    """The order of one interleaved round: the tests still undecided, rotated by the round.

    Rotating moves which test opens a round (right after the workers were idle, or after a
    test that just dropped out), so no test holds that place every round.

    >>> round_order(["a", "b", "c"], 0), round_order(["a", "b", "c"], 1), round_order(["a"], 5)
    (['a', 'b', 'c'], ['b', 'c', 'a'], ['a'])
    """
    shift = turn % len(active) if active else 0
    return [*active[shift:], *active[:shift]]


class _Alternation:
    """One test's alternation in progress: its windows so far, one window pair per step.

    The state :meth:`PairedWorkers.measure_test` keeps for a test, held between steps so that
    :meth:`PairedWorkers.measure_tests` can interleave tests pair by pair.
    """

    def __init__(
        self,
        workers: PairedWorkers,
        nodeid: str,
        should_continue: ShouldContinue | None,
        window_s: float | None,
    ) -> None:
        self._workers = workers
        self.nodeid = nodeid
        self._should_continue = should_continue
        self._window_s = window_s or workers.settings.window_s
        self._windows: list[Window] = []
        self._stop: StopWhy = "max_pairs"
        self._error: str | None = None
        self._error_outcome: str | None = None
        self._pair = 0
        self._kept = 0
        self._counts = dict.fromkeys(SIDES, 0)
        self._hold = bool(workers.cpus)
        self._ended = False
        # The time spent on this test's own window pairs (interleaved, not its elapsed time).
        self._wall_s = 0.0

    @property
    def done(self) -> bool:
        """Decided, at ``max_pairs`` kept, out of replacements, or failed on a side."""
        settings = self._workers.settings
        return self._ended or not (
            self._kept < settings.max_pairs
            and self._pair < settings.max_pairs + settings.replacement_limit
        )

    def step(self) -> None:
        """Run the next window pair (ABBA order) and look, if a look is due."""
        workers, settings = self._workers, self._workers.settings
        began = workers._clock()
        try:
            self._run_pair()
        finally:
            self._wall_s += workers._clock() - began
        if self._ended:
            return
        pair = self._pair
        # A pair dropped for a disturbed host is replaced by another, up to max_replacements
        # more: else the canary's flags (4 of 8 pairs on the quiet host here) leave a test on
        # its min_pairs and undecided. The drop depends on the canary only, never on the
        # pair's own ratios, so the pairs kept are an unbiased sample.
        dropped = workers._dropped(self._windows)
        before, self._kept = self._kept, pair - len(dropped)
        kept = self._kept
        if (
            self._should_continue is not None
            and kept > before
            and kept >= settings.min_pairs
            and kept < settings.max_pairs
            and (kept - settings.min_pairs) % settings.look_every == 0
        ):
            base, cand, groups = _kept(self._windows, dropped)
            if not self._should_continue(self.nodeid, base, cand, groups, len(dropped)):
                self._stop = "decided"
                self._ended = True

    def _run_pair(self) -> None:
        workers, settings = self._workers, self._workers.settings
        pair = self._pair
        # Worker pairs take the window pairs in turn; one test's comparison spans them all.
        sides = workers._pairs[pair % len(workers._pairs)]
        cpu = pair_cpu(pair, workers.cpus, len(workers._pairs)) if self._hold else None
        orders = pair_orders(self._windows)
        gone = set(workers._dropped(self._windows))
        kept = [order for i, order in enumerate(orders) if i not in gone]
        for side in balanced_order(kept, orders[-1] if orders else None):
            t0 = workers._clock()
            reply = sides[side].window(self.nodeid, self._window_s, settings.window_timeout_s, cpu)
            wall = workers._clock() - t0
            if reply.get("outcome") != "passed":
                self._error_outcome = str(reply.get("outcome") or reply.get("record") or "error")
                self._error = (
                    f"{self.nodeid} {reply.get('outcome')} on the {side} side (window "
                    f"{self._counts[side] + 1}): {str(reply.get('message', '')).strip()}"
                )
                self._stop = "error"
                self._ended = True
                return
            self._windows.append(
                _window(
                    side, self.nodeid, pair, self._counts[side], reply, wall, sides[side].number
                )
            )
            self._counts[side] += 1
        self._pair += 1
        # Measured on every CPU from the next pair.
        self._hold = self._hold and not _parallel(self._windows)

    def result(self) -> TestWindows:
        """The test's windows so far, and why its alternation stopped."""
        return TestWindows(
            nodeid=self.nodeid,
            windows=tuple(self._windows),
            pairs=self._pair,
            stop=self._stop,
            wall_s=self._wall_s,
            error=self._error,
            dropped=self._workers._dropped(self._windows),
            error_outcome=self._error_outcome,
        )


def _parallel(windows: Sequence[Window]) -> bool:
    """Whether either side's windows so far all used more than ``PARALLEL_CPU_SHARE`` CPUs."""
    for side in SIDES:
        shares = [w.cpu_share for w in windows if w.side == side and w.cpu_share is not None]
        if shares and min(shares) > PARALLEL_CPU_SHARE:
            return True
    return False


def _kept(
    windows: Sequence[Window], dropped: Sequence[int]
) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """The kept pairs' baseline and candidate samples, and the worker pair of each."""
    gone = set(dropped)
    base = [w for w in windows if w.side == "baseline"]
    cand = [w.samples_s for w in windows if w.side == "candidate"]
    n = min(len(base), len(cand))
    kept = [i for i in range(n) if i not in gone]
    return (
        [base[i].samples_s for i in kept],
        [cand[i] for i in kept],
        [base[i].worker_pair for i in kept],
    )


def _window(
    side: Side,
    nodeid: str,
    pair: int,
    index: int,
    reply: Mapping[str, Any],
    wall_s: float,
    worker_pair: int = 0,
) -> Window:
    return Window(
        side=side,
        nodeid=nodeid,
        pair=pair,
        index=index,
        samples_s=np.frombuffer(reply["samples_f64"], dtype="<f8").astype(np.float64),
        batch_size=int(reply["batch_size"]),
        stop_reason=str(reply["stop_reason"]),
        sampling_s=float(reply["sampling_s"]),
        warmup_s=float(reply["warmup_s"]),
        wall_s=wall_s,
        started_ns=int(reply["started_ns"]),
        finished_ns=int(reply["finished_ns"]),
        cpu_share=None if reply.get("cpu_share") is None else float(reply["cpu_share"]),
        result=json.loads(reply["result"]),
        canary=(
            WindowJudgement.from_dict(json.loads(reply["canary"])) if reply.get("canary") else None
        ),
        canary_s=float(reply.get("canary_s") or 0.0),
        layout_shift_bytes=int(reply.get("layout_shift_bytes") or 0),
        worker_pair=worker_pair,
        cpu=None if reply.get("cpu") is None else int(reply["cpu"]),
    )


def run_paired_workers(
    baseline: SideSpec,
    candidate: SideSpec,
    settings: WindowSettings | None = None,
    *,
    should_continue: ShouldContinue | None = None,
    nodeids: Iterable[str] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> PairedWorkersRun:
    """Start both workers, measure (:meth:`PairedWorkers.run`), stop them; one call."""
    with PairedWorkers(baseline, candidate, settings, log=log) as workers:
        run = workers.run(should_continue=should_continue, nodeids=nodeids)
    return run
