"""Margins of a comparison: the run-to-run noise floor from a label's history, and its defaults."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from pytest_roofline.errors import ConfigError
from pytest_roofline.stats.distributions import norm_ppf
from pytest_roofline.stats.quantiles import hd_quantiles
from pytest_roofline.stats.validate import nonneg_iv, quantile_iv, samples_iv, unit_iv

__all__ = ["DEFAULT_NOISE_FLOOR", "default_noise_floor", "effective_delta", "noise_floor"]

# Median of a chi-squared variable with one degree of freedom: median(d**2) of successive
# differences d ~ N(0, 2 s**2) is 2 s**2 times this.
_CHI2_1_MEDIAN = 0.454936423119572

DEFAULT_NOISE_FLOOR: Mapping[float, float] = MappingProxyType({0.5: 0.35, 0.95: 0.37, 0.99: 0.60})
"""Run-to-run noise floor with no history: one-sided 99% bound of the change between two
separate runs of unchanged code on shared CI runners, after common-mode removal (median test,
``docs/noise.md`` section 3)."""


def default_noise_floor(q: float) -> float:
    """The no-history noise floor for quantile ``q`` (:data:`DEFAULT_NOISE_FLOOR`, interpolated).

    Examples
    --------
    >>> default_noise_floor(0.95), default_noise_floor(0.99)
    (0.37, 0.6)
    """
    q = quantile_iv(q)
    keys = sorted(DEFAULT_NOISE_FLOOR)
    return float(np.interp(q, keys, [DEFAULT_NOISE_FLOOR[k] for k in keys]))


def noise_floor(
    history: npt.ArrayLike | Sequence[npt.ArrayLike],
    *,
    default: float,
    q: float | None = None,
    confidence: float = 0.99,
    prior_runs: float = 5.0,
    baseline_runs: int = 1,
    minimum: float = 0.0,
    robust: bool = False,
) -> float:
    """Run-to-run noise floor of one test's quantile, from the baseline label's history.

    Let ``y_j`` be the log quantile of run ``j`` (time order). The per-run noise variance is
    estimated from successive differences, ``s2 = mean((y_{j+1} - y_j)**2) / 2`` (von Neumann;
    a one-off step in the history counts once, a slow trend hardly at all), and shrunk towards
    the variance implied by ``default`` with ``prior_runs`` pseudo-runs:
    ``s2_post = (prior_runs * s0**2 + (h - 1) * s2) / (prior_runs + h - 1)``. The floor is the
    one-sided ``confidence`` bound of the change between a candidate run and the mean of
    ``baseline_runs`` baseline runs: ``exp(z * s_post * sqrt(1 + 1 / baseline_runs)) - 1``.
    With no history (fewer than two runs) it is exactly ``default``; a noisy history raises it
    quickly, a long quiet one lowers it slowly. It is never below ``minimum``.

    Parameters
    ----------
    history : array_like or sequence of array_like
        Per-run quantile values in seconds (NaN entries are skipped), or, with ``q``, the
        per-run samples (the Harrell-Davis ``q`` quantile of each is taken).
    default : float
        The floor with no history (e.g. :func:`default_noise_floor`), also the prior.
    q : float, optional
        Quantile to take of each run when ``history`` holds raw samples.
    confidence : float, optional
        One-sided confidence of the bound (0.99: ~1% false alarms per unchanged test).
    prior_runs : float, optional
        Weight of ``default`` in runs (0: history only).
    baseline_runs : int, optional
        Baseline runs pooled in the comparison (1: the latest run).
    minimum : float, optional
        Lower bound of the result; pass ``minimum=default`` to let history only raise it.
    robust : bool, optional
        Estimate the per-run variance from the *median* squared successive difference
        (``median(d**2) / (2 * 0.4549)``, 0.4549 being the median of a chi-squared with one
        degree of freedom) instead of the mean: one run the host disturbed then moves the floor
        little, where the mean let a single slow run raise a label's p95 floor to +157%.

    Returns
    -------
    float
        The floor as a ratio minus 1 (``0.37`` = +37%).

    References
    ----------
    .. [1] von Neumann, J. (1941), "Distribution of the ratio of the mean square successive
       difference to the variance", *Ann. Math. Statist.* 12(4), 367-395.
    .. [2] Kalibera, T. and Jones, R. (2013), "Rigorous benchmarking in reasonable time",
       ISMM 2013 (replicate at the level with the most variance: runs).

    Examples
    --------
    >>> noise_floor([], default=0.37)
    0.37
    >>> round(noise_floor([1.0, 1.3, 0.8, 1.25, 0.85], default=0.37), 2)  # noisy: raised
    0.95
    >>> round(noise_floor([1.0, 1.02, 0.99, 1.01, 0.99, 1.0] * 5, default=0.37), 2)  # quiet
    0.14
    """
    default = nonneg_iv(default, "default")
    confidence = unit_iv(confidence, "confidence", low=0.5)
    prior_runs = nonneg_iv(prior_runs, "prior_runs")
    minimum = nonneg_iv(minimum, "minimum")
    if (
        isinstance(baseline_runs, bool)
        or not isinstance(baseline_runs, (int, np.integer))
        or baseline_runs < 1
    ):
        raise ConfigError(f"`baseline_runs` must be a positive integer; got {baseline_runs!r}.")
    if q is not None:
        qf = quantile_iv(q)
        runs = list(history)  # type: ignore[arg-type]
        values = np.array(
            [float(hd_quantiles(samples_iv(r, f"history[{j}]"), qf)) for j, r in enumerate(runs)]
        )
    else:
        values = np.asarray(history, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(
                "`history` must hold one quantile value per run (1-D); "
                "pass `q=` to give per-run samples."
            )
    values = values[~np.isnan(values)]
    if not (np.all(np.isfinite(values)) and np.all(values > 0)):
        raise ValueError("`history` must contain positive finite durations in seconds.")
    z = float(norm_ppf(confidence))
    spread = math.sqrt(1.0 + 1.0 / int(baseline_runs))
    s0 = math.log1p(default) / (z * spread)
    h = values.size
    if h >= 2:
        y = np.log(values)
        squares = np.diff(y) ** 2
        s2_hat = (
            float(np.median(squares)) / (2.0 * _CHI2_1_MEDIAN)
            if robust
            else float(np.mean(squares)) / 2.0
        )
        nu = h - 1
        s2 = (prior_runs * s0**2 + nu * s2_hat) / (prior_runs + nu)
    else:
        s2 = s0**2
    floor = math.expm1(z * math.sqrt(s2) * spread)
    return max(floor, minimum)


def effective_delta(min_effect: float, history_floor: float, mde: float = 0.0) -> float:
    """The margin a comparison uses: ``max(min_effect, history_floor, mde)``.

    Delta is never below the run-to-run noise seen in the baseline's history
    (:func:`noise_floor`), nor below the test's own minimum detectable effect; the user's
    ``min_effect`` is what is worth acting on. A NaN ``mde`` (degenerate samples) is ignored.

    Examples
    --------
    >>> effective_delta(0.05, 0.37, 0.12)
    0.37
    """
    m = nonneg_iv(min_effect, "min_effect")
    h = nonneg_iv(history_floor, "history_floor")
    try:
        d = float(mde)
    except (TypeError, ValueError):
        raise ConfigError(f"`mde` must be a non-negative number or NaN; got {mde!r}.") from None
    if math.isnan(d):
        d = 0.0
    elif d < 0:
        raise ConfigError(f"`mde` must be a non-negative number or NaN; got {mde!r}.")
    return max(m, h, d)
