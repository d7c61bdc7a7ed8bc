"""A host canary: fixed reference kernels timed around each test, to tell a host slowdown from a code change.

Why: on a shared machine the host's speed changes within seconds (``docs/noise.md``: an
unchanged ``np.sin`` test ran 1.74x slower for a few seconds on a quiet 2-vCPU VM; under a busy
neighbour a 2-thread 128² GEMM went from 67 µs to 16-24 ms a call). A regression seen while the
host was slow must not be rolled back on timing alone. The canary is the
control arm that says when the host, not the code, moved.

What it times, one *reading* = ``repeats`` calls of each kind, interleaved, median per kind:

- ``python``: a pure-Python loop (interpreter speed, one core). In the prototype it tracked an
  ``np.sin`` test's window median at +0.72 (quiet) / +0.81 (neighbour) correlation.
- ``stream``: a triad over float64 arrays beyond L2 (memory and shared-cache bandwidth).
- ``gemm``: an fp64 matmul with the process's own BLAS thread settings. Only a GEMM canary
  with the suite's threads sees the multi-thread BLAS collapse (a descheduled sibling thread):
  no single-threaded canary tracked it (correlation under +0.2, ``noise-protocols.md``).

How it is used (one :class:`Canary` per measuring process):

1. :meth:`Canary.start`: several readings give each kind's first *level* (median) and *floor*
   (how far a reading strays from the level on its own: a robust spread, as a ratio).
2. :meth:`Canary.open_window` / :meth:`Canary.close_window` around each measured test: the
   reading just before and just after the test. A window is ``disturbed`` when either reading
   is slower than the level by more than the floor for some kind, ``quiet`` when not, and
   ``unread`` when the time budget left no reading close enough. Readings between tests are
   skipped while the canary has spent more than ``budget_share`` of the run's time.
3. :meth:`Canary.wait_for_recovery` after a disturbed window: re-read with growing pauses until
   every kind is back within its floor, or a bound passes. The session then re-measures the
   test, or escalates it as "host disturbed" with :meth:`WindowJudgement.reason`.
4. :meth:`Canary.finish`: the end-of-session level and a JSON-ready :class:`CanarySummary`.

The level and floor are the session's, not the start's: every between-test reading joins them
(median and 1.4826 x MAD of the log readings), and each reading is judged against the level
before it joined. Start readings span only tens of milliseconds; measured here, a level taken
from them alone caught one host state (both vCPUs free, a pure-Python loop 1.7x faster than
with the other vCPU busy) and then called every later window disturbed. The median of the
session is robust to disturbed readings while they are a minority. Only slowdowns count.

The clock, the pause and the kernels are injected: tests drive the canary with a fake clock and
kernels that advance it, so no assertion depends on real speed. Never imports pytest.

Why one long module: kernels, readings, levels and floors, window judgements, recovery waits and
the summary share one clock and one time budget; the measured figures are in docs/canary.md.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from pytest_roofline.errors import ConfigError

__all__ = [
    "CANARY_SCHEMA_VERSION",
    "KINDS",
    "Canary",
    "CanaryCost",
    "CanaryKernels",
    "CanaryLevel",
    "CanaryReading",
    "CanarySettings",
    "CanarySummary",
    "CanaryWindow",
    "PairedState",
    "PairedWindow",
    "Recovery",
    "WindowJudgement",
    "WindowState",
    "default_kernels",
]

CANARY_SCHEMA_VERSION = 1
"""Version of :meth:`CanarySummary.to_dict`. 1: first version."""

KINDS: tuple[str, ...] = ("python", "stream", "gemm")
"""The default kernels' kinds, in the order they are called within one round of a reading."""

Clock = Callable[[], int]
"""A monotonic clock in integer nanoseconds (``time.perf_counter_ns`` by default)."""

Kernel = Callable[[], object]
"""One call of a reference kernel; its duration is what the canary measures."""

WindowState = Literal["quiet", "disturbed", "unread"]
WINDOW_STATES: tuple[WindowState, ...] = get_args(WindowState)

PairedState = Literal["quiet", "disturbed_a", "disturbed_b", "disturbed_both", "unread"]

#: Default sizes. A reading of all three (3 calls each) costs about 5 ms here when the host is
#: quiet; 12-24 ms while the 2-thread GEMM collapses (benchmarks/canary_check.py, when one
#: collapsed call made the reading; it now takes a warming call and a counted one, 32-70 ms).
#: GEMM n=192 fp64: ~0.27 ms with 2 OpenBLAS threads, ~0.44 ms with one (2-vCPU EPYC VM).
GEMM_N = 192
#: Three arrays of 4 MiB: 12 MiB, beyond a 1 MiB L2, so the triad reads memory or shared L3.
STREAM_ARRAY_BYTES = 4 * 2**20
#: About 0.25 ms in CPython 3.11 on the same VM.
PYTHON_LOOP_ITERATIONS = 3000

# 1.4826 x MAD estimates the standard deviation of normal data (Huber, Robust Statistics, 1981).
_MAD_TO_SD = 1.4826


