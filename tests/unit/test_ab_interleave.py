"""``ab`` interleaves its tests' window pairs round by round: the controller, scripted workers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline.ab.workers import (
    PairedWorkers,
    SideSpec,
    TestWindows,
    WindowSettings,
    round_order,
)
from pytest_roofline.measure.canary import WindowJudgement
from tests.unit.window_replies import passed_window


class RecordingWorker:
    """Answers every window with fixed samples; records which test each window was for, in
    one log shared by every worker (so the test order across sides and pairs is visible)."""

    def __init__(self, side: str, number: int, log: list[tuple[str, str]], fail: str) -> None:
        self.side = side
        self.number = number
        self.log = log
        self.fail = fail

    def window(
        self, nodeid: str, seconds: float, timeout: float, cpu: int | None = None
    ) -> dict[str, Any]:
        self.log.append((nodeid, self.side))
        if nodeid == self.fail and self.side == "candidate":
            return {"nodeid": nodeid, "outcome": "failed", "message": "AssertionError: boom"}
        return passed_window(nodeid, seconds, samples=10, cpu_share=1.0)


class StepClock:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def recording(
    *,
    pairs: int = 4,
    min_pairs: int = 2,
    fail: str = "",
    worker_pairs: int = 1,
    replacements: int = 0,
    worker: type[RecordingWorker] = RecordingWorker,
) -> tuple[PairedWorkers, list[tuple[str, str]]]:
    settings = WindowSettings(
        min_pairs=min_pairs,
        max_pairs=pairs,
        look_every=1,
        worker_pairs=worker_pairs,
        max_replacements=replacements,
        pin_cpus=False,
    )
    spec = {
        side: SideSpec(side=side, python="python", workdir=Path("."))
        for side in ("baseline", "candidate")
    }
    workers = PairedWorkers(spec["baseline"], spec["candidate"], settings, clock=StepClock())
    log: list[tuple[str, str]] = []
    scripted = [
        {side: worker(side, n, log, fail) for side in ("baseline", "candidate")}
        for n in range(worker_pairs)
    ]
    workers._pairs = scripted  # type: ignore[assignment]
    return workers, log


def decide(*decided: str, looks: list[tuple[int, int]] | None = None) -> Any:
    """A stop rule that decides the named tests at their first look and never the others;
    each look's (pairs kept, pairs dropped) is appended to ``looks``."""

    def should_continue(
        nodeid: str,
        base: Sequence[np.ndarray],
        cand: Sequence[np.ndarray],
        groups: Sequence[int] = (),
        dropped: int = 0,
    ) -> bool:
        if looks is not None:
            looks.append((len(base), dropped))
        return nodeid not in decided

    return should_continue


def order_of_tests(log: list[tuple[str, str]]) -> list[str]:
    """The test of each window pair (its name after the module), in the order the pairs ran
    (two windows a pair)."""
    return [nodeid.rsplit("::", 1)[1] for nodeid, _ in log[::2]]


def ids(*names: str, module: str = "m.py") -> list[str]:
    """Node ids of tests ``names`` in one module."""
    return [f"{module}::{name}" for name in names]


@pytest.mark.parametrize(
    ("active", "turn", "expected"),
    [
        (["a", "b", "c"], 0, ["a", "b", "c"]),
        (["a", "b", "c"], 1, ["b", "c", "a"]),
        (["a", "b", "c"], 5, ["c", "a", "b"]),
        (["a"], 3, ["a"]),
        ([], 2, []),
    ],
)
def test_each_round_rotates_which_test_opens_it(
    active: list[str], turn: int, expected: list[str]
) -> None:
    assert round_order(active, turn) == expected


