"""The host canary: a fake clock and kernels whose cost the test scripts (no real timing)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping

import numpy as np
import pytest

from pytest_roofline.errors import ConfigError
from pytest_roofline.measure.canary import (
    KINDS,
    Canary,
    CanaryKernels,
    CanarySettings,
    CanarySummary,
    PairedWindow,
    WindowJudgement,
    default_kernels,
)

MS = 1_000_000  # ns

# Per-call costs of the fake kernels, about what the real ones take on the 2-vCPU VM.
BASE_NS: Mapping[str, int] = {"python": 250_000, "stream": 800_000, "gemm": 300_000}


class FakeHost:
    """A fake clock plus kernels whose cost is base × slowdown × a little seeded jitter.

    ``slow_until_ns``: while the clock is before it, ``slowdown`` applies (per kind or to all).
    """

    def __init__(self, *, jitter: float = 0.02, seed: int = 7) -> None:
        self.now = 0
        self.rng = np.random.default_rng(seed)
        self.jitter = jitter
        self.slowdown: dict[str, float] = {}
        self.slow_until_ns: int | None = None
        self.calls = 0
        # Kinds whose next call is cold (the test evicted their arrays from the caches).
        self.cold: dict[str, float] = {}

    def clock(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)

    def work(self, seconds: float) -> None:
        """The measured test: time passes, no kernel runs."""
        self.now += round(seconds * 1e9)

    def slow(
        self, factor: float, *, kinds: tuple[str, ...] = KINDS, for_s: float | None = None
    ) -> None:
        self.slowdown = dict.fromkeys(kinds, factor)
        self.slow_until_ns = None if for_s is None else self.now + round(for_s * 1e9)

    def quiet(self) -> None:
        self.slowdown = {}

    def _factor(self, kind: str) -> float:
        if self.slow_until_ns is not None and self.now >= self.slow_until_ns:
            self.slowdown = {}
        return self.slowdown.get(kind, 1.0)

    def kernels(self, base: Mapping[str, int] = BASE_NS) -> CanaryKernels:
        def make(kind: str) -> Callable[[], None]:
            def call() -> None:
                self.calls += 1
                noise = float(np.exp(self.rng.normal(0.0, self.jitter)))
                cold = self.cold.pop(kind, 1.0)
                self.now += round(base[kind] * self._factor(kind) * noise * cold)

            return call

        return CanaryKernels(
            calls={k: make(k) for k in base},
            spec={k: f"fake {k}" for k in base},
        )


def make_canary(host: FakeHost, **settings: object) -> Canary:
    return Canary(
        host.kernels(),
        settings=CanarySettings(**settings),  # type: ignore[arg-type]
        clock=host.clock,
        sleep=host.sleep,
    )


def run_test(canary: Canary, host: FakeHost, test_id: str, seconds: float = 0.5) -> WindowJudgement:
    window = canary.open_window(test_id)
    host.work(seconds)
    return canary.close_window(window)


def test_a_quiet_canary_stays_quiet_over_a_long_session() -> None:
    host = FakeHost()
    canary = make_canary(host)
    level = canary.start()
    assert set(level.levels_s) == set(KINDS)
    assert level.levels_s["stream"] == pytest.approx(800e-6, rel=0.05)
    # 2% jitter: the floor is the minimum, not the jitter's 3 sd.
    assert all(f == pytest.approx(1.20) for f in level.floors.values())

    states = [run_test(canary, host, f"t{i}").state for i in range(200)]

    assert states == ["quiet"] * 200
    summary = canary.finish()
    assert summary.state_counts() == {"quiet": 200, "disturbed": 0, "unread": 0}
    assert summary.end is not None
    assert all(
        r == pytest.approx(1.0, abs=0.06) for r in summary.end.ratio_to(summary.start).values()
    )
    assert all(r == pytest.approx(1.0, abs=0.03) for r in summary.session.ratio_to(level).values())
    assert summary.session.readings == 7 + 200


def test_a_one_and_a_half_times_slowdown_during_a_test_is_disturbed_with_figures() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    assert run_test(canary, host, "before").state == "quiet"

    window = canary.open_window("slowed")
    host.slow(1.5)  # the host slows down while the test runs, and is still slow just after
    host.work(0.5)
    judgement = canary.close_window(window)

    assert judgement.state == "disturbed"
    assert judgement.disturbed_kinds == KINDS
    assert all(r == pytest.approx(1.5, rel=0.06) for r in judgement.ratios_after.values())
    assert all(r == pytest.approx(1.0, abs=0.06) for r in judgement.ratios_before.values())
    assert judgement.ratios["python"] == pytest.approx(1.5, rel=0.06)
    reason = judgement.reason()
    assert reason.startswith("host disturbed around the test: python canary x1.")
    assert "floor x1.20" in reason


def test_a_slowdown_of_one_kind_names_only_that_kind() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    window = canary.open_window("gemm-collapse")
    host.slow(60.0, kinds=("gemm",))  # a descheduled BLAS sibling thread
    host.work(0.5)
    judgement = canary.close_window(window)
    assert judgement.disturbed_kinds == ("gemm",)
    assert judgement.ratios["gemm"] > 50
    assert judgement.ratios["python"] < 1.1
    # A single-threaded test can be judged on the kinds that share its kind of work.
    assert judgement.state_for(("python", "stream")) == "quiet"
    assert judgement.state_for(KINDS) == "disturbed"


def test_a_slowdown_within_the_floor_stays_quiet() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    window = canary.open_window("t")
    host.slow(1.05)
    host.work(0.5)
    assert canary.close_window(window).state == "quiet"


def test_the_floor_follows_the_canarys_own_spread_over_the_session() -> None:
    host = FakeHost(jitter=0.08)  # a noisy host: 8% call-to-call
    canary = make_canary(host)
    canary.start()
    for i in range(100):
        run_test(canary, host, f"t{i}")
    session = canary.level
    # Three robust sd of the (median-of-3) readings: above the minimum, below the cap.
    assert all(0.03 < s < 0.08 for s in session.spread.values())
    assert all(1.10 < f < 1.30 for f in session.floors.values())


def test_recovery_waits_then_succeeds_when_the_host_comes_back() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    window = canary.open_window("t")
    host.slow(2.0, for_s=0.8)  # slow for 0.8 s from now
    host.work(0.5)
    judgement = canary.close_window(window)
    assert judgement.disturbed

    recovery = canary.wait_for_recovery(judgement.disturbed_kinds, test_id="t")

    assert recovery.recovered
    # Pauses 0.05, 0.1, 0.2 s: the third reading is the first after the slow spell ends.
    assert recovery.reads == 3
    assert 0.3 < recovery.waited_s < 0.4
    assert all(r < 1.1 for r in recovery.last_ratios.values())
    assert recovery.reason().startswith("host canary recovered after 0.3")
    assert canary.summary().recoveries == (recovery,)


def test_recovery_gives_up_after_its_bound() -> None:
    host = FakeHost()
    canary = make_canary(host, recovery_max_wait_s=1.0, recovery_max_reads=10)
    canary.start()
    host.slow(1.6)  # never ends

    before = host.now
    recovery = canary.wait_for_recovery()

    assert not recovery.recovered
    waited = (host.now - before) / 1e9
    # Pauses 0.05 + 0.1 + 0.2 + 0.4 and a last one cut to what is left of the second: the wait
    # overruns the bound by at most one reading (~6 ms here).
    assert 1.0 <= waited < 1.01
    assert recovery.reads == 5
    assert all(r == pytest.approx(1.6, rel=0.06) for r in recovery.last_ratios.values())
    assert "still off its level" in recovery.reason()


def test_recovery_gives_up_after_its_reading_count() -> None:
    host = FakeHost()
    canary = make_canary(host, recovery_max_reads=2)
    canary.start()
    host.slow(1.6)
    recovery = canary.wait_for_recovery(("python",))
    assert (recovery.recovered, recovery.reads, recovery.kinds) == (False, 2, ("python",))


def test_waits_for_recovery_stop_once_they_have_taken_their_share_of_the_run() -> None:
    host = FakeHost()
    canary = make_canary(host, recovery_max_wait_s=1.0)
    canary.start()
    host.work(5.0)  # 5 s of tests: 10% of that is 0.5 s of waiting allowed
    host.slow(2.0)  # for good
    first = canary.wait_for_recovery(test_id="a")  # the first wait is always allowed: ~1 s
    second = canary.wait_for_recovery(test_id="b")
    assert (first.recovered, first.budget_spent) == (False, False)
    assert (second.recovered, second.budget_spent, second.reads) == (False, True, 0)
    assert "recovery budget is spent" in second.reason()
    host.work(20.0)  # 25 s of run: 2.5 s allowed, 1 s used
    assert not canary.wait_for_recovery(test_id="c").budget_spent
    # Each wait overruns its bound by at most one reading (~5 ms here).
    assert canary.summary().cost.recovery_wait_s == pytest.approx(2.0, abs=0.03)


def test_the_time_budget_skips_readings_beyond_five_percent_of_the_run() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    # Tests of 20 ms: a reading (~4 ms) after each would cost ~17% of the run.
    states = [run_test(canary, host, f"t{i}", seconds=0.02).state for i in range(300)]
    summary = canary.summary()

    assert summary.cost.skipped > 0
    assert summary.cost.share <= 0.05
    assert summary.cost.share > 0.04  # the budget is used, not wasted
    # A window whose reading was skipped reuses the previous one when it is recent.
    assert states.count("quiet") == 300


def _workers_in_turn(*, bound: bool) -> tuple[float, list[Canary]]:
    """Three ab workers' canaries on one host, measuring 50 ms windows in turn (as ``ab``'s
    controller runs them); each worker counts what it was busy for, as ab_worker does.
    Returns all their between-window readings' time as a share of the wall time."""
    host = FakeHost()
    workers = [make_canary(host) for _ in range(3)]
    busy = [0, 0, 0]
    for index, canary in enumerate(workers):
        canary.start()
        if bound:
            canary.bound_by_busy_time(lambda index=index: busy[index])
    began = host.now
    for window in range(300):
        index = window % 3
        canary = workers[index]
        opened_at = host.now
        opened = canary.open_window(f"t{window}")
        host.work(0.05)
        busy[index] += host.now - opened_at
        closing_at = host.now
        canary.close_window(opened)
        busy[index] += host.now - closing_at
    between = sum(c.summary().cost.between_s for c in workers)
    return between / ((host.now - began) / 1e9), workers


