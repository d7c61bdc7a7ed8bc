"""Change points and cumulative drift in a label's per-run history of one test.

Pure numpy/scipy, no pytest. Input is the **log** of a per-run quantile (for example
``numpy.log(p50_seconds)`` of every run of a label, oldest first): a step in log space is a
ratio, which is what a performance change is, and the run-to-run noise measured here is close to
constant in log space (``docs/noise.md``: per-run log sd of a test's p50 0.04–0.11 after
the common-mode correction).

Method
------
:func:`detect_change_points` is the windowed E-divisive means detector of Apache Otava (formerly
DataStax Hunter; Fleming et al. 2023), which MongoDB introduced for CI performance series
(Daly et al. 2020):

1. **Split.** Slide a window of ``window`` runs over the series in steps of half a window (a
   window restarts at a change point found past that). In each window run E-divisive (Matteson &
   James 2014): the split ``tau`` that maximises the energy-distance statistic
   ``Q(X, Y) = mn/(m+n) * E(X, Y)`` between ``X = z[start:tau]`` and ``Y = z[tau:kappa]`` over all
   ``tau < kappa <= end``, then recurse into the two parts while the best split is significant.
   Significance is Student's two-sample t-test of the two parts (Otava's replacement for the
   original permutation test: deterministic and cheap), at a relaxed first-pass level
   (10 x ``max_p_value`` below 0.05, as Otava does): these are "weak" change points.
2. **Merge.** Recompute every weak change point's t-test on the full segments between its
   neighbours; repeatedly drop the weakest (largest p-value above ``max_p_value``, then the
   smallest step below ``min_magnitude``) and recompute its neighbours, until every change point
   passes both.

Differences from Otava, each for a reason:

* ``min_segment`` (default 3): a change point needs at least that many runs on each side (Otava
  allows one). A single slow run is noise, not a step; the gate's per-run comparison is what sees
  a single run. It also bounds the delay to detection from below: a step can be reported once
  ``min_segment`` runs after it exist.
* The pooled-variance t statistic uses the unbiased (``ddof=1``) standard deviations (Otava passes
  ``numpy.std`` with ``ddof=0`` to ``scipy.stats.ttest_ind_from_stats``, which overstates ``t`` a
  little).
* Pooled (Student) rather than Welch: right after a step the "after" segment has 3–5 runs, and
  Welch's degrees of freedom then collapse to about that number (``t_{0.9995, 2} = 31.6``), so a
  step could not be reported until many runs later. Pooling borrows the long "before" segment's
  estimate of the run-to-run noise, which is the same machine's noise on both sides of a code
  change. The ratio interval uses the same pooled standard error.
* NaN marks a run without a value for this test (skipped, failed, not collected); it is left out
  of the statistics and indices stay positions in the input.

Library decision
----------------
Implemented here (about 250 lines of numpy) rather than depended upon:

* ``apache-otava`` 0.8.0 (maintained, Apache incubator) is an application, not a library: it pins
  ``numpy==2.2.0.*`` and ``scipy<1.17`` (``pip install --dry-run apache-otava numpy==2.4.6
  scipy==1.17.1`` fails with ResolutionImpossible) and pulls in google-cloud-bigquery, slack-sdk,
  pg8000, requests and more.
* ``signal-processing-algorithms`` 2.1.6 (MongoDB; last release 2024-12) requires ``numpy<2``,
  gevent and structlog, and its sdist fails to build here.
* ``ruptures`` 1.1.10 installs cleanly but offers penalised-cost segmentation (PELT, binary
  segmentation, ...) without a significance test, so it would not give p-values or the Otava
  behaviour the design names.

Cumulative drift
----------------
E-divisive finds steps; a slow drift (say +1% per run over many merged pull requests) is found
late and cut into several steps. :func:`cumulative_drift` measures the change accumulated since
the last step directly: the Theil–Sen slope (Theil 1950; Sen 1968) of the log values in the
segment since the last change point, times the span of that segment, with Sen's distribution-free
interval, and the Mann–Kendall trend test (Mann 1945; Kendall 1975) as its p-value. A drift is
reportable when its whole interval lies beyond the gate's margin (:meth:`Drift.exceeds`), which
controls false alarms by effect size as well as by significance. To judge a candidate run against
the current segment, append its log value to the series.

Both methods assume independent runs. Runs on shared CI machines are positively autocorrelated
(a slow host for an afternoon); that makes both more eager than their nominal levels, so the false
alarm rates must be (and are, in ``benchmarks/history_validation.py``) measured rather than read
off the p-values. Measured on synthetic independent runs (``docs/history.md``): re-run on every
landed run, Otava's p = 0.001 shows 0.1–1.0 new false steps per 100 runs per test, p = 0.0001
about 0.04; a step should be confirmed on the raw samples before it gates anything.

References
----------
.. [1] D. S. Matteson and N. A. James, "A nonparametric approach for multiple change point
   analysis of multivariate data", J. Amer. Statist. Assoc. 109(505):334–345, 2014.
.. [2] D. Daly, W. Brown, H. Ingo, J. O'Leary and D. Bradford, "The use of change point
   detection to identify software performance regressions in a continuous integration system",
   ICPE 2020.
.. [3] M. Fleming, P. Kolaczkowski, I. Kumar, S. Das, S. Kamath, D. Daly and H. Ingo, "Hunter:
   Using change point detection to hunt for performance regressions", ICPE 2023.
   Implementation: apache/otava, ``otava/analysis.py`` and ``otava/change_point_divisive/``.
.. [4] H. Theil, "A rank-invariant method of linear and polynomial regression analysis",
   Indagationes Mathematicae 12, 1950. P. K. Sen, "Estimates of the regression coefficient based
   on Kendall's tau", J. Amer. Statist. Assoc. 63(324):1379–1389, 1968.
.. [5] H. B. Mann, "Nonparametric tests against trend", Econometrica 13:245–259, 1945.
   M. G. Kendall, Rank Correlation Methods, 4th ed., Griffin, 1975.

Why one long module: three published methods with their references and doctests (windowed
E-divisive means, segments, Theil-Sen drift with Mann-Kendall); about half of it is
documentation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from pytest_roofline.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_P_VALUE",
    "DEFAULT_MIN_SEGMENT",
    "DEFAULT_WINDOW",
    "ChangePoint",
    "Drift",
    "cumulative_drift",
    "detect_change_points",
    "segment_since_last_step",
]

DEFAULT_WINDOW = 50
"""Otava's default window (runs)."""

