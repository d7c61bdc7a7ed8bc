"""CounterSession, CounterReading and the rusage backend.

Session tests drive fake backends with an injected clock, so they are exact; the rusage tests
use the real ``getrusage`` with loose, direction-only expectations.
"""

from __future__ import annotations

import json
import mmap
import sys
import time
from collections.abc import Iterator, Mapping, Sequence

import pytest

from pytest_roofline.measure.counters import (
    RUSAGE_COUNTERS,
    TASK_CLOCK,
    BackendDetails,
    CounterBackend,
    CounterReading,
    CounterSession,
    CounterStatus,
    NvmlBackend,
    PerfEventBackend,
    RusageBackend,
    default_backends,
)


class FakeClock:
    def __init__(self, *times: float) -> None:
        self._times: Iterator[float] = iter(times)

    def __call__(self) -> float:
        return next(self._times)


class FakeBackend:
    """A scripted backend that records calls into a shared log."""

    def __init__(
        self,
        name: str,
        statuses: Mapping[str, CounterStatus],
        values: Mapping[str, float] | None = None,
        *,
        raise_in: Sequence[str] = (),
        details: BackendDetails | None = None,
        log: list[str] | None = None,
    ) -> None:
        self.name = name
        self.statuses = dict(statuses)
        self.values = dict(values or {})
        self.raise_in = set(raise_in)
        self._details = details or BackendDetails()
        self.log = log if log is not None else []
        self.probes = 0
        self.closed = 0

    def _call(self, phase: str) -> None:
        self.log.append(f"{self.name}.{phase}")
        if phase in self.raise_in:
            raise RuntimeError(f"{self.name} broke in {phase}")

    def probe(self) -> Mapping[str, CounterStatus]:
        self.probes += 1
        self._call("probe")
        return self.statuses

    def start(self) -> None:
        self._call("start")

    def stop(self) -> Mapping[str, float]:
        self._call("stop")
        return self.values

    def details(self) -> BackendDetails:
        return self._details

    def close(self) -> None:
        self.closed += 1
        self._call("close")


class DeclaringBackend(FakeBackend):
    counters = ("boom.a", "boom.b")


def test_fake_backends_satisfy_the_protocol() -> None:
    assert isinstance(FakeBackend("x", {}), CounterBackend)
    assert isinstance(RusageBackend(), CounterBackend)
    assert isinstance(PerfEventBackend(), CounterBackend)
    assert isinstance(NvmlBackend(), CounterBackend)


def test_wall_time_is_always_collected_even_without_backends() -> None:
    session = CounterSession([], clock=FakeClock(10.0, 12.5))
    assert session.probe() == {"wall_s": "ok"}
    session.start()
    reading = session.stop()
    assert reading.status == {"wall_s": "ok"}
    assert reading.values == {"wall_s": 2.5}
    assert reading.wall_s == 2.5
    assert reading.completeness == 1.0
    assert reading.cpu_share is None
    assert reading.threads is None


def test_completeness_is_collected_over_requested() -> None:
    fake = FakeBackend(
        "fake",
        {"fake.a_s": "ok", "fake.b": "unsupported", "fake.c": "denied"},
        {"fake.a_s": 1.0},
    )
    session = CounterSession([fake], clock=FakeClock(0.0, 1.0))
    session.start()
    reading = session.stop()
    assert reading.status == {
        "wall_s": "ok",
        "fake.a_s": "ok",
        "fake.b": "unsupported",
        "fake.c": "denied",
    }
    assert reading.values == {"wall_s": 1.0, "fake.a_s": 1.0}
    assert reading.completeness == pytest.approx(2 / 4)


def test_an_explicit_request_reports_exactly_those_counters() -> None:
    fake = FakeBackend("fake", {"fake.a": "ok", "fake.b": "ok"}, {"fake.a": 3.0, "fake.b": 4.0})
    session = CounterSession([fake], requested=["fake.b", "other.x"], clock=FakeClock(0.0, 1.0))
    session.start()
    reading = session.stop()
    assert reading.status == {"fake.b": "ok", "other.x": "unsupported"}
    assert reading.values == {"fake.b": 4.0}
    assert reading.completeness == 0.5
    assert any("other.x: no counter backend provides it" in n for n in reading.notes)


