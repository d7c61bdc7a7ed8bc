"""Explicit thresholds: ``--roofline-fail=p50:10%`` (pytest-benchmark's ``--benchmark-compare-fail``).

Pure (no pytest, no I/O). An extra policy rule on top of the statistics: a change above the
user's threshold counts as a regression when it is also *real* — the interval's lower bound above
1, the session-wide (Bonferroni) p-value below alpha, the change above the absolute floor. The
user's threshold takes the place of the gate's margin (``min_effect``, history noise floor), so
"fail above +10% on p50" is kept, and the statistics still guard against noise: a +15% that the
interval does not establish ships. A replay must reproduce it as for any regression, and a
disturbed host escalates it.

The evidence (:mod:`pytest_roofline.gate.evidence`) asks :func:`threshold_hits` whether a first
look must be replayed; the policy (:mod:`pytest_roofline.gate.policy`) adds
:func:`threshold_reasons` to a test's reasons.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pytest_roofline.stats import QuantileComparison

__all__ = ["ThresholdReasons", "exceeds_threshold", "threshold_hits", "threshold_reasons"]


def exceeds_threshold(comparison: QuantileComparison, threshold: float) -> bool:
    """Whether a comparison passes an explicit threshold *and* is real.

    Real: the interval's lower bound is above 1, the session-wide (Bonferroni) p-value is below
    the comparison's alpha, and the change is above the absolute floor. Only the margin
    (``min_effect``, history noise floor, MDE) is replaced by the user's threshold.
    """
    c = comparison
    return (
        c.verdict != "insufficient"
        and math.isfinite(c.ratio)
        and c.ratio >= 1 + threshold
        and c.ci.low > 1
        and math.isfinite(c.p_adjusted)
        and c.p_adjusted < c.alpha
        and c.abs_change_s >= c.abs_floor_s
    )


def threshold_hits(
    comparisons: Mapping[str, QuantileComparison], thresholds: Mapping[str, float]
) -> list[str]:
    """The quantiles whose comparison passes its explicit threshold (:func:`exceeds_threshold`)."""
    return [
        name
        for name, threshold in thresholds.items()
        if name in comparisons and exceeds_threshold(comparisons[name], threshold)
    ]


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
    replay_attempted: bool | None,
    replay_ratios: Mapping[str, tuple[float, ...]],
    host_disturbed: str | None = None,
    fresh_problem: Callable[[str, float], tuple[str, str] | None] = lambda name, threshold: None,
    fresh_seen: Callable[[str], str] = lambda name: "",
) -> ThresholdReasons:
    """The rule: a real change above a threshold rolls back once reproduced.

    :param replay_attempted: ``None`` when replay is off (the first look decides), ``False``
        when a replay was due but not made, ``True`` when it was made.
    :param replay_ratios: each quantile's ratio in every replay.
    :param host_disturbed: why the host canary saw a disturbance, or ``None``: a change seen
        on a disturbed host is not established.
    :param fresh_problem: why a change the replays reproduced may not roll back yet, given the
        quantile and its threshold (``(reason, missing evidence)``; ``None``: it may): a replay
        in a fresh process must find it too (``gate.policy``).
    :param fresh_seen: what that replay found, appended to a rollback's reason.

    A quantile the gate itself found DIFFERENT is left to the gate (its reason already says
    so), so one change is never counted twice.
    """
    rollback: list[str] = []
    escalate: list[str] = []
    missing: list[str] = []
    for name in threshold_hits(comparisons, thresholds):
        seen = comparisons[name]
        if seen.outcome == "different":
            continue
        threshold = thresholds[name]
        text = (
            f"{name} {_ci(seen)} is above the explicit threshold +{threshold:.0%} (--roofline-fail)"
        )
        replayed = replay_ratios.get(name, ())
        if host_disturbed is not None:
            escalate.append(
                f"{text}, but the host was disturbed during the test ({host_disturbed})"
            )
        elif replay_attempted is True:
            if not (replayed and all(r >= 1 + threshold for r in replayed)):
                escalate.append(f"{text}, but it did not reproduce on replay")
            elif (problem := fresh_problem(name, threshold)) is not None:
                escalate.append(f"{text}, reproduced on replay, but {problem[0]}")
                missing.append(problem[1])
            else:
                rollback.append(f"{text}, reproduced on replay{fresh_seen(name)}")
        elif replay_attempted is False:
            escalate.append(f"{text}, not yet confirmed by a replay")
            missing.append("replay")
        else:
            rollback.append(text)
    return ThresholdReasons(tuple(rollback), tuple(escalate), tuple(missing))
