"""Three-way outcomes of a comparison: DIFFERENT, SAME or UNKNOWN ("ship is earned").

Pure Python (no numpy needed). docs/gate.md: every gated comparison of a candidate
with its baseline ends as

* **DIFFERENT** (a regression): the interval's lower bound is above 1, the ratio is at least
  ``1 + margin`` and the absolute change is above the timer floor;
* **SAME**: the interval's upper bound is below ``1 + margin`` (a regression of the margin or
  more is ruled out); flagged as an improvement when the candidate is clearly faster;
* **UNKNOWN**: anything else. UNKNOWN is a reason to measure more (``sequential``), and once
  the budget is spent, to escalate; it never ships silently.

The margin is the largest of the user's ``min_effect`` and the history noise floor, **never the
test's own minimum detectable effect**: a margin that grows with the noise lets anything pass
(issue 10: an interval of [0.06, 18.8] "ruled out" a 6x slowdown because its MDE was +6186%).
It is capped at ``max_margin`` (``gate.max_margin``, default 1.0, i.e. x2: a doubling never
passes unseen); a test whose history floor exceeds the cap is "too noisy to gate here" and its
comparison is UNKNOWN whatever the interval says. A ratio of 3 or more never yields SAME.

Mapping to the gate's existing verdict vocabulary (``stats.Verdict``), so that ``policy`` and
the reports keep working while they move to outcomes:

==================  ==========================================================  ==============
outcome             condition                                                   verdict
==================  ==========================================================  ==============
DIFFERENT           lower > 1, ratio >= 1 + margin, change above the floor      ``regression``
SAME                upper < 1 + margin (or any change below the absolute floor) ``ok``
SAME, improvement   also upper < 1, ratio <= 1 / (1 + margin), above the floor  ``ok`` +
                                                                                ``improvement``
UNKNOWN             ratio >= 1 + margin (not established, too noisy, or >= x3)  ``suspect``
UNKNOWN             ratio below the margin, not ruled out either                ``not detected``
UNKNOWN             no interval (too few samples, degenerate data)              ``insufficient``
==================  ==========================================================  ==============

``policy`` must then treat ``not detected`` as UNKNOWN (escalate once the budget is spent);
today it ships it with a note, which is the "UNKNOWN ships silently" the issue forbids.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from pytest_roofline.errors import ConfigError
from pytest_roofline.vocabulary import Outcome, Verdict

__all__ = [
    "DEFAULT_MAX_MARGIN",
    "NEVER_SAME_RATIO",
    "Basis",
    "GateMargin",
    "MarginSource",
    "Outcome",
    "ThreeWay",
    "Verdict",
    "as_margin",
    "classify_three_way",
    "combine_outcomes",
    "gate_margin",
    "outcome_of_verdict",
]


MarginSource: TypeAlias = Literal["min_effect", "history", "cap"]
"""Which term set the margin: the user's ``min_effect``, the history noise floor, or the cap."""

Basis: TypeAlias = Literal[
    "regression",
    "equivalent",
    "improved",
    "below_abs_floor",
    "above_margin_unproven",
    "undecided",
    "too_noisy",
    "gross_change",
    "no_interval",
]
"""Why a comparison got its outcome, for reports and tests (one value per path of the rule)."""

DEFAULT_MAX_MARGIN = 1.0
"""``gate.max_margin`` as a ratio minus 1: x2. A doubling never passes unseen: a test whose
history noise floor is wider than this is not gated on timing (escalated as too noisy)."""

NEVER_SAME_RATIO = 3.0
"""A point estimate at or above this ratio never yields SAME, whatever the interval or margin
(issue 10: a 6x and a 4x slowdown shipped on intervals that the noise had widened)."""