def test_nothing_requested_counts_as_complete() -> None:
    session = CounterSession([FakeBackend("fake", {"fake.a": "ok"})], requested=[])
    session.start()
    reading = session.stop()
    assert reading.status == {}
    assert reading.values == {}
    assert reading.completeness == 1.0


def test_probe_runs_once_per_session() -> None:
    fake = FakeBackend("fake", {"fake.a": "ok"}, {"fake.a": 1.0})
    session = CounterSession([fake])
    session.probe()
    session.probe()
    for _ in range(3):
        session.start()
        session.stop()
    assert fake.probes == 1


def test_a_backend_whose_probe_raises_has_invalid_counters_and_the_session_continues() -> None:
    boom = DeclaringBackend("boom", {}, raise_in=["probe"])
    good = FakeBackend("good", {"good.x": "ok"}, {"good.x": 7.0})
    session = CounterSession([boom, good], clock=FakeClock(0.0, 1.0))
    assert session.probe() == {
        "wall_s": "ok",
        "boom.a": "invalid",
        "boom.b": "invalid",
        "good.x": "ok",
    }
    session.start()
    reading = session.stop()
    assert reading.status["boom.a"] == "invalid"
    assert reading.values["good.x"] == 7.0
    assert any("boom: probe raised RuntimeError" in n for n in reading.notes)
    assert "boom.start" not in boom.log  # nothing of it is ok, so it is never started


def test_a_requested_counter_of_a_backend_whose_probe_raised_is_invalid_not_unsupported() -> None:
    boom = FakeBackend("boom", {}, raise_in=["probe"])  # declares no counters
    session = CounterSession([boom], requested=["boom.power_w", "zap.x"])
    assert session.probe() == {"boom.power_w": "invalid", "zap.x": "unsupported"}


def test_a_backend_raising_in_start_is_invalid_for_that_region_only() -> None:
    flaky = FakeBackend("flaky", {"flaky.n": "ok"}, {"flaky.n": 5.0}, raise_in=["start"])
    good = FakeBackend("good", {"good.x": "ok"}, {"good.x": 1.0})
    session = CounterSession([flaky, good], clock=FakeClock(0.0, 1.0, 2.0, 4.0))
    session.start()
    first = session.stop()
    assert first.status["flaky.n"] == "invalid"
    assert first.values["good.x"] == 1.0
    assert any("flaky: start() raised RuntimeError" in n for n in first.notes)
    assert "flaky.stop" not in flaky.log  # a backend that failed to start is not stopped

    flaky.raise_in.clear()
    session.start()
    second = session.stop()
    assert second.status["flaky.n"] == "ok"
    assert second.values == {"wall_s": 2.0, "flaky.n": 5.0, "good.x": 1.0}
    assert not any("raised" in n for n in second.notes)


def test_a_backend_raising_in_stop_is_invalid_and_the_others_still_report() -> None:
    bad = FakeBackend("bad", {"bad.n": "ok"}, raise_in=["stop"])
    good = FakeBackend("good", {"good.x": "ok"}, {"good.x": 1.0})
    session = CounterSession([bad, good])
    session.start()
    reading = session.stop()
    assert reading.status["bad.n"] == "invalid"
    assert reading.status["good.x"] == "ok"
    assert reading.completeness == pytest.approx(2 / 3)


def test_an_ok_counter_without_a_value_or_with_a_non_finite_one_is_invalid() -> None:
    fake = FakeBackend(
        "fake",
        {"fake.missing": "ok", "fake.nan": "ok", "fake.fine": "ok"},
        {"fake.nan": float("nan"), "fake.fine": 2.0, "fake.stray": 9.0},
    )
    session = CounterSession([fake])
    session.start()
    reading = session.stop()
    assert reading.status["fake.missing"] == "invalid"
    assert reading.status["fake.nan"] == "invalid"
    assert reading.values["fake.fine"] == 2.0
    assert "fake.stray" not in reading.values  # a name the backend never probed is ignored
    assert any("fake.missing: probed ok but no value" in n for n in reading.notes)


