"""Which window pairs ``ab`` holds on one CPU: the controller's rule, with scripted workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_roofline.ab.workers import (
    PARALLEL_CPU_SHARE,
    PairedWorkers,
    SideSpec,
    WindowSettings,
    pair_cpu,
)
from tests.unit.window_replies import passed_window


class ScriptedWorker:
    """A worker that answers every window with fixed samples and a scripted CPU share,
    recording the CPU it was asked to hold each window on."""

    def __init__(self, side: str, shares: list[float], number: int = 0) -> None:
        self.side = side
        self.number = number
        self.shares = shares
        self.asked: list[int | None] = []

    def window(
        self, nodeid: str, seconds: float, timeout: float, cpu: int | None = None
    ) -> dict[str, Any]:
        index = len(self.asked)
        self.asked.append(cpu)
        reply = passed_window(
            nodeid,
            seconds,
            samples=20,
            cpu_share=self.shares[min(index, len(self.shares) - 1)],
            index=index,
        )
        return {
            **reply,
            # A test's first window on a worker runs free whatever was asked.
            "cpu": None if index == 0 else cpu,
        }


def scripted(
    shares: dict[str, list[float]], *, worker_pairs: int = 1, pairs: int = 6
) -> tuple[PairedWorkers, list[dict[str, ScriptedWorker]]]:
    settings = WindowSettings(
        min_pairs=pairs, max_pairs=pairs, worker_pairs=worker_pairs, max_replacements=0
    )
    spec = {
        side: SideSpec(side=side, python="python", workdir=Path("."))
        for side in ("baseline", "candidate")
    }
    workers = PairedWorkers(spec["baseline"], spec["candidate"], settings)
    workers.cpus = (0, 1)
    pairs_of_workers = [
        {side: ScriptedWorker(side, shares[side], number) for side in ("baseline", "candidate")}
        for number in range(worker_pairs)
    ]
    workers._pairs = pairs_of_workers  # type: ignore[assignment]
    return workers, pairs_of_workers


def test_a_serial_test_has_both_windows_of_every_pair_asked_onto_one_cpu_in_turn() -> None:
    workers, (pair,) = scripted({"baseline": [0.98], "candidate": [0.97]})
    test = workers.measure_test("t")
    expected = [pair_cpu(p, (0, 1)) for p in range(6)]
    assert pair["baseline"].asked == pair["candidate"].asked == expected
    assert [w.cpu for w in test.windows if w.side == "candidate"] == [None, *expected[1:]]


def test_each_worker_pair_takes_every_cpu_with_its_own_pairs() -> None:
    workers, pairs = scripted({"baseline": [0.9], "candidate": [0.9]}, worker_pairs=3, pairs=12)
    workers.measure_test("t")
    for pair in pairs:
        assert pair["baseline"].asked == [0, 0, 1, 1]


def test_a_test_that_uses_several_cpus_on_either_side_is_not_held_from_the_next_pair() -> None:
    # The baseline's work runs on two CPUs; a candidate that lost that parallelism would read
    # the same as the baseline if both were held on one CPU.
    workers, (pair,) = scripted({"baseline": [1.9], "candidate": [1.0]})
    test = workers.measure_test("t")
    assert pair["baseline"].asked == [0, None, None, None, None, None]  # free after pair 0
    assert all(w.cpu is None for w in test.windows)  # pair 0 ran free (first windows)
    later, (late_pair,) = scripted(
        {"baseline": [1.0, 1.0, PARALLEL_CPU_SHARE + 0.8, 1.0], "candidate": [1.0]}
    )
    later.measure_test("t")
    # One window of a serial test above the line (short windows read 2.0 here) keeps the hold.
    assert late_pair["candidate"].asked == [0, 0, 1, 1, 0, 0]