@dataclass(frozen=True, slots=True)
class GateMargin:
    """The practical margin of one comparison and where it came from.

    Attributes
    ----------
    margin : float
        Ratio minus 1 used by :func:`classify_three_way` (``0.05`` = 5%):
        ``min(max(min_effect, history_floor), max_margin)``.
    source : MarginSource
        ``"min_effect"`` or ``"history"`` (the larger of the two), or ``"cap"`` when the history
        floor exceeded ``max_margin``.
    min_effect, history_floor, max_margin : float
        The inputs, as ratios minus 1.
    too_noisy : bool
        The history floor exceeds ``max_margin``: the test is too noisy to gate here, and every
        comparison with this margin is UNKNOWN (escalated with its history).
    reason : str
        One line for the report, e.g. ``"margin +37% from the history noise floor"``.
    detect : float or None
        The change (ratio minus 1) a DIFFERENT needs, when it is below ``margin``; ``None``:
        ``margin`` itself. A paired confirmation of a two-run session sets it to ``min_effect``
        (:meth:`for_paired_rounds`): SAME still has to rule out the session's margin, but a
        regression the alternation establishes beyond ``min_effect`` is not excused by
        between-run noise that the alternation cancels.
    """

    margin: float
    source: MarginSource
    min_effect: float
    history_floor: float
    max_margin: float
    too_noisy: bool
    reason: str
    detect: float | None = None

    @property
    def different_at(self) -> float:
        """The change a DIFFERENT needs: ``detect``, else ``margin``."""
        return self.margin if self.detect is None else self.detect

    def for_paired_rounds(self) -> GateMargin:
        """This margin for paired rounds that confirm a two-run first look: DIFFERENT at
        ``min_effect``, SAME still below ``margin``.

        >>> m = gate_margin(0.05, 0.6).for_paired_rounds()
        >>> m.margin, m.different_at
        (0.6, 0.05)
        >>> gate_margin(0.05, 0.0).for_paired_rounds().detect is None
        True
        """
        if self.too_noisy or self.min_effect >= self.margin:
            return self
        return replace(
            self,
            detect=self.min_effect,
            reason=f"{self.reason}; a regression beyond +{self.min_effect:.0%} (gate.min_effect)"
            " that paired rounds establish is DIFFERENT",
        )


def _fraction_iv(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"`{name}` must be a non-negative finite number; got {value!r}."
        ) from None
    if not (math.isfinite(v) and v >= 0):
        raise ConfigError(f"`{name}` must be a non-negative finite number; got {value!r}.")
    return v


def gate_margin(
    min_effect: float, history_floor: float, *, max_margin: float = DEFAULT_MAX_MARGIN
) -> GateMargin:
    """The margin of a gated comparison: ``max(min_effect, history_floor)``, capped.

    Never the test's own minimum detectable effect (see the module docstring). The history
    floor is ``stats.noise_floor`` of the baseline label's per-run quantiles (or its default
    with no history); in paired mode, where alternation cancels the between-run noise, pass
    ``history_floor=0``.

    Parameters
    ----------
    min_effect : float
        The user's ``gate.min_effect`` for this quantile (ratio minus 1).
    history_floor : float
        Run-to-run noise floor from the baseline's history (ratio minus 1).
    max_margin : float, optional
        ``gate.max_margin`` (ratio minus 1; default 1.0, i.e. x2). Must be positive and at
        least ``min_effect``.

    Returns
    -------
    GateMargin

    Raises
    ------
    ConfigError
        A negative or non-finite input, or ``min_effect > max_margin`` (the user asked for a
        margin the cap forbids: raise ``gate.max_margin`` or lower ``gate.min_effect``).

    Examples
    --------
    >>> gate_margin(0.05, 0.37).margin
    0.37
    >>> m = gate_margin(0.05, 1.6)
    >>> m.margin, m.source, m.too_noisy
    (1.0, 'cap', True)
    """
    me = _fraction_iv(min_effect, "min_effect")
    floor = _fraction_iv(history_floor, "history_floor")
    cap = _fraction_iv(max_margin, "max_margin")
    if cap <= 0:
        raise ConfigError(f"`max_margin` must be positive; got {max_margin!r}.")
    if me > cap:
        raise ConfigError(
            f"gate.min_effect (+{me:.0%}) is above gate.max_margin (+{cap:.0%}): "
            "raise gate.max_margin or lower gate.min_effect."
        )
    if floor > cap:
        return GateMargin(
            margin=cap,
            source="cap",
            min_effect=me,
            history_floor=floor,
            max_margin=cap,
            too_noisy=True,
            reason=(
                f"too noisy to gate here: the history noise floor +{floor:.0%} exceeds "
                f"gate.max_margin +{cap:.0%}"
            ),
        )
    if floor > me:
        return GateMargin(
            floor,
            "history",
            me,
            floor,
            cap,
            False,
            f"margin +{floor:.0%} from the history noise floor",
        )
    return GateMargin(
        me, "min_effect", me, floor, cap, False, f"margin +{me:.0%} from gate.min_effect"
    )