# --------------------------------------------------------------------------- kernels
@dataclass(frozen=True, slots=True)
class CanaryKernels:
    """The reference kernels of a canary and what they are.

    :ivar calls: kind -> one call of its kernel, called in this order within a round.
    :ivar spec: kind -> description (size, threads); stored with the levels, since levels are
        comparable across runs only when the kernels are the same.
    """

    calls: Mapping[str, Kernel]
    spec: Mapping[str, str]

    def __post_init__(self) -> None:
        if not self.calls:
            raise ConfigError("canary kernels: at least one kernel is needed")
        missing = sorted(set(self.calls) - set(self.spec))
        if missing:
            raise ConfigError(f"canary kernels: no spec for {', '.join(missing)}")
        object.__setattr__(self, "calls", dict(self.calls))
        object.__setattr__(self, "spec", {k: str(self.spec[k]) for k in self.calls})


def _python_loop(iterations: int) -> Kernel:
    def run() -> int:
        total = 0
        for i in range(iterations):
            total += i * i
        return total

    return run


def _stream_triad(array_bytes: int) -> Kernel:
    n = max(1, array_bytes // 8)
    # np.full, not np.zeros: zero pages are mapped lazily and would fault inside the timing.
    a, b, c = np.full(n, 0.0), np.full(n, 1.0), np.full(n, 2.0)

    def run() -> None:
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    run()
    return run


def _gemm(n: int) -> Kernel:
    x = np.full((n, n), 0.5)
    y = np.full((n, n), 0.25)
    z = np.empty((n, n))

    def run() -> None:
        np.matmul(x, y, out=z)

    run()  # starts the BLAS thread pool and touches the pages outside any timing
    return run


def default_kernels(
    *,
    gemm_n: int = GEMM_N,
    stream_array_bytes: int = STREAM_ARRAY_BYTES,
    python_iterations: int = PYTHON_LOOP_ITERATIONS,
    blas_threads: int | None = None,
) -> CanaryKernels:
    """The standard reference set: a Python loop, a memory triad and an fp64 GEMM.

    The GEMM runs with whatever BLAS thread limit is in force when it is *called*, so build the
    canary in the process that measures, after any ``--roofline-blas-threads`` limit is applied.

    :param blas_threads: the BLAS threads in force, for the spec only (``None``: not recorded).
    """
    for name, value in (
        ("gemm_n", gemm_n),
        ("stream_array_bytes", stream_array_bytes),
        ("python_iterations", python_iterations),
    ):
        if value < 1:
            raise ConfigError(f"canary kernels: {name} must be >= 1, got {value!r}")
    threads = "" if blas_threads is None else f", {blas_threads} BLAS thread(s)"
    return CanaryKernels(
        calls={
            "python": _python_loop(python_iterations),
            "stream": _stream_triad(stream_array_bytes),
            "gemm": _gemm(gemm_n),
        },
        spec={
            "python": f"pure-Python loop, {python_iterations} iterations",
            "stream": f"triad a=b+3c, 3 x {stream_array_bytes / 2**20:g} MiB float64",
            "gemm": f"fp64 matmul {gemm_n}x{gemm_n}{threads}",
        },
    )


# --------------------------------------------------------------------------- settings
@dataclass(frozen=True, slots=True)
class CanarySettings:
    """How often, how long and how strictly the canary reads.

    :ivar repeats: calls of each kernel per reading (the reading is their median).
    :ivar max_reading_s: a kind stops repeating within a reading once its counted calls have
        taken ``max_reading_s / kinds`` (each kind is called at least twice: a warming call,
        then one that counts): under a BLAS collapse one GEMM call alone takes 16-20 ms here.
    :ivar start_readings: readings at session start (level and floor).
    :ivar end_readings: readings at session end.
    :ivar budget_share: readings between tests are skipped while the canary's time exceeds this
        share of the run's time since :meth:`Canary.start` (the start and end readings are a
        fixed cost outside the budget, reported in :class:`CanaryCost`).
    :ivar floor_z: the floor is ``floor_z`` robust standard deviations of the session's
        readings' log levels...
    :ivar min_floor: ...but at least this ratio (a few readings can agree by chance)...
    :ivar max_floor: ...and at most this one (a floor wider than that would hide the 1.5x
        slowdowns seen here; readings are then called disturbed more often, never less).
    :ivar max_reading_age_s: a reading older than this is not taken as a window's "before".
    :ivar recovery_max_wait_s: :meth:`Canary.wait_for_recovery` gives up after waiting this long...
    :ivar recovery_max_reads: ...or after this many readings.
    :ivar recovery_first_pause_s: its first pause; each next pause is ``recovery_backoff`` times
        longer.
    :ivar recovery_backoff: growth factor of the pauses.
    :ivar recovery_budget_share: once the waits for recovery have taken this share of the run,
        :meth:`Canary.wait_for_recovery` returns at once, not recovered (the first wait is
        always allowed). Measured here under other agents' load, 40-50% of windows read
        disturbed: without this bound re-measuring them would double the run.
    """

    repeats: int = 3
    max_reading_s: float = 0.02
    start_readings: int = 7
    end_readings: int = 3
    budget_share: float = 0.05
    floor_z: float = 3.0
    min_floor: float = 1.20
    max_floor: float = 1.5
    max_reading_age_s: float = 1.0
    recovery_max_wait_s: float = 2.0
    recovery_max_reads: int = 6
    recovery_first_pause_s: float = 0.05
    recovery_backoff: float = 2.0
    recovery_budget_share: float = 0.10

    def __post_init__(self) -> None:
        for name in ("repeats", "start_readings", "end_readings"):
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"canary settings: {name} must be >= 1, got {getattr(self, name)!r}"
                )
        if self.recovery_max_reads < 1:
            raise ConfigError(
                f"canary settings: recovery_max_reads must be >= 1, got {self.recovery_max_reads!r}"
            )
        for name in (
            "max_reading_s",
            "max_reading_age_s",
            "recovery_max_wait_s",
            "recovery_first_pause_s",
            "floor_z",
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"canary settings: {name} must be finite and >= 0, got {value!r}")
        for name in ("budget_share", "recovery_budget_share"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise ConfigError(f"canary settings: {name} must be in (0, 1), got {value!r}")
        if not 1.0 < self.min_floor <= self.max_floor or not math.isfinite(self.max_floor):
            raise ConfigError(
                "canary settings: need 1 < min_floor <= max_floor (ratios), got "
                f"{self.min_floor!r} and {self.max_floor!r}"
            )
        if not self.recovery_backoff >= 1.0:
            raise ConfigError(
                f"canary settings: recovery_backoff must be >= 1, got {self.recovery_backoff!r}"
            )


# --------------------------------------------------------------------------- values
@dataclass(frozen=True, slots=True)
class CanaryReading:
    """One reading: per kind, the median seconds of one kernel call.

    :ivar at_s: when the reading started, seconds since the canary was created.
    :ivar levels_s: kind -> median seconds per call.
    :ivar cost_s: wall time the reading took (all its calls).
    """

    at_s: float
    levels_s: Mapping[str, float]
    cost_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels_s", {str(k): float(v) for k, v in self.levels_s.items()})

    def to_dict(self) -> dict[str, object]:
        return {"at_s": self.at_s, "levels_s": dict(self.levels_s), "cost_s": self.cost_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> CanaryReading:
        return cls(
            at_s=_number(d, "at_s", "canary reading"),
            levels_s=_numbers(d, "levels_s", "canary reading"),
            cost_s=_number(d, "cost_s", "canary reading"),
        )


@dataclass(frozen=True, slots=True)
class CanaryLevel:
    """The canary's level and floor from a set of readings.

    :ivar at_s: when the first of the readings started.
    :ivar levels_s: kind -> median over the readings of seconds per call.
    :ivar floors: kind -> the ratio to the level beyond which a reading counts as disturbed.
    :ivar spread: kind -> robust standard deviation of the readings' log levels (1.4826 MAD).
    :ivar readings: how many readings it rests on.
    """

    at_s: float
    levels_s: Mapping[str, float]
    floors: Mapping[str, float]
    spread: Mapping[str, float]
    readings: int

    def ratio_to(self, other: CanaryLevel) -> dict[str, float]:
        """This level ÷ ``other``'s, per kind present in both (> 1: slower here)."""
        return {
            k: v / other.levels_s[k]
            for k, v in self.levels_s.items()
            if other.levels_s.get(k, 0.0) > 0.0
        }

    def to_dict(self) -> dict[str, object]:
        return {
            "at_s": self.at_s,
            "levels_s": dict(self.levels_s),
            "floors": dict(self.floors),
            "spread": dict(self.spread),
            "readings": self.readings,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> CanaryLevel:
        where = "canary level"
        return cls(
            at_s=_number(d, "at_s", where),
            levels_s=_numbers(d, "levels_s", where),
            floors=_numbers(d, "floors", where),
            spread=_numbers(d, "spread", where),
            readings=int(_number(d, "readings", where)),
        )


@dataclass(frozen=True, slots=True)
class CanaryWindow:
    """An open test window: returned by :meth:`Canary.open_window`, passed to ``close_window``.

    ``ratios_before``: the before-reading ÷ the level in force when it was taken, per kind.
    """

    test_id: str
    opened_at_s: float
    before: CanaryReading | None
    ratios_before: Mapping[str, float] = field(default_factory=dict)
    attempt: int = 0


@dataclass(frozen=True, slots=True)
class WindowJudgement:
    """The canary's verdict on one test window.

    :ivar test_id: the test (node id) measured in the window.
    :ivar state: ``quiet``, ``disturbed`` (some kind slower than its level beyond its floor in
        the reading before or after the test) or ``unread`` (no reading close enough).
    :ivar ratios_before: kind -> reading ÷ level just before the test (empty when not read).
    :ivar ratios_after: the same just after the test.
    :ivar floors: kind -> the floor (a ratio) in force.
    :ivar disturbed_kinds: kinds beyond their floor, in kernel order.
    :ivar opened_at_s: when the window opened (seconds since the canary was created).
    :ivar closed_at_s: when it closed.
    :ivar attempt: the session's measurement attempt of this test (0 first, 1 after a recovery).
    """

    test_id: str
    state: WindowState
    ratios_before: Mapping[str, float]
    ratios_after: Mapping[str, float]
    floors: Mapping[str, float]
    disturbed_kinds: tuple[str, ...]
    opened_at_s: float
    closed_at_s: float
    attempt: int = 0

    @property
    def disturbed(self) -> bool:
        return self.state == "disturbed"

    def state_for(self, kinds: Iterable[str]) -> WindowState:
        """The state counting only ``kinds``: a test that keeps one thread busy need not be
        escalated because the multi-threaded GEMM canary collapsed (the BLAS-thread effect
        hits only multi-threaded work); the per-kind figures are kept either way."""
        if self.state == "unread":
            return "unread"
        wanted = set(kinds)
        return "disturbed" if any(k in wanted for k in self.disturbed_kinds) else "quiet"

    @property
    def ratios(self) -> dict[str, float]:
        """Per kind, the worse (larger) of the before and after ratios."""
        out = dict(self.ratios_before)
        for k, v in self.ratios_after.items():
            out[k] = max(v, out.get(k, v))
        return out

    def reason(self) -> str:
        """A one-line account with the figures, for an escalation or the report."""
        if self.state == "unread":
            return "host canary not read around this test (time budget or no recent reading)"
        ratios = self.ratios
        parts = [
            f"{k} canary x{ratios[k]:.2f} its session level (floor x{self.floors[k]:.2f})"
            for k in (self.disturbed_kinds if self.disturbed else tuple(ratios))
            if k in ratios and k in self.floors
        ]
        head = "host disturbed around the test" if self.disturbed else "host canary quiet"
        return f"{head}: {', '.join(parts)}" if parts else head

    def to_dict(self) -> dict[str, object]:
        return {
            "test_id": self.test_id,
            "state": self.state,
            "ratios_before": dict(self.ratios_before),
            "ratios_after": dict(self.ratios_after),
            "floors": dict(self.floors),
            "disturbed_kinds": list(self.disturbed_kinds),
            "opened_at_s": self.opened_at_s,
            "closed_at_s": self.closed_at_s,
            "attempt": self.attempt,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> WindowJudgement:
        where = "canary window"
        state = d.get("state")
        if state not in WINDOW_STATES:
            raise ValueError(
                f"{where}: state must be one of {', '.join(WINDOW_STATES)}, got {state!r}"
            )
        kinds = d.get("disturbed_kinds", [])
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise ValueError(f"{where}: disturbed_kinds must be a list of strings")
        return cls(
            test_id=str(d.get("test_id", "")),
            state=state,
            ratios_before=_numbers(d, "ratios_before", where),
            ratios_after=_numbers(d, "ratios_after", where),
            floors=_numbers(d, "floors", where),
            disturbed_kinds=tuple(kinds),
            opened_at_s=_number(d, "opened_at_s", where),
            closed_at_s=_number(d, "closed_at_s", where),
            attempt=int(_number(d, "attempt", where)),
        )


@dataclass(frozen=True, slots=True)
class Recovery:
    """The outcome of :meth:`Canary.wait_for_recovery`.

    :ivar recovered: every watched kind came back within its floor.
    :ivar waited_s: time from the call to its return (pauses and readings).
    :ivar reads: readings taken.
    :ivar last_ratios: kind -> reading ÷ level of the last reading.
    :ivar kinds: the kinds that were watched.
    :ivar test_id: the test waiting, when the caller said.
    :ivar budget_spent: not attempted: earlier waits had used the recovery budget.
    """

    recovered: bool
    waited_s: float
    reads: int
    last_ratios: Mapping[str, float]
    kinds: tuple[str, ...]
    test_id: str | None = None
    budget_spent: bool = False

    def reason(self) -> str:
        figures = ", ".join(f"{k} x{v:.2f}" for k, v in self.last_ratios.items() if k in self.kinds)
        if self.budget_spent:
            return "host canary: no wait for recovery, the session's recovery budget is spent"
        if self.recovered:
            return f"host canary recovered after {self.waited_s:.2f} s ({figures})"
        return (
            f"host canary still off its level after {self.waited_s:.2f} s and {self.reads} "
            f"reading(s) ({figures})"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "recovered": self.recovered,
            "waited_s": self.waited_s,
            "reads": self.reads,
            "last_ratios": dict(self.last_ratios),
            "kinds": list(self.kinds),
            "test_id": self.test_id,
            "budget_spent": self.budget_spent,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Recovery:
        where = "canary recovery"
        kinds = d.get("kinds", [])
        if not isinstance(kinds, list):
            raise ValueError(f"{where}: kinds must be a list")
        test_id = d.get("test_id")
        return cls(
            recovered=bool(d.get("recovered")),
            waited_s=_number(d, "waited_s", where),
            reads=int(_number(d, "reads", where)),
            last_ratios=_numbers(d, "last_ratios", where),
            kinds=tuple(str(k) for k in kinds),
            test_id=None if test_id is None else str(test_id),
            budget_spent=bool(d.get("budget_spent", False)),
        )


@dataclass(frozen=True, slots=True)
class CanaryCost:
    """What the canary cost.

    :ivar fixed_s: start and end readings (outside the budget).
    :ivar between_s: readings between tests and while waiting for recovery (inside the budget).
    :ivar run_s: time from the end of :meth:`Canary.start` to the last reading (the process's
        busy time when :meth:`Canary.bound_by_busy_time` set one).
    :ivar readings: between-test and recovery readings taken.
    :ivar skipped: between-test readings skipped for the budget.
    :ivar recovery_wait_s: time spent in :meth:`Canary.wait_for_recovery` (pauses included).
    """

    fixed_s: float
    between_s: float
    run_s: float
    readings: int
    skipped: int
    recovery_wait_s: float = 0.0

    @property
    def share(self) -> float:
        """Between-test canary time ÷ run time (what the budget bounds); NaN before any run."""
        return self.between_s / self.run_s if self.run_s > 0 else math.nan

    def to_dict(self) -> dict[str, object]:
        return {
            "fixed_s": self.fixed_s,
            "between_s": self.between_s,
            "run_s": self.run_s,
            "readings": self.readings,
            "skipped": self.skipped,
            "recovery_wait_s": self.recovery_wait_s,
            "share": None if math.isnan(self.share) else self.share,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> CanaryCost:
        where = "canary cost"
        return cls(
            fixed_s=_number(d, "fixed_s", where),
            between_s=_number(d, "between_s", where),
            run_s=_number(d, "run_s", where),
            readings=int(_number(d, "readings", where)),
            skipped=int(_number(d, "skipped", where)),
            recovery_wait_s=_number(d, "recovery_wait_s", where),
        )


@dataclass(frozen=True, slots=True)
class CanarySummary:
    """Everything the run document keeps of the canary.

    :ivar spec: kind -> kernel description (levels compare across runs only when equal).
    :ivar start: the level and floors from the session-start readings alone.
    :ivar session: the level and floors over the start and between-test readings: what the
        last windows were judged against, and the run's figure to compare with a baseline's.
    :ivar end: the level from the end-of-session readings alone, or ``None``.
    :ivar windows: every test window in order (a re-measured test has several).
    :ivar recoveries: every wait for recovery in order.
    :ivar cost: what the canary cost.
    """

    spec: Mapping[str, str]
    start: CanaryLevel
    session: CanaryLevel
    end: CanaryLevel | None
    windows: tuple[WindowJudgement, ...]
    recoveries: tuple[Recovery, ...]
    cost: CanaryCost
    schema_version: int = CANARY_SCHEMA_VERSION

    def state_counts(self) -> dict[str, int]:
        """Windows per state (every state present, zero included)."""
        counts: dict[str, int] = dict.fromkeys(WINDOW_STATES, 0)
        for window in self.windows:
            counts[window.state] += 1
        return counts

    def level_ratios(self, baseline: CanarySummary) -> dict[str, float] | None:
        """This run's session level ÷ the baseline's, per kind (> 1: this host was slower);
        ``None`` when the kernels differ, since their levels do not compare."""
        if dict(self.spec) != dict(baseline.spec):
            return None
        return self.session.ratio_to(baseline.session)

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": self.schema_version,
            "spec": dict(self.spec),
            "start": self.start.to_dict(),
            "session": self.session.to_dict(),
            "end": None if self.end is None else self.end.to_dict(),
            "windows": [w.to_dict() for w in self.windows],
            "recoveries": [r.to_dict() for r in self.recoveries],
            "cost": self.cost.to_dict(),
            "state_counts": self.state_counts(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> CanarySummary:
        """Rebuild from :meth:`to_dict` output; another schema version or a malformed payload
        raises ``ValueError`` naming the key."""
        where = "canary summary"
        if d.get("schema_version") != CANARY_SCHEMA_VERSION:
            raise ValueError(
                f"{where}: schema_version {d.get('schema_version')!r}, expected {CANARY_SCHEMA_VERSION}"
            )
        spec = d.get("spec")
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where}: spec must be a mapping")
        end = d.get("end")
        return cls(
            spec={str(k): str(v) for k, v in spec.items()},
            start=CanaryLevel.from_dict(_sub(d, "start", where)),
            session=CanaryLevel.from_dict(_sub(d, "session", where)),
            end=None if end is None else CanaryLevel.from_dict(_sub(d, "end", where)),
            windows=tuple(WindowJudgement.from_dict(w) for w in _list(d, "windows", where)),
            recoveries=tuple(Recovery.from_dict(r) for r in _list(d, "recoveries", where)),
            cost=CanaryCost.from_dict(_sub(d, "cost", where)),
        )


@dataclass(frozen=True, slots=True)
class PairedWindow:
    """One paired round's canary: the windows of side A and side B (each its own process).

    A round disturbed on either side is one the paired analysis should drop or down-weight;
    :attr:`state` says which side.
    """

    round_index: int
    a: WindowJudgement
    b: WindowJudgement

    @property
    def state(self) -> PairedState:
        if self.a.disturbed and self.b.disturbed:
            return "disturbed_both"
        if self.a.disturbed:
            return "disturbed_a"
        if self.b.disturbed:
            return "disturbed_b"
        if self.a.state == "unread" or self.b.state == "unread":
            return "unread"
        return "quiet"

    @property
    def quiet(self) -> bool:
        """Both sides read and quiet: the round can count at full weight."""
        return self.state == "quiet"

    def to_dict(self) -> dict[str, object]:
        return {
            "round": self.round_index,
            "state": self.state,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
        }

    @staticmethod
    def counts(rounds: Iterable[PairedWindow]) -> dict[str, int]:
        """Rounds per paired state (every state present, zero included)."""
        out = dict.fromkeys(get_args(PairedState), 0)
        for r in rounds:
            out[r.state] += 1
        return out


# --------------------------------------------------------------------------- the canary
@dataclass(slots=True)
class _Ledger:
    """The canary's running accounts (mutable, private)."""

    fixed_ns: int = 0
    between_ns: int = 0
    readings: int = 0
    skipped: int = 0
    recovery_ns: int = 0
    recent_costs_ns: list[int] = field(default_factory=list)

    def charge(self, cost_s: float, *, fixed: bool) -> None:
        cost_ns = round(cost_s * 1e9)
        if fixed:
            self.fixed_ns += cost_ns
        else:
            self.between_ns += cost_ns
            self.readings += 1
        # The start readings seed the cost estimate the budget check uses.
        self.recent_costs_ns = [*self.recent_costs_ns[-4:], cost_ns]


class Canary:
    """Reference kernels timed at session start, around each test, and at the end.

    :param kernels: the kernels (default :func:`default_kernels`, built on first use).
    :param settings: repetitions, budget, floors, recovery bounds.
    :param clock: monotonic nanoseconds; every timing and the budget use it.
    :param sleep: pauses (seconds) while waiting for recovery; a fake one advances a fake clock.
    """

    def __init__(
        self,
        kernels: CanaryKernels | None = None,
        *,
        settings: CanarySettings | None = None,
        clock: Clock = time.perf_counter_ns,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings or CanarySettings()
        self._kernels = kernels
        self._clock = clock
        self._sleep = sleep
        self._origin_ns = clock()
        self._run_origin_ns: int | None = None
        self._start: CanaryLevel | None = None
        self._level: CanaryLevel | None = None
        # Per kind, the log level of every reading in the session level (start + between).
        self._logs: dict[str, list[float]] = {}
        self._first_at_s = 0.0
        self._last: tuple[CanaryReading, dict[str, float]] | None = None
        self._windows: list[WindowJudgement] = []
        self._recoveries: list[Recovery] = []
        self._ledger = _Ledger()
        self._busy_ns: Callable[[], int] | None = None

    def bound_by_busy_time(self, busy_ns: Callable[[], int]) -> None:
        """Bound the readings between tests by ``budget_share`` of ``busy_ns()`` (nanoseconds
        this process has spent measuring, its readings included) instead of the time since
        :meth:`start`.

        For ``ab``'s workers: several processes share one wall clock and measure in turn, so
        each is busy for a fraction of it. Against its own time since start, each worker's
        canary could spend the share of the whole run, and together 2 x (worker pairs) times
        it (5.1-5.9% of ``ab``'s wall at a 2.5% share each, three worker pairs, 2026-12-03).
        Against the time each is busy, which the controller never overlaps, the sum stays
        within the share of the run.
        """
        self._busy_ns = busy_ns

    @property
    def kernels(self) -> CanaryKernels:
        if self._kernels is None:
            self._kernels = default_kernels()
        return self._kernels

    @property
    def level(self) -> CanaryLevel:
        """The session level in force: median and floor over the readings so far."""
        return self._require_level()

    def _require_level(self) -> CanaryLevel:
        if self._level is None:
            raise RuntimeError("Canary.start() must be called before reading between tests")
        return self._level

    def now_s(self) -> float:
        """Seconds since the canary was created, on its clock."""
        return (self._clock() - self._origin_ns) / 1e9

    # -- readings
    def read(self) -> CanaryReading:
        """Take one reading now, whatever the budget (the caller accounts for it).

        After one call of each kernel to warm the caches and wake the BLAS threads (its time
        never counts), rounds call every kernel once, in order, ``repeats`` times; a kind stops
        repeating once its counted calls in this reading have taken ``max_reading_s / kinds``,
        but always gets one: a collapsed GEMM (20 ms a call here) is plain to see in that one
        call, and the others still get theirs.
        """
        kernels = self.kernels
        clock = self._clock
        per_kind_ns = self.settings.max_reading_s * 1e9 / len(kernels.calls)
        times: dict[str, list[int]] = {k: [] for k in kernels.calls}
        first: dict[str, int] = {}
        begin = clock()
        # The first call of each kind is timed but never counted: the test just measured may
        # have evicted the canary's arrays from the caches, and a cold call reads the test's
        # footprint, not the host (measured here: the stream canary read 1.5-1.9x its level
        # right after tests that touch tens of MiB, with no other process running). The first
        # 2-thread GEMM after an idle spell may also wait for its sleeping BLAS thread's vCPU
        # to wake: 6-18 ms for a 0.3 ms call in 1-6% of first calls here (up to 15% in
        # another hour), the next call at its level: judged on that call alone, the window read
        # "disturbed", and ab dropped its pair (docs/paired.md, "The canary's first GEMM
        # call"). The budget counts the counted calls only, so a stall still gets a median.
        for kind, call in kernels.calls.items():
            t0 = clock()
            call()
            first[kind] = clock() - t0
        for _ in range(self.settings.repeats):
            for kind, call in kernels.calls.items():
                if times[kind] and sum(times[kind]) >= per_kind_ns:
                    continue
                t0 = clock()
                call()
                times[kind].append(clock() - t0)
        end = clock()
        return CanaryReading(
            at_s=(begin - self._origin_ns) / 1e9,
            levels_s={k: statistics.median(v) / 1e9 for k, v in times.items()},
            cost_s=(end - begin) / 1e9,
        )

    def start(self) -> CanaryLevel:
        """Take the session-start readings; return the level and floors they give."""
        readings = []
        for _ in range(self.settings.start_readings):
            reading = self.read()
            self._ledger.charge(reading.cost_s, fixed=True)
            readings.append(reading)
        self._start = _level_of(readings, self.settings)
        self._logs = {
            k: [math.log(max(r.levels_s[k], 1e-12)) for r in readings] for k in self._start.levels_s
        }
        self._first_at_s = readings[0].at_s
        self._level = self._start
        self._last = (readings[-1], self._ratios(readings[-1]))
        self._run_origin_ns = self._clock()
        return self._start

    def read_between(self) -> CanaryReading | None:
        """A reading between tests, or ``None`` when it would take the canary over its budget.

        The reading joins the session level (median and floor over all such readings).
        """
        self._require_level()
        if not self._within_budget():
            self._ledger.skipped += 1
            return None
        begin = self._clock()
        reading = self.read()
        # Judged against the level before it joins, so a window's own reading cannot move the
        # level it is judged by.
        self._last = (reading, self._ratios(reading))
        for kind, logs in self._logs.items():
            if kind in reading.levels_s:
                logs.append(math.log(max(reading.levels_s[kind], 1e-12)))
        count = len(next(iter(self._logs.values()), []))
        # The median moves slowly once there are many readings: past 100, recompute every ~2%
        # more, so the bookkeeping stays O(n) over the session instead of O(n²).
        if count <= 100 or count % max(1, count // 50) == 0:
            self._level = _level_from_logs(self._logs, self.settings, self._first_at_s)
        # The bookkeeping is canary time too.
        self._ledger.charge((self._clock() - begin) / 1e9, fixed=False)
        return reading

    def open_window(self, test_id: str, *, attempt: int = 0) -> CanaryWindow:
        """Open a test's window: reuse the last reading if recent, else read (within budget)."""
        self._require_level()
        now = self.now_s()
        if self._last is None or self._age_s(self._last[0], now) > self.settings.max_reading_age_s:
            self.read_between()
        before = self._last
        if before is not None and self._age_s(before[0], now) > self.settings.max_reading_age_s:
            before = None
        return CanaryWindow(
            test_id=test_id,
            opened_at_s=now,
            before=None if before is None else before[0],
            ratios_before={} if before is None else before[1],
            attempt=attempt,
        )

    def close_window(self, window: CanaryWindow) -> WindowJudgement:
        """Close a test's window with a reading (within budget) and judge it.

        ``disturbed`` when, in the reading before or after the test, some kind is slower than
        the session level beyond its floor; ``unread`` when neither reading exists.
        """
        # The floors the after-reading is judged by: those in force before it joins the level.
        floors = dict(self.level.floors)
        after = self.read_between()
        ratios_after = self._last[1] if after is not None and self._last is not None else {}
        worst = dict(window.ratios_before)
        for k, v in ratios_after.items():
            worst[k] = max(v, worst.get(k, v))
        disturbed = tuple(k for k in floors if worst.get(k, 0.0) > floors[k])
        state: WindowState = "disturbed" if disturbed else "quiet"
        if window.before is None and after is None:
            state = "unread"
        judgement = WindowJudgement(
            test_id=window.test_id,
            state=state,
            ratios_before=dict(window.ratios_before),
            ratios_after=ratios_after,
            floors=floors,
            disturbed_kinds=disturbed,
            opened_at_s=window.opened_at_s,
            closed_at_s=self.now_s(),
            attempt=window.attempt,
        )
        self._windows.append(judgement)
        return judgement

    def wait_for_recovery(
        self, kinds: Sequence[str] | None = None, *, test_id: str | None = None
    ) -> Recovery:
        """Pause and re-read until ``kinds`` (default: all) are back within their floors.

        Pauses grow from ``recovery_first_pause_s`` by ``recovery_backoff``; gives up after
        ``recovery_max_reads`` readings or once ``recovery_max_wait_s`` has passed (the last
        pause is shortened so the wait overruns the bound by at most one reading). The readings
        count against the budget but are not refused by it: the bounds limit them. They do not
        join the session level: taken because the host looked disturbed, they would bias it.
        Once all waits together have taken ``recovery_budget_share`` of the run, returns at once
        with ``budget_spent``.
        """
        level = self.level
        s = self.settings
        watched = tuple(k for k in (kinds or tuple(level.floors)) if k in level.floors)
        begin = self._clock()
        assert self._run_origin_ns is not None
        allowed_ns = s.recovery_budget_share * (begin - self._run_origin_ns)
        if self._ledger.recovery_ns > 0 and self._ledger.recovery_ns >= allowed_ns:
            recovery = Recovery(
                recovered=False,
                waited_s=0.0,
                reads=0,
                last_ratios={},
                kinds=watched,
                test_id=test_id,
                budget_spent=True,
            )
            self._recoveries.append(recovery)
            return recovery
        deadline_ns = begin + s.recovery_max_wait_s * 1e9
        pause = s.recovery_first_pause_s
        reads = 0
        ratios: dict[str, float] = {}
        recovered = False
        while reads < s.recovery_max_reads:
            remaining_s = (deadline_ns - self._clock()) / 1e9
            if remaining_s <= 0:
                break
            self._sleep(min(pause, remaining_s))
            pause *= s.recovery_backoff
            reading = self.read()
            self._ledger.charge(reading.cost_s, fixed=False)
            reads += 1
            ratios = self._ratios(reading)
            self._last = (reading, ratios)
            if all(ratios.get(k, math.inf) <= level.floors[k] for k in watched):
                recovered = True
                break
        self._ledger.recovery_ns += self._clock() - begin
        recovery = Recovery(
            recovered=recovered,
            waited_s=(self._clock() - begin) / 1e9,
            reads=reads,
            last_ratios=ratios,
            kinds=watched,
            test_id=test_id,
        )
        self._recoveries.append(recovery)
        return recovery

    def finish(self) -> CanarySummary:
        """Take the end-of-session readings and return the summary for the run document."""
        self._require_level()
        readings = []
        for _ in range(self.settings.end_readings):
            reading = self.read()
            self._ledger.charge(reading.cost_s, fixed=True)
            readings.append(reading)
        return self.summary(end=_level_of(readings, self.settings))

    def summary(self, *, end: CanaryLevel | None = None) -> CanarySummary:
        """The summary so far (``finish`` adds the end level)."""
        self._require_level()
        assert self._start is not None and self._run_origin_ns is not None
        ledger = self._ledger
        return CanarySummary(
            spec=dict(self.kernels.spec),
            start=self._start,
            # Every reading counts here, whatever the recompute schedule left in force.
            session=_level_from_logs(self._logs, self.settings, self._first_at_s),
            end=end,
            windows=tuple(self._windows),
            recoveries=tuple(self._recoveries),
            cost=CanaryCost(
                fixed_s=ledger.fixed_ns / 1e9,
                between_s=ledger.between_ns / 1e9,
                run_s=max(0, self._budget_base_ns()) / 1e9,
                readings=ledger.readings,
                skipped=ledger.skipped,
                recovery_wait_s=ledger.recovery_ns / 1e9,
            ),
        )

    # -- internals
    @staticmethod
    def _age_s(reading: CanaryReading, now_s: float) -> float:
        return now_s - (reading.at_s + reading.cost_s)

    def _budget_base_ns(self) -> int:
        """The time the budget is a share of: since :meth:`start`, or the process's busy time."""
        assert self._run_origin_ns is not None
        return self._clock() - self._run_origin_ns if self._busy_ns is None else self._busy_ns()

    def _within_budget(self) -> bool:
        """Would one more reading keep the canary's time within its share of the run?"""
        ledger = self._ledger
        expected = statistics.median(ledger.recent_costs_ns) if ledger.recent_costs_ns else 0.0
        run_ns = self._budget_base_ns()
        return ledger.between_ns + expected <= self.settings.budget_share * (run_ns + expected)

    def _ratios(self, reading: CanaryReading) -> dict[str, float]:
        levels = self.level.levels_s if self._level is not None else {}
        return {
            k: reading.levels_s[k] / v for k, v in levels.items() if k in reading.levels_s and v > 0
        }


def _level_of(readings: Sequence[CanaryReading], settings: CanarySettings) -> CanaryLevel:
    """Median level per kind, and floors from the readings' robust spread in log units."""
    kinds = [k for k in readings[0].levels_s if all(k in r.levels_s for r in readings)]
    logs = {k: [math.log(max(r.levels_s[k], 1e-12)) for r in readings] for k in kinds}
    return _level_from_logs(logs, settings, readings[0].at_s)


def _level_from_logs(
    logs: Mapping[str, Sequence[float]], settings: CanarySettings, at_s: float
) -> CanaryLevel:
    levels: dict[str, float] = {}
    spread: dict[str, float] = {}
    floors: dict[str, float] = {}
    lo, hi = math.log(settings.min_floor), math.log(settings.max_floor)
    for kind, values in logs.items():
        array = np.asarray(values, dtype=np.float64)
        center = float(np.median(array))
        levels[kind] = math.exp(center)
        # 1.4826 x MAD: the standard deviation of normal data, robust to disturbed readings
        # while they are a minority (Huber, Robust Statistics, 1981).
        spread[kind] = (
            _MAD_TO_SD * float(np.median(np.abs(array - center))) if array.size > 1 else 0.0
        )
        floors[kind] = math.exp(min(hi, max(lo, settings.floor_z * spread[kind])))
    return CanaryLevel(
        at_s=at_s,
        levels_s=levels,
        floors=floors,
        spread=spread,
        readings=min((len(v) for v in logs.values()), default=0),
    )


# --------------------------------------------------------------------------- JSON helpers
def _number(d: Mapping[str, object], key: str, where: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {key} must be a number, got {value!r}")
    return float(value)


def _numbers(d: Mapping[str, object], key: str, where: str) -> dict[str, float]:
    value = d.get(key, {})
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {key} must be a mapping")
    out: dict[str, float] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{where}: {key}.{k} must be a number, got {v!r}")
        out[str(k)] = float(v)
    return out


def _sub(d: Mapping[str, object], key: str, where: str) -> Mapping[str, object]:
    value = d.get(key)
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {key} must be a mapping")
    return value


def _list(d: Mapping[str, object], key: str, where: str) -> list[Mapping[str, object]]:
    value = d.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise ValueError(f"{where}: {key} must be a list of mappings")
    return value