def test_workers_measuring_in_turn_keep_their_canaries_within_the_share_of_the_run_together() -> (
    None
):
    # A reading (~5.4 ms) per 50 ms window is ~10% of the windows' time. Against the time since
    # start, each of three workers is within 5% at a third of that, and together they are not.
    unbound, _ = _workers_in_turn(bound=False)
    assert unbound > 0.08

    together, workers = _workers_in_turn(bound=True)

    assert 0.04 < together <= 0.05
    for canary in workers:
        cost = canary.summary().cost
        assert cost.skipped > 0
        assert cost.share <= 0.05  # of the worker's busy time, which run_s now reports
        # Its 100 windows of 50 ms and its readings around them, not the whole run (~15.8 s).
        assert cost.run_s == pytest.approx(100 * 0.05 + cost.between_s, rel=0.01)


def test_long_tests_are_never_skipped_and_the_canary_costs_under_one_and_a_half_percent() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    for i in range(50):
        run_test(canary, host, f"t{i}", seconds=0.5)
    cost = canary.summary().cost
    assert cost.skipped == 0
    # The last start reading stands as the first test's "before"; then one reading per test.
    assert cost.readings == 50
    # A reading is a warming call and three timed calls of each kernel (~5.4 ms here).
    assert cost.share < 0.015


