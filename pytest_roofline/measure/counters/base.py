"""Counter protocol, statuses, readings and the session that drives backends around a region.

A *backend* (``rusage``, ``perf``, ``nvml``, or one a plugin adds) knows a fixed set of counters,
each named ``<backend>.<quantity>_<unit>``. It is probed once per session, then started and stopped
around each measured region (one test's whole sampling loop, never one sample). The
:class:`CounterSession` turns what the backends return into a :class:`CounterReading`: a status for
every requested counter, values for the ones collected, completeness and the CPU share.

Missing counters are statuses, never errors: a backend that raises in ``probe``, ``start`` or
``stop`` marks its counters ``invalid`` and the session carries on.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args, runtime_checkable

__all__ = [
    "COUNTER_STATUSES",
    "TASK_CLOCK",
    "WALL_S",
    "BackendDetails",
    "CounterBackend",
    "CounterReading",
    "CounterSession",
    "CounterStatus",
    "DeclaresCounters",
    "RegionHandle",
    "ReportsDetails",
]

CounterStatus = Literal["ok", "unsupported", "denied", "invalid"]
"""``ok``: collected. ``unsupported``: this machine, kernel, driver or library does not provide it.
``denied``: it exists but permission is refused (``perf_event_paranoid``, seccomp, NVML
permissions). ``invalid``: it was attempted and failed, or its value cannot be trusted."""

COUNTER_STATUSES: tuple[CounterStatus, ...] = get_args(CounterStatus)

WALL_S = "wall_s"
"""The one counter every session collects: wall-clock seconds of the region."""

TASK_CLOCK = "perf.task_clock_s"
"""The counter that :attr:`CounterReading.cpu_share` is computed from."""


@runtime_checkable
class CounterBackend(Protocol):
    """A source of counters, driven by a :class:`CounterSession`.

    Counter names are ``<name>.<quantity>`` with the unit in the name (``perf.task_clock_s``).
    """

    name: str

    def probe(self) -> Mapping[str, CounterStatus]:
        """Find which counters work here; called once per session.

        A missing counter is a status, never an exception.
        """

    def start(self) -> None:
        """Begin a measured region."""

    def stop(self) -> Mapping[str, float]:
        """End the region and return values for counters whose status is ``ok``."""

    def close(self) -> None:
        """Release every resource (file descriptors, libraries); the backend is not used again."""


@dataclass(frozen=True, slots=True)
class BackendDetails:
    """What a backend can say about its last ``probe()`` or ``stop()`` beyond the values.

    ``threads``: threads its counters covered; ``busy_threads``: how many of those were busy
    enough to count towards :attr:`CounterReading.cpu_share` (already capped at the CPUs the
    process may run on).
    """

    notes: tuple[str, ...] = ()
    threads: int | None = None
    busy_threads: int | None = None


@runtime_checkable
class ReportsDetails(Protocol):
    """Optional: a backend with notes (multiplexing, uncovered threads, throttle names)."""

    def details(self) -> BackendDetails:
        """Return details of the most recent ``probe()`` or ``stop()``."""


@runtime_checkable
class DeclaresCounters(Protocol):
    """Optional: a backend that names its counters before probing.

    Lets the session mark them ``invalid`` when ``probe()`` itself raises.
    """

    counters: tuple[str, ...]


def _check_status(name: str, status: object) -> CounterStatus:
    for known in COUNTER_STATUSES:
        if status == known:
            return known
    raise ValueError(
        f"counter {name!r}: status {status!r} is not one of {', '.join(COUNTER_STATUSES)}"
    )


@dataclass(frozen=True, slots=True)
class CounterReading:
    """Counters over one measured region.

    Attributes
    ----------
    status
        A status for every requested counter (this reading's: a counter that probed ``ok`` is
        ``invalid`` here when its backend failed during the region).
    values
        Values for the requested counters whose status is ``ok``; the unit is in the name.
    completeness
        Collected ÷ requested, in [0, 1]. 1.0 when nothing was requested: nothing is missing.
    cpu_share
        ``perf.task_clock_s`` ÷ ``wall_s`` ÷ busy threads; near 1.0 when the measured threads
        had their CPUs to themselves, lower when they waited (steal, a co-running process).
        ``None`` without task-clock.
    wall_s
        Wall-clock seconds of the region.
    threads
        Threads covered by the perf counters (``None`` without them).
    notes
        Human-readable caveats: multiplexing, threads not covered, throttle reasons, failures.

    Treat the mappings as read-only; they are private copies.
    """

    status: Mapping[str, CounterStatus]
    values: Mapping[str, float]
    completeness: float
    cpu_share: float | None
    wall_s: float
    threads: int | None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        status = {str(k): _check_status(str(k), v) for k, v in self.status.items()}
        values = {str(k): float(v) for k, v in self.values.items()}
        stray = sorted(k for k in values if status.get(k) != "ok")
        if stray:
            raise ValueError(f"values given for counters whose status is not 'ok': {stray}")
        if not 0.0 <= self.completeness <= 1.0:
            raise ValueError(f"completeness must be in [0, 1], got {self.completeness!r}")
        # Copies, so a caller mutating its own dict cannot change a frozen reading.
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "notes", tuple(str(n) for n in self.notes))

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict; :meth:`from_dict` reverses it."""
        return {
            "status": dict(self.status),
            "values": dict(self.values),
            "completeness": self.completeness,
            "cpu_share": self.cpu_share,
            "wall_s": self.wall_s,
            "threads": self.threads,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> CounterReading:
        """Rebuild a reading from :meth:`to_dict` output; a malformed dict raises ``ValueError``
        naming the key."""
        status = _mapping(d, "status")
        values = _mapping(d, "values")
        notes = d.get("notes", [])
        if not isinstance(notes, (list, tuple)) or not all(isinstance(n, str) for n in notes):
            raise ValueError("counter reading: 'notes' must be a list of strings")
        return cls(
            status={k: _check_status(k, v) for k, v in status.items()},
            values={k: _number(f"values.{k}", v) for k, v in values.items()},
            completeness=_number("completeness", d.get("completeness")),
            cpu_share=_optional_number("cpu_share", d.get("cpu_share")),
            wall_s=_number("wall_s", d.get("wall_s")),
            threads=_optional_int("threads", d.get("threads")),
            notes=tuple(notes),
        )


def _mapping(d: Mapping[str, object], key: str) -> dict[str, object]:
    value = d.get(key)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"counter reading: {key!r} must be a mapping of counter name to value")
    return dict(value)