DEFAULT_MAX_P_VALUE = 0.001
"""Otava's default significance level for a change point."""

DEFAULT_MIN_SEGMENT = 3
"""Fewest runs on each side of a change point (see the module docstring)."""

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ChangePoint:
    """A step in a per-run log series.

    Attributes
    ----------
    index : int
        Position (oldest run = 0) of the first run after the step.
    p_value : float
        Two-sided Student t-test of the segments either side (bounded by the neighbouring change
        points or the ends of the series). Selected by a search, so smaller than a pre-planned
        test's would be: read it as a score, not a false-alarm rate.
    log_before, log_after : float
        Means of the log values in those two segments.
    ratio : float
        ``exp(log_after - log_before)``: > 1 is a slowdown for a duration.
    ci_low, ci_high : float
        Interval for ``ratio`` at the requested confidence (pooled-variance t).
    runs_before, runs_after : int
        Runs with a value in the two segments.
    """

    index: int
    p_value: float
    log_before: float
    log_after: float
    ratio: float
    ci_low: float
    ci_high: float
    runs_before: int
    runs_after: int


@dataclass(frozen=True)
class Drift:
    """Change accumulated over the segment since the last change point.

    Attributes
    ----------
    start_index : int
        Position of the first run of the segment (the last change point's index, or 0).
    runs : int
        Runs with a value in the segment.
    span_runs : int
        Positions from the first to the last run with a value (the slope is multiplied by this).
    slope_log_per_run : float
        Theil–Sen slope of the log values per run position.
    ratio : float
        ``exp(slope * span_runs)``: the change from the segment's start to its latest run.
    ci_low, ci_high : float
        Interval for ``ratio`` from Sen's interval for the slope.
    p_value : float
        Two-sided Mann–Kendall test of no trend (Kendall's tau against run position).
    """

    start_index: int
    runs: int
    span_runs: int
    slope_log_per_run: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float

    def exceeds(self, margin: float) -> bool:
        """Whether the whole interval lies beyond ``margin`` in one direction.

        ``margin`` is a relative change (0.05 for 5%): true when ``ci_low > 1 + margin``
        (a confident slowdown beyond the margin) or ``ci_high < 1 / (1 + margin)``.
        """
        if not (math.isfinite(margin) and margin >= 0):
            raise ConfigError(f"`margin` must be a finite number >= 0; got {margin!r}.")
        return self.ci_low > 1.0 + margin or self.ci_high < 1.0 / (1.0 + margin)


