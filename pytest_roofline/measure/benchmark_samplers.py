"""Samplers with pytest-benchmark's semantics: its marker's extras, and ``pedantic`` rounds.

Pure (no pytest). :class:`CompatSampler` is pytest-roofline's sampler plus what
``@pytest.mark.benchmark(warmup=..., disable_gc=...)`` asks for; :class:`PedanticSampler` runs
exactly the rounds ``benchmark.pedantic(...)`` asks for, with a fresh ``setup`` per round;
:func:`sampling_policy_for` applies ``min_rounds``, ``max_time``, ``min_time`` and
``calibration_precision`` to a test's :class:`~pytest_roofline.measure.sampling.SamplingPolicy`;
:class:`BenchmarkStats` is ``benchmark.stats`` with pytest-benchmark's definitions. Which calls
are timed, in which order ``setup`` and ``teardown`` run, and what is validated follow
pytest-benchmark 5.x (``pytest_benchmark/fixture.py``).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from pytest_roofline.measure.sampling import Clock, Sampler, SampleSet, SamplingPolicy, StopRule

__all__ = [
    "BenchmarkStats",
    "CompatSampler",
    "PedanticSampler",
    "RoundSettings",
    "clock_precision_s",
    "measuring",
    "sampling_policy_for",
]


class RoundSettings(Protocol):
    """The ``@pytest.mark.benchmark`` settings that shape sampling (``None``: not given).

    :class:`pytest_roofline.config.benchmark_marker.BenchmarkSettings` is one.
    """

    @property
    def min_rounds(self) -> int | None: ...

    @property
    def max_time_s(self) -> float | None: ...

    @property
    def min_time_s(self) -> float | None: ...

    @property
    def calibration_precision(self) -> int | None: ...


_TIMER_PRECISION_S: list[float] = []


def clock_precision_s(clock: Clock = time.perf_counter_ns) -> float:
    """The clock's smallest observable step, measured once (pytest-benchmark's method)."""
    if not _TIMER_PRECISION_S:
        steps = []
        for _ in range(200):
            t1 = clock()
            t2 = clock()
            if t2 > t1:
                steps.append(t2 - t1)
        _TIMER_PRECISION_S.append(min(steps) / 1e9 if steps else 1e-9)
    return _TIMER_PRECISION_S[0]


def sampling_policy_for(
    policy: SamplingPolicy, settings: RoundSettings, *, timer_precision_s: float | None = None
) -> SamplingPolicy:
    """The test's sampling policy with its ``@pytest.mark.benchmark`` settings applied.

    ``max_time`` is the sampling budget; ``min_rounds`` the minimum sample count (a round and a
    sample are the same thing: one timed batch). ``min_time`` and ``calibration_precision`` are
    lower bounds on a round's duration in pytest-benchmark; our batch target (20 µs per sample)
    is raised to meet them and never lowered, so both keep their meaning; the warm-up then
    lasts at least two such rounds, so the batch size is estimated from enough calls.
    """
    changes: dict[str, Any] = {}
    if settings.max_time_s is not None:
        changes["budget_s"] = settings.max_time_s
    if settings.min_rounds is not None:
        changes["min_samples"] = settings.min_rounds
        changes["max_samples"] = max(policy.max_samples, settings.min_rounds)
    floor = policy.min_sample_s
    if settings.min_time_s is not None:
        floor = max(floor, settings.min_time_s)
    if settings.calibration_precision is not None:
        precision = timer_precision_s if timer_precision_s is not None else clock_precision_s()
        floor = max(floor, precision * settings.calibration_precision)
    if floor != policy.min_sample_s:
        changes["min_sample_s"] = floor
        # The batch size comes from the warm-up's typical call; a warm-up that spans a couple
        # of rounds makes that estimate robust (pytest-benchmark calibrates for as long).
        changes["warmup_s"] = max(policy.warmup_s, 2 * floor)
    return replace(policy, **changes) if changes else policy


# --------------------------------------------------------------------------- samplers
@contextmanager
def measuring(disable_gc: bool) -> Iterator[bool]:
    """Pause tracers and profilers (coverage) and, if asked, the garbage collector.

    Yields whether a tracer or profiler was paused (then the caller makes one traced call, as
    pytest-benchmark does, so coverage still sees the measured code).
    """
    tracer, profiler = sys.gettrace(), sys.getprofile()
    if tracer is not None:
        sys.settrace(None)
    if profiler is not None:
        sys.setprofile(None)
    gc_enabled = gc.isenabled()
    if disable_gc:
        gc.disable()
    try:
        yield tracer is not None or profiler is not None
    finally:
        if disable_gc and gc_enabled:
            gc.enable()
        if tracer is not None:
            sys.settrace(tracer)
        if profiler is not None:
            sys.setprofile(profiler)


class CompatSampler(Sampler):
    """The call form's sampler: pytest-roofline's loop plus pytest-benchmark's extras.

    ``warmup_iterations`` > 0 (``warmup=True``) first calls ``fn`` up to that many times or for
    ``warmup_limit_s`` (pytest-benchmark's warm-up obeys max_time), before the sampler's own
    time-bounded warm-up. ``disable_gc`` switches the collector off while measuring.
    """

    def __init__(
        self,
        policy: SamplingPolicy,
        *,
        clock: Clock = time.perf_counter_ns,
        stop_rule: StopRule | None = None,
        disable_gc: bool = False,
        warmup_iterations: int = 0,
        warmup_limit_s: float = 0.0,
    ) -> None:
        super().__init__(policy, clock=clock, stop_rule=stop_rule)
        self._compat_clock = clock
        self._disable_gc = disable_gc
        self._warmup_iterations = warmup_iterations
        self._warmup_limit_ns = warmup_limit_s * 1e9

    def run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        sync: Callable[[], object] | None = None,
        on_start: Callable[[], object] | None = None,
    ) -> tuple[Any, SampleSet]:
        kwargs = dict(kwargs or {})
        with measuring(self._disable_gc) as traced:
            if self._warmup_iterations > 0:
                clock, start = self._compat_clock, self._compat_clock()
                for _ in range(self._warmup_iterations):
                    fn(*args, **kwargs)
                    if clock() - start >= self._warmup_limit_ns:
                        break
            result, samples = super().run(fn, args, kwargs, sync=sync, on_start=on_start)
        if traced:
            result = fn(*args, **kwargs)
        return result, samples


class PedanticSampler(Sampler):
    """``benchmark.pedantic``: exactly ``rounds`` timed rounds of ``iterations`` calls each.

    Per round: ``setup()`` (untimed; it may return ``(args, kwargs)``), the timed calls, then
    ``teardown(*args, **kwargs)`` (untimed). ``warmup_rounds`` rounds run the same way first,
    untimed. Each sample is a round's time divided by ``iterations`` (so ``batch_size`` is
    ``iterations``). With ``iterations > 1`` one extra untimed call supplies the result, as in
    pytest-benchmark. The stop rule and the budget do not apply: pedantic means "as asked".
    """

    def __init__(
        self,
        *,
        rounds: int,
        iterations: int,
        warmup_rounds: int,
        setup: Callable[[], Any] | None,
        teardown: Callable[..., Any] | None,
        has_args: bool,
        clock: Clock = time.perf_counter_ns,
        disable_gc: bool = False,
    ) -> None:
        super().__init__(
            SamplingPolicy(budget_s=0.0, min_samples=rounds, max_samples=rounds, warmup_s=0.0),
            clock=clock,
        )
        self._rounds = rounds
        self._iterations = iterations
        self._warmup_rounds = warmup_rounds
        self._setup = setup
        self._teardown = teardown
        self._has_args = has_args
        self._clock_ns = clock
        self._disable_gc = disable_gc

    def arguments(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self._setup is None:
            return args, kwargs
        made = self._setup()
        if made:
            if self._has_args:
                raise TypeError("Can't use `args` or `kwargs` if `setup` returns the arguments.")
            new_args, new_kwargs = made
            return tuple(new_args), dict(new_kwargs)
        return args, kwargs

    def _round(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        sync: Callable[[], object] | None,
    ) -> tuple[Any, int]:
        """One timed round; returns the last result (``iterations == 1``) and nanoseconds.

        Specialised like the sampler's batch loop: ``fn()`` costs less than ``fn(*(), **{})``,
        and for a sub-microsecond function that difference is the measurement's overhead.
        """
        clock = self._clock_ns
        result = None
        if self._iterations == 1:
            if not args and not kwargs:
                start = clock()
                result = fn()
                if sync is not None:
                    sync()
                end = clock()
            elif not kwargs:
                start = clock()
                result = fn(*args)
                if sync is not None:
                    sync()
                end = clock()
            else:
                start = clock()
                result = fn(*args, **kwargs)
                if sync is not None:
                    sync()
                end = clock()
            return result, end - start
        loops = range(self._iterations)
        if not args and not kwargs:
            start = clock()
            for _ in loops:
                fn()
            if sync is not None:
                sync()
            end = clock()
        else:
            start = clock()
            for _ in loops:
                fn(*args, **kwargs)
            if sync is not None:
                sync()
            end = clock()
        return result, end - start

    def run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        sync: Callable[[], object] | None = None,
        on_start: Callable[[], object] | None = None,
    ) -> tuple[Any, SampleSet]:
        base_kwargs = dict(kwargs or {})
        clock, teardown = self._clock_ns, self._teardown
        samples = np.empty(self._rounds, dtype=np.float64)
        result: Any = None
        with measuring(self._disable_gc) as traced:
            if sync is not None:
                sync()
            warmup_start = clock()
            for _ in range(self._warmup_rounds):
                call_args, call_kwargs = self.arguments(args, base_kwargs)
                self._round(fn, call_args, call_kwargs, sync)
                if teardown is not None:
                    teardown(*call_args, **call_kwargs)
            warmup_ns = clock() - warmup_start
            if on_start is not None:
                on_start()
            begin = clock()
            for index in range(self._rounds):
                call_args, call_kwargs = self.arguments(args, base_kwargs)
                result, elapsed_ns = self._round(fn, call_args, call_kwargs, sync)
                samples[index] = elapsed_ns / self._iterations / 1e9
                if teardown is not None:
                    teardown(*call_args, **call_kwargs)
            elapsed_s = (clock() - begin) / 1e9
        if self._iterations > 1 or traced:
            # The timed loop keeps no result (pytest-benchmark makes this same extra call), and
            # under a tracer (coverage) this traced call lets it see the measured code.
            call_args, call_kwargs = self.arguments(args, base_kwargs)
            result = fn(*call_args, **call_kwargs)
            if teardown is not None:
                teardown(*call_args, **call_kwargs)
        sample_set = SampleSet(
            samples_s=samples,
            batch_size=self._iterations,
            warmup_calls=self._warmup_rounds * self._iterations,
            warmup_s=warmup_ns / 1e9,
            stop_reason="rounds",
            elapsed_s=elapsed_s,
            synced=sync is not None,
        )
        return result, sample_set


# --------------------------------------------------------------------------- stats
class BenchmarkStats:
    """``benchmark.stats`` after a measurement: pytest-benchmark's statistics of the rounds.

    ``stats["mean"]``, ``stats.stats.mean`` and ``stats.get("mean")`` all work, as in
    pytest-benchmark (``Metadata`` / ``Stats``); times are per call, in seconds.
    """

    fields = ("min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3", "ops", "total")

    def __init__(self, samples_s: np.ndarray, iterations: int) -> None:
        self.data: list[float] = [float(x) for x in samples_s]
        self.iterations = iterations
        self._sorted = sorted(self.data)

    @property
    def stats(self) -> BenchmarkStats:
        return self

    def __bool__(self) -> bool:
        return bool(self.data)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.fields}

    @property
    def min(self) -> float:
        return self._sorted[0]

    @property
    def max(self) -> float:
        return self._sorted[-1]

    @property
    def mean(self) -> float:
        return statistics.mean(self.data)

    @property
    def stddev(self) -> float:
        return statistics.stdev(self.data) if len(self.data) > 1 else 0.0

    @property
    def rounds(self) -> int:
        return len(self.data)

    @property
    def median(self) -> float:
        return statistics.median(self.data)

    @property
    def total(self) -> float:
        return sum(self.data)

    @property
    def ops(self) -> float:
        total = self.total
        return self.rounds / total if total else 0.0

    def _quartile(self, upper: bool) -> float:
        # pytest-benchmark's quartiles (Wikipedia "Quartile", methods 2 and 3), so a test that
        # asserts on q1/q3/iqr sees the same definition.
        data, rounds = self._sorted, len(self._sorted)
        if rounds == 1:
            return data[0]
        if rounds % 2 == 0:
            half = data[rounds // 2 :] if upper else data[: rounds // 2]
            return float(statistics.median(half))
        n, q = rounds // 4, rounds % 4
        if upper:
            if q == 1:
                return 0.75 * data[3 * n] + 0.25 * data[3 * n + 1]
            return 0.25 * data[3 * n + 1] + 0.75 * data[3 * n + 2]
        if q == 1:
            return 0.25 * data[n - 1] + 0.75 * data[n]
        return 0.75 * data[n] + 0.25 * data[n + 1]

    @property
    def q1(self) -> float:
        return self._quartile(upper=False)

    @property
    def q3(self) -> float:
        return self._quartile(upper=True)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1
