"""Unit tests for ``pytest_roofline.stats`` (pure numpy/scipy; seeded, deterministic)."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from scipy import signal
from scipy.stats import mstats, quantile_test

from pytest_roofline import stats
from pytest_roofline.errors import ConfigError, RooflineWarning

MS = 1e-3


def lognormal(seed: int, n: int, *, median_s: float = MS, sigma: float = 0.2) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(math.log(median_s), sigma, n)


def shuffled(x: np.ndarray, seed: int, scale: float = 1.0) -> np.ndarray:
    """Same values in another order: the Harrell-Davis ratio is exactly ``scale``."""
    return np.random.default_rng(seed).permutation(x) * scale


def ar1_log(seed: int, n: int, phi: float, sd: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n + 500) * sd * math.sqrt(1 - phi**2)
    return np.asarray(np.exp(math.log(MS) + signal.lfilter([1.0], [1.0, -phi], e)[500:]))


def compare(
    base: np.ndarray, cand: np.ndarray, q: float = 0.95, **kw: object
) -> stats.QuantileComparison:
    kw.setdefault("delta", 0.05)
    kw.setdefault("rng", np.random.default_rng(0))
    return stats.compare_quantile(base, cand, q, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# floors, Harrell-Davis, ESS
# ------------------------------------------------------------------------------------------
def test_sample_floors_are_59_for_p95_and_299_for_p99() -> None:
    assert stats.n_floor(0.95) == stats.N_FLOOR[0.95] == 59
    assert stats.n_floor(0.99) == stats.N_FLOOR[0.99] == 299
    assert stats.n_floor(0.5) == stats.N_FLOOR[0.5] == 5


@pytest.mark.parametrize("q", [0.95, 0.99])
def test_the_floor_is_where_a_distribution_free_upper_bound_starts_to_exist(q: float) -> None:
    floor = stats.n_floor(q)
    x = lognormal(1, floor)
    ci_at = quantile_test(x, q=1.0, p=q, alternative="less").confidence_interval(0.95)
    ci_below = quantile_test(x[:-1], q=1.0, p=q, alternative="less").confidence_interval(0.95)
    assert math.isfinite(ci_at.high)
    assert math.isnan(ci_below.high)


@pytest.mark.parametrize("n", [1, 2, 7, 59, 300, 2000, 20000])
def test_harrell_davis_matches_scipy_mstats_hdquantiles(n: int) -> None:
    x = lognormal(n, n, sigma=0.8)
    probs = [0.05, 0.5, 0.95, 0.99]
    ours = stats.hd_quantiles(x, probs)
    if n == 1:  # mstats masks a single value; HD of one value is that value
        np.testing.assert_allclose(ours, [x[0]] * 4)
        return
    np.testing.assert_allclose(ours, mstats.hdquantiles(x, prob=probs), rtol=1e-12)


def test_harrell_davis_is_vectorised_over_samples_of_equal_length() -> None:
    x = np.random.default_rng(2).lognormal(size=(5, 400))
    batch = stats.hd_quantiles(x, [0.95, 0.99])
    assert batch.shape == (5, 2)
    for row, expected in zip(x, batch, strict=True):
        np.testing.assert_allclose(stats.hd_quantiles(row, [0.95, 0.99]), expected, rtol=1e-13)
    assert stats.hd_quantiles(x[0], 0.5).shape == ()


# ------------------------------------------------------------------------------------------
# verdicts
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("q", "floor"), [(0.95, 59), (0.99, 299)])
def test_one_sample_below_the_floor_is_insufficient_and_the_floor_is_not(
    q: float, floor: int
) -> None:
    for n in (floor - 1, floor):
        base = lognormal(n, n)
        below = compare(base, shuffled(base, 1), q)
        assert (below.verdict == "insufficient") is (n < floor), below.reason
    short = compare(lognormal(5, floor - 1), lognormal(6, 5000), q)
    assert short.verdict == "insufficient"
    assert f"{floor - 1} samples, {floor} needed" in short.reason


def test_a_clear_regression_is_a_regression() -> None:
    base = lognormal(7, 2000)
    res = compare(base, shuffled(base, 8, 1.5))
    assert res.verdict == "regression"
    assert res.ratio == pytest.approx(1.5)
    assert res.ci.low > 1.4 and res.ci.high < 1.6
    assert res.p_value < 1e-10
    assert res.abs_change_s == pytest.approx(0.5 * res.base_s)
    assert not res.improvement


def test_a_clear_p99_regression_on_independent_samples_is_a_regression() -> None:
    res = compare(lognormal(9, 3000), lognormal(10, 3000) * 1.5, 0.99, delta=0.1)
    assert res.verdict == "regression"


def test_a_large_ratio_that_the_interval_does_not_establish_is_suspect() -> None:
    base = lognormal(11, 100, sigma=0.5)
    res = compare(base, shuffled(base, 12, 1.1))
    assert res.ratio == pytest.approx(1.1)
    assert res.ci.low < 1.0
    assert res.verdict == "suspect"


def test_an_unchanged_test_with_tight_intervals_is_ok() -> None:
    base = lognormal(13, 2000)
    res = compare(base, shuffled(base, 14))
    assert res.verdict == "ok"
    assert res.ci.high < 1.05
    assert not res.improvement


def test_wide_intervals_around_no_change_are_not_detected() -> None:
    base = lognormal(15, 100, sigma=0.5)
    res = compare(base, shuffled(base, 16))
    assert res.ratio == pytest.approx(1.0)
    assert res.ci.high > 1.05
    assert res.verdict == "not detected"
    assert res.outcome == "unknown"  # UNKNOWN: never shipped silently
    assert "neither seen nor ruled out" in res.reason


def test_an_established_speedup_is_ok_and_flagged_as_an_improvement() -> None:
    base = lognormal(17, 2000)
    res = compare(base, shuffled(base, 18, 0.6))
    assert res.verdict == "ok"
    assert res.improvement
    assert res.ci.high < 1.0


def test_the_absolute_floor_blocks_a_nanosecond_scale_regression() -> None:
    base = lognormal(19, 2000, median_s=20e-9, sigma=0.1)
    cand = shuffled(base, 20, 2.0)
    blocked = compare(base, cand)
    assert blocked.ratio == pytest.approx(2.0)
    assert blocked.verdict == "ok"
    assert "absolute floor" in blocked.reason
    assert compare(base, cand, abs_floor_s=0.0).verdict == "regression"


def test_the_margin_is_never_raised_to_the_comparisons_own_mde() -> None:
    # Issue 10: a margin that grows with the noise lets anything pass.
    base = lognormal(21, 100, sigma=0.5)
    noisy = compare(base, shuffled(base, 22))
    assert noisy.mde > 0.05
    assert noisy.delta == 0.05
    assert noisy.outcome in ("same", "unknown")


def test_autocorrelated_samples_whose_ess_is_below_the_floor_are_insufficient() -> None:
    base = ar1_log(24, 1000, phi=0.98)
    res = compare(base, ar1_log(41, 1000, phi=0.98))
    assert res.verdict == "insufficient"
    assert "autocorrelated" in res.reason
    assert res.n_eff_base < 59 or res.n_eff_cand < 59


def test_aa_comparisons_of_iid_samples_rarely_call_a_regression() -> None:
    rng = np.random.default_rng(20260101)
    trials, n = 200, 1000
    bases = list(rng.lognormal(math.log(MS), 0.2, (trials, n)))
    cands = list(rng.lognormal(math.log(MS), 0.2, (trials, n)))
    for q, delta in ((0.95, 0.05), (0.99, 0.10)):
        res = [
            stats.compare_quantile(b, c, q, delta=delta, rng=child)
            for b, c, child in zip(bases, cands, rng.spawn(trials), strict=True)
        ]
        rate = np.mean([r.verdict == "regression" for r in res])
        assert rate <= 0.05, (q, rate)
        assert all(r.verdict != "insufficient" for r in res)


def test_degenerate_samples_give_nan_and_a_warning_not_an_exception() -> None:
    with pytest.warns(RooflineWarning, match="degenerate"):
        res = compare(np.full(200, MS), np.full(200, MS))
    assert res.verdict == "insufficient"
    assert math.isnan(res.p_value) and math.isnan(res.ci.low) and math.isnan(res.mde)
    with pytest.warns(RooflineWarning, match="degenerate"):
        res = compare(np.zeros(200), lognormal(25, 200))
    assert res.verdict == "insufficient"


def test_a_comparison_serialises_to_strict_json_with_flat_interval_keys() -> None:
    res = compare(lognormal(26, 500), lognormal(27, 500))
    d = res.to_dict()
    assert d["p_adjusted"] is None  # NaN until BH
    assert {"ratio", "ci_low", "ci_high", "p_value", "verdict", "mde", "delta"} <= d.keys()
    json.dumps(d, allow_nan=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.verdict = "ok"  # type: ignore[misc]


# ------------------------------------------------------------------------------------------
# across a run: BH, common mode
# ------------------------------------------------------------------------------------------
def test_bh_downgrades_a_regression_that_is_not_a_discovery_across_the_run() -> None:
    base = lognormal(70, 2000)
    reg = compare(base, shuffled(base, 71, 1.5))
    ok = compare(base, shuffled(base, 72))
    weak = dataclasses.replace(reg, p_value=0.01)
    strong = dataclasses.replace(reg, p_value=1e-12)
    short = compare(lognormal(73, 40), lognormal(74, 40))
    family = [weak, strong, short] + [dataclasses.replace(ok, p_value=0.5)] * 98
    out = stats.apply_bh(family, alpha=0.05)
    assert out[0].verdict == "suspect" and out[0].p_adjusted >= 0.05
    assert "BH-adjusted" in out[0].reason
    assert out[1].verdict == "regression" and out[1].p_adjusted < 0.05
    assert out[2].verdict == "insufficient" and math.isnan(out[2].p_adjusted)
    assert all(o.verdict == "ok" for o in out[3:])


def test_the_common_mode_of_a_uniform_1_2_shift_is_1_2() -> None:
    bases = [lognormal(80 + i, 1000) for i in range(30)]
    cands = [shuffled(b, 110 + i, 1.2) for i, b in enumerate(bases)]
    rng = np.random.default_rng(1)
    comps = [
        stats.compare_quantile(b, c, 0.95, delta=0.05, rng=rng)
        for b, c in zip(bases, cands, strict=True)
    ]
    assert all(c.verdict == "regression" for c in comps)
    cm = stats.common_mode(np.log([c.ratio for c in comps]))
    assert cm.factor == pytest.approx(1.2)
    assert cm.n_tests == 30 and cm.spread == pytest.approx(0.0, abs=1e-9)


def test_the_common_mode_skips_nan_and_is_nan_with_a_warning_when_nothing_is_left() -> None:
    assert stats.common_mode([0.1, np.nan, 0.1]).n_tests == 2
    with pytest.warns(RooflineWarning, match="no finite"):
        assert math.isnan(stats.common_mode([np.nan]).factor)


# ------------------------------------------------------------------------------------------
# margins
# ------------------------------------------------------------------------------------------
def test_the_noise_floor_without_history_is_the_default() -> None:
    assert stats.noise_floor([], default=0.37) == pytest.approx(0.37)
    assert stats.noise_floor([MS], default=0.37) == pytest.approx(0.37)
    assert stats.default_noise_floor(0.95) == 0.37
    assert stats.default_noise_floor(0.99) == 0.60


def test_a_noisy_history_raises_the_noise_floor_and_a_long_quiet_one_lowers_it() -> None:
    rng = np.random.default_rng(150)
    noisy = MS * np.exp(0.2 * rng.standard_normal(12))
    quiet = MS * np.exp(0.01 * rng.standard_normal(40))
    assert stats.noise_floor(noisy, default=0.37) > 0.5
    low = stats.noise_floor(quiet, default=0.37)
    assert 0.05 < low < 0.2
    assert stats.noise_floor(quiet, default=0.37, minimum=0.37) == 0.37
    assert stats.noise_floor(quiet, default=0.37, prior_runs=0) < 0.06


def test_the_noise_floor_takes_per_run_samples_with_q() -> None:
    runs = [lognormal(160 + j, 500) * (1.0 + 0.3 * (j % 2)) for j in range(6)]
    per_run = [float(stats.hd_quantiles(r, 0.95)) for r in runs]
    assert stats.noise_floor(runs, default=0.37, q=0.95) == pytest.approx(
        stats.noise_floor(per_run, default=0.37)
    )


def test_the_effective_delta_is_the_largest_margin_and_ignores_a_nan_mde() -> None:
    assert stats.effective_delta(0.05, 0.37, 0.12) == 0.37
    assert stats.effective_delta(0.05, 0.0, 0.12) == 0.12
    assert stats.effective_delta(0.05, 0.0, math.nan) == 0.05


def test_the_mde_shrinks_with_n_and_agrees_with_the_comparisons_own() -> None:
    small = stats.minimum_detectable_effect(lognormal(170, 300), 0.95)
    large = stats.minimum_detectable_effect(lognormal(171, 5000), 0.95)
    assert large < small
    base, cand = lognormal(172, 2000), lognormal(173, 2000)
    res = compare(base, cand)
    alone = stats.minimum_detectable_effect(base, 0.95, n_other=2000)
    assert alone == pytest.approx(res.mde, rel=0.35)
    with pytest.warns(RooflineWarning, match="no spread"):
        assert math.isnan(stats.minimum_detectable_effect(np.full(100, MS), 0.95))


# ------------------------------------------------------------------------------------------
# drift, SLA, sampling
# ------------------------------------------------------------------------------------------
def test_drift_flags_a_trend_and_not_a_stationary_run() -> None:
    trend = lognormal(180, 1000, sigma=0.1) * np.linspace(1.0, 1.15, 1000)
    flat = lognormal(181, 1000, sigma=0.1)
    d = stats.drift(trend)
    assert d.drifting and d.tau > 0 and d.window_change > 0.1
    assert not stats.drift(flat).drifting


def test_a_significant_but_tiny_trend_is_not_drift() -> None:
    x = lognormal(182, 20000, sigma=0.05) * np.linspace(1.0, 1.01, 20000)
    d = stats.drift(x)
    assert d.p_value < 0.01 and not d.drifting


def test_drift_on_too_few_or_constant_samples_is_nan_with_a_warning() -> None:
    with pytest.warns(RooflineWarning, match="too few"):
        assert not stats.drift([MS] * 5).drifting
    with pytest.warns(RooflineWarning, match="no spread"):
        assert math.isnan(stats.drift([MS] * 50).tau)


@pytest.mark.parametrize(
    ("n", "q", "threshold_ms", "status"),
    [
        (2000, 0.99, 2.0, "met"),
        (2000, 0.99, 1.2, "breach"),
        (100, 0.99, 2.0, "unassessable"),
        (100, 0.5, 1.0, "not detected"),
        (100, 0.5, 0.99, "possible breach"),
        (2000, 0.5, 1.1, "met"),
    ],
)
def test_sla_status(n: int, q: float, threshold_ms: float, status: str) -> None:
    x = lognormal(190, n, sigma=0.1)
    res = stats.sla_check(x, q, threshold_ms * MS)
    assert res.status == status, res
    json.dumps(res.to_dict(), allow_nan=False)


def test_a_clear_p99_breach_is_a_breach_even_below_the_sample_floor() -> None:
    res = stats.sla_check(lognormal(191, 100, sigma=0.1), 0.99, 0.5 * MS)
    assert res.status == "breach"


def test_the_max_sla_compares_the_largest_sample() -> None:
    x = lognormal(192, 500, sigma=0.1)
    assert stats.sla_check(x, "max", x.max() * 1.01).status == "met"
    assert stats.sla_check(x, "max", x.max() * 0.99).status == "breach"


def test_sampling_is_not_decisive_below_the_floor_and_is_once_intervals_are_tight() -> None:
    early = stats.sampling_decisive(lognormal(200, 100))
    assert not early.decisive
    assert "p99: 100 of 299 samples" in early.reason
    late = stats.sampling_decisive(lognormal(201, 50000, sigma=0.1))
    assert late.decisive, late.reason
    assert all(late.halfwidths[q] <= late.targets[q] for q in (0.95, 0.99))


def test_sampling_is_decisive_against_a_baseline_it_clearly_exceeds() -> None:
    base = lognormal(202, 3000, sigma=0.3)
    cand = lognormal(203, 400, sigma=0.3) * 2.0
    alone = stats.sampling_decisive(cand, (0.95,))
    assert not alone.decisive
    against = stats.sampling_decisive(cand, (0.95,), baseline=base, deltas=0.1)
    assert against.decisive, against.reason


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
def _gen() -> np.random.Generator:
    return np.random.default_rng(0)


X = lognormal(300, 100)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (
            lambda: stats.compare_quantile(X, X, 1.0, delta=0.05, rng=_gen()),
            ConfigError,
            "`q` must be strictly between 0 and 1",
        ),
        (
            lambda: stats.compare_quantile(X, X, 0.95, delta=-0.1, rng=_gen()),
            ConfigError,
            "`delta` must be a non-negative",
        ),
        (
            lambda: stats.compare_quantile(X, X, 0.95, delta=0.05, alpha=0.7, rng=_gen()),
            ConfigError,
            r"`alpha` must be in \(0, 0.5\)",
        ),
        (
            lambda: stats.compare_quantile(X, X, 0.95, delta=0.05, n_boot=10, rng=_gen()),
            ConfigError,
            "`n_boot` must be an integer of at least 100",
        ),
        (
            lambda: stats.compare_quantile(X, X, 0.95, delta=0.05, rng=0),  # type: ignore[arg-type]
            TypeError,
            "`rng` must be a numpy.random.Generator",
        ),
        (
            lambda: stats.compare_quantile([1.0, -2.0], X, 0.95, delta=0.05, rng=_gen()),
            ValueError,
            r"`base` must contain non-negative durations.*-2.0 at index 1",
        ),
        (
            lambda: stats.compare_quantile(X, [1.0, np.nan], 0.95, delta=0.05, rng=_gen()),
            ValueError,
            "`cand` must contain only finite values",
        ),
        (
            lambda: stats.compare_quantile([], X, 0.95, delta=0.05, rng=_gen()),
            ValueError,
            "`base` must be a non-empty one-dimensional array",
        ),
        (lambda: stats.sla_check(X, 0.99, 0.0), ConfigError, "`threshold_s` must be a positive"),
        (lambda: stats.sla_check(X, "p99", 1.0), ConfigError, "or 'max'"),
        (
            lambda: stats.noise_floor([MS, 0.0], default=0.37),
            ValueError,
            "`history` must contain positive",
        ),
        (
            lambda: stats.noise_floor([MS], default=-1),
            ConfigError,
            "`default` must be a non-negative",
        ),
        (lambda: stats.sampling_decisive(X, baseline=X), ConfigError, "`deltas` is required"),
        (
            lambda: stats.hd_quantiles(X, [0.5, 1.5]),
            ConfigError,
            "`probs` must be strictly between 0 and 1",
        ),
        (
            lambda: stats.minimum_detectable_effect(X, 0.95, power=1.0),
            ConfigError,
            r"`power` must be in \(0, 1\)",
        ),
        (
            lambda: stats.drift(X, window_frac=0.6),
            ConfigError,
            r"`window_frac` must be in \(0, 0.5\)",
        ),
    ],
)
def test_bad_arguments_are_rejected_with_a_message_naming_the_parameter(
    call: Callable[[], object], exc: type[Exception], match: str
) -> None:
    with pytest.raises(exc, match=match):
        call()


def _import_roots(tree: ast.Module) -> set[str]:
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_module_imports_only_numpy_scipy_the_stdlib_and_errors() -> None:
    roots = set()
    for module in Path(stats.__file__).parent.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        roots |= _import_roots(tree)
    assert "pytest" not in roots
    assert roots <= {
        "__future__",
        "itertools",
        "math",
        "warnings",
        "collections",
        "dataclasses",
        "functools",
        "types",
        "typing",
        "numpy",
        "scipy",
        "pytest_roofline",
    }


def test_the_ratio_always_lies_inside_its_interval_even_under_a_heavy_tail() -> None:
    rng = np.random.default_rng(20261129)
    outside = 0
    for _ in range(40):
        base = rng.pareto(1.2, 400) + 1.0
        cand = (rng.pareto(1.2, 400) + 1.0) * 1.5
        for q in (0.95, 0.99):
            c = stats.compare_quantile(base, cand, q, delta=0.1, rng=rng)
            if np.isfinite(c.ci.low):
                outside += not (c.ci.low * (1 - 1e-12) <= c.ratio <= c.ci.high * (1 + 1e-12))
    assert outside == 0
