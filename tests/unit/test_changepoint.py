"""Change points (windowed E-divisive means with a t-test) and cumulative drift over run history."""

from __future__ import annotations

import math
import warnings

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from pytest_roofline.errors import ConfigError
from pytest_roofline.stats.changepoint import (
    ChangePoint,
    Drift,
    _best_split,
    _prefix_sums_2d,
    cumulative_drift,
    detect_change_points,
    segment_since_last_step,
)


def noise(seed: int, runs: int, sd: float) -> npt.NDArray[np.float64]:
    return np.random.default_rng(seed).normal(0.0, sd, runs)


def with_steps(z: npt.NDArray[np.float64], *steps: tuple[int, float]) -> npt.NDArray[np.float64]:
    z = z.copy()
    for index, ratio in steps:
        z[index:] += math.log(ratio)
    return z


# --- the statistic ----------------------------------------------------------------------------


def test_the_split_statistic_is_matteson_and_james_q_hat() -> None:
    # Brute force of Q(X, Y) = mn/(m+n) * (2 mean|X-Y| - mean_{i<k}|X_i-X_k| - mean_{j<k}|Y_j-Y_k|).
    z = with_steps(noise(3, 24, 1.0), (14, math.e))

    def q_hat(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
        n, m = len(x), len(y)
        within_x = np.abs(x[:, None] - x[None, :]).sum() / (n * (n - 1))
        within_y = np.abs(y[:, None] - y[None, :]).sum() / (m * (m - 1))
        e = 2 * np.abs(x[:, None] - y[None, :]).mean() - within_x - within_y
        return float(n * m / (n + m) * e)

    start, end, m = 2, 24, 3
    expected = max(
        (q_hat(z[start:t], z[t:k]), t)
        for t in range(start + m, end - m + 1)
        for k in range(t + m, end + 1)
    )
    tau, q = _best_split(_prefix_sums_2d(z), start, end, m)  # type: ignore[misc]
    assert tau == expected[1]
    assert q == pytest.approx(expected[0], rel=1e-12)


# --- detection --------------------------------------------------------------------------------


def test_two_hundred_runs_of_noise_have_no_change_point() -> None:
    assert detect_change_points(noise(0, 200, 0.1)) == ()


def test_noise_rarely_gives_a_change_point_across_seeds() -> None:
    # Otava's level (0.001, found by a search) gives a few false steps per thousand runs here.
    flagged = sum(bool(detect_change_points(noise(seed, 200, 0.1))) for seed in range(20))
    assert flagged <= 2


def test_a_step_of_ten_percent_at_run_sixty_is_found_within_one_run() -> None:
    z = with_steps(noise(1, 120, 0.03), (60, 1.10))
    (cp,) = detect_change_points(z)
    assert abs(cp.index - 60) <= 1
    assert cp.ratio == pytest.approx(1.10, abs=0.02)
    assert cp.ci_low < 1.10 < cp.ci_high
    assert cp.p_value < 0.001
    assert cp.runs_before + cp.runs_after == 120
    assert cp.log_after - cp.log_before == pytest.approx(math.log(cp.ratio))


def test_two_steps_are_both_found_in_order() -> None:
    z = with_steps(noise(2, 150, 0.03), (40, 1.20), (100, 0.90))
    first, second = detect_change_points(z)
    assert abs(first.index - 40) <= 1 and first.ratio > 1.15
    assert abs(second.index - 100) <= 1 and second.ratio < 0.95
    # Each step is sized against its own neighbouring segments, not the whole series.
    assert first.runs_after == second.index - first.index


def test_a_slow_drift_is_cut_into_upward_steps() -> None:
    z = noise(4, 100, 0.05) + 0.01 * np.arange(100)
    cps = detect_change_points(z)
    assert len(cps) >= 2
    assert all(cp.ratio > 1.0 for cp in cps)


def test_a_series_shorter_than_two_minimum_segments_gives_nothing() -> None:
    z = with_steps(np.zeros(9), (5, 2.0))
    assert detect_change_points(z, min_segment=5) == ()
    # The same exact step is found once there are enough runs on each side.
    assert [cp.index for cp in detect_change_points(np.r_[z, [math.log(2.0)]], min_segment=5)] == [
        5
    ]


def test_a_noiseless_step_is_certain_and_constant_series_have_none() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (cp,) = detect_change_points(with_steps(np.zeros(30), (12, 1.5)))
        assert detect_change_points(np.full(30, -3.0)) == ()
    assert cp.index == 12 and cp.p_value < 1e-100 and cp.ratio == pytest.approx(1.5)


def test_runs_without_a_value_are_skipped_and_indices_stay_positions() -> None:
    z = with_steps(noise(5, 100, 0.03), (50, 1.2))
    z[[10, 20, 51, 52]] = np.nan
    (cp,) = detect_change_points(z)
    assert cp.index in (49, 50, 53)  # the first run with a value after the step is run 53
    assert cp.runs_before + cp.runs_after == 96


def test_a_significant_step_below_min_magnitude_is_dropped() -> None:
    z = with_steps(noise(6, 100, 0.005), (50, 1.03))
    assert [cp.index for cp in detect_change_points(z)] == [50]
    assert detect_change_points(z, min_magnitude=0.05) == ()


def test_a_constant_shift_of_the_log_values_changes_only_the_levels() -> None:
    z = with_steps(noise(7, 90, 0.05), (45, 1.15))
    a = detect_change_points(z)
    b = detect_change_points(z + math.log(1e-3))
    assert [(c.index, round(c.ratio, 12), round(c.p_value, 12)) for c in a] == [
        (c.index, round(c.ratio, 12), round(c.p_value, 12)) for c in b
    ]
    assert b[0].log_before == pytest.approx(a[0].log_before + math.log(1e-3))


def test_detection_is_deterministic() -> None:
    z = with_steps(noise(8, 300, 0.1), (100, 1.2), (200, 1.2))
    assert detect_change_points(z) == detect_change_points(list(z))


# --- segments and drift -----------------------------------------------------------------------


def test_the_segment_since_the_last_step_starts_at_that_step() -> None:
    z = with_steps(noise(2, 150, 0.03), (40, 1.20), (100, 0.90))
    cps = detect_change_points(z)
    assert segment_since_last_step(z, cps) == slice(cps[-1].index, 150)
    assert segment_since_last_step(z, ()) == slice(0, 150)
    assert segment_since_last_step(z, tuple(reversed(cps))) == slice(cps[-1].index, 150)


def test_a_one_percent_per_run_drift_accumulates_beyond_the_margin() -> None:
    z = noise(4, 40, 0.05) + 0.01 * np.arange(40)
    drift = cumulative_drift(z)
    assert isinstance(drift, Drift)
    assert drift.start_index == 0 and drift.runs == 40 and drift.span_runs == 39
    assert drift.ci_low < math.exp(0.39) < drift.ci_high
    assert drift.p_value < 1e-6
    assert drift.exceeds(0.05)
    assert not drift.exceeds(2.0)


def test_noise_has_no_drift_beyond_the_margin() -> None:
    drift = cumulative_drift(noise(9, 60, 0.1))
    assert drift is not None
    assert drift.ci_low < 1.0 < drift.ci_high
    assert not drift.exceeds(0.05)


def test_drift_is_measured_since_the_last_step_only() -> None:
    # Flat, a +30% step at 50, then +1% per run: the step must not count as drift.
    z = with_steps(noise(10, 100, 0.03), (50, 1.3))
    z[50:] += 0.01 * np.arange(50)
    step = ChangePoint(50, 0.0, 0.0, 0.3, 1.35, 1.3, 1.4, 50, 50)
    drift = cumulative_drift(z, [step])
    assert drift is not None and drift.start_index == 50 and drift.span_runs == 49
    assert drift.ratio == pytest.approx(math.exp(0.49), rel=0.05)
    whole = cumulative_drift(z)
    assert whole is not None and whole.ratio > 1.3 * drift.ratio


def test_a_candidate_run_is_judged_by_appending_it() -> None:
    z = noise(11, 30, 0.02)
    alone = cumulative_drift(z)
    with_candidate = cumulative_drift(np.r_[z, [math.log(1.5)]])
    assert alone is not None and with_candidate is not None
    assert with_candidate.runs == alone.runs + 1
    # One slow run barely moves a median of slopes.
    assert with_candidate.ratio < 1.1


@pytest.mark.parametrize("ties", [False, True])
def test_the_drift_slope_interval_and_p_value_agree_with_scipy(ties: bool) -> None:
    z = noise(13, 60, 0.05) + 0.002 * np.arange(60)
    if ties:
        z = np.round(z, 2)  # many equal values: the tie corrections matter
    z[[7, 30]] = np.nan
    drift = cumulative_drift(z, confidence=0.9)
    x = np.flatnonzero(~np.isnan(z)).astype(float)
    y = z[~np.isnan(z)]
    slope, _, low, high = stats.theilslopes(y, x, alpha=0.9)
    assert drift is not None and drift.span_runs == 59
    assert drift.slope_log_per_run == pytest.approx(slope, rel=1e-12)
    assert drift.ci_low == pytest.approx(math.exp(low * 59), rel=1e-12)
    assert drift.ci_high == pytest.approx(math.exp(high * 59), rel=1e-12)
    # Mann-Kendall's normal approximation against Kendall's tau-b test: close, not identical.
    assert drift.p_value == pytest.approx(
        stats.kendalltau(x, y, method="asymptotic").pvalue, rel=0.1
    )


def test_too_few_runs_in_the_segment_give_no_drift() -> None:
    z = noise(12, 20, 0.05)
    z[17] = np.nan
    step = ChangePoint(16, 0.0, 0.0, 0.1, 1.1, 1.0, 1.2, 16, 4)
    assert cumulative_drift(z, [step]) is None
    assert cumulative_drift(z, [step], min_runs=3) is not None


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": 11}, r"`window` must be an integer >= 12; got 11"),
        ({"window": 50.0}, r"`window` must be an integer"),
        ({"min_segment": 1}, r"`min_segment` must be an integer >= 2; got 1"),
        ({"max_p_value": 0.0}, r"`max_p_value` must be a number in \(0, 1\); got 0.0"),
        ({"max_p_value": 1.5}, r"`max_p_value` must be a number in \(0, 1\)"),
        ({"confidence": 1.0}, r"`confidence` must be a number in \(0, 1\)"),
        ({"min_magnitude": -0.1}, r"`min_magnitude` must be a finite number >= 0; got -0.1"),
        ({"min_magnitude": math.nan}, r"`min_magnitude` must be a finite number >= 0"),
    ],
)
def test_invalid_parameters_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        detect_change_points(np.zeros(20), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.zeros((3, 4)), r"`log_values` must be one-dimensional; got shape \(3, 4\)"),
        ([0.0, 1.0, math.inf], r"`log_values` must be finite or NaN .* found inf at index 2"),
        (["a", "b"], r"`log_values` must be a one-dimensional array of numbers"),
    ],
)
def test_invalid_series_are_named(values: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        detect_change_points(values)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        cumulative_drift(values)  # type: ignore[arg-type]


def test_change_points_that_do_not_fit_the_series_are_named() -> None:
    step = ChangePoint(30, 0.0, 0.0, 0.1, 1.1, 1.0, 1.2, 30, 5)
    with pytest.raises(
        ValueError, match=r"`change_points\[0\]\.index` = 30 does not fit a series of 20 runs"
    ):
        segment_since_last_step(np.zeros(20), [step])
    with pytest.raises(ValueError, match=r"`change_points\[0\]` must be a ChangePoint; got int"):
        cumulative_drift(np.zeros(20), [5])  # type: ignore[list-item]


def test_invalid_drift_parameters_are_named() -> None:
    with pytest.raises(ConfigError, match=r"`min_runs` must be an integer >= 3; got 2"):
        cumulative_drift(np.zeros(20), min_runs=2)
    with pytest.raises(ConfigError, match=r"`confidence` must be a number in \(0, 1\)"):
        cumulative_drift(np.zeros(20), confidence=95)
    drift = cumulative_drift(np.zeros(20))
    assert drift is not None and drift.ratio == 1.0 and drift.p_value == 1.0
    with pytest.raises(ConfigError, match=r"`margin` must be a finite number >= 0; got -1"):
        drift.exceeds(-1)
