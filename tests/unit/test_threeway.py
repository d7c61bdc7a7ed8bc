"""Three-way outcomes (threeway.py): every path of the rule, the capped margin, the verdict map."""

from __future__ import annotations

import math
import typing

import pytest

from pytest_roofline import stats
from pytest_roofline.errors import ConfigError
from pytest_roofline.stats.threeway import (
    DEFAULT_MAX_MARGIN,
    Verdict,
    classify_three_way,
    combine_outcomes,
    gate_margin,
    outcome_of_verdict,
)


# ---------------------------------------------------------------------------------------------
# the margin
# ---------------------------------------------------------------------------------------------
def test_the_margin_is_min_effect_when_the_history_is_quieter() -> None:
    m = gate_margin(0.05, 0.02)
    assert (m.margin, m.source, m.too_noisy) == (0.05, "min_effect", False)
    assert "gate.min_effect" in m.reason


def test_the_margin_is_the_history_floor_when_the_history_is_noisier() -> None:
    m = gate_margin(0.05, 0.37)
    assert (m.margin, m.source, m.too_noisy) == (0.37, "history", False)


def test_a_floor_above_the_cap_is_too_noisy_to_gate_and_the_margin_is_capped() -> None:
    m = gate_margin(0.05, 1.6)
    assert (m.margin, m.source, m.too_noisy) == (DEFAULT_MAX_MARGIN, "cap", True)
    assert "too noisy to gate here" in m.reason and "+160%" in m.reason


def test_a_floor_exactly_at_the_cap_is_still_gated() -> None:
    m = gate_margin(0.05, 1.0)
    assert (m.margin, m.too_noisy) == (1.0, False)


def test_the_cap_is_configurable() -> None:
    assert gate_margin(0.05, 1.6, max_margin=2.0).too_noisy is False
    assert gate_margin(0.05, 0.6, max_margin=0.5).too_noisy is True


def test_gate_margin_takes_no_detectable_effect() -> None:
    # The margin never grows with the test's own noise: there is no parameter for it.
    assert "mde" not in typing.get_type_hints(gate_margin)


@pytest.mark.parametrize(
    ("min_effect", "floor", "cap"),
    [
        (-0.1, 0.1, 1.0),
        (0.05, math.nan, 1.0),
        (0.05, 0.1, 0.0),
        (0.05, 0.1, math.inf),
        (1.5, 0.1, 1.0),
    ],
)
def test_invalid_margins_are_config_errors(min_effect: float, floor: float, cap: float) -> None:
    with pytest.raises(ConfigError):
        gate_margin(min_effect, floor, max_margin=cap)


def test_a_min_effect_above_the_cap_names_both_settings() -> None:
    with pytest.raises(ConfigError, match=r"gate\.min_effect .* gate\.max_margin"):
        gate_margin(1.5, 0.1)


# ---------------------------------------------------------------------------------------------
# the rule, path by path
# ---------------------------------------------------------------------------------------------
def test_a_clear_slowdown_beyond_the_margin_is_different() -> None:
    r = classify_three_way(1.5, 1.3, 1.7, 0.05, label="p95")
    assert (r.outcome, r.verdict, r.basis, r.improvement) == (
        "different",
        "regression",
        "regression",
        False,
    )
    assert r.reason.startswith("p95 x1.5")


def test_a_significant_slowdown_inside_the_margin_is_not_different() -> None:
    # Lower bound above 1 but the ratio below 1 + margin: neither a regression nor ruled out.
    r = classify_three_way(1.04, 1.02, 1.06, 0.05)
    assert (r.outcome, r.verdict, r.basis) == ("unknown", "not detected", "undecided")