def test_every_test_gets_one_window_pair_a_round_until_its_pairs_are_spent() -> None:
    workers, log = recording(pairs=3, min_pairs=3)
    tests = workers.measure_tests(ids("a", "b", "c"))
    assert order_of_tests(log) == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert [t.nodeid for t in tests.values()] == ids("a", "b", "c")
    # Both windows of a pair run back to back, in ABBA order, whatever test comes next.
    assert [side for _, side in log[:6]] == ["baseline", "candidate"] * 3
    assert [side for _, side in log[6:12]] == ["candidate", "baseline"] * 3
    assert [t.pairs for t in tests.values()] == [3, 3, 3]
    assert all(t.stop == "max_pairs" for t in tests.values())


def test_a_decided_test_drops_out_and_the_others_go_on() -> None:
    workers, log = recording(pairs=4, min_pairs=2)
    finished: list[str] = []
    tests = workers.measure_tests(
        ids("a", "b", "c"),
        decide("m.py::b"),
        finished=lambda nodeid, test: finished.append(nodeid),
    )
    assert order_of_tests(log) == ["a", "b", "c", "b", "c", "a", "a", "c", "c", "a"]
    assert (tests["m.py::b"].stop, tests["m.py::b"].pairs) == ("decided", 2)
    assert (tests["m.py::a"].stop, tests["m.py::a"].pairs) == ("max_pairs", 4)
    assert finished == ids("b", "c", "a")  # as each ended; the result keeps the given order
    assert list(tests) == ids("a", "b", "c")


def test_no_state_leaks_between_interleaved_tests() -> None:
    # Each test's windows (side, pair, index, worker pair) are those it gets measured alone.
    together, _ = recording(pairs=4, min_pairs=2, worker_pairs=2)
    alone, _ = recording(pairs=4, min_pairs=2, worker_pairs=2)
    rule = decide("m.py::b")
    interleaved = together.measure_tests(ids("a", "b"), rule)
    assert [(w.side, w.pair, w.worker_pair) for w in interleaved["m.py::a"].windows[:4]] == [
        ("baseline", 0, 0),
        ("candidate", 0, 0),
        ("candidate", 1, 1),
        ("baseline", 1, 1),
    ]
    for nodeid in ids("a", "b"):
        single: TestWindows = alone.measure_test(nodeid, rule)
        mixed = interleaved[nodeid]
        assert (mixed.pairs, mixed.stop, mixed.dropped) == (single.pairs, single.stop, ())
        assert [(w.side, w.pair, w.index, w.worker_pair) for w in mixed.windows] == [
            (w.side, w.pair, w.index, w.worker_pair) for w in single.windows
        ]


def test_a_test_that_fails_on_a_side_ends_alone() -> None:
    workers, log = recording(pairs=3, min_pairs=3, fail="m.py::b")
    finished: list[str] = []
    tests = workers.measure_tests(
        ids("a", "b", "c"), finished=lambda nodeid, test: finished.append(nodeid)
    )
    failed = tests["m.py::b"]
    assert failed.stop == "error"
    assert failed.error is not None and "boom" in failed.error
    assert "candidate side (window 1)" in failed.error
    assert [tests[n].pairs for n in ids("a", "c")] == [3, 3]
    assert order_of_tests(log).count("b") == 1
    assert finished[0] == "m.py::b"


def test_a_tests_wall_time_counts_its_own_window_pairs_not_the_others() -> None:
    # The step clock moves a second per read: a step reads it at its start, around each of
    # its two windows and at its end, 5 s from start to end, however many other tests' pairs
    # ran in between.
    workers, _ = recording(pairs=3, min_pairs=3)
    tests = workers.measure_tests(ids("a", "b", "c"))
    alone, _ = recording(pairs=3, min_pairs=3)
    single = alone.measure_test("m.py::a")
    assert tests["m.py::a"].wall_s == single.wall_s == pytest.approx(3 * 5.0)


