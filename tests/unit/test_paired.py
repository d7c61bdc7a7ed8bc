"""Paired A/B statistics (paired.py): rounds as the unit of replication, the gate's verdicts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats

from pytest_roofline.errors import ConfigError, RooflineWarning
from pytest_roofline.stats.paired import (
    MIN_ROUNDS,
    PairedComparison,
    abba_order,
    apply_bh_paired,
    cluster_design_effect,
    compare_paired,
    min_round_samples,
    trimmed_mean_interval,
)


def rounds(
    rng: np.random.Generator,
    *,
    k: int = 8,
    n: int = 400,
    effect: float = 1.0,
    round_noise: float = 0.1,
    side_noise: float = 0.03,
    scale: float = 1e-3,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """K rounds of both sides: each round has a machine speed both sides share, and each side
    of a round a little speed of its own (the seconds between the two halves of a round)."""
    speed = rng.lognormal(0.0, round_noise, k)
    base = [s * rng.lognormal(0, side_noise) * scale * rng.lognormal(0, 0.2, n) for s in speed]
    cand = [
        s * rng.lognormal(0, side_noise) * effect * scale * rng.lognormal(0, 0.2, n) for s in speed
    ]
    return base, cand


# ------------------------------------------------------------------------------------ order
def test_abba_order_alternates_which_side_goes_first() -> None:
    order = abba_order(4)
    assert order == (
        ("baseline", "candidate"),
        ("candidate", "baseline"),
        ("baseline", "candidate"),
        ("candidate", "baseline"),
    )


def test_in_an_even_number_of_rounds_each_side_goes_first_equally_often() -> None:
    for k in (2, 8, 12):
        firsts = [pair[0] for pair in abba_order(k)]
        assert firsts.count("baseline") == firsts.count("candidate") == k // 2
        # The process sequence is A B B A A B B A ...: no side ever runs three times in a row.
        sequence = "".join("A" if s == "baseline" else "B" for pair in abba_order(k) for s in pair)
        assert "AAA" not in sequence and "BBB" not in sequence
        assert sequence.startswith("ABBA")


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_abba_order_refuses_a_round_count_that_is_not_a_positive_integer(bad: object) -> None:
    with pytest.raises(ConfigError, match="rounds"):
        abba_order(bad)  # type: ignore[arg-type]


def test_a_round_needs_enough_samples_to_place_its_quantile() -> None:
    assert min_round_samples(0.95) == 20
    assert min_round_samples(0.99) == 100
    assert min_round_samples(0.5) == 2


# ------------------------------------------------------------------------------------ trimmed mean
def test_without_trimming_the_interval_is_the_ordinary_t_interval() -> None:
    x = np.array([0.1, 0.3, -0.2, 0.05, 0.12])
    mean, se, df = trimmed_mean_interval(x, trim=0.0)
    assert mean == pytest.approx(x.mean())
    assert se == pytest.approx(x.std(ddof=1) / math.sqrt(x.size))
    assert df == 4


def test_trimming_keeps_one_wild_round_from_moving_the_estimate_or_swamping_the_spread() -> None:
    calm = [0.10, 0.11, 0.09, 0.10, 0.12, 0.08, 0.10, 0.095]
    wild = [*calm[:-1], -0.9]  # a neighbour's burst on the candidate's half of one round
    mean_plain, se_plain, _ = trimmed_mean_interval(wild, trim=0.0)
    mean_trim, se_trim, df = trimmed_mean_interval(wild)
    assert mean_plain < 0  # the plain mean is dragged below "no change"
    assert mean_trim == pytest.approx(0.1, abs=0.01)
    assert se_trim < se_plain / 3
    assert df == 5  # one round trimmed at each end of 8


def test_trimmed_mean_interval_validates_its_input() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        trimmed_mean_interval([0.1])
    with pytest.raises(ConfigError, match="trim"):
        trimmed_mean_interval([0.1, 0.2, 0.3], trim=0.5)


# ------------------------------------------------------------------------------------ verdicts
def test_a_clear_regression_is_a_regression_with_every_round_agreeing() -> None:
    base, cand = rounds(np.random.default_rng(1), effect=1.5)
    result = compare_paired(base, cand, 0.95, delta=0.05)
    c = result.comparison
    assert c.verdict == "regression"
    assert c.ratio == pytest.approx(1.5, rel=0.06)
    assert c.ci.low > 1.3 and c.ci.high < 1.7
    assert result.rounds_used == 8 and result.df == 5
    assert len(result.round_ratios) == 8
    assert all(r > 1.2 for r in result.round_ratios)
    assert c.n_base == c.n_cand == 8 * 400
    assert "paired over 8 rounds" in c.reason


def test_unchanged_code_is_not_a_regression() -> None:
    base, cand = rounds(np.random.default_rng(2))
    c = compare_paired(base, cand, 0.95, delta=0.05).comparison
    assert c.verdict in ("ok", "not detected")
    assert not c.improvement
    assert c.ci.low < 1.0 < c.ci.high


def test_a_clear_improvement_is_ok_and_flagged_as_an_improvement() -> None:
    base, cand = rounds(np.random.default_rng(3), effect=0.6)
    c = compare_paired(base, cand, 0.95, delta=0.05).comparison
    assert c.verdict == "ok"
    assert c.improvement


def exact_rounds(ratios: list[float], n: int = 400) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Rounds whose per-round quantile ratios are exactly ``ratios`` (HD scales with the data)."""
    x = 1e-3 * np.random.default_rng(0).lognormal(0, 0.2, n)
    return [x * (1 + 0.1 * i) for i in range(len(ratios))], [
        x * (1 + 0.1 * i) * r for i, r in enumerate(ratios)
    ]