def _number(key: str, value: object) -> float:
    # bool is an int subclass; True as a counter value is a data error, not 1.0.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"counter reading: {key!r} must be a number, got {value!r}")
    return float(value)


def _optional_number(key: str, value: object) -> float | None:
    return None if value is None else _number(key, value)


def _optional_int(key: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"counter reading: {key!r} must be an integer or null, got {value!r}")
    return value


class RegionHandle:
    """Yielded by :meth:`CounterSession.measure`; ``reading`` is set when the block exits."""

    __slots__ = ("reading",)

    def __init__(self) -> None:
        self.reading: CounterReading | None = None


@dataclass(slots=True)
class _BackendState:
    backend: CounterBackend
    probe_failed: bool = False


class CounterSession:
    """Probe backends once, then measure regions with them.

    Parameters
    ----------
    backends
        Started in this order and stopped in reverse, so the last one wraps the region most
        tightly (``default_backends`` puts the per-thread perf counters last).
    requested
        Counter names to report. ``None``: ``wall_s`` plus every counter the backends know.
        A name no backend provides is reported ``unsupported``.
    clock
        Seconds, for ``wall_s``; injected in tests.

    Use :meth:`start` / :meth:`stop`, or ``with session.measure() as region: ...`` and read
    ``region.reading`` afterwards. Errors raised by backends never escape; calling ``stop()``
    without ``start()`` (or ``start()`` twice) is a programming error and raises
    ``RuntimeError``.
    """

    def __init__(
        self,
        backends: Sequence[CounterBackend],
        *,
        requested: Sequence[str] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._states = [_BackendState(b) for b in backends]
        self._requested_arg = None if requested is None else tuple(dict.fromkeys(requested))
        self._clock = clock
        self._probed: dict[str, CounterStatus] | None = None
        self._known: dict[str, CounterStatus] = {}
        self._requested: tuple[str, ...] = ()
        self._owner: dict[str, _BackendState] = {}
        self._probe_notes: list[str] = []
        self._started: list[_BackendState] = []
        self._region_notes: list[str] = []
        self._failed: set[int] = set()  # id() of backend states that failed this region
        self._t0: float | None = None
        self._closed = False

    @property
    def backends(self) -> tuple[CounterBackend, ...]:
        return tuple(s.backend for s in self._states)

    @property
    def requested(self) -> tuple[str, ...]:
        """The counters every reading reports (after :meth:`probe`)."""
        self.probe()
        return self._requested

    @property
    def probe_notes(self) -> tuple[str, ...]:
        """Notes from probing (why a counter is unsupported or denied); also in every reading."""
        self.probe()
        return tuple(self._probe_notes)

    def probe(self) -> Mapping[str, CounterStatus]:
        """Probe every backend once (later calls return the cached result).

        Returns the status of every requested counter.
        """
        if self._probed is not None:
            return dict(self._probed)
        known: dict[str, CounterStatus] = {WALL_S: "ok"}
        for state in self._states:
            backend = state.backend
            name = _backend_name(backend)
            try:
                statuses = dict(backend.probe())
            except Exception as exc:
                state.probe_failed = True
                self._probe_notes.append(
                    f"{name}: probe raised {type(exc).__name__}: {exc}; its counters are invalid"
                )
                declared = backend.counters if isinstance(backend, DeclaresCounters) else ()
                statuses = dict.fromkeys(declared, "invalid")
            for counter, status in statuses.items():
                try:
                    checked = _check_status(counter, status)
                except ValueError as exc:
                    self._probe_notes.append(f"{name}: {exc}; treated as invalid")
                    checked = "invalid"
                if counter in known:
                    self._probe_notes.append(
                        f"{counter}: also provided by backend {name!r}; the first one is used"
                    )
                    continue
                known[counter] = checked
                self._owner[counter] = state
            self._probe_notes.extend(_details(backend, name, self._probe_notes).notes)

        requested = tuple(known) if self._requested_arg is None else self._requested_arg
        result: dict[str, CounterStatus] = {}
        for counter in requested:
            if counter in known:
                result[counter] = known[counter]
                continue
            # A counter of a backend whose probe raised is invalid, not unsupported: the
            # backend exists and claims the namespace, it just failed.
            failed = next(
                (
                    s
                    for s in self._states
                    if s.probe_failed and counter.startswith(_backend_name(s.backend) + ".")
                ),
                None,
            )
            if failed is not None:
                result[counter] = "invalid"
                self._owner[counter] = failed
            else:
                result[counter] = "unsupported"
                self._probe_notes.append(f"{counter}: no counter backend provides it")
        self._requested = requested
        self._known = known
        self._probed = result
        return dict(result)

    def start(self) -> None:
        """Start every backend with a requested counter that is ``ok`` (and the one providing
        task-clock, for ``cpu_share``), then the clock."""
        if self._closed:
            raise RuntimeError("CounterSession.start() after close()")
        if self._t0 is not None:
            raise RuntimeError("CounterSession.start() called twice without stop()")
        statuses = self.probe()
        self._region_notes = []
        self._failed = set()
        self._started = []
        wanted = {id(self._owner[c]) for c, s in statuses.items() if s == "ok" and c != WALL_S}
        if self._known.get(TASK_CLOCK) == "ok":
            # cpu_share is evidence about every measurement, requested counter or not.
            wanted.add(id(self._owner[TASK_CLOCK]))
        for state in self._states:
            if id(state) not in wanted:
                continue
            try:
                state.backend.start()
            except Exception as exc:
                self._fail(state, "start", exc)
                continue
            self._started.append(state)
        self._t0 = self._clock()

    def stop(self) -> CounterReading:
        """Stop the clock, then the backends in reverse order, and return the reading."""
        t1 = self._clock()
        if self._t0 is None:
            raise RuntimeError("CounterSession.stop() called without start()")
        wall_s = max(0.0, t1 - self._t0)
        self._t0 = None
        raw: dict[str, float] = {}
        task_clock_details: BackendDetails | None = None
        for state in reversed(self._started):
            name = _backend_name(state.backend)
            try:
                values = dict(state.backend.stop())
            except Exception as exc:
                self._fail(state, "stop", exc)
                continue
            details = _details(state.backend, name, self._region_notes)
            self._region_notes.extend(details.notes)
            for counter, value in values.items():
                if self._owner.get(counter) is not state:
                    continue  # not this backend's counter (or a duplicate name): ignore
                try:
                    number = float(value)
                except (TypeError, ValueError):
                    number = math.nan
                if not math.isfinite(number):
                    self._region_notes.append(f"{counter}: non-finite value {value!r}")
                    continue
                raw[counter] = number
                if counter == TASK_CLOCK:
                    task_clock_details = details
        self._started = []
        return self._reading(raw, wall_s, task_clock_details)

    @contextlib.contextmanager
    def measure(self) -> Iterator[RegionHandle]:
        """Measure the ``with`` block; the handle's ``reading`` is set on exit (even on error)."""
        handle = RegionHandle()
        self.start()
        try:
            yield handle
        finally:
            handle.reading = self.stop()

    def close(self) -> None:
        """Close every backend (errors are swallowed: closing must not fail a test run)."""
        if self._closed:
            return
        self._closed = True
        for state in reversed(self._states):
            # A failed close has nothing useful to tell the run; it must not fail it either.
            with contextlib.suppress(Exception):
                state.backend.close()

    def __enter__(self) -> CounterSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _fail(self, state: _BackendState, phase: str, exc: Exception) -> None:
        self._failed.add(id(state))
        self._region_notes.append(
            f"{_backend_name(state.backend)}: {phase}() raised {type(exc).__name__}: {exc}; "
            "its counters are invalid for this region"
        )

    def _reading(
        self, raw: Mapping[str, float], wall_s: float, task_clock: BackendDetails | None
    ) -> CounterReading:
        assert self._probed is not None
        status: dict[str, CounterStatus] = {}
        values: dict[str, float] = {}
        for counter in self._requested:
            probed = self._probed[counter]
            if counter == WALL_S:
                status[counter] = "ok"
                values[counter] = wall_s
                continue
            owner = self._owner.get(counter)
            if probed != "ok" or owner is None:
                status[counter] = probed
            elif id(owner) in self._failed:
                status[counter] = "invalid"
            elif counter in raw:
                status[counter] = "ok"
                values[counter] = raw[counter]
            else:
                status[counter] = "invalid"
                self._region_notes.append(f"{counter}: probed ok but no value this region")
        completeness = len(values) / len(self._requested) if self._requested else 1.0

        cpu_share: float | None = None
        threads: int | None = None
        if task_clock is not None:
            threads = task_clock.threads
            busy = task_clock.busy_threads or task_clock.threads or 1
            if wall_s > 0.0 and TASK_CLOCK in raw:
                cpu_share = raw[TASK_CLOCK] / wall_s / max(1, busy)
        return CounterReading(
            status=status,
            values=values,
            completeness=completeness,
            cpu_share=cpu_share,
            wall_s=wall_s,
            threads=threads,
            notes=(*self._probe_notes, *self._region_notes),
        )


def _backend_name(backend: object) -> str:
    name = getattr(backend, "name", None)
    return name if isinstance(name, str) else type(backend).__name__


def _details(backend: object, name: str, notes: list[str]) -> BackendDetails:
    if not isinstance(backend, ReportsDetails):
        return BackendDetails()
    try:
        details = backend.details()
    except Exception as exc:
        notes.append(f"{name}: details() raised {type(exc).__name__}: {exc}")
        return BackendDetails()
    return details if isinstance(details, BackendDetails) else BackendDetails()
