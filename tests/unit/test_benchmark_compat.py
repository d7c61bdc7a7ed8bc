"""pytest-benchmark compatibility without pytest in the loop: marker mapping, pedantic rounds, stats, options."""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
import pytest

from pytest_roofline.config.benchmark_marker import (
    BenchmarkSettings,
    FailThreshold,
    benchmark_owner,
    bind_benchmark_marker,
    parse_fail_threshold,
    session_marker_kwargs,
)
from pytest_roofline.errors import ConfigError
from pytest_roofline.measure.benchmark_samplers import (
    BenchmarkStats,
    CompatSampler,
    PedanticSampler,
    sampling_policy_for,
)
from pytest_roofline.measure.sampling import SamplingPolicy


class FakeClock:
    """A nanosecond clock the measured function advances by a scripted cost per call."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def work(self, cost_ns: int) -> None:
        self.now += cost_ns


# --------------------------------------------------------------------------- the marker
def test_the_documented_marker_binds_and_maps_onto_the_sampling_policy() -> None:
    settings = bind_benchmark_marker(
        "t.py::t",
        (),
        {
            "group": "group-name", "min_time": 0.1, "max_time": 0.5, "min_rounds": 5,
            "timer": time.time, "disable_gc": True, "warmup": False,
        },
    )  # fmt: skip
    assert settings == BenchmarkSettings(
        group="group-name", min_rounds=5, max_time_s=0.5, min_time_s=0.1, disable_gc=True
    )
    policy = sampling_policy_for(SamplingPolicy(budget_s=0.5, min_samples=10), settings)
    assert (policy.budget_s, policy.min_samples, policy.min_sample_s) == (0.5, 5, 0.1)


def test_min_time_and_calibration_precision_only_ever_raise_the_batch_target() -> None:
    base = SamplingPolicy(min_sample_s=20e-6)
    assert sampling_policy_for(base, BenchmarkSettings(min_time_s=5e-6)).min_sample_s == 20e-6
    longer = sampling_policy_for(base, BenchmarkSettings(min_time_s=1e-1))
    assert (longer.min_sample_s, longer.warmup_s) == (1e-1, 2e-1)
    raised = sampling_policy_for(
        base, BenchmarkSettings(calibration_precision=1000), timer_precision_s=1e-7
    )
    assert raised.min_sample_s == pytest.approx(1e-4)
    assert sampling_policy_for(base, BenchmarkSettings()) is base


def test_min_rounds_above_max_samples_raises_the_cap() -> None:
    policy = sampling_policy_for(SamplingPolicy(max_samples=20), BenchmarkSettings(min_rounds=50))
    assert (policy.min_samples, policy.max_samples) == (50, 50)


@pytest.mark.parametrize(
    "timer", [time.perf_counter, time.perf_counter_ns, time.monotonic, "time.time"]
)
def test_wall_clock_timers_keep_their_meaning(timer: object) -> None:
    assert bind_benchmark_marker("t.py::t", (), {"timer": timer}) == BenchmarkSettings()


@pytest.mark.parametrize(
    ("kwargs", "args", "message"),
    [
        ({"timer": time.process_time}, (), "timer=time.process_time) cannot be kept by pytest-roofline: it times with time.perf_counter_ns"),
        ({"timer": lambda: 0.0}, (), "cannot be kept by pytest-roofline"),
        ({"precision": 0.02}, (), "precision=...) cannot be kept by pytest-roofline: pytest-roofline stops sampling when"),
        ({"confidence": 0.99}, (), "confidence=...) cannot be kept"),
        ({"cprofile": True}, (), "cprofile=...) cannot be kept by pytest-roofline: pytest-roofline does not profile"),
        ({"rounds": 3}, (), "rounds=...): unknown keyword; valid: group, min_rounds, max_time"),
        ({}, (1,), "takes keyword arguments only"),
        ({"min_rounds": 0}, (), "min_rounds=...): must be an integer >= 1, got 0"),
        ({"min_rounds": 2.5}, (), "min_rounds=...): must be an integer >= 1, got 2.5"),
        ({"max_time": 0}, (), "max_time=...): must be a number of seconds > 0, got 0"),
        ({"min_time": -1}, (), "min_time=...): must be a number of seconds >= 0, got -1"),
        ({"warmup": "on"}, (), "warmup=...): must be True or False, got 'on'"),
        ({"disable_gc": 1}, (), "disable_gc=...): must be True or False, got 1"),
        ({"group": 3}, (), "group=...): must be a string or None, got 3"),
        ({"calibration_precision": 0}, (), "calibration_precision=...): must be an integer >= 1"),
        ({"warmup_iterations": -5}, (), "warmup_iterations=...): must be an integer >= 0"),
    ],
    ids=["process-time", "custom-timer", "precision", "confidence", "cprofile", "unknown", "positional",
         "min-rounds-0", "min-rounds-float", "max-time-0", "min-time-neg", "warmup-str", "gc-int",
         "group-int", "calibration-0", "warmup-iterations-neg"],
)  # fmt: skip
def test_each_marker_argument_that_cannot_be_kept_is_refused_naming_test_and_key(
    kwargs: dict[str, Any], args: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        bind_benchmark_marker("t.py::test_x", args, kwargs)
    assert str(info.value).startswith("t.py::test_x: @pytest.mark.benchmark")
    assert message in str(info.value)


# --------------------------------------------------------------------------- pedantic rounds
def test_pedantic_runs_setup_call_teardown_per_round_and_times_only_the_call() -> None:
    clock = FakeClock()
    events: list[str] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        events.append("setup")
        clock.work(1_000_000)  # setup time is not measured
        return ([3, 1, 2],), {}

    def target(values: list[int]) -> list[int]:
        events.append("call")
        clock.work(2_000)
        values.sort()
        return values

    def teardown(values: list[int]) -> None:
        events.append("teardown")
        clock.work(1_000_000)

    sampler = PedanticSampler(
        rounds=4, iterations=1, warmup_rounds=1, setup=setup, teardown=teardown, has_args=False,
        clock=clock,
    )  # fmt: skip
    started: list[int] = []
    result, samples = sampler.run(target, on_start=lambda: started.append(len(events)))
    assert result == [1, 2, 3]
    assert events == ["setup", "call", "teardown"] * 5
    assert started == [3]  # counters start after the warm-up round
    assert np.allclose(samples.samples_s, 2e-6) and samples.samples_s.size == 4
    assert (samples.batch_size, samples.warmup_calls, samples.stop_reason) == (1, 1, "rounds")


def test_pedantic_iterations_are_timed_together_and_one_extra_call_gives_the_result() -> None:
    clock = FakeClock()
    calls = []

    def target(x: int, *, y: int) -> int:
        calls.append(x)
        clock.work(500)
        return x + y

    sampler = PedanticSampler(
        rounds=3, iterations=10, warmup_rounds=0, setup=None, teardown=None, has_args=True,
        clock=clock,
    )  # fmt: skip
    result, samples = sampler.run(target, (1,), {"y": 2})
    assert result == 3
    assert len(calls) == 31
    assert samples.batch_size == 10 and np.allclose(samples.samples_s, 500e-9)


def test_pedantic_refuses_args_when_setup_returns_them_like_pytest_benchmark() -> None:
    sampler = PedanticSampler(
        rounds=1, iterations=1, warmup_rounds=0, setup=lambda: ((1,), {}), teardown=None,
        has_args=True,
    )  # fmt: skip
    with pytest.raises(TypeError, match="Can't use `args` or `kwargs` if `setup` returns"):
        sampler.run(lambda x: x, (2,))


def test_pedantic_switches_the_collector_off_only_when_asked() -> None:
    seen: list[bool] = []
    for disable in (True, False):
        sampler = PedanticSampler(
            rounds=2, iterations=1, warmup_rounds=0, setup=None, teardown=None, has_args=False,
            disable_gc=disable,
        )  # fmt: skip
        sampler.run(lambda: seen.append(gc.isenabled()))
    assert seen == [False, False, True, True]
    assert gc.isenabled()


def test_the_call_form_warms_up_for_at_most_warmup_iterations_calls_first() -> None:
    clock = FakeClock()
    calls = []

    def fn() -> None:
        calls.append(1)
        clock.work(1_000_000)

    policy = SamplingPolicy(budget_s=0.005, min_samples=1, warmup_s=0.0)

    def count(sampler: CompatSampler) -> int:
        calls.clear()
        sampler.run(fn)
        return len(calls)

    plain = count(CompatSampler(policy, clock=clock))
    assert (
        count(CompatSampler(policy, clock=clock, warmup_iterations=7, warmup_limit_s=1.0))
        == plain + 7
    )
    # pytest-benchmark's warm-up also obeys max_time: 3 ms of 1 ms calls.
    assert (
        count(CompatSampler(policy, clock=clock, warmup_iterations=1000, warmup_limit_s=0.003))
        == plain + 3
    )


# --------------------------------------------------------------------------- stats
@pytest.mark.parametrize("n", [1, 2, 5, 6, 7, 8, 9, 50])
def test_benchmark_stats_agree_with_pytest_benchmarks_definitions(n: int) -> None:
    stats_module = pytest.importorskip("pytest_benchmark.stats")
    data = np.random.default_rng(n).lognormal(-7, 0.3, n)
    theirs = stats_module.Stats()
    for value in data:
        theirs.update(float(value))
    ours = BenchmarkStats(data, iterations=1)
    for name in BenchmarkStats.fields:
        assert ours[name] == pytest.approx(getattr(theirs, name)), name
    assert ours.stats.mean == ours.get("mean") == ours["mean"]


# --------------------------------------------------------------------------- options
@pytest.mark.parametrize(
    ("text", "expected"),
    [("p50:10%", FailThreshold("p50", 0.10)), ("median:5%", FailThreshold("p50", 0.05)),
     ("p95:12.5%", FailThreshold("p95", 0.125)), (" P99 : 20 % ", FailThreshold("p99", 0.20))],
)  # fmt: skip
def test_explicit_thresholds_parse_in_both_spellings(text: str, expected: FailThreshold) -> None:
    assert parse_fail_threshold(text, where="--roofline-fail") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mean:5%", "'mean' is not gated"),
        ("min:5%", "'min' is not gated"),
        ("median:0.001", "an absolute threshold in seconds cannot be kept"),
        ("p50", "not QUANTILE:PERCENT%"),
        ("p50:0%", "above 0 and below 1000"),
    ],
)
def test_thresholds_that_cannot_be_kept_are_refused_with_the_valid_form(
    text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_fail_threshold(text, where="--benchmark-compare-fail")
    assert str(info.value).startswith(f"--benchmark-compare-fail={text!r}")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("choice", "active", "owner"),
    [("auto", True, "pytest-benchmark"), ("auto", False, "roofline"), ("roofline", True, "roofline"),
     ("roofline", False, "roofline"), ("pytest-benchmark", True, "pytest-benchmark"),
     ("pytest-benchmark", False, None)],
)  # fmt: skip
def test_who_owns_the_benchmark_fixture(choice: str, active: bool, owner: str | None) -> None:
    assert benchmark_owner(choice, pytest_benchmark_active=active) == owner


def test_pytest_benchmarks_session_options_become_marker_defaults_only_where_set() -> None:
    parsed = {
        "benchmark_min_time": "0.000005", "benchmark_max_time": "0.25", "benchmark_min_rounds": 5,
        "benchmark_timer": "time.perf_counter", "benchmark_calibration_precision": 10,
        "benchmark_disable_gc": False, "benchmark_warmup": True,
        "benchmark_warmup_iterations": 5, "benchmark_precision": None,
    }  # fmt: skip
    assert session_marker_kwargs(parsed) == {
        "max_time": 0.25,
        "warmup": True,
        "warmup_iterations": 5,
    }
    assert session_marker_kwargs({}) == {}
