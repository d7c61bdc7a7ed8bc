"""What a paired worker does around each window: the heap block it holds
(``plugin.ab_worker.layout_shift``) and the CPU it holds its main thread on (``on_cpu``)."""

from __future__ import annotations

import os
import random
import threading

import pytest

from pytest_roofline.ab.workers import LAYOUT_SHIFT_BYTES, WindowSettings
from pytest_roofline.plugin.ab_worker import layout_shift, on_cpu


def test_the_block_is_a_uniform_draw_in_heap_sized_pieces() -> None:
    rng = random.Random(7)
    totals = []
    for _ in range(400):
        pieces = layout_shift(rng, LAYOUT_SHIFT_BYTES)
        # Under glibc's smallest mmap threshold (128 KiB), so malloc serves them from the heap.
        assert all(0 < len(piece) <= 64 * 1024 for piece in pieces)
        totals.append(sum(len(piece) for piece in pieces))
    assert all(0 <= total <= LAYOUT_SHIFT_BYTES for total in totals)
    # Uniform over the range: each quarter holds about a quarter of the draws (seeded).
    quarters = [sum(q * LAYOUT_SHIFT_BYTES // 4 <= t < (q + 1) * LAYOUT_SHIFT_BYTES // 4
                    for t in totals) for q in range(4)]  # fmt: skip
    assert all(70 <= count <= 130 for count in quarters), quarters


def test_no_limit_means_no_block() -> None:
    assert layout_shift(random.Random(1), 0) == []


def test_the_draw_leaves_the_tests_random_state_alone() -> None:
    random.seed(12345)
    state = random.getstate()
    layout_shift(random.Random(), LAYOUT_SHIFT_BYTES)
    assert random.getstate() == state


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="layout_shift_bytes must be >= 0"):
        WindowSettings(layout_shift_bytes=-1)


# -- which CPU a window's main thread runs on ---------------------------------------------------
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
TWO_CPUS = pytest.mark.skipif(len(CPUS) < 2, reason="holding a thread on one CPU needs two")


@TWO_CPUS
def test_on_cpu_holds_the_thread_there_and_gives_every_cpu_back() -> None:
    before = os.sched_getaffinity(0)
    with on_cpu(CPUS[-1]) as held:
        assert held and os.sched_getaffinity(0) == {CPUS[-1]}
    assert os.sched_getaffinity(0) == before


@TWO_CPUS
def test_a_thread_started_while_held_gets_every_cpu_back_and_one_that_chose_keeps_its_own() -> None:
    before = os.sched_getaffinity(0)
    release = threading.Event()
    chose = threading.Event()
    own = {CPUS[0]}

    def choose() -> None:
        os.sched_setaffinity(0, own)  # a thread that binds itself, as OpenMP's may
        chose.set()
        release.wait()

    with on_cpu(CPUS[-1]):
        inherited = threading.Thread(target=release.wait)
        chooser = threading.Thread(target=choose)
        inherited.start()
        chooser.start()
        chose.wait()
        assert os.sched_getaffinity(inherited.native_id) == {CPUS[-1]}
    try:
        assert os.sched_getaffinity(inherited.native_id) == before
        assert os.sched_getaffinity(chooser.native_id) == own
    finally:
        release.set()
        inherited.join()
        chooser.join()


def test_on_cpu_runs_free_without_a_cpu_or_when_the_cpu_is_refused() -> None:
    before = os.sched_getaffinity(0) if CPUS else None
    with on_cpu(None) as held:
        assert not held
    if CPUS:
        with on_cpu(max(CPUS) + 4096) as held:  # not a CPU this process may use
            assert not held and os.sched_getaffinity(0) == before