def test_paired_rounds_find_a_regression_beyond_min_effect_inside_the_session_margin() -> None:
    # Run 11 (docs/gate.md): a p95 made twice as slow read x1.496 [1.022, 1.552] in paired
    # rounds, and the session's +60% history margin called that SAME. For paired rounds that
    # confirm a first look, DIFFERENT needs min_effect; SAME still has to rule out the margin.
    session = gate_margin(0.05, 0.6)
    assert classify_three_way(1.496, 1.022, 1.552, session).outcome == "same"
    paired = session.for_paired_rounds()
    r = classify_three_way(1.496, 1.022, 1.552, paired, label="p95")
    assert (r.outcome, r.verdict, r.basis) == ("different", "regression", "regression")
    assert "1+min_effect = 1.05" in r.reason and "+60.0%" in r.reason
    assert r.margin == 0.6
    # Not established (the interval reaches 1): SAME against the session's margin, as before.
    assert classify_three_way(1.03, 0.97, 1.06, paired).outcome == "same"
    # Established but below min_effect: not DIFFERENT, and inside the margin: SAME.
    assert classify_three_way(1.03, 1.01, 1.05, paired).outcome == "same"
    # Neither established nor ruled out against the margin: UNKNOWN.
    assert classify_three_way(1.3, 0.9, 1.7, paired).outcome == "unknown"


def test_paired_rounds_keep_a_margin_that_is_min_effect_or_too_noisy_as_it_is() -> None:
    assert gate_margin(0.05, 0.01).for_paired_rounds().detect is None
    noisy = gate_margin(0.05, 1.6)
    assert noisy.for_paired_rounds() is noisy
    assert classify_three_way(1.5, 1.3, 1.7, noisy.for_paired_rounds()).basis == "too_noisy"


def test_a_slowdown_below_the_absolute_floor_is_not_different() -> None:
    # x1.5 of 100 ns is 50 ns: below a 100 ns timer floor; the upper bound's change is not.
    r = classify_three_way(1.5, 1.3, 3.5, 0.05, base_s=1e-7, abs_floor_s=1e-7)
    assert (r.outcome, r.verdict, r.basis) == ("unknown", "suspect", "above_margin_unproven")
    assert "absolute floor" in r.reason


def test_an_interval_inside_the_margin_is_same() -> None:
    r = classify_three_way(1.0, 0.97, 1.03, 0.05)
    assert (r.outcome, r.verdict, r.basis, r.improvement) == ("same", "ok", "equivalent", False)


def test_an_upper_bound_exactly_at_the_margin_is_not_same() -> None:
    assert classify_three_way(1.0, 0.95, 1.05, 0.05).outcome == "unknown"


def test_a_clearly_faster_candidate_is_same_and_an_improvement() -> None:
    r = classify_three_way(0.8, 0.75, 0.85, 0.05)
    assert (r.outcome, r.verdict, r.basis, r.improvement) == ("same", "ok", "improved", True)


def test_a_slightly_faster_candidate_is_same_but_not_an_improvement() -> None:
    r = classify_three_way(0.98, 0.96, 0.995, 0.05)
    assert (r.outcome, r.improvement) == ("same", False)


def test_any_change_below_the_absolute_floor_is_same() -> None:
    r = classify_three_way(1.2, 0.9, 1.6, 0.05, base_s=1e-8, abs_floor_s=1e-7)
    assert (r.outcome, r.basis) == ("same", "below_abs_floor")


def test_an_interval_straddling_the_margin_below_it_is_unknown_not_detected() -> None:
    r = classify_three_way(1.02, 0.95, 1.09, 0.05)
    assert (r.outcome, r.verdict, r.basis) == ("unknown", "not detected", "undecided")


def test_a_ratio_beyond_the_margin_not_excluding_one_is_unknown_suspect() -> None:
    r = classify_three_way(1.2, 0.9, 1.6, 0.05)
    assert (r.outcome, r.verdict, r.basis) == ("unknown", "suspect", "above_margin_unproven")


def test_the_issue_s_six_fold_slowdown_on_a_wide_interval_is_unknown_not_same() -> None:
    # Issue 10: interval [0.06, 18.8] "ruled out +6186%" because the margin was the MDE.
    r = classify_three_way(6.9, 0.06, 18.8, gate_margin(0.05, 0.37))
    assert r.outcome == "unknown" and r.verdict == "suspect"


def test_a_threefold_slowdown_is_never_same_even_under_a_wide_margin() -> None:
    # With the margin raised to x5, [0.9, 3.9] is inside 1 + margin; x3 still never ships.
    wide = gate_margin(4.0, 0.1, max_margin=4.0)
    r = classify_three_way(3.1, 0.9, 3.9, wide)
    assert (r.outcome, r.verdict, r.basis) == ("unknown", "suspect", "gross_change")
    assert classify_three_way(2.9, 0.9, 3.9, wide).outcome == "same"