def test_a_ratio_above_the_margin_that_the_rounds_do_not_establish_is_suspect() -> None:
    base, cand = exact_rounds([1.30, 0.95, 1.25, 0.97])
    result = compare_paired(base, cand, 0.95, delta=0.05)
    c = result.comparison
    assert result.round_ratios == pytest.approx((1.30, 0.95, 1.25, 0.97))
    assert c.ratio >= 1.05
    assert c.ci.low <= 1.0
    assert c.verdict == "suspect"


def test_a_noisy_comparison_that_neither_sees_nor_rules_out_the_margin_is_not_detected() -> None:
    base, cand = exact_rounds([1.04, 0.95, 1.08, 0.97])
    c = compare_paired(base, cand, 0.95, delta=0.05).comparison
    assert c.ratio < 1.05 < c.ci.high
    assert c.verdict == "not detected"
    assert "neither seen nor ruled out" in c.reason


def test_the_margin_is_never_raised_to_the_comparisons_own_detectable_effect() -> None:
    # Issue 10: a margin that grows with the noise "ruled out" a 6x slowdown on [0.06, 18.8].
    rng = np.random.default_rng(6)
    base, cand = rounds(rng, k=4, side_noise=0.2)
    c = compare_paired(base, cand, 0.95, delta=0.05).comparison
    assert c.mde > 0.05
    assert c.delta == 0.05


def test_a_change_below_the_absolute_floor_is_never_a_regression() -> None:
    base, cand = rounds(np.random.default_rng(7), effect=1.5, scale=1e-8)  # 10 ns calls
    c = compare_paired(base, cand, 0.95, delta=0.05).comparison
    assert c.ratio > 1.3
    assert c.verdict != "regression"
    assert abs(c.abs_change_s) < c.abs_floor_s


# ------------------------------------------------------------------------------------ insufficient
def test_fewer_than_the_minimum_rounds_is_insufficient() -> None:
    base, cand = rounds(np.random.default_rng(8), k=MIN_ROUNDS - 1, effect=2.0)
    result = compare_paired(base, cand, 0.95, delta=0.05)
    assert result.comparison.verdict == "insufficient"
    assert "rounds" in result.comparison.reason
    assert result.df == 0
    assert math.isnan(result.comparison.ci.low)


def test_rounds_too_short_for_p99_are_left_out_and_make_p99_insufficient() -> None:
    base, cand = rounds(np.random.default_rng(9), k=8, n=60, effect=2.0)
    p95 = compare_paired(base, cand, 0.95, delta=0.05)
    p99 = compare_paired(base, cand, 0.99, delta=0.10)
    assert p95.comparison.verdict == "regression"
    assert p99.comparison.verdict == "insufficient"
    assert "100 samples" in p99.comparison.reason
    assert all(math.isnan(r) for r in p99.round_ratios)


