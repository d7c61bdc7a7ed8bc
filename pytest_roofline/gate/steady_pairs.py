"""Which window pairs of a paired test the host left steady, judged by the pair's own p50.

The host canary drops a window pair when the reference kernels read off their level around it
(:mod:`pytest_roofline.ab.pairs`), but a disturbance shorter than the gap between two canary
readings lands inside one window unseen. It slows that window's whole distribution, so that
pair's p50 ratio leaves the level every other pair of the test shares, and its tail ratios go
with it. The trimmed mean of each quantile's per-pair ratios trims each quantile's extremes
separately, so a handful of such pairs on one side can still carry a tail quantile's pooled
comparison to DIFFERENT in an A/A run: at stop 38 an unchanged ``np.sum`` (about 0.1 ms)
rolled back on p99 x1.110 [1.003, 1.176] with 6 of its 38 kept pairs at p50 ratios of x1.38
to x1.46 and one at x0.80, while the middle half of the other 31 lay within x0.98 to x1.03
(``docs/paired.md``, "A false rollback at forty pairs").

So a regression rolls back only when it still stands on the steady pairs: those whose p50 log
ratio lies within ``max(STEADY_MADS x 1.4826 MAD, STEADY_FLOOR)`` of the median of the test's
p50 log ratios (:func:`steady_pairs`), compared again at the same look's boundary
(:func:`pytest_roofline.gate.paired_looks.steady_look`). The fence is centred on the test's
own median, not on 1: a real change moves every pair together and keeps them all; it is
symmetric, so it removes disturbances of either side alike. It never adds a rollback: a
regression that does not stand counts as not established, as one a pair of worker processes
does not find (``disputed``): while a sequential alternation can go on, more pairs are
measured (a later look may rule the change out: SAME, within the plan's error spending); at
the end ``ab`` escalates it, and the two-run gate escalates a first-look regression (a first
look that was SAME, or left a tail unassessed, keeps its outcome).

Pure: per-pair ratios in, a mask out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["STEADY_FLOOR", "STEADY_MADS", "steady_pairs"]

STEADY_MADS = 4.0
"""How many robust standard deviations (1.4826 MAD) of the test's p50 log ratios a steady pair
may lie from their median: 4 keeps a normal pair with probability 0.99994."""

STEADY_FLOOR = 0.05
"""The least distance (log) that counts as unsteady: a test whose p50 ratios barely spread
(a 2-thread GEMM's MAD is about 0.005) would otherwise fence pairs for a +2% wobble."""


def steady_pairs(p50_ratios: Sequence[float]) -> tuple[bool, ...]:
    """Whether each window pair's p50 ratio stays at the level of the test's other pairs.

    A pair without a usable ratio (NaN, not positive) counts as steady: it says nothing.

    >>> steady_pairs([1.0, 1.02, 0.99, 1.01, 1.40, 0.98])
    (True, True, True, True, False, True)
    >>> steady_pairs([1.10, 1.12, 1.09, 1.11])  # a real +10%: every pair moves together
    (True, True, True, True)
    """
    logs = np.array(
        [math.log(r) if math.isfinite(r) and r > 0 else math.nan for r in p50_ratios],
        dtype=np.float64,
    )
    usable = logs[np.isfinite(logs)]
    if usable.size == 0:
        return tuple(True for _ in p50_ratios)
    centre = float(np.median(usable))
    spread = 1.4826 * float(np.median(np.abs(usable - centre)))
    fence = max(STEADY_MADS * spread, STEADY_FLOOR)
    return tuple(bool(not math.isfinite(d) or abs(d - centre) <= fence) for d in logs)