@dataclass(frozen=True, slots=True)
class ThreeWay:
    """The outcome of one comparison under the three-way rule.

    Attributes
    ----------
    outcome : Outcome
        ``"different"``, ``"same"`` or ``"unknown"``.
    improvement : bool
        SAME and clearly faster (upper bound < 1, ratio <= 1 / (1 + margin), above the floor).
    verdict : Verdict
        The same result in the gate's existing vocabulary (module docstring's table).
    basis : Basis
        Which path of the rule decided it.
    ratio, ci_low, ci_high : float
        The point estimate and the interval the rule was applied to (each bound at the level
        the caller chose, e.g. a sequential look's nominal level).
    margin : float
        The margin used, ratio minus 1.
    reason : str
        One line saying why.
    """

    outcome: Outcome
    improvement: bool
    verdict: Verdict
    basis: Basis
    ratio: float
    ci_low: float
    ci_high: float
    margin: float
    reason: str


def as_margin(margin: float | GateMargin) -> GateMargin:
    """``margin`` as a :class:`GateMargin` (a plain number is the user's ``min_effect``)."""
    if isinstance(margin, GateMargin):
        return margin
    m = _fraction_iv(margin, "delta")
    return GateMargin(
        m, "min_effect", m, 0.0, max(m, DEFAULT_MAX_MARGIN), False, f"margin +{m:.0%}"
    )


def classify_three_way(
    ratio: float,
    ci_low: float,
    ci_high: float,
    margin: float | GateMargin,
    *,
    base_s: float = math.nan,
    abs_floor_s: float = 0.0,
    never_same_ratio: float = NEVER_SAME_RATIO,
    label: str = "",
) -> ThreeWay:
    """Apply the three-way rule (docs/gate.md) to a ratio and its interval.

    In order:

    1. no finite ratio and interval: UNKNOWN (``insufficient``);
    2. a :class:`GateMargin` with ``too_noisy``: UNKNOWN, whatever the interval (the history
       says run-to-run noise alone exceeds the cap, so neither a rollback nor a ship rests on
       this comparison);
    3. ``ci_low > 1``, ``ratio >= 1 + margin`` (``1 + detect`` where the margin sets one:
       :meth:`GateMargin.for_paired_rounds`) and ``|base_s (ratio - 1)| >= abs_floor_s``:
       DIFFERENT;
    4. ``ratio >= never_same_ratio``: UNKNOWN (never SAME);
    5. ``ci_high < 1 + margin``: SAME, with ``improvement`` when also ``ci_high < 1``,
       ``ratio <= 1 / (1 + margin)`` and the change is above the floor; or
       ``base_s (ci_high - 1) < abs_floor_s`` (any change the interval allows is below the
       timer floor): SAME;
    6. otherwise UNKNOWN: ``suspect`` when the ratio is at or beyond the margin, ``not detected``
       when it is below.

    Parameters
    ----------
    ratio : float
        Point estimate of candidate / baseline.
    ci_low, ci_high : float
        Interval of the ratio. The lower bound's level is the false-DIFFERENT rate of this
        look, the upper bound's the rate of SAME under a true change of exactly the margin.
    margin : float or GateMargin
        Ratio minus 1 (:func:`gate_margin`; a plain float is used as it is).
    base_s : float, optional
        The baseline's quantile in seconds, for the absolute floor (NaN: no absolute check).
    abs_floor_s : float, optional
        Smallest absolute change in seconds that can count as a regression.
    never_same_ratio : float, optional
        Ratios at or above this are never SAME (default 3).
    label : str, optional
        Prefix of the reason, e.g. ``"p95"``.

    Returns
    -------
    ThreeWay

    References
    ----------
    .. [1] Chromium Pinpoint, ``dashboard/pinpoint/models/compare/compare.py`` (catapult):
       DIFFERENT / SAME / UNKNOWN, UNKNOWN meaning "collect more data".
    .. [2] Schuirmann, D. J. (1987), "A comparison of the two one-sided tests procedure and the
       power approach for assessing the equivalence of average bioavailability", *J.
       Pharmacokinet. Biopharm.* 15(6), 657-680 (SAME is a one-sided equivalence test: the
       upper bound below the margin).

    Examples
    --------
    >>> classify_three_way(1.5, 1.3, 1.7, 0.05).outcome
    'different'
    >>> classify_three_way(1.0, 0.97, 1.03, 0.05).outcome
    'same'
    >>> r = classify_three_way(6.9, 0.06, 18.8, 0.05)
    >>> r.outcome, r.verdict
    ('unknown', 'suspect')
    """
    if isinstance(margin, GateMargin):
        m, too_noisy, d = margin.margin, margin.too_noisy, margin.different_at
    else:
        m, too_noisy = _fraction_iv(margin, "margin"), False
        d = m
    edge = 1.0 + m
    detect_edge = 1.0 + d
    head = f"{label + ' ' if label else ''}x{ratio:.3g} [{ci_low:.3g}, {ci_high:.3g}]"

    def out(
        outcome: Outcome, verdict: Verdict, basis: Basis, reason: str, improvement: bool = False
    ) -> ThreeWay:
        return ThreeWay(outcome, improvement, verdict, basis, ratio, ci_low, ci_high, m, reason)

    # A look whose critical value is infinite gives the bounds 0 and +inf: usable, undecided.
    if not (math.isfinite(ratio) and ratio > 0 and 0.0 <= ci_low <= ci_high):
        return out("unknown", "insufficient", "no_interval", f"{head}: no usable interval")
    above = ratio >= edge
    beyond: Verdict = "suspect" if above else "not detected"
    if too_noisy:
        why = margin.reason if isinstance(margin, GateMargin) else "too noisy to gate here"
        return out("unknown", beyond, "too_noisy", f"{head}: {why}")
    change_s = base_s * (ratio - 1.0)
    big_enough = not (abs(change_s) < abs_floor_s)  # NaN base_s: no absolute check
    if ci_low > 1.0 and ratio >= detect_edge and big_enough:
        bar = (
            f"1+margin = {edge:.3g}"
            if d >= m
            else f"1+min_effect = {detect_edge:.3g} (paired; the session's margin is +{m:.1%})"
        )
        return out(
            "different",
            "regression",
            "regression",
            f"{head}: >= {bar} and the interval excludes 1",
        )
    if ratio >= never_same_ratio:
        return out(
            "unknown",
            "suspect",
            "gross_change",
            f"{head}: a x{never_same_ratio:g} or larger change is never SAME; not established either",
        )
    if ci_high < edge:
        if ci_high < 1.0 and ratio <= 1.0 / edge and big_enough:
            return out(
                "same", "ok", "improved", f"{head}: faster by more than the margin +{m:.1%}", True
            )
        return out("same", "ok", "equivalent", f"{head}: a change of +{m:.1%} or more is ruled out")
    if base_s * (ci_high - 1.0) < abs_floor_s:
        return out(
            "same",
            "ok",
            "below_abs_floor",
            f"{head}: any change the interval allows is below the absolute floor {abs_floor_s:.3g} s",
        )
    if above:
        why = (
            f"the change {change_s:.3g} s is below the absolute floor {abs_floor_s:.3g} s"
            if not big_enough
            else "the interval does not exclude 1"
        )
        return out(
            "unknown",
            "suspect",
            "above_margin_unproven",
            f"{head}: >= 1+margin = {edge:.3g} but {why}",
        )
    return out(
        "unknown",
        "not detected",
        "undecided",
        f"{head}: a change of +{m:.1%} is neither seen nor ruled out",
    )