def test_a_round_without_samples_on_one_side_is_skipped() -> None:
    base, cand = rounds(np.random.default_rng(10), k=6, effect=1.5)
    cand[2] = np.empty(0)  # the test failed in that round
    result = compare_paired(base, cand, 0.95, delta=0.05)
    assert result.rounds_used == 5
    assert math.isnan(result.round_ratios[2])
    assert result.comparison.verdict == "regression"


def test_fewer_pooled_samples_than_the_gates_floor_is_insufficient() -> None:
    base, cand = rounds(np.random.default_rng(11), k=3, n=15, effect=2.0)
    c = compare_paired(base, cand, 0.95, delta=0.05, round_samples=5).comparison
    assert c.verdict == "insufficient"
    assert "over all rounds" in c.reason


def test_identical_rounds_give_no_interval_and_warn() -> None:
    x = np.linspace(1e-3, 2e-3, 300)
    with pytest.warns(RooflineWarning, match="same p95 ratio"):
        result = compare_paired([x] * 4, [x * 1.5] * 4, 0.95, delta=0.05)
    assert result.comparison.verdict == "insufficient"
    assert result.comparison.ratio == pytest.approx(1.5)


# ------------------------------------------------------------------------------------ the interval
def test_the_interval_widens_with_round_to_round_variation() -> None:
    rng = np.random.default_rng(12)
    calm = compare_paired(*rounds(rng, side_noise=0.01), 0.95, delta=0.05).comparison
    noisy = compare_paired(*rounds(rng, side_noise=0.15), 0.95, delta=0.05).comparison
    width = {name: math.log(c.ci.high / c.ci.low) for name, c in (("calm", calm), ("noisy", noisy))}
    assert width["noisy"] > 3 * width["calm"]


def test_more_samples_per_round_do_not_shrink_an_interval_that_round_variation_dominates() -> None:
    # Rounds, not samples, are the unit of replication: ten times the samples per round leave
    # the interval about as wide, where a within-run interval would shrink by about sqrt(10).
    widths = {}
    for n in (300, 3000):
        values = []
        for seed in range(6):
            base, cand = rounds(np.random.default_rng(100 + seed), n=n, side_noise=0.1)
            c = compare_paired(base, cand, 0.95, delta=0.05).comparison
            values.append(math.log(c.ci.high / c.ci.low))
        widths[n] = float(np.median(values))
    assert widths[3000] > 0.7 * widths[300]


def test_a_regression_survives_one_disturbed_round() -> None:
    base, cand = rounds(np.random.default_rng(13), effect=1.3, side_noise=0.02)
    base[5] = base[5] * 2.5  # a neighbour's burst on the baseline's half of round 6
    result = compare_paired(base, cand, 0.95, delta=0.05)
    assert result.round_ratios[5] < 0.7
    assert result.comparison.verdict == "regression"
    assert result.comparison.ratio == pytest.approx(1.3, rel=0.05)


def test_unchanged_code_rarely_raises_an_alarm() -> None:
    # 300 seeded A/A comparisons at K = 8: a regression or suspect verdict needs the estimate
    # beyond t_0.95 + t_0.8 standard errors, about 1-2% of the time.
    alarms = 0
    for seed in range(300):
        base, cand = rounds(np.random.default_rng(1000 + seed), n=120)
        c = compare_paired(base, cand, 0.95, delta=0.05).comparison
        alarms += c.verdict in ("regression", "suspect")
    assert alarms / 300 <= 0.04


def test_the_p_value_is_one_sided_for_a_slower_candidate() -> None:
    slower = compare_paired(*rounds(np.random.default_rng(14), effect=1.2), 0.95, delta=0.05)
    faster = compare_paired(*rounds(np.random.default_rng(14), effect=0.8), 0.95, delta=0.05)
    assert slower.comparison.p_value < 0.01
    assert faster.comparison.p_value > 0.99


# ------------------------------------------------------------------------------------ run level
def test_benjamini_hochberg_demotes_a_marginal_regression_among_many_null_comparisons() -> None:
    results: list[PairedComparison] = []
    for seed in range(20):
        base, cand = rounds(np.random.default_rng(200 + seed))
        results.append(compare_paired(base, cand, 0.95, delta=0.0))
    marginal = None
    for seed in range(200):
        base, cand = rounds(np.random.default_rng(500 + seed), effect=1.06, side_noise=0.03)
        found = compare_paired(base, cand, 0.95, delta=0.0)
        if found.comparison.verdict == "regression" and 0.005 < found.comparison.p_value < 0.05:
            marginal = found
            break
    assert marginal is not None
    adjusted = apply_bh_paired([*results, marginal])
    assert adjusted[-1].comparison.verdict == "suspect"
    assert adjusted[-1].comparison.p_adjusted >= 0.05
    assert "BH-adjusted" in adjusted[-1].comparison.reason
    assert adjusted[-1].round_ratios == marginal.round_ratios


