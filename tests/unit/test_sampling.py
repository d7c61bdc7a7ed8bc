from __future__ import annotations

import itertools

import numpy as np
import pytest

from pytest_roofline.errors import ConfigError
from pytest_roofline.measure.sampling import Sampler, SamplingPolicy


class FakeClock:
    """A nanosecond clock that the measured function advances by a scripted cost per call."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def work(self, cost_ns: int) -> None:
        self.now += cost_ns


def test_a_slow_call_is_timed_alone_and_sampling_stops_at_the_budget() -> None:
    clock = FakeClock()
    policy = SamplingPolicy(budget_s=0.01, min_samples=3, warmup_s=0.002)
    sampler = Sampler(policy, clock=clock)
    _, samples = sampler.run(lambda: clock.work(1_000_000))  # 1 ms per call
    assert samples.batch_size == 1
    assert samples.stop_reason == "budget"
    assert samples.samples_s.size == 10  # 10 ms of budget / 1 ms per call
    assert np.allclose(samples.samples_s, 1e-3)
    assert samples.warmup_calls == 2  # the first call plus one more to fill 2 ms


def test_a_call_too_short_to_time_alone_is_batched_and_reported_per_call() -> None:
    clock = FakeClock()
    sampler = Sampler(
        SamplingPolicy(budget_s=0.001, warmup_s=0.0001, min_sample_s=20e-6), clock=clock
    )
    _, samples = sampler.run(lambda: clock.work(100))  # 100 ns per call
    assert samples.batch_size == 200  # 20 µs / 100 ns
    assert samples.batched
    assert np.allclose(samples.samples_s, 100e-9)


def test_the_minimum_sample_count_is_honoured_past_the_budget() -> None:
    clock = FakeClock()
    sampler = Sampler(SamplingPolicy(budget_s=0.001, min_samples=5, warmup_s=0), clock=clock)
    _, samples = sampler.run(lambda: clock.work(10_000_000))  # 10 ms per call, far over budget
    assert samples.samples_s.size == 5


def test_sampling_stops_at_max_samples() -> None:
    clock = FakeClock()
    sampler = Sampler(
        SamplingPolicy(budget_s=10, min_samples=1, max_samples=7, warmup_s=0), clock=clock
    )
    _, samples = sampler.run(lambda: clock.work(1_000_000))
    assert samples.stop_reason == "max_samples"
    assert samples.samples_s.size == 7


def test_a_decisive_stop_rule_ends_sampling_early_and_says_why() -> None:
    clock = FakeClock()
    seen: list[int] = []

    def decisive(samples: np.ndarray, progress: float) -> str | None:
        seen.append(samples.size)
        return "intervals tight" if samples.size >= 100 else None

    policy = SamplingPolicy(budget_s=10, min_samples=10, warmup_s=0, check_every=50)
    _, samples = Sampler(policy, clock=clock, stop_rule=decisive).run(lambda: clock.work(1_000_000))
    assert samples.stop_reason == "decisive"
    assert samples.samples_s.size == 100
    assert seen == [50, 100]  # 50, then max(50 + 50, 62)


def test_the_stop_rule_is_consulted_on_a_geometric_schedule() -> None:
    clock = FakeClock()
    seen: list[int] = []

    def never(samples: np.ndarray, progress: float) -> str | None:
        seen.append(samples.size)
        return None

    policy = SamplingPolicy(
        budget_s=10, min_samples=1, max_samples=2000, warmup_s=0, check_every=50
    )
    Sampler(policy, clock=clock, stop_rule=never).run(lambda: clock.work(1_000_000))
    # every 50 samples at first, then every ~25% more: 14 looks at 2000 samples, not 40
    assert seen == [50, 100, 150, 200, 250, 312, 390, 487, 608, 760, 950, 1187, 1483, 1853]


def test_the_function_result_is_returned_and_arguments_are_passed() -> None:
    clock = FakeClock()
    counter = itertools.count()

    def fn(a: int, *, b: int) -> int:
        clock.work(1_000_000)
        return a + b + next(counter)

    result, samples = Sampler(SamplingPolicy(budget_s=0.003, warmup_s=0), clock=clock).run(
        fn, (1,), {"b": 2}
    )
    assert result == 3 + samples.warmup_calls + samples.samples_s.size - 1


def test_an_exception_from_fn_propagates_unchanged() -> None:
    clock = FakeClock()
    calls = itertools.count()

    def flaky() -> None:
        clock.work(1_000_000)
        if next(calls) == 3:
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        Sampler(SamplingPolicy(budget_s=1, warmup_s=0), clock=clock).run(flaky)


def test_sync_runs_after_every_timed_batch_and_before_warmup() -> None:
    clock = FakeClock()
    syncs: list[int] = []

    def sync() -> None:
        syncs.append(clock.now)
        clock.work(500_000)  # the device finishing its queue is part of each sample

    _, samples = Sampler(SamplingPolicy(budget_s=0.01, min_samples=1, warmup_s=0), clock=clock).run(
        lambda: clock.work(500_000), sync=sync
    )
    assert samples.synced
    assert np.allclose(samples.samples_s, 1e-3)
    assert len(syncs) == 1 + samples.warmup_calls + samples.samples_s.size


def test_on_start_runs_once_after_warmup() -> None:
    clock = FakeClock()
    events: list[str] = []
    _, samples = Sampler(SamplingPolicy(budget_s=0.002, warmup_s=0.001), clock=clock).run(
        lambda: (events.append("call"), clock.work(1_000_000)),
        on_start=lambda: events.append("start"),
    )
    assert events.count("start") == 1
    assert events.index("start") == samples.warmup_calls  # warm-up calls, then counters start


class SettlingCall:
    """A call that starts slow and speeds up (cold caches, lazy set-up), with a little jitter.

    Call ``i`` costs ``steady_ns`` plus ``extra_ns`` shrinking linearly to 0 over the first
    ``settle_calls`` calls (forever when ``settle_calls`` is None: it keeps getting faster).
    """

    def __init__(
        self, clock: FakeClock, *, steady_ns: int, extra_ns: int, settle_calls: int | None
    ) -> None:
        self.clock = clock
        self.steady_ns = steady_ns
        self.extra_ns = extra_ns
        self.settle_calls = settle_calls
        self.calls = 0

    def __call__(self) -> None:
        i = self.calls
        self.calls += 1
        if self.settle_calls is None:
            extra = self.extra_ns * 1000 / (1000 + i)
        else:
            extra = self.extra_ns * max(0.0, 1 - i / self.settle_calls)
        jitter = (i * 7919) % 13  # deterministic, a few ns
        self.clock.work(int(self.steady_ns + extra + jitter))


def test_a_microsecond_call_that_speeds_up_is_sampled_after_it_settles() -> None:
    from pytest_roofline.stats import drift

    clock = FakeClock()
    # 1 µs per call once settled, 3 µs at first, settled after 20 000 calls (~40 ms): a fixed
    # 5 ms warm-up would start sampling while the calls are still twice as slow.
    fn = SettlingCall(clock, steady_ns=1_000, extra_ns=2_000, settle_calls=20_000)
    policy = SamplingPolicy(budget_s=0.05, warmup_s=0.005, warmup_max_s=0.5)
    _, samples = Sampler(policy, clock=clock).run(fn)
    assert samples.warmup_s > 0.03  # it waited for the calls to settle ...
    assert samples.warmup_s < 0.06  # ... and not much longer
    assert samples.samples_s.max() / samples.samples_s.min() < 1.05
    assert not drift(samples.samples_s).drifting


def test_the_same_call_under_a_fixed_warm_up_would_drift() -> None:
    from pytest_roofline.stats import drift

    # The counterfactual of the test above: warm-up bounded at 5 ms samples the tail of the
    # speed-up, and the samples trend downwards (what used to escalate a first run).
    clock = FakeClock()
    fn = SettlingCall(clock, steady_ns=1_000, extra_ns=2_000, settle_calls=20_000)
    policy = SamplingPolicy(budget_s=0.05, warmup_s=0.005, warmup_max_s=0.005)
    _, samples = Sampler(policy, clock=clock).run(fn)
    assert samples.warmup_s < 0.006
    assert drift(samples.samples_s).drifting


def test_warm_up_stops_at_its_bound_when_the_call_keeps_speeding_up() -> None:
    clock = FakeClock()
    fn = SettlingCall(clock, steady_ns=1_000_000, extra_ns=1_000_000_000, settle_calls=None)
    policy = SamplingPolicy(budget_s=0.01, min_samples=1, warmup_s=0.05, warmup_max_s=0.2)
    _, samples = Sampler(policy, clock=clock).run(fn)
    # Bounded: it stops within one call of 0.2 s although the calls are still getting faster.
    assert 0.2 <= samples.warmup_s < 0.2 + samples.samples_s.max() * 10


def test_a_steady_call_ends_warm_up_at_the_minimum_time() -> None:
    clock = FakeClock()
    policy = SamplingPolicy(budget_s=0.01, warmup_s=0.01, warmup_max_s=1.0)
    _, samples = Sampler(policy, clock=clock).run(lambda: clock.work(1_000_000))
    assert samples.warmup_s == pytest.approx(0.01)
    assert samples.warmup_calls == 10


def test_a_zero_warm_up_makes_one_call() -> None:
    clock = FakeClock()
    policy = SamplingPolicy(budget_s=0.01, warmup_s=0, warmup_max_s=1.0)
    _, samples = Sampler(policy, clock=clock).run(lambda: clock.work(1_000_000))
    assert samples.warmup_calls == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget_s": -1.0}, "budget_s"),
        ({"warmup_s": float("nan")}, "warmup_s"),
        ({"warmup_max_s": -1.0}, "warmup_max_s"),
        ({"min_samples": 0}, "min_samples"),
        ({"min_samples": 10, "max_samples": 5}, "max_samples"),
    ],
)
def test_an_invalid_policy_is_rejected_with_the_field_named(
    kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        SamplingPolicy(**kwargs)  # type: ignore[arg-type]