def test_modules_run_one_after_another_each_interleaved_within() -> None:
    # A window of a test in another module would tear this module's fixtures down.
    workers, log = recording(pairs=2, min_pairs=2)
    nodeids = [*ids("a", "b"), *ids("c", "d", module="n.py"), "n.py::K::e", "n.py::K::f[x::y]"]
    workers.measure_tests(nodeids)
    assert [nodeid for nodeid, _ in log[::2]] == [
        "m.py::a",
        "m.py::b",
        "m.py::b",
        "m.py::a",
        "n.py::c",
        "n.py::d",
        "n.py::d",
        "n.py::c",
        "n.py::K::e",
        "n.py::K::f[x::y]",
        "n.py::K::f[x::y]",
        "n.py::K::e",
    ]


def test_each_test_gets_its_own_window_budget_and_a_repeated_id_is_measured_once() -> None:
    workers, log = recording(pairs=2, min_pairs=2)
    tests = workers.measure_tests(
        [*ids("a", "b"), "m.py::a"], window_s={"m.py::a": 0.5, "m.py::b": 0.125}
    )
    assert list(tests) == ids("a", "b")
    assert {w.sampling_s for w in tests["m.py::a"].windows} == {0.5}
    assert {w.sampling_s for w in tests["m.py::b"].windows} == {0.125}
    assert order_of_tests(log) == ["a", "b", "b", "a"]


class DisturbedWorker(RecordingWorker):
    """A :class:`RecordingWorker` whose candidate window of every second pair (1, 3, 5, ...)
    reads the host disturbed (the canary's python kernel 4x off its level)."""

    def __init__(self, side: str, number: int, log: list[tuple[str, str]], fail: str) -> None:
        super().__init__(side, number, log, fail)
        self.windows = 0

    def window(
        self, nodeid: str, seconds: float, timeout: float, cpu: int | None = None
    ) -> dict[str, Any]:
        reply = super().window(nodeid, seconds, timeout, cpu)
        if self.side == "candidate" and self.windows % 2 == 1:
            reply["canary"] = json.dumps(disturbed(nodeid).to_dict())
        self.windows += 1
        return reply


def disturbed(nodeid: str) -> WindowJudgement:
    ratios = {"python": 4.0, "stream": 1.0}
    floors = {"python": 1.2, "stream": 1.2}
    return WindowJudgement(nodeid, "disturbed", ratios, ratios, floors, ("python",), 0.0, 0.1)


def test_the_stop_rule_is_told_how_many_pairs_the_canary_dropped() -> None:
    # A busy host holds a regression to the process floor, and the stop rule measures on until
    # its interval clears it, so the rule must know the pairs run, not only the pairs kept.
    workers, _ = recording(pairs=4, min_pairs=2, replacements=4, worker=DisturbedWorker)
    looks: list[tuple[int, int]] = []
    (test,) = workers.measure_tests(ids("a"), decide(looks=looks)).values()
    # Pair 1 cannot go (it would leave fewer than min_pairs); pairs 1 and 3 are gone by the
    # look at three kept; pair 6 makes four kept, the cap: no look there.
    assert looks == [(2, 0), (3, 2)]
    assert (test.pairs, test.dropped) == (7, (1, 3, 5))


def test_the_kept_pairs_hold_both_orders_alike_when_the_canary_drops_pairs() -> None:
    # The canary drops every second pair run (1, 3, 5). Alternating by pair number would have
    # kept pairs 0, 2, 4 and 6, all baseline first; choosing each pair's order from the kept
    # ones keeps two of each.
    workers, _ = recording(pairs=4, min_pairs=2, replacements=4, worker=DisturbedWorker)
    (test,) = workers.measure_tests(ids("a"), decide()).values()
    assert test.dropped == (1, 3, 5)
    assert sorted(test.kept_order) == ["AB", "AB", "BA", "BA"]
    assert test.kept_order[0] == "AB"


def test_with_no_pair_dropped_the_order_is_abba() -> None:
    workers, _ = recording(pairs=6, min_pairs=2)
    (test,) = workers.measure_tests(ids("a"), decide()).values()
    assert test.dropped == ()
    assert test.kept_order == ("AB", "BA", "AB", "BA", "AB", "BA")