def test_unknown_status_strings_from_a_backend_become_invalid() -> None:
    odd = FakeBackend("odd", {"odd.x": "maybe"})  # type: ignore[dict-item]
    session = CounterSession([odd])
    assert session.probe()["odd.x"] == "invalid"


def test_the_first_backend_wins_a_duplicate_counter_name() -> None:
    first = FakeBackend("one", {"shared.x": "ok"}, {"shared.x": 1.0})
    second = FakeBackend("two", {"shared.x": "ok"}, {"shared.x": 2.0})
    session = CounterSession([first, second])
    session.start()
    reading = session.stop()
    assert reading.values["shared.x"] == 1.0
    assert any("also provided by backend 'two'" in n for n in reading.notes)


def test_backends_start_in_order_and_stop_in_reverse() -> None:
    log: list[str] = []
    a = FakeBackend("a", {"a.x": "ok"}, {"a.x": 1.0}, log=log)
    b = FakeBackend("b", {"b.x": "ok"}, {"b.x": 1.0}, log=log)
    idle = FakeBackend("idle", {"idle.x": "unsupported"}, log=log)
    session = CounterSession([a, idle, b])
    session.start()
    session.stop()
    session.close()
    assert log == [
        "a.probe",
        "idle.probe",
        "b.probe",
        "a.start",
        "b.start",
        "b.stop",
        "a.stop",
        "b.close",
        "idle.close",
        "a.close",
    ]


def test_cpu_share_is_task_clock_over_wall_over_busy_threads() -> None:
    perf = FakeBackend(
        "perf",
        {TASK_CLOCK: "ok"},
        {TASK_CLOCK: 3.0},
        details=BackendDetails(notes=("perf: something",), threads=4, busy_threads=2),
    )
    session = CounterSession([perf], clock=FakeClock(0.0, 2.0))
    session.start()
    reading = session.stop()
    assert reading.cpu_share == pytest.approx(3.0 / 2.0 / 2)
    assert reading.threads == 4
    assert "perf: something" in reading.notes


def test_cpu_share_is_computed_even_when_task_clock_is_not_requested() -> None:
    perf = FakeBackend(
        "perf", {TASK_CLOCK: "ok"}, {TASK_CLOCK: 1.0}, details=BackendDetails(threads=1)
    )
    session = CounterSession([perf], requested=["wall_s"], clock=FakeClock(0.0, 2.0))
    session.start()
    reading = session.stop()
    assert reading.cpu_share == pytest.approx(0.5)
    assert TASK_CLOCK not in reading.values


def test_measure_sets_the_reading_even_when_the_block_raises() -> None:
    session = CounterSession([], clock=FakeClock(0.0, 1.0))
    with pytest.raises(ZeroDivisionError), session.measure() as region:
        assert region.reading is None
        1 / 0  # noqa: B018
    assert region.reading is not None
    assert region.reading.wall_s == 1.0


def test_misuse_of_start_and_stop_raises() -> None:
    session = CounterSession([])
    with pytest.raises(RuntimeError, match="without start"):
        session.stop()
    session.start()
    with pytest.raises(RuntimeError, match="twice"):
        session.start()
    session.stop()
    session.close()
    with pytest.raises(RuntimeError, match="after close"):
        session.start()


def test_close_closes_every_backend_once_even_when_one_raises() -> None:
    a = FakeBackend("a", {}, raise_in=["close"])
    b = FakeBackend("b", {})
    with CounterSession([a, b]) as session:
        session.probe()
    session.close()
    assert (a.closed, b.closed) == (1, 1)


# -- CounterReading -----------------------------------------------------------------------


def _reading() -> CounterReading:
    return CounterReading(
        status={"wall_s": "ok", "perf.cycles": "unsupported", TASK_CLOCK: "ok"},
        values={"wall_s": 0.5, TASK_CLOCK: 0.25},
        completeness=2 / 3,
        cpu_share=0.5,
        wall_s=0.5,
        threads=2,
        notes=("a note",),
    )


def test_a_reading_round_trips_through_json() -> None:
    reading = _reading()
    again = CounterReading.from_dict(json.loads(json.dumps(reading.to_dict())))
    assert again == reading
    assert again.notes == ("a note",)


