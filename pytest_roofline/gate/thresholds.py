"""Explicit thresholds: ``--roofline-fail=p50:10%`` (pytest-benchmark's ``--benchmark-compare-fail``).

Pure (no pytest, no I/O). An extra policy rule on top of the statistics: a change above the
user's threshold counts as a regression when it is also *real* (the interval's lower bound above
1, the session-wide (Bonferroni) p-value below alpha, the change above the absolute floor) and
*attributed to the code*: paired rounds against the baseline's commit find it past the
threshold too (they are asked about it, judged against the threshold: ``gate.confirm``), or the
comparison itself is paired. The user's threshold takes the place of the gate's
margin (``min_effect``, history noise floor), so "fail above +10% on p50" is kept, and the
statistics still guard against noise: a +15% that the interval does not establish ships.

Two runs alone do not attribute a change of that size: measured on this VM (stop 47,
``docs/validation/aa_threshold_never_stop47.txt``), with ``--roofline-fail=p50:10%`` and no paired
rounds, 8 of 240 unchanged test-runs read p50 x1.19-x1.56 slower than baseline runs saved
minutes before, in the first process, on a same-process replay and in a fresh process alike. So
without paired rounds a threshold hit escalates, naming the ``ab`` command that settles it.

The policy (:mod:`pytest_roofline.gate.policy`) adds :func:`threshold_reasons` to a test's
reasons; the session asks paired rounds about :func:`recorded_threshold_hits`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pytest_roofline.stats import QuantileComparison

__all__ = [
    "RecordedChange",
    "ThresholdReasons",
    "exceeds_threshold",
    "recorded_threshold_hits",
    "threshold_reasons",
]


def _real_change_past(
    threshold: float,
    *,
    verdict: str | None,
    ratio: float | None,
    ci_low: float | None,
    p_adjusted: float | None,
    alpha: float | None,
    abs_change_s: float | None,
    abs_floor_s: float | None,
) -> bool:
    """The rule of :func:`exceeds_threshold`, on a comparison's figures (``None``: not known,
    so not past)."""
    figures = (ratio, ci_low, p_adjusted, alpha, abs_change_s, abs_floor_s)
    if verdict == "insufficient" or any(f is None or not math.isfinite(f) for f in figures):
        return False
    assert ratio is not None and ci_low is not None and p_adjusted is not None
    assert alpha is not None and abs_change_s is not None and abs_floor_s is not None
    return (
        ratio >= 1 + threshold and ci_low > 1 and p_adjusted < alpha and abs_change_s >= abs_floor_s
    )


def exceeds_threshold(comparison: QuantileComparison, threshold: float) -> bool:
    """Whether a comparison passes an explicit threshold *and* is real.

    Real: the interval's lower bound is above 1, the session-wide (Bonferroni) p-value is below
    the comparison's alpha, and the change is above the absolute floor. Only the margin
    (``min_effect``, history noise floor, MDE) is replaced by the user's threshold.
    """
    c = comparison
    return _real_change_past(
        threshold,
        verdict=c.verdict,
        ratio=c.ratio,
        ci_low=c.ci.low,
        p_adjusted=c.p_adjusted,
        alpha=c.alpha,
        abs_change_s=c.abs_change_s,
        abs_floor_s=c.abs_floor_s,
    )


class RecordedChange(Protocol):
    """A comparison as the run document records it (``model.document.QuantileChange``)."""

    @property
    def verdict(self) -> str | None: ...

    @property
    def ratio(self) -> float | None: ...

    @property
    def ci_low(self) -> float | None: ...

    @property
    def p_adjusted(self) -> float | None: ...

    @property
    def alpha(self) -> float | None: ...

    @property
    def abs_change_s(self) -> float | None: ...

    @property
    def abs_floor_s(self) -> float | None: ...


def recorded_threshold_hits(
    change: Mapping[str, RecordedChange], thresholds: Mapping[str, float]
) -> tuple[str, ...]:
    """The quantiles of a recorded first look past their explicit threshold
    (:func:`exceeds_threshold`): what paired rounds are asked to attribute."""
    return tuple(
        name
        for name, threshold in thresholds.items()
        if name in change
        and _real_change_past(
            threshold,
            verdict=change[name].verdict,
            ratio=change[name].ratio,
            ci_low=change[name].ci_low,
            p_adjusted=change[name].p_adjusted,
            alpha=change[name].alpha,
            abs_change_s=change[name].abs_change_s,
            abs_floor_s=change[name].abs_floor_s,
        )
    )


@dataclass(frozen=True, slots=True)
class ThresholdReasons:
    """What the explicit thresholds add to a test's decision."""

    rollback: tuple[str, ...] = ()
    escalate: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


def _ci(c: QuantileComparison) -> str:
    return f"x{c.ratio:.3f} [{c.ci.low:.3f}, {c.ci.high:.3f}]"


def threshold_reasons(
    comparisons: Mapping[str, QuantileComparison],
    thresholds: Mapping[str, float],
    *,
    attributed: bool,
    unattributed: str,
    host_disturbed: str | None = None,
) -> ThresholdReasons:
    """The rule for first looks the gate itself found SAME: a real change above a threshold
    rolls back when the run attributes it to the code, else escalates.

    :param comparisons: the first look's SAME comparisons that paired rounds did not decide
        (DIFFERENT and UNKNOWN ones are the gate's, and paired rounds decide asked ones at the
        threshold: :func:`pytest_roofline.gate.policy.decide_test`), so one change is never
        counted twice.
    :param attributed: whether the comparisons themselves are paired (``pytest-roofline ab``).
    :param unattributed: why a two-run comparison is not attributed to the code, with the
        command that would settle it (the reason's end).
    :param host_disturbed: why the host canary saw a disturbance, or ``None``: a change seen
        on a disturbed host is not established.
    """
    rollback: list[str] = []
    escalate: list[str] = []
    missing: list[str] = []
    for name, threshold in thresholds.items():
        seen = comparisons.get(name)
        if seen is None or not exceeds_threshold(seen, threshold):
            continue
        text = (
            f"{name} {_ci(seen)} is above the explicit threshold +{threshold:.0%} (--roofline-fail)"
        )
        if host_disturbed is not None:
            escalate.append(
                f"{text}, but the host was disturbed during the test ({host_disturbed})"
            )
        elif attributed:
            rollback.append(text)
        else:
            escalate.append(f"{text}, but {unattributed}")
            missing.append("a paired confirmation against the baseline's commit")
    return ThresholdReasons(tuple(rollback), tuple(escalate), tuple(missing))
