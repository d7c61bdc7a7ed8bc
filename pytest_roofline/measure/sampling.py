"""The sampling loop: warm up, batch calls too short to time alone, sample until told to stop.

Everything the loop needs from outside (the clock, the device synchronisation, the early-stop
rule) is injected, so tests drive it with a fake clock and no assertion depends on real speed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from pytest_roofline.errors import ConfigError

__all__ = ["Clock", "Look", "SampleSet", "Sampler", "SamplingPolicy", "StopReason", "StopRule"]

Clock = Callable[[], int]
"""A monotonic clock in integer nanoseconds (``time.perf_counter_ns`` by default)."""


@dataclass(frozen=True, slots=True)
class Look:
    """What a stop rule says at one look: may sampling stop, and the look's information.

    ``information`` is the look's information fraction when the rule is a group-sequential
    one (recorded in :attr:`SampleSet.looks`, so the final comparison uses the same boundary).
    """

    decided: bool
    information: float | None = None


StopRule = Callable[[np.ndarray, float], "Look | str | None"]
"""Given the per-call samples so far (seconds) and the share of the longest allowed sampling
time spent (``progress``: 1 at the cap), say whether sampling may stop: a :class:`Look`, or a
reason (``str``) to stop now, or ``None`` to go on."""

StopReason = Literal["budget", "decisive", "max_samples", "cap"]


@dataclass(frozen=True, slots=True)
class SamplingPolicy:
    """How long and how finely to sample one test.

    ``budget_s`` bounds the sampling phase. Warm-up comes first: at least ``warmup_s`` (and one
    call), then until the per-call time stops falling, at most ``warmup_max_s`` (``warmup_s``
    of 0 turns warm-up off: one call). ``min_samples`` is honoured even past the budget so every
    test yields a distribution. While the stop rule says the comparison is still undecided
    (UNKNOWN), sampling goes on past the budget up to ``max_extension`` times it (the cap; stop
    reason ``"cap"``).
    Calls shorter than ``min_sample_s`` are batched so the clock's own cost and resolution stay
    well below the quantity measured.
    """

    budget_s: float = 0.5
    min_samples: int = 10
    max_samples: int = 200_000
    warmup_s: float = 0.05
    # Warm-up ends once per-call times stop falling (see Sampler._warm_up), but never later than
    # this: a test that keeps speeding up is measured anyway, and its drift is then reported.
    warmup_max_s: float = 0.5
    # Warm-up has settled when its last window is not a new low by more than this share.
    warmup_tolerance: float = 0.02
    # ~20 µs per sample keeps perf_counter_ns overhead (~50-100 ns) under 0.5% of each sample.
    min_sample_s: float = 20e-6
    max_batch: int = 1_000_000
    # How far past the budget an undecided test is sampled (1: never).
    max_extension: float = 1.0
    # The stop rule is consulted on a geometric schedule (first at ``check_every`` samples, then
    # every ~25% more), so its cost stays a small share of sampling however long the test runs.
    check_every: int = 50

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_extension) and self.max_extension >= 1):
            raise ConfigError(
                f"sampling policy: max_extension must be a finite factor >= 1, "
                f"got {self.max_extension!r}"
            )
        for name in ("budget_s", "warmup_s", "warmup_max_s", "warmup_tolerance", "min_sample_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(
                    f"sampling policy: {name} must be a finite duration >= 0, got {value!r}"
                )
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise ConfigError(
                f"sampling policy: need 1 <= min_samples <= max_samples, "
                f"got {self.min_samples} and {self.max_samples}"
            )


@dataclass(frozen=True, slots=True, eq=False)
class SampleSet:
    """Per-call times of one measured test and how they were obtained."""

    samples_s: np.ndarray
    batch_size: int
    warmup_calls: int
    warmup_s: float
    stop_reason: str
    elapsed_s: float
    synced: bool
    # Information fraction of each look of a group-sequential stop rule, in order.
    looks: tuple[float, ...] = ()

    @property
    def batched(self) -> bool:
        """Whether each sample is the mean of several calls (tails are then not per-call tails)."""
        return self.batch_size > 1


def _batch_runner(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> Callable[[int], Any]:
    """A loop that calls ``fn`` k times and returns the last result.

    Specialised on the argument shape: ``fn()`` costs less than ``fn(*(), **{})``, and in a
    batched sample of a sub-microsecond function that difference is the measurement overhead.
    """
    if not args and not kwargs:

        def run(k: int) -> Any:
            for _ in range(k - 1):
                fn()
            return fn()

    elif not kwargs:

        def run(k: int) -> Any:
            for _ in range(k - 1):
                fn(*args)
            return fn(*args)

    else:

        def run(k: int) -> Any:
            for _ in range(k - 1):
                fn(*args, **kwargs)
            return fn(*args, **kwargs)

    return run


class Sampler:
    """Run one callable under a :class:`SamplingPolicy` and time it."""

    def __init__(
        self,
        policy: SamplingPolicy,
        *,
        clock: Clock = time.perf_counter_ns,
        stop_rule: StopRule | None = None,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._stop_rule = stop_rule

    def run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        sync: Callable[[], object] | None = None,
        on_start: Callable[[], object] | None = None,
    ) -> tuple[Any, SampleSet]:
        """Warm up, then sample; return ``fn``'s last result and the samples.

        Exceptions raised by ``fn`` or ``sync`` propagate unchanged. ``on_start`` runs once after
        warm-up, just before the first timed sample (where counters start).
        """
        kwargs = dict(kwargs or {})
        clock, policy = self._clock, self.policy

        def call_once() -> tuple[Any, int]:
            start = clock()
            value = fn(*args, **kwargs)
            if sync is not None:
                sync()
            return value, clock() - start

        if sync is not None:
            sync()  # work queued before the test must not land in its first sample
        warmup_start = clock()
        result, durations = self._warm_up(call_once)
        warmup_ns = clock() - warmup_start
        # The median of the later warm-up calls sets the batch size: the first calls are the
        # slowest (imports, caches, allocation) and would under-batch.
        typical_ns = float(np.median(durations[len(durations) // 2 :]))
        batch = self._batch_size(typical_ns)

        if on_start is not None:
            on_start()
        samples: list[float] = []
        looks: list[float] = []
        budget_ns = policy.budget_s * 1e9
        cap_ns = budget_ns * (policy.max_extension if self._stop_rule is not None else 1.0)
        reason: StopReason = "budget"
        next_check = policy.check_every
        begin = clock()
        run_batch = _batch_runner(fn, args, kwargs)

        def decided(now: int) -> bool:
            assert self._stop_rule is not None
            said = self._stop_rule(np.asarray(samples), (now - begin) / cap_ns if cap_ns else 1.0)
            if isinstance(said, Look):
                if said.information is not None:
                    looks.append(said.information)
                return said.decided
            return said is not None

        while True:
            start = clock()
            result = run_batch(batch)
            if sync is not None:
                sync()
            end = clock()
            samples.append((end - start) / batch / 1e9)
            count = len(samples)
            if count >= policy.max_samples:
                reason = "max_samples"
                break
            if count < policy.min_samples:
                continue
            if end - begin >= cap_ns:
                reason = "cap" if cap_ns > budget_ns else "budget"
                break
            at_check = self._stop_rule is not None and count >= next_check
            if end - begin >= budget_ns and cap_ns <= budget_ns:
                reason = "budget"
                break
            if at_check:
                next_check = max(count + policy.check_every, int(count * 1.25))
                if decided(end):
                    reason = "decisive"
                    break
        sample_set = SampleSet(
            samples_s=np.asarray(samples, dtype=np.float64),
            batch_size=batch,
            warmup_calls=len(durations),
            warmup_s=warmup_ns / 1e9,
            stop_reason=reason,
            elapsed_s=(clock() - begin) / 1e9,
            synced=sync is not None,
            looks=tuple(looks),
        )
        return result, sample_set

    def _warm_up(self, call_once: Callable[[], tuple[Any, int]]) -> tuple[Any, list[int]]:
        """Call until the per-call time has settled; return the last result and every duration.

        The warm-up is cut into windows of ``warmup_s / 2``; it ends at the first window boundary
        past ``warmup_s`` where the median call of the last window is not a new low, i.e. not
        more than ``warmup_tolerance`` below every earlier window's median (the calls have
        stopped getting faster), and at ``warmup_max_s`` at the latest (a time- or change-point-based
        warm-up, as the design asks). Under noise alone a window sets a new low with a
        probability that falls like 1/k with the k windows before it, so a settled call stops
        within a window or two; a steady speed-up keeps setting lows and keeps warming up.
        Without it, a test whose first tens of milliseconds run slow (caches, page faults,
        frequency ramp, lazy initialisation) starts sampling while still speeding up, and its
        samples show a downward trend that the gate reads as drift within the run.
        """
        clock, policy = self._clock, self.policy
        start = clock()
        result, first_ns = call_once()
        durations = [first_ns]
        min_ns = policy.warmup_s * 1e9
        if min_ns <= 0:
            return result, durations
        max_ns = max(min_ns, policy.warmup_max_s * 1e9)
        window_ns = min_ns / 2
        window_start, window_first = start, 0
        medians: list[float] = []
        while True:
            now = clock()
            if now - window_start >= window_ns:
                median = float(np.median(durations[window_first:]))
                settled = bool(medians) and median >= min(medians) * (1 - policy.warmup_tolerance)
                medians.append(median)
                window_start, window_first = now, len(durations)
                if settled and now - start >= min_ns:
                    break
            if now - start >= max_ns:
                break
            result, elapsed = call_once()
            durations.append(elapsed)
        return result, durations

    def _batch_size(self, typical_ns: float) -> int:
        target_ns = self.policy.min_sample_s * 1e9
        if typical_ns >= target_ns:
            return 1
        return int(min(self.policy.max_batch, math.ceil(target_ns / max(typical_ns, 1.0))))