def test_a_window_without_a_recent_reading_is_unread() -> None:
    host = FakeHost()
    canary = make_canary(host, max_reading_age_s=0.05, budget_share=0.01)
    canary.start()
    host.work(0.1)  # the last start reading is now too old to stand for the next window...
    window = canary.open_window("t")  # ...and 1% of 0.1 s does not pay for a 4 ms reading
    assert window.before is None
    judgement = canary.close_window(window)
    assert judgement.state == "unread"
    assert judgement.reason().startswith("host canary not read")


def test_a_start_taken_on_a_slow_host_gives_way_to_the_session_level() -> None:
    host = FakeHost()
    canary = make_canary(host)
    host.slow(1.4)
    start = canary.start()
    host.quiet()
    states = [run_test(canary, host, f"t{i}").state for i in range(20)]
    assert states == ["quiet"] * 20  # faster than the level is never disturbed
    assert all(r == pytest.approx(1 / 1.4, rel=0.06) for r in canary.level.ratio_to(start).values())

    window = canary.open_window("slowed")
    host.slow(1.3)  # under the slow start level, beyond the session level's floor
    host.work(0.5)
    assert canary.close_window(window).state == "disturbed"


def test_a_start_taken_at_a_fast_moment_does_not_flag_the_whole_session() -> None:
    host = FakeHost()
    canary = make_canary(host)
    host.slow(0.6)  # both vCPUs free for a moment: everything 40% faster than usual
    canary.start()
    host.quiet()
    states = [run_test(canary, host, f"t{i}").state for i in range(40)]
    # Windows are judged against the fast start until the usual readings outnumber the 7
    # start readings (the 8th between-test reading); the 9th window's before-reading is the
    # last one judged against the old level.
    assert states == ["disturbed"] * 9 + ["quiet"] * 31