def test_a_paired_comparison_serialises_to_json_with_nan_as_null() -> None:
    base, cand = rounds(np.random.default_rng(15), k=6, n=60)
    result = compare_paired(base, cand, 0.99, delta=0.1)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["verdict"] == "insufficient"
    assert data["round_ratios"] == [None] * 6
    assert data["ci_low"] is None


# ------------------------------------------------------------------------------------ validation
def test_compare_paired_validates_its_input() -> None:
    base, cand = rounds(np.random.default_rng(16), k=4)
    with pytest.raises(ValueError, match="one array per round"):
        compare_paired(base, cand[:3], 0.95, delta=0.05)
    with pytest.raises(ConfigError, match="delta"):
        compare_paired(base, cand, 0.95, delta=-0.1)
    with pytest.raises(ConfigError, match="min_rounds"):
        compare_paired(base, cand, 0.95, delta=0.05, min_rounds=1)
    with pytest.raises(ValueError, match="non-negative finite"):
        compare_paired([*base[:3], np.array([1.0, math.nan])], cand, 0.95, delta=0.05)
    with pytest.raises(ConfigError, match="strictly between 0 and 1"):
        compare_paired(base, cand, 1.5, delta=0.05)


# ------------------------------------------------------------------ cluster_design_effect
def test_the_design_effect_without_group_offsets_is_an_f_statistic_rescaled() -> None:
    # 32 values in three groups in turn, no offsets: MSB / MSW follows F(2, 29), and the design
    # effect MSB / MS_total = F (N - 1) / ((k - 1) F + N - k) crosses its image of F's 95th
    # percentile about 5% of the time (winsorizing 20% barely moves it); on average it is 1.
    rng = np.random.default_rng(3)
    groups = [i % 3 for i in range(32)]
    effects = np.array(
        [cluster_design_effect(rng.normal(0, 0.1, 32), groups, 3) for _ in range(2000)]
    )
    f95 = scipy.stats.f.ppf(0.95, 2, 29)
    crossed = float(np.mean(effects > f95 * 31 / (2 * f95 + 29)))
    assert 0.03 < crossed < 0.08, crossed
    assert 0.8 < float(np.mean(effects)) < 1.2


def test_the_design_effect_grows_with_one_groups_offset() -> None:
    rng = np.random.default_rng(4)
    groups = [i % 3 for i in range(32)]
    values = rng.normal(0, 0.1, 32) + np.where(np.array(groups) == 0, 0.25, 0.0)
    # E[MSB] = 0.01 + 10.7 * 0.0139 = 0.158 against a total mean square of about 0.02: about 8.
    assert cluster_design_effect(values, groups, 3) > 4


def test_the_design_effect_at_its_limits() -> None:
    # Every value at its group's mean: all the spread is between groups, (N - 1) / (k - 1).
    assert cluster_design_effect([0.1, 0.1, 0.2, 0.2], [0, 0, 1, 1], 2) == pytest.approx(3.0)
    # A group of one value counts; one group alone, or no spread at all, reads nothing.
    assert math.isfinite(cluster_design_effect([0.1, 0.2, 0.3], [0, 0, 1], 3))
    assert math.isnan(cluster_design_effect([0.1, 0.2, 0.3], [0, 0, 0], 3))
    assert math.isnan(cluster_design_effect([0.5, 0.5, 0.5], [0, 1, 2], 3))
    # NaN values (a window pair too short for the quantile) are left out.
    with_nan = cluster_design_effect([0.0, 0.1, math.nan, 0.02, 0.12], [0, 1, 2, 0, 1], 3, trim=0.0)
    assert with_nan == pytest.approx(
        cluster_design_effect([0.0, 0.1, 0.02, 0.12], [0, 1, 0, 1], 2, trim=0.0)
    )
    with pytest.raises(ValueError, match="2 groups named for 3 values"):
        cluster_design_effect([0.1, 0.2, 0.3], [0, 1], 2)
