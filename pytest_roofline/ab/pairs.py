"""Which window pairs of a paired comparison count: pairs disturbed on either side are dropped.

Each window of a paired run (:mod:`~pytest_roofline.ab.workers`) is bracketed by host canary
readings in its worker (:class:`pytest_roofline.measure.canary.WindowJudgement`). A pair whose
window on either side read *disturbed* (some canary kind slower than that worker's level beyond
its floor) may compare a disturbed side with an undisturbed one: the alternation cancels a host
shift that both sides see, not one that hits one window. Such pairs are dropped from the
comparison when the disturbance is past :data:`DROP_FLOORS` floors, the most disturbed first,
as long as at least ``min_pairs`` pairs remain (fewer would leave the t interval with too few
degrees of freedom to decide anything; the trimmed mean of
:func:`pytest_roofline.stats.paired.compare_paired` then absorbs what is left). The count is
reported with every comparison.

Pure: no I/O, no workers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_roofline.measure.canary import PairedWindow, WindowJudgement

__all__ = ["DROP_FLOORS", "pair_severity", "paired_windows", "pairs_to_drop"]

DROP_FLOORS = 2.0
"""A pair is dropped when a side's canary read slower than its level by this many floors (in log
units: with a floor of x1.2, beyond x1.2**2 = x1.44). Why not one floor: each pair has twelve
looks (two sides, a reading before and after each window, three kinds), and on the quiet 2-vCPU
VM one floor flagged 36% of A/A window pairs (283 of 797), whose ratios were hardly worse than
the rest (p95 log ratio robust sd 0.050 kept against 0.058 with nothing dropped), so the drops
cost a third more window pairs for no better decision. Two floors flagged 16% there, and under
the bursty neighbour 77% against 81%, the kept pairs' p95 ratios as tight as with one floor
(95th percentile of |log ratio| 0.289 against 0.292): the neighbour's disturbances are far
past any floor (median x12.8 the floor). Measured with ``benchmarks/canary_pair_drops.py``."""


def _severity(judgement: WindowJudgement | None) -> float | None:
    """How many floors (log units) a disturbed window's worst canary kind was past its level,
    when at least :data:`DROP_FLOORS`; else ``None``."""
    if judgement is None or not judgement.disturbed:
        return None
    ratios, floors = judgement.ratios, judgement.floors
    worst = max(
        (
            math.log(ratios[k]) / math.log(floors[k])
            for k in judgement.disturbed_kinds
            if k in ratios and floors.get(k, 0.0) > 1.0
        ),
        default=math.inf,  # disturbed without figures: treat as the worst
    )
    return worst if worst >= DROP_FLOORS else None


def pair_severity(base: WindowJudgement | None, cand: WindowJudgement | None) -> float | None:
    """A pair's disturbance: the worse side's :func:`_severity`, ``None`` when neither side is
    disturbed past :data:`DROP_FLOORS` floors.

    ``None`` judgements (canary off) and ``unread`` windows count as not disturbed: nothing
    says the host moved.
    """
    found = [s for s in (_severity(base), _severity(cand)) if s is not None]
    return max(found) if found else None


def pairs_to_drop(severity: Sequence[float | None], min_pairs: int) -> tuple[int, ...]:
    """Indices of the pairs to leave out: disturbed ones, worst first, keeping ``min_pairs``.

    :param severity: per pair, :func:`pair_severity` (``None``: quiet, unread or not read).
    :param min_pairs: pairs that must remain; when more pairs are disturbed than can go, the
        least disturbed of them stay (ties: the later pair stays).
    :returns: the dropped pairs' indices, ascending.

    >>> pairs_to_drop([None, 2.4, None, None, 3.0, None], 4)
    (1, 4)
    >>> pairs_to_drop([None, 2.4, None, None, 3.0], 4)
    (4,)
    """
    if min_pairs < 0:
        raise ValueError(f"min_pairs must be >= 0, got {min_pairs!r}")
    allowed = max(0, len(severity) - min_pairs)
    disturbed = sorted(
        (i for i, s in enumerate(severity) if s is not None),
        key=lambda i: (-(severity[i] or 0.0), i),
    )
    return tuple(sorted(disturbed[:allowed]))


def paired_windows(
    base: Sequence[WindowJudgement | None], cand: Sequence[WindowJudgement | None]
) -> tuple[PairedWindow, ...]:
    """Each pair's two canary judgements (A = baseline, B = candidate) for the report.

    A side without a judgement (canary off) reads as ``unread``.
    """
    out = []
    for i, (a, b) in enumerate(zip(base, cand, strict=False)):
        out.append(PairedWindow(i, a or _unread(i), b or _unread(i)))
    return tuple(out)


def _unread(index: int) -> WindowJudgement:
    return WindowJudgement(
        test_id=f"pair {index}",
        state="unread",
        ratios_before={},
        ratios_after={},
        floors={},
        disturbed_kinds=(),
        opened_at_s=0.0,
        closed_at_s=0.0,
    )