def test_a_collapsed_kernel_cuts_the_reading_short() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    host.slow(70.0, kinds=("gemm",))  # 21 ms a call
    calls = host.calls
    reading = canary.read()
    assert reading.levels_s["gemm"] == pytest.approx(0.021, rel=0.06)
    # The GEMM twice (its warming call, then one that counts: past its third of the 20 ms
    # limit), the others a warming call and three timed calls each.
    assert host.calls - calls == 10
    assert reading.cost_s == pytest.approx(2 * 0.021 + 4 * (0.00025 + 0.0008), rel=0.05)


def test_a_stalled_first_gemm_call_does_not_read_as_a_disturbed_host() -> None:
    # The first 2-thread GEMM after an idle spell can wait for its sleeping BLAS thread's vCPU
    # to wake: 6-18 ms for a 0.3 ms call in 1-6% of first calls on this VM, the next call at
    # its level (docs/paired.md, "The canary's first GEMM call"). The reading is then the
    # median of three counted calls.
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    window = canary.open_window("python-only test")
    host.work(0.5)
    host.cold = {"gemm": 40.0}  # 12 ms, past the GEMM's third of the 20 ms reading limit
    calls = host.calls
    judgement = canary.close_window(window)
    assert host.calls - calls == 12  # a warming call and three counted calls of each kind
    assert judgement.state == "quiet", judgement.reason()
    assert judgement.ratios_after["gemm"] == pytest.approx(1.0, rel=0.1)


def test_a_cold_first_call_after_a_test_does_not_read_as_a_disturbed_host() -> None:
    # A test that touched tens of MiB leaves the stream canary's arrays out of the caches: its
    # next call is 1.9x slower (measured here), the host is not.
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    window = canary.open_window("big")
    host.work(0.5)
    host.cold = {"stream": 1.9, "gemm": 1.4}
    judgement = canary.close_window(window)
    assert judgement.state == "quiet", judgement.reason()