def outcome_of_verdict(verdict: Verdict) -> Outcome:
    """The outcome a verdict of the existing vocabulary stands for (module docstring's table).

    Examples
    --------
    >>> outcome_of_verdict("regression"), outcome_of_verdict("not detected")
    ('different', 'unknown')
    """
    if verdict == "regression":
        return "different"
    if verdict == "ok":
        return "same"
    if verdict in ("suspect", "not detected", "insufficient"):
        return "unknown"
    raise ValueError(f"unknown verdict {verdict!r}")


def combine_outcomes(
    outcomes: Mapping[str, Outcome | None], *, required: Iterable[str] = ("p50",)
) -> Outcome:
    """The outcome of a test from its quantiles' outcomes.

    DIFFERENT if any quantile is DIFFERENT. SAME only if every required quantile (p50) is SAME
    and every other quantile that was assessed is SAME; ``None`` marks a quantile not assessed
    (too few samples: shown as escape risk, not a reason to hold the test back). Otherwise
    UNKNOWN. A required quantile that was not assessed makes the test UNKNOWN.

    Examples
    --------
    >>> combine_outcomes({"p50": "same", "p95": "same", "p99": None})
    'same'
    >>> combine_outcomes({"p50": "same", "p95": "unknown"})
    'unknown'
    """
    values = dict(outcomes)
    needed = tuple(required)
    for name in needed:
        if name not in values:
            raise ValueError(f"required quantile {name!r} is missing from the outcomes")
    if any(v == "different" for v in values.values()):
        return "different"
    if any(values[name] is None for name in needed):
        return "unknown"
    if all(v in ("same", None) for v in values.values()):
        return "same"
    return "unknown"