# ---------------------------------------------------------------------------------------------
# Validation


def _as_log_series(log_values: npt.ArrayLike) -> FloatArray:
    try:
        arr = np.asarray(log_values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("`log_values` must be a one-dimensional array of numbers.") from None
    if arr.ndim != 1:
        raise ValueError(f"`log_values` must be one-dimensional; got shape {arr.shape}.")
    bad = np.isinf(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`log_values` must be finite or NaN (NaN marks a run without a value); found {arr[i]} at index {i}."
        )
    return arr


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"`{name}` must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _check_open_unit(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ConfigError(f"`{name}` must be a number in (0, 1); got {value!r}.")
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ConfigError(f"`{name}` must be a number in (0, 1); got {value!r}.")
    return v


# ---------------------------------------------------------------------------------------------
# E-divisive within one window


def _prefix_sums_2d(z: FloatArray) -> FloatArray:
    """``c[a, b] = sum(|z_i - z_j| for i < a, j < b)``: any block sum of distances in O(1)."""
    n = len(z)
    c = np.zeros((n + 1, n + 1))
    c[1:, 1:] = np.abs(z[:, None] - z[None, :]).cumsum(axis=0).cumsum(axis=1)
    return c


def _best_split(c: FloatArray, start: int, end: int, min_segment: int) -> tuple[int, float] | None:
    """The ``(tau, q)`` maximising Matteson & James' ``Q(z[start:tau], z[tau:kappa])``.

    Over ``start + m <= tau`` and ``tau + m <= kappa <= end`` (``m = min_segment``), with the
    distance exponent alpha = 1 (Otava's and the paper's default).
    """
    m = min_segment
    if end - start < 2 * m:
        return None
    # c is symmetric with c[i, j] = sum of distances in the block [0, i) x [0, j), so every sum
    # needed is a combination of its diagonal, row `start` and the contiguous block
    # c[taus, kappas]: slices, no fancy indexing (this is the detector's inner loop).
    t0, t1, k0 = start + m, end - m + 1, start + 2 * m
    taus = np.arange(t0, t1, dtype=np.float64)[:, None]
    kappas = np.arange(k0, end + 1, dtype=np.float64)[None, :]
    diag = np.diagonal(c)
    c_tk = c[t0:t1, k0 : end + 1]
    row_t = c[start, t0:t1][:, None]
    diag_t = diag[t0:t1][:, None]
    cross = c_tk - c[start, k0 : end + 1][None, :] - diag_t + row_t
    within_x = (diag_t - 2.0 * row_t + diag[start]) / 2.0
    within_y = (diag[k0 : end + 1][None, :] - 2.0 * c_tk + diag_t) / 2.0
    n_x = taus - start
    n_y = kappas - taus
    valid = n_y >= m
    n_y = np.where(valid, n_y, 2.0)  # keeps the masked cells finite
    total = n_x + n_y
    q = (
        2.0 * cross / total
        - 2.0 * n_y * within_x / (total * (n_x - 1.0))
        - 2.0 * n_x * within_y / (total * (n_y - 1.0))
    )
    q = np.where(valid, q, -np.inf)
    i, j = np.unravel_index(int(np.argmax(q)), q.shape)
    return t0 + int(i), float(q[i, j])


def _p_from_stats(diff: float, ss: float, n1: int, n2: int) -> float:
    """Two-sided pooled-variance t-test p-value of a difference of means ``diff``.

    ``ss`` is the sum of squared deviations of both groups from their own means.
    """
    df = n1 + n2 - 2
    if df < 1:
        return 1.0
    se = math.sqrt(ss / df * (1.0 / n1 + 1.0 / n2))
    if se == 0.0:
        # Constant segments: a difference is certain, none is certainly absent.
        return 0.0 if diff != 0.0 else 1.0
    return float(2.0 * special.stdtr(df, -abs(diff) / se))


def _divisive(z: FloatArray, min_segment: int, max_p_value: float) -> list[int]:
    """E-divisive with a t-test stopping rule on the whole of ``z``; positions in ``z``."""
    c = _prefix_sums_2d(z)
    s1 = np.concatenate(([0.0], np.cumsum(z)))
    s2 = np.concatenate(([0.0], np.cumsum(z * z)))

    def sum_sq(a: int, b: int) -> tuple[float, float]:
        """Mean and sum of squared deviations of ``z[a:b]``."""
        mean = float(s1[b] - s1[a]) / (b - a)
        return mean, max(float(s2[b] - s2[a]) - mean * mean * (b - a), 0.0)

    cps: list[int] = []
    while True:
        bounds = [0, *sorted(cps), len(z)]
        best: tuple[int, float, int, int] | None = None
        for a, b in itertools.pairwise(bounds):
            split = _best_split(c, a, b, min_segment)
            if split is not None and (best is None or split[1] > best[1]):
                best = (split[0], split[1], a, b)
        if best is None:
            return cps
        tau, _, a, b = best
        mean_l, ss_l = sum_sq(a, tau)
        mean_r, ss_r = sum_sq(tau, b)
        if _p_from_stats(mean_r - mean_l, ss_l + ss_r, tau - a, b - tau) > max_p_value:
            return cps
        cps.append(tau)


# ---------------------------------------------------------------------------------------------
# Segment statistics for a set of change points (vectorised over all of them)


@dataclass(frozen=True)
class _Stats:
    p: FloatArray
    mean_before: FloatArray
    mean_after: FloatArray
    se: FloatArray
    df: npt.NDArray[np.int64]
    n_before: npt.NDArray[np.int64]
    n_after: npt.NDArray[np.int64]


def _segment_stats(s1: FloatArray, s2: FloatArray, cps: Sequence[int]) -> _Stats:
    """Pooled t of each change point against the segments to its neighbours.

    ``s1``/``s2`` are prefix sums of the centred values and their squares.
    """
    b = np.asarray([0, *cps, len(s1) - 1], dtype=np.int64)
    n = np.diff(b)
    sums = np.diff(s1[b])
    means = sums / n
    ss = np.maximum(np.diff(s2[b]) - sums * means, 0.0)
    n1, n2 = n[:-1], n[1:]
    df = n1 + n2 - 2
    se = np.sqrt((ss[:-1] + ss[1:]) / np.maximum(df, 1) * (1.0 / n1 + 1.0 / n2))
    diff = means[1:] - means[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2.0 * special.stdtr(np.maximum(df, 1), -np.abs(diff) / se)
    p = np.where(se > 0, p, np.where(diff != 0, 0.0, 1.0))
    p = np.where(df >= 1, p, 1.0)
    return _Stats(p, means[:-1], means[1:], se, df, n1, n2)


def _merge(
    s1: FloatArray, s2: FloatArray, cps: list[int], max_p_value: float, min_log_step: float
) -> list[int]:
    """Otava's merge: drop the weakest change point until all are significant and large enough."""
    cps = sorted(set(cps))
    while cps:
        st = _segment_stats(s1, s2, cps)
        weakest = int(np.argmax(st.p))
        if st.p[weakest] <= max_p_value:
            size = np.abs(st.mean_after - st.mean_before)
            weakest = int(np.argmin(size))
            if size[weakest] >= min_log_step:
                return cps
        del cps[weakest]
    return cps


# ---------------------------------------------------------------------------------------------
# Public API


def detect_change_points(
    log_values: npt.ArrayLike,
    *,
    window: int = DEFAULT_WINDOW,
    max_p_value: float = DEFAULT_MAX_P_VALUE,
    min_magnitude: float = 0.0,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    confidence: float = 0.95,
) -> tuple[ChangePoint, ...]:
    """Find steps in a per-run log series with Otava's windowed E-divisive means.

    Parameters
    ----------
    log_values : array_like, shape (n,)
        Log of a per-run statistic (e.g. ``log(p50_seconds)``), oldest run first. NaN marks a run
        without a value; it is skipped, and indices stay positions in ``log_values``. Infinite
        values are rejected.
    window : int, optional
        Runs per window of the split step (Otava's default, 50); at least ``4 * min_segment`` so
        that the half-overlapping windows leave no position unexamined.
    max_p_value : float, optional
        Significance level of the merge step, in (0, 1); the split step uses Otava's relaxed level
        (10 x below 0.05, 2 x below 0.5).
    min_magnitude : float, optional
        Smallest relative step kept, ``>= 0`` (0.05 keeps steps with ``max(ratio, 1/ratio) >= 1.05``).
    min_segment : int, optional
        Fewest runs with a value on each side of a change point, ``>= 2``.
    confidence : float, optional
        Confidence level of each change point's ratio interval, in (0, 1).

    Returns
    -------
    tuple of ChangePoint
        Sorted by index; empty when the series has fewer than ``2 * min_segment`` values.

    Raises
    ------
    ValueError
        ``log_values`` is not one-dimensional or holds an infinite value.
    ConfigError
        A parameter is out of range (a ``ValueError`` too).

    Notes
    -----
    Deterministic: the significance test is a t-test, not a permutation test, so the same input
    always gives the same change points. Cost is about ``O(n * window)`` numpy work per series.

    References
    ----------
    Matteson & James (2014); Daly et al. (2020); Fleming et al. (2023): see the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> z = rng.normal(0.0, 0.02, 80)
    >>> z[40:] += np.log(1.10)
    >>> [(c.index, round(c.ratio, 2)) for c in detect_change_points(z)]
    [(40, 1.1)]
    """
    arr = _as_log_series(log_values)
    min_segment = _check_int("min_segment", min_segment, 2)
    window = _check_int("window", window, 4 * min_segment)
    max_p_value = _check_open_unit("max_p_value", max_p_value)
    confidence = _check_open_unit("confidence", confidence)
    if (
        isinstance(min_magnitude, bool)
        or not isinstance(min_magnitude, (int, float, np.floating))
        or not (math.isfinite(min_magnitude) and min_magnitude >= 0)
    ):
        raise ConfigError(f"`min_magnitude` must be a finite number >= 0; got {min_magnitude!r}.")

    positions = np.flatnonzero(~np.isnan(arr))
    z = arr[positions]
    n = len(z)
    if n < 2 * min_segment:
        return ()
    centre = float(z.mean())
    zc = z - centre

    # Otava's first-pass level for the split step (otava/analysis.py, compute_change_points).
    if max_p_value < 0.05:
        split_p = max_p_value * 10
    elif max_p_value < 0.5:
        split_p = max_p_value * 2
    else:
        split_p = max_p_value

    weak: set[int] = set()
    start, step = 0, window // 2
    while start < n:
        end = min(start + window, n)
        found = [start + t for t in _divisive(zc[start:end], min_segment, split_p)]
        weak.update(found)
        start = max(max(found, default=0), start + step)

    s1 = np.concatenate(([0.0], np.cumsum(zc)))
    s2 = np.concatenate(([0.0], np.cumsum(zc * zc)))
    cps = _merge(s1, s2, sorted(weak), max_p_value, math.log1p(min_magnitude))
    if not cps:
        return ()
    st = _segment_stats(s1, s2, cps)
    t_crit = special.stdtrit(np.maximum(st.df, 1), 0.5 + confidence / 2.0)
    diff = st.mean_after - st.mean_before
    return tuple(
        ChangePoint(
            index=int(positions[cp]),
            p_value=float(st.p[k]),
            log_before=float(st.mean_before[k]) + centre,
            log_after=float(st.mean_after[k]) + centre,
            ratio=math.exp(float(diff[k])),
            ci_low=math.exp(float(diff[k] - t_crit[k] * st.se[k])),
            ci_high=math.exp(float(diff[k] + t_crit[k] * st.se[k])),
            runs_before=int(st.n_before[k]),
            runs_after=int(st.n_after[k]),
        )
        for k, cp in enumerate(cps)
    )


def _check_change_points(change_points: Sequence[ChangePoint], n: int) -> int:
    """Index of the last change point (0 when none), after checking they fit a series of ``n``."""
    last = 0
    for k, cp in enumerate(change_points):
        if not isinstance(cp, ChangePoint):
            raise ValueError(
                f"`change_points[{k}]` must be a ChangePoint; got {type(cp).__name__}."
            )
        if not 0 < cp.index < n:
            raise ValueError(
                f"`change_points[{k}].index` = {cp.index} does not fit a series of {n} runs (valid: 1..{n - 1})."
            )
        last = max(last, cp.index)
    return last


def segment_since_last_step(
    log_values: npt.ArrayLike, change_points: Sequence[ChangePoint]
) -> slice:
    """The runs since the last change point: what a noise floor may be computed over.

    A floor computed across a step mixes two levels and overstates the noise.

    Parameters
    ----------
    log_values : array_like, shape (n,)
        The series the change points were found in (only its length is used beyond validation).
    change_points : sequence of ChangePoint
        As returned by :func:`detect_change_points` for ``log_values``, in any order.

    Returns
    -------
    slice
        ``slice(last.index, n)``, or ``slice(0, n)`` without change points.
    """
    n = len(_as_log_series(log_values))
    return slice(_check_change_points(change_points, n), n)


def _theil_sen_mann_kendall(
    x: FloatArray, y: FloatArray, confidence: float
) -> tuple[float, float, float, float]:
    """Theil–Sen slope with Sen's interval, and the Mann–Kendall p-value, from one set of pairs.

    ``x`` strictly increasing. The interval follows Sen (1968) eq. 2.6 as
    :func:`scipy.stats.theilslopes` does (same ranks); the p-value is the classic Mann–Kendall
    normal approximation with continuity and tie corrections. Both come from the same ``n(n-1)/2``
    pairwise differences, which is why they are computed here rather than by two scipy calls
    (each of which forms them again).
    """
    n = len(y)
    i, j = np.triu_indices(n, 1)
    dy = y[j] - y[i]
    slopes = np.sort(dy / (x[j] - x[i]))
    _, counts = np.unique(y, return_counts=True)
    t = counts[counts > 1].astype(np.float64)
    var_s = (n * (n - 1) * (2 * n + 5) - float(np.sum(t * (t - 1) * (2 * t + 5)))) / 18.0
    if var_s <= 0.0:  # every value equal
        return 0.0, 0.0, 0.0, 1.0
    sigma = math.sqrt(var_s)
    z = float(special.ndtri(0.5 + confidence / 2.0))
    nt = len(slopes)
    low = slopes[max(int(np.round((nt - z * sigma) / 2.0)) - 1, 0)]
    high = slopes[min(int(np.round((nt + z * sigma) / 2.0)), nt - 1)]
    s = float(np.sign(dy).sum())
    p = 1.0 if s == 0.0 else float(2.0 * special.ndtr(-(abs(s) - 1.0) / sigma))
    return float(np.median(slopes)), float(low), float(high), min(p, 1.0)


def cumulative_drift(
    log_values: npt.ArrayLike,
    change_points: Sequence[ChangePoint] = (),
    *,
    confidence: float = 0.95,
    min_runs: int = 5,
) -> Drift | None:
    """Change accumulated since the last step: Theil–Sen slope times span, Mann–Kendall p.

    Parameters
    ----------
    log_values : array_like, shape (n,)
        Log of a per-run statistic, oldest first, NaN for a run without a value. To judge a
        candidate run against the current segment, append its log value.
    change_points : sequence of ChangePoint, optional
        Change points of ``log_values``; the segment since the last one is used.
    confidence : float, optional
        Confidence level of the ratio interval (Sen's interval for the slope), in (0, 1).
    min_runs : int, optional
        Fewest runs with a value in the segment, ``>= 3``; below it the result is ``None``.

    Returns
    -------
    Drift or None

    Notes
    -----
    The slope is the median of pairwise slopes, so a single outlying run barely moves it, and the
    interval comes from the null distribution of Kendall's S (Sen 1968, eq. 2.6, with the ranks
    :func:`scipy.stats.theilslopes` uses). With the gate's margin, :meth:`Drift.exceeds` asks for the
    accumulated change to be confidently beyond the margin, not merely non-zero. The interval and
    p-value assume independent runs; see the module docstring.

    References
    ----------
    Theil (1950); Sen (1968); Mann (1945); Kendall (1975): see the module docstring.
    """
    arr = _as_log_series(log_values)
    confidence = _check_open_unit("confidence", confidence)
    min_runs = _check_int("min_runs", min_runs, 3)
    start = _check_change_points(change_points, len(arr))
    seg = arr[start:]
    pos = np.flatnonzero(~np.isnan(seg))
    if len(pos) < min_runs:
        return None
    y = seg[pos]
    x = pos.astype(np.float64)
    span = int(pos[-1] - pos[0])
    slope, low, high, p = _theil_sen_mann_kendall(x, y, confidence)
    return Drift(
        start_index=start,
        runs=len(pos),
        span_runs=span,
        slope_log_per_run=slope,
        ratio=math.exp(slope * span),
        ci_low=math.exp(low * span),
        ci_high=math.exp(high * span),
        p_value=p,
    )