def test_a_threefold_slowdown_below_the_timer_floor_is_still_never_same() -> None:
    r = classify_three_way(3.0, 0.5, 9.0, 0.05, base_s=1e-9, abs_floor_s=1e-7)
    assert r.outcome == "unknown" and r.basis == "gross_change"


def test_a_threefold_slowdown_that_is_established_is_different() -> None:
    assert classify_three_way(3.5, 3.1, 3.9, 0.05).outcome == "different"


def test_a_too_noisy_test_is_unknown_whatever_its_interval_says() -> None:
    noisy = gate_margin(0.05, 1.6)
    tight_same = classify_three_way(1.0, 0.99, 1.01, noisy)
    tight_regression = classify_three_way(2.5, 2.4, 2.6, noisy)
    assert (tight_same.outcome, tight_same.verdict, tight_same.basis) == (
        "unknown",
        "not detected",
        "too_noisy",
    )
    assert (tight_regression.outcome, tight_regression.verdict) == ("unknown", "suspect")
    assert "too noisy to gate here" in tight_same.reason


@pytest.mark.parametrize(
    ("ratio", "low", "high"),
    [
        (math.nan, 0.9, 1.1),
        (1.0, math.nan, math.nan),
        (0.0, 0.0, 1.0),
        (1.0, 1.2, 1.1),
        (math.inf, 1.0, math.inf),
    ],
)
def test_no_usable_interval_is_unknown_and_insufficient(
    ratio: float, low: float, high: float
) -> None:
    r = classify_three_way(ratio, low, high, 0.05)
    assert (r.outcome, r.verdict, r.basis) == ("unknown", "insufficient", "no_interval")


def test_an_open_interval_from_a_look_that_cannot_decide_is_undecided() -> None:
    # A sequential look with nothing spent has bounds 0 and +inf.
    r = classify_three_way(1.0, 0.0, math.inf, 0.05)
    assert (r.outcome, r.verdict) == ("unknown", "not detected")


# ---------------------------------------------------------------------------------------------
# the vocabulary
# ---------------------------------------------------------------------------------------------
def test_the_verdict_vocabulary_is_the_gate_s() -> None:
    assert set(typing.get_args(Verdict)) == set(typing.get_args(stats.Verdict))


@pytest.mark.parametrize(
    ("ratio", "low", "high", "margin"),
    [
        (1.5, 1.3, 1.7, 0.05),
        (1.0, 0.97, 1.03, 0.05),
        (0.8, 0.75, 0.85, 0.05),
        (1.02, 0.95, 1.09, 0.05),
        (1.2, 0.9, 1.6, 0.05),
        (math.nan, 0.9, 1.1, 0.05),
    ],
)
def test_every_verdict_maps_back_to_its_outcome(
    ratio: float, low: float, high: float, margin: float
) -> None:
    r = classify_three_way(ratio, low, high, margin)
    assert outcome_of_verdict(r.verdict) == r.outcome


def test_an_unknown_verdict_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown verdict"):
        outcome_of_verdict("maybe")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# a test's outcome from its quantiles
# ---------------------------------------------------------------------------------------------
def test_a_test_ships_only_when_every_assessed_quantile_is_same() -> None:
    assert combine_outcomes({"p50": "same", "p95": "same", "p99": "same"}) == "same"
    assert combine_outcomes({"p50": "same", "p95": "unknown", "p99": "same"}) == "unknown"


def test_a_tail_quantile_without_enough_samples_does_not_hold_the_test_back() -> None:
    assert combine_outcomes({"p50": "same", "p95": "same", "p99": None}) == "same"


def test_p50_must_be_assessed_and_same() -> None:
    assert combine_outcomes({"p50": None, "p95": "same"}) == "unknown"
    assert combine_outcomes({"p50": "unknown", "p95": "same"}) == "unknown"


def test_any_different_quantile_makes_the_test_different() -> None:
    assert combine_outcomes({"p50": "same", "p95": "unknown", "p99": "different"}) == "different"


def test_a_missing_required_quantile_is_an_error() -> None:
    with pytest.raises(ValueError, match="p50"):
        combine_outcomes({"p95": "same"})