def test_the_summary_round_trips_through_json() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    run_test(canary, host, "a")
    window = canary.open_window("b")
    host.slow(1.5, for_s=0.6)
    host.work(0.5)
    canary.close_window(window)
    canary.wait_for_recovery(test_id="b")
    summary = canary.finish()

    text = json.dumps(summary.to_dict())
    again = CanarySummary.from_dict(json.loads(text))

    assert again == summary
    assert json.loads(text)["state_counts"] == {"quiet": 1, "disturbed": 1, "unread": 0}
    assert again.level_ratios(summary) == {k: 1.0 for k in KINDS}


def test_levels_of_different_kernels_are_not_compared() -> None:
    host = FakeHost()
    a = make_canary(host)
    a.start()
    b = Canary(host.kernels({"python": 100_000}), clock=host.clock, sleep=host.sleep)
    b.start()
    assert a.finish().level_ratios(b.finish()) is None


def test_a_summary_of_another_schema_version_is_refused() -> None:
    host = FakeHost()
    canary = make_canary(host)
    canary.start()
    data = canary.finish().to_dict()
    data["schema_version"] = 99
    with pytest.raises(ValueError, match="schema_version 99"):
        CanarySummary.from_dict(data)


def _judgement(state: str) -> WindowJudgement:
    return WindowJudgement(
        test_id="t",
        state=state,  # type: ignore[arg-type]
        ratios_before={},
        ratios_after={},
        floors={},
        disturbed_kinds=("python",) if state == "disturbed" else (),
        opened_at_s=0.0,
        closed_at_s=0.1,
    )


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("quiet", "quiet", "quiet"),
        ("disturbed", "quiet", "disturbed_a"),
        ("quiet", "disturbed", "disturbed_b"),
        ("disturbed", "disturbed", "disturbed_both"),
        ("unread", "quiet", "unread"),
        ("unread", "disturbed", "disturbed_b"),
    ],
)
def test_a_paired_round_is_disturbed_on_the_side_whose_canary_was(
    a: str, b: str, expected: str
) -> None:
    window = PairedWindow(3, _judgement(a), _judgement(b))
    assert window.state == expected
    assert window.quiet is (expected == "quiet")
    assert window.to_dict()["state"] == expected


def test_paired_round_counts_cover_every_state() -> None:
    rounds = [
        PairedWindow(0, _judgement("quiet"), _judgement("quiet")),
        PairedWindow(1, _judgement("disturbed"), _judgement("quiet")),
        PairedWindow(2, _judgement("quiet"), _judgement("quiet")),
    ]
    assert PairedWindow.counts(rounds) == {
        "quiet": 2,
        "disturbed_a": 1,
        "disturbed_b": 0,
        "disturbed_both": 0,
        "unread": 0,
    }


def test_reading_between_tests_before_start_is_an_error() -> None:
    host = FakeHost()
    with pytest.raises(RuntimeError, match=r"start\(\) must be called"):
        make_canary(host).read_between()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("budget_share", 0.0),
        ("budget_share", 1.5),
        ("repeats", 0),
        ("min_floor", 1.0),
        ("max_floor", 1.05),
        ("recovery_backoff", 0.5),
        ("max_reading_s", math.inf),
    ],
)
def test_invalid_settings_are_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        CanarySettings(**{field: value})  # type: ignore[arg-type]


def test_the_real_kernels_give_a_reading_of_every_kind() -> None:
    kernels = default_kernels(gemm_n=32, stream_array_bytes=64 * 1024, python_iterations=100)
    assert tuple(kernels.calls) == KINDS
    assert kernels.spec["gemm"] == "fp64 matmul 32x32"
    reading = Canary(kernels, settings=CanarySettings(repeats=1)).read()
    assert set(reading.levels_s) == set(KINDS)
    assert all(v > 0 for v in reading.levels_s.values())
    assert reading.cost_s >= sum(reading.levels_s.values())
