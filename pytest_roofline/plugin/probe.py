"""The ``roofline`` fixture's object: measure one callable, take declarations and quality records."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
import pytest

from pytest_roofline.errors import ConfigError, RooflineWarning
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.measure.counters import CounterReading, CounterSession
from pytest_roofline.measure.hostwatch import HostRecord, HostWatch
from pytest_roofline.measure.measurement import Measurement, QualityRecord
from pytest_roofline.measure.sampling import Sampler, SampleSet
from pytest_roofline.measure.soak import SoakMeasurement
from pytest_roofline.model.results import QuantileSummary, summarize
from pytest_roofline.roofline import DeclaredWork, RooflinePoint, declared_work

__all__ = ["ProbeMeasurement", "RooflineProbe", "SoakRunner"]


def _lazy_kind(result: object) -> str | None:
    """What unfinished work ``result`` is (a generator, a coroutine...), or ``None``."""
    if inspect.isgenerator(result):
        return "generator"
    if inspect.iscoroutine(result):
        return "coroutine"
    if inspect.isasyncgen(result):
        return "asynchronous generator"
    if inspect.isawaitable(result):
        return "awaitable"
    return None


T = TypeVar("T")

SoakRunner = Callable[
    [Callable[..., Any], tuple[Any, ...], dict[str, Any], "Callable[[], object] | None", int],
    tuple[Any, SoakMeasurement],
]
"""Soaks a measured callable: ``(fn, args, kwargs, sync, batch_size) -> (result, soak)``
(:func:`pytest_roofline.measure.soak.run_soak` with the session's clock and host monitor)."""


@dataclass(frozen=True, slots=True, eq=False)
class ProbeMeasurement:
    """What a test can inspect after ``roofline(fn)``: samples, quantiles, roofline point, counters."""

    samples_s: np.ndarray
    batch_size: int
    stop_reason: str
    summary: QuantileSummary
    declared: DeclaredWork | None
    roofline: RooflinePoint | None
    counters: CounterReading | None

    @property
    def p50_s(self) -> float | None:
        return self.summary.p50_s

    @property
    def p95_s(self) -> float | None:
        return self.summary.p95_s

    @property
    def p99_s(self) -> float | None:
        return self.summary.p99_s


class RooflineProbe:
    """Measures one callable per test.

    Without ``--roofline`` (``sampler is None``) a call runs ``fn`` once and records nothing, so a
    performance suite still runs as fast functional tests.
    """

    def __init__(
        self,
        *,
        nodeid: str,
        precision: str | None,
        sampler: Sampler | None,
        counters: CounterSession | None = None,
        target: Callable[[], HardwareTarget | None] | None = None,
        replays_for: Callable[[np.ndarray], int] | None = None,
        lock: AbstractContextManager[object] | None = None,
        watch: HostWatch | None = None,
        soak: SoakRunner | None = None,
    ) -> None:
        self._nodeid = nodeid
        self._default_precision = precision
        self._sampler = sampler
        self._counters = counters
        self._target = target
        self._replays_for = replays_for
        self._lock = lock if lock is not None else nullcontext()
        self._watch = watch
        self._soak_runner = soak
        self._soak: SoakMeasurement | None = None
        self._host: HostRecord | None = None
        self._replays: tuple[SampleSet, ...] = ()
        self._called = False
        self._samples: SampleSet | None = None
        self._counter_reading: CounterReading | None = None
        self._declared: DeclaredWork | None = None
        self._quality: dict[str, QualityRecord] = {}

    @property
    def enabled(self) -> bool:
        """Whether this run measures (``--roofline``) or only calls ``fn`` once."""
        return self._sampler is not None

    def __call__(
        self,
        fn: Callable[..., T],
        /,
        *args: Any,
        sync: Callable[[], object] | None = None,
        **kwargs: Any,
    ) -> T:
        """Measure ``fn(*args, **kwargs)`` and return its last result.

        :param sync: called after each timed call (or batch), for asynchronous devices, e.g.
            ``torch.cuda.synchronize``; the time it waits is part of the sample.
        """
        if self._called:
            raise pytest.UsageError(
                f"{self._nodeid}: roofline(fn) measures one callable per test and was called twice; "
                "split the measurements into separate tests (or slices)"
            )
        if not callable(fn):
            raise pytest.UsageError(
                f"{self._nodeid}: roofline(fn): fn must be callable, got {fn!r}"
            )
        if sync is not None and not callable(sync):
            raise pytest.UsageError(
                f"{self._nodeid}: roofline(fn, sync=...) must be callable, got {sync!r}"
            )
        self._called = True
        if self._sampler is None:
            result = fn(*args, **kwargs)
            if sync is not None:
                sync()
            self._warn_if_lazy(fn, result)
            return result
        with self._lock:  # under xdist: no other worker measures meanwhile
            if self._watch is None:
                result = self._measure(fn, args, kwargs, sync)
            else:
                # A window the host canary saw disturbed is measured again once it recovers;
                # the kept attempt's samples, counters and replays replace the first's.
                result, self._host = self._watch.measure(
                    self._nodeid, lambda: self._measure(fn, args, kwargs, sync)
                )
            if self._soak_runner is not None and self._samples is not None:
                # After the measurement and outside the host watch: the gate's comparison uses
                # the measurement alone, and a disturbed window re-measures it, not the soak.
                _, self._soak = self._soak_runner(fn, args, kwargs, sync, self._samples.batch_size)
        self._warn_if_lazy(fn, result)
        return result

    def _measure(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        sync: Callable[[], object] | None,
    ) -> T:
        """Sample ``fn`` with counters around the sampling phase, then replay if asked."""
        assert self._sampler is not None
        counters = self._counters
        started = False

        def start_counters() -> None:
            nonlocal started
            if counters is not None:
                counters.start()
                started = True

        try:
            result, samples = self._sampler.run(
                fn, args, kwargs, sync=sync, on_start=start_counters
            )
        except BaseException:
            if started and counters is not None:
                counters.stop()  # leave the counters closed; the failed test records nothing
            raise
        self._counter_reading = counters.stop() if started and counters is not None else None
        self._samples = samples
        # Replay: a first look that says "regression" is measured again at once, with the
        # fixtures still set up; a rollback then needs the regression to reproduce.
        count = self._replays_for(samples.samples_s) if self._replays_for is not None else 0
        replays = []
        for _ in range(count):
            result, again = self._sampler.run(fn, args, kwargs, sync=sync)
            replays.append(again)
        self._replays = tuple(replays)
        return cast(T, result)

    def _warn_if_lazy(self, fn: Callable[..., object], result: object) -> None:
        """Warn when ``fn`` returned work not yet done: only its creation was timed."""
        kind = _lazy_kind(result)
        if kind is None:
            return
        name = getattr(fn, "__qualname__", None) or repr(fn)
        remedy = (
            "lambda: asyncio.run(fn())"
            if kind == "coroutine"
            else "lambda: list(fn())"
            if kind == "generator"
            else "an async runner that consumes it"
        )
        warnings.warn(
            RooflineWarning(
                f"{self._nodeid}: roofline(fn): {name} returned a {kind}, so only creating it "
                f"was timed, not the work it does; measure a function that does the work, "
                f"e.g. roofline({remedy})"
            ),
            stacklevel=3,
        )

    def declare(
        self,
        *,
        flops: float | None = None,
        bytes_moved: float | None = None,
        precision: str | None = None,
        memory_level: str | None = None,
    ) -> None:
        """Declare the work of ONE call of the measured function (an FMA counts as 2 FLOPs).

        :param memory_level: the level ``bytes_moved`` is counted at and placed against:
            ``dram`` (default), or ``llc``, ``l2``, ``l1`` for a working set that stays in that
            cache (the target needs a roof for it; the host calibration measures ``llc``).
        """
        try:
            self._declared = declared_work(
                flops,
                bytes_moved,
                precision or self._default_precision,
                where=f"{self._nodeid}: roofline.declare()",
                memory_level=memory_level,
            )
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None

    def record_quality(
        self, name: str, value: float, *, higher_is_better: bool, tolerance: float | None = None
    ) -> None:
        """Record a quality value (an error norm, an accuracy) to compare with the baseline.

        :param tolerance: absolute worsening allowed against the baseline, in the value's unit.
        """
        try:
            record = QualityRecord.validated(
                name,
                value,
                higher_is_better,
                tolerance,
                where=f"{self._nodeid}: roofline.record_quality()",
            )
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        self._quality[record.name] = record

    @property
    def measurement(self) -> ProbeMeasurement | None:
        """The measurement so far, or ``None`` before ``roofline(fn)`` or without ``--roofline``."""
        if self._samples is None:
            return None
        summary = summarize(self._samples.samples_s)
        target = self._target() if self._target is not None else None
        point = None
        if target is not None and self._declared is not None and summary.p50_s is not None:
            point = target.place(self._declared, summary.p50_s)
        return ProbeMeasurement(
            samples_s=self._samples.samples_s,
            batch_size=self._samples.batch_size,
            stop_reason=self._samples.stop_reason,
            summary=summary,
            declared=self._declared,
            roofline=point,
            counters=self._counter_reading,
        )

    @property
    def replays(self) -> tuple[np.ndarray, ...]:
        """Samples of each replay measurement (empty unless a first look found a regression)."""
        return tuple(r.samples_s for r in self._replays)

    def finish(self) -> Measurement | None:
        """The record to ship to the controller, or ``None`` when nothing was measured."""
        if self._samples is None:
            return None
        return Measurement(
            samples=self._samples,
            declared=self._declared,
            quality=tuple(self._quality.values()),
            counters=self._counter_reading,
            host=self._host,
            soak=self._soak,
        )
