"""Which window pairs of a paired comparison count: pairs disturbed on either side are dropped.

Each window of a paired run (:mod:`~pytest_roofline.ab.workers`) is bracketed by host canary
readings in its worker (:class:`pytest_roofline.measure.canary.WindowJudgement`). A pair whose
window on either side read *disturbed* (some canary kind slower than that worker's level beyond
its floor) compares a disturbed side with an undisturbed one: the alternation cancels a host
shift that both sides see, not one that hits one window. Such pairs are dropped from the
comparison, the most disturbed first, as long as at least ``min_pairs`` pairs remain (fewer
would leave the t interval with too few degrees of freedom to decide anything; the trimmed
mean of :func:`pytest_roofline.stats.paired.compare_paired` then absorbs what is left). The
count is reported with every comparison.

A canary reading is a few calls of each reference kernel, taken beside the window, not in it;
on its own it cries wolf. Measured here (2026-12-01, ``pytest-roofline ab --baseline=HEAD`` on
ten tests of the example suite, quiet host, load 1): 4 of 8 pairs were flagged in 8 of the 10
tests, so every comparison ran on its ``min_pairs`` and escalated. So a flagged pair is dropped
only when the pair itself shows the disturbance (:func:`corroborated_severity`): its log ratio
(candidate over baseline) of some quantile (p50, p95, p99, where the windows hold enough samples
for it) departs from the median over the test's pairs, towards the flagged side being slower, by
more than :data:`CORROBORATION_SPREAD` robust standard deviations of those ratios. The median
is the comparison's own, so a real change that moves every pair is never read as a disturbance;
under an unchanged test the canary's false alarms fall on either side alike, so leaving out the
corroborated ones biases nothing.

Pure: no I/O, no workers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from pytest_roofline.measure.canary import PairedWindow, WindowJudgement

__all__ = [
    "CORROBORATION_SPREAD",
    "corroborated_severity",
    "pair_severity",
    "paired_windows",
    "pairs_to_drop",
]

CORROBORATION_SPREAD = 1.0
"""How far, in robust standard deviations of the pairs' p50 log ratios, a flagged pair's ratio
must depart from their median towards the flagged side to count as disturbed. One: a false
alarm then drops its pair one time in six; a disturbance the canary sees beyond its floor
(x1.2 or more) moves the pair's ratio several times further than the spread here (0.02-0.1)."""

_MAD_TO_SD = 1.4826
_MIN_PAIRS_TO_JUDGE = 3


def _severity(judgement: WindowJudgement | None) -> float | None:
    """How far beyond its floor a disturbed window's worst canary kind was (> 1), else ``None``."""
    if judgement is None or not judgement.disturbed:
        return None
    ratios, floors = judgement.ratios, judgement.floors
    worst = max(
        (ratios[k] / floors[k] for k in judgement.disturbed_kinds if k in ratios and floors.get(k)),
        default=math.inf,  # disturbed without figures: treat as the worst
    )
    return worst


def pair_severity(base: WindowJudgement | None, cand: WindowJudgement | None) -> float | None:
    """A pair's disturbance: the worse side's :func:`_severity`, ``None`` when neither is disturbed.

    ``None`` judgements (canary off) and ``unread`` windows count as not disturbed: nothing
    says the host moved.
    """
    found = [s for s in (_severity(base), _severity(cand)) if s is not None]
    return max(found) if found else None


def _direction(base: WindowJudgement | None, cand: WindowJudgement | None) -> int:
    """+1: only the candidate's window was flagged, -1: only the baseline's, 0: both."""
    a = base is not None and base.disturbed
    b = cand is not None and cand.disturbed
    return 0 if a == b else (1 if b else -1)


def corroborated_severity(
    base: Sequence[WindowJudgement | None],
    cand: Sequence[WindowJudgement | None],
    log_ratios: Mapping[str, Sequence[float]],
    *,
    spread: float = CORROBORATION_SPREAD,
) -> list[float | None]:
    """Each pair's :func:`pair_severity`, kept only where the pair's own ratios show it.

    :param base: the baseline side's judgement of each pair's window.
    :param cand: the candidate side's, aligned.
    :param log_ratios: per quantile (p50, p95, ...), each pair's ``log(candidate / baseline)``
        of that quantile (NaN: none, e.g. too few samples in a window for a tail).
    :param spread: robust standard deviations a ratio must depart by (module docstring).
    :returns: per pair, its severity or ``None`` (quiet, or a flag none of its ratios bears
        out). A burst often reaches a window's tail and not its median, so a departure of any
        quantile corroborates the flag. A flagged pair with no quantile that has a ratio to
        judge by (fewer than three pairs with one, or none for this pair) keeps the canary's
        severity.
    """
    severity = [pair_severity(a, b) for a, b in zip(base, cand, strict=False)]
    judged = [_departures(series) for series in log_ratios.values()]
    out: list[float | None] = []
    for i, s in enumerate(severity):
        seen = [
            found for d in judged if d is not None and i < len(d) and (found := d[i]) is not None
        ]
        if s is None or not seen:
            out.append(s)
            continue
        direction = _direction(base[i], cand[i])
        corroborated = any(
            (dev * direction if direction else abs(dev)) > spread * sd for dev, sd in seen
        )
        out.append(s if corroborated else None)
    return out


def _departures(series: Sequence[float]) -> list[tuple[float, float] | None] | None:
    """Each pair's departure from the series' median and the series' robust spread (``None``
    for a pair without a ratio); ``None`` with fewer than three ratios to judge by."""
    finite = [r for r in series if math.isfinite(r)]
    if len(finite) < _MIN_PAIRS_TO_JUDGE:
        return None
    centre = statistics.median(finite)
    sd = _MAD_TO_SD * statistics.median(abs(r - centre) for r in finite)
    return [(r - centre, sd) if math.isfinite(r) else None for r in series]


def pairs_to_drop(severity: Sequence[float | None], min_pairs: int) -> tuple[int, ...]:
    """Indices of the pairs to leave out: disturbed ones, worst first, keeping ``min_pairs``.

    :param severity: per pair, :func:`pair_severity` (``None``: quiet, unread or not read).
    :param min_pairs: pairs that must remain; when more pairs are disturbed than can go, the
        least disturbed of them stay (ties: the later pair stays).
    :returns: the dropped pairs' indices, ascending.

    >>> pairs_to_drop([None, 1.4, None, None, 3.0, None], 4)
    (1, 4)
    >>> pairs_to_drop([None, 1.4, None, None, 3.0], 4)
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