def test_a_reading_without_perf_round_trips_its_nulls() -> None:
    reading = CounterReading(
        status={"wall_s": "ok"},
        values={"wall_s": 1.0},
        completeness=1.0,
        cpu_share=None,
        wall_s=1.0,
        threads=None,
    )
    assert CounterReading.from_dict(reading.to_dict()) == reading


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("status", {"x": "fine"}, "status 'fine' is not one of"),
        ("status", [], "'status' must be a mapping"),
        ("values", {"wall_s": "1"}, "'values.wall_s' must be a number"),
        ("completeness", None, "'completeness' must be a number"),
        ("completeness", 1.5, r"completeness must be in \[0, 1\]"),
        ("threads", 2.5, "'threads' must be an integer or null"),
        ("notes", "oops", "'notes' must be a list of strings"),
    ],
)
def test_from_dict_names_the_bad_key(key: str, value: object, message: str) -> None:
    d = _reading().to_dict()
    d[key] = value
    with pytest.raises(ValueError, match=message):
        CounterReading.from_dict(d)


def test_a_reading_refuses_values_for_counters_that_are_not_ok() -> None:
    with pytest.raises(ValueError, match=r"perf\.cycles"):
        CounterReading(
            status={"perf.cycles": "unsupported"},
            values={"perf.cycles": 1.0},
            completeness=0.0,
            cpu_share=None,
            wall_s=1.0,
            threads=None,
        )


def test_a_reading_does_not_change_when_the_callers_dict_does() -> None:
    status: dict[str, CounterStatus] = {"wall_s": "ok"}
    values = {"wall_s": 1.0}
    reading = CounterReading(status, values, 1.0, None, 1.0, None)
    status["x"] = "ok"
    values["wall_s"] = 2.0
    assert reading.status == {"wall_s": "ok"}
    assert reading.values == {"wall_s": 1.0}


# -- rusage -----------------------------------------------------------------------------------

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="getrusage is POSIX")


@posix_only
def test_rusage_counters_are_all_ok_on_posix() -> None:
    assert RusageBackend().probe() == dict.fromkeys(RUSAGE_COUNTERS, "ok")


@posix_only
def test_rusage_sees_cpu_time_faults_switches_and_peak_rss_in_bytes() -> None:
    backend = RusageBackend()
    backend.probe()
    backend.start()
    deadline = time.perf_counter() + 0.05
    while time.perf_counter() < deadline:
        pass
    for _ in range(3):
        time.sleep(0.001)  # each sleep gives up the CPU: a voluntary switch
    # 64 MB of fresh anonymous pages, each touched now: minor faults and RSS above 64 MB. (An
    # np.ones of that size may reuse heap pages an earlier test in this process already
    # faulted in: glibc raises its mmap threshold after a large free, and no fault is seen.)
    fresh = mmap.mmap(-1, 64 * 2**20)
    for offset in range(0, len(fresh), mmap.PAGESIZE):
        fresh[offset] = 1
    values = backend.stop()
    assert set(values) == set(RUSAGE_COUNTERS)
    assert values["rusage.user_s"] > 0.0
    assert values["rusage.system_s"] >= 0.0
    assert values["rusage.minor_faults"] > 0
    assert values["rusage.major_faults"] >= 0
    assert values["rusage.voluntary_switches"] >= 1
    assert values["rusage.involuntary_switches"] >= 0
    assert values["rusage.max_rss_bytes"] >= len(fresh)
    fresh.close()
    backend.close()


@posix_only
def test_a_session_with_real_backends_reports_every_counter() -> None:
    with CounterSession(default_backends(gpu=False)) as session, session.measure() as region:
        sum(range(10_000))
    reading = region.reading
    assert reading is not None
    assert set(reading.status) >= {"wall_s", *RUSAGE_COUNTERS}
    assert reading.values["wall_s"] == reading.wall_s > 0.0
    collected = sum(1 for s in reading.status.values() if s == "ok")
    assert reading.completeness == pytest.approx(collected / len(reading.status))


def test_default_backends_without_gpu_are_rusage_then_perf() -> None:
    backends = default_backends(gpu=False)
    assert [type(b) for b in backends] == [RusageBackend, PerfEventBackend]
