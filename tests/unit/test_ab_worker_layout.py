"""The heap block a paired worker holds through each window (``plugin.ab_worker.layout_shift``)."""

from __future__ import annotations

import random

import pytest

from pytest_roofline.ab.workers import LAYOUT_SHIFT_BYTES, WindowSettings
from pytest_roofline.plugin.ab_worker import layout_shift


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
