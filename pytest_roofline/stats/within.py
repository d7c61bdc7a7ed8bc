"""Within one run: drift of the samples, SLA checks, and when sampling may stop."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from pytest_roofline.errors import ConfigError
from pytest_roofline.stats.distributions import beta_ppf, norm_ppf
from pytest_roofline.stats.quantiles import DEFAULT_ALPHA, hd_sorted, n_floor, tau_many
from pytest_roofline.stats.results import ConfidenceInterval, Drift, SamplingState, SlaCheck
from pytest_roofline.stats.validate import (
    FloatArray,
    alpha_iv,
    nonneg_iv,
    positive_iv,
    qname,
    quantile_iv,
    samples_iv,
    unit_iv,
    warn,
)
from pytest_roofline.vocabulary import SlaStatus

__all__ = [
    "DEFAULT_REL_HALFWIDTH",
    "drift",
    "log_quantile_estimate",
    "sampling_decisive",
    "sla_check",
]

DEFAULT_REL_HALFWIDTH: Mapping[float, float] = MappingProxyType(
    {0.5: 0.025, 0.95: 0.025, 0.99: 0.05}
)
"""Sampling target: relative half-width of each quantile's interval at which a comparison of two
such samples detects the default minimum effect (p50/p95 5%, p99 10%) with 80% power. Two
equally noisy sides detect ``delta`` when ``log(1 + delta) = (z_{1-alpha} + z_{0.8}) sqrt(2) se``,
and one side's interval then has log half-width ``z_{1-alpha} se``: 2.3% for 5% and 4.6% for
10% at ``alpha = 0.05``, rounded."""


def drift(
    samples: npt.ArrayLike,
    *,
    alpha: float = 0.01,
    window_frac: float = 0.2,
    min_change: float = 0.03,
) -> Drift:
    """Within-run drift: Kendall's tau against sample index plus the first/last window change.

    ``drifting`` is true when the Mann-Kendall p-value is below ``alpha`` **and** the median of
    the last ``window_frac`` of the samples differs from that of the first by at least
    ``min_change`` (symmetric in log scale). The p-value assumes independent samples, so under
    ordinary autocorrelation it fires too often on its own; the size condition brings the false
    alarm rate back to a few percent (``docs/noise.md`` section 5).

    Parameters
    ----------
    samples : array_like
        Durations in seconds, in the order measured.
    alpha : float, optional
        Level of the trend test.
    window_frac : float, optional
        Fraction of the samples in each end window (at least 5 samples each).
    min_change : float, optional
        Relative change between the window medians that counts (0.03 = 3%).

    Returns
    -------
    Drift
        NaN fields and ``drifting=False`` (with a warning) for fewer than 10 samples or no
        spread.

    References
    ----------
    .. [1] Mann, H. B. (1945), "Nonparametric tests against trend", *Econometrica* 13, 245-259;
       Kendall, M. G. (1975), *Rank Correlation Methods*.
    .. [2] Hamed, K. H. and Rao, A. R. (1998), "A modified Mann-Kendall trend test for
       autocorrelated data", *J. Hydrology* 204, 182-196.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.lognormal(0, 0.1, 1000) * np.linspace(1.0, 1.2, 1000)
    >>> drift(x).drifting
    True
    """
    x = samples_iv(samples, "samples")
    alpha = alpha_iv(alpha)
    window_frac = unit_iv(window_frac, "window_frac", high=0.5)
    min_change = nonneg_iv(min_change, "min_change")
    n = x.size
    w = max(5, int(n * window_frac))
    if n < 10 or 2 * w > n or np.ptp(x) == 0:
        why = "have no spread" if n >= 10 else "are too few (at least 10 needed)"
        warn(f"drift: the {n} samples {why} to show a trend; returning NaN.")
        return Drift(math.nan, math.nan, math.nan, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from scipy import stats  # ~1.4 s CPU to import: only when a drift is tested

        res = stats.kendalltau(np.arange(n), x)
    first, last = float(np.median(x[:w])), float(np.median(x[-w:]))
    change = last / first - 1.0 if first > 0 else math.nan
    tau, p = float(res.statistic), float(res.pvalue)
    drifting = bool(
        math.isfinite(p)
        and p < alpha
        and math.isfinite(change)
        and abs(math.log1p(change)) >= math.log1p(min_change)
    )
    return Drift(tau=tau, p_value=p, window_change=change, drifting=drifting)


def sla_check(
    samples: npt.ArrayLike,
    q: float | str,
    threshold_s: float,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> SlaCheck:
    """Check a latency SLA (``p50`` / ``p95`` / ``p99`` / ``max``) against one run's samples.

    For a quantile the estimate is Harrell-Davis and the evidence is distribution-free
    (:func:`scipy.stats.quantile_test`, binomial on the count of samples above the threshold):

    * ``breach``: one-sided p-value for "quantile > threshold" below ``alpha`` (the
      distribution-free lower bound is above the threshold);
    * ``unassessable``: no confident breach and fewer than :func:`n_floor` samples, so the SLA
      cannot be confirmed whatever the samples say (e.g. p99 with n < 299);
    * ``met``: confident that the quantile is at most the threshold;
    * ``possible breach``: the estimate is above the threshold but not confidently;
    * ``not detected``: the estimate is within the threshold but not confidently.

    For ``"max"`` the sample maximum is compared directly: ``breach`` when a sample exceeds the
    threshold (it happened), else ``met``.

    Parameters
    ----------
    samples : array_like
        Durations in seconds.
    q : float or "max"
        Quantile in (0, 1), or ``"max"``.
    threshold_s : float
        The SLA in seconds.
    alpha : float, optional
        One-sided level.

    Returns
    -------
    SlaCheck
        ``ci`` holds the one-sided distribution-free bounds (NaN where none exists);
        ``p_value`` is the breach p-value.

    Notes
    -----
    The binomial test treats samples as independent; drift and strong autocorrelation are
    flagged separately (:func:`drift`).

    References
    ----------
    .. [1] Conover, W. J. (1999), *Practical Nonparametric Statistics*, 3rd ed., section 3.2
       (the quantile test).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.lognormal(np.log(1e-3), 0.1, 2000)
    >>> sla_check(x, 0.99, 4e-3).status, sla_check(x, 0.99, 1e-3).status
    ('met', 'breach')
    """
    x = samples_iv(samples, "samples")
    threshold_s = positive_iv(threshold_s, "threshold_s")
    alpha = alpha_iv(alpha)
    n = x.size
    if isinstance(q, str):
        if q != "max":
            raise ConfigError(f"`q` must be a quantile in (0, 1) or 'max'; got {q!r}.")
        top = float(x.max())
        status: SlaStatus = "breach" if top > threshold_s else "met"
        return SlaCheck(
            "max", threshold_s, top, ConfidenceInterval(math.nan, math.nan), math.nan, status, n
        )
    qf = quantile_iv(q)
    estimate = float(hd_sorted(np.sort(x), qf))
    from scipy import stats  # imported where used: see stats/distributions.py

    above = stats.quantile_test(x, q=threshold_s, p=qf, alternative="greater")
    below = stats.quantile_test(x, q=threshold_s, p=qf, alternative="less")
    low = float(above.confidence_interval(1.0 - alpha).low)
    high = float(below.confidence_interval(1.0 - alpha).high)
    p_breach = float(above.pvalue)
    if p_breach < alpha:
        status = "breach"
    elif n < n_floor(qf, alpha):
        status = "unassessable"
    elif float(below.pvalue) < alpha:
        status = "met"
    elif estimate > threshold_s:
        status = "possible breach"
    else:
        status = "not detected"
    ci = ConfidenceInterval(
        low if math.isfinite(low) else math.nan, high if math.isfinite(high) else math.nan
    )
    return SlaCheck(qf, threshold_s, estimate, ci, p_breach, status, n)


def _log_interval(x: FloatArray, q: float, alpha: float, ess: bool) -> tuple[float, float, float]:
    """(log lower, log middle, log upper) order statistics of the bootstrap-consistent interval."""
    n = x.size
    m = float(n)
    if ess:
        mid_guess = np.partition(x, min(n - 1, math.ceil(n * q) - 1))[
            min(n - 1, math.ceil(n * q) - 1)
        ]
        ind = x <= mid_guess
        if ind.any() and not ind.all():
            m = n / float(tau_many([ind])[0])
    a, b = q * (m + 1.0), (1.0 - q) * (m + 1.0)
    u_lo, u_hi = beta_ppf(np.array([alpha, 1.0 - alpha]), a, b)
    idx = [
        int(np.clip(math.ceil(n * u_lo) - 1, 0, n - 1)),
        int(np.clip(math.ceil(n * q) - 1, 0, n - 1)),
        int(np.clip(math.ceil(n * u_hi) - 1, 0, n - 1)),
    ]
    part = np.partition(x, sorted(set(idx)))
    with np.errstate(divide="ignore"):
        lo, mid, hi = (float(np.log(part[i])) for i in idx)
    return lo, mid, hi


def log_quantile_estimate(
    samples: npt.ArrayLike, q: float, *, alpha: float = DEFAULT_ALPHA, ess: bool = True
) -> tuple[float, float]:
    """A quick ``(log quantile, standard error)`` for a sampling loop: no bootstrap.

    The standard error is the half-width of the order-statistic interval of
    :func:`sampling_decisive` divided by ``z_{1-alpha}`` (O(n) selection, plus one FFT with
    ``ess``). NaN for fewer than :func:`n_floor` samples or degenerate data.
    """
    x = samples_iv(samples, "samples")
    q = quantile_iv(q)
    alpha = alpha_iv(alpha)
    if x.size < n_floor(q, alpha):
        return math.nan, math.nan
    lo, mid, hi = _log_interval(x, q, alpha, ess)
    za = float(norm_ppf(1.0 - alpha))
    se = (hi - lo) / (2.0 * za)
    return (mid, se) if math.isfinite(mid) and math.isfinite(se) else (math.nan, math.nan)


def sampling_decisive(
    samples: npt.ArrayLike,
    quantiles: Iterable[float] = (0.95, 0.99),
    *,
    rel_halfwidth: float | Mapping[float, float] | None = None,
    alpha: float = DEFAULT_ALPHA,
    ess: bool = True,
    baseline: npt.ArrayLike | None = None,
    deltas: float | Mapping[float, float] | None = None,
) -> SamplingState:
    """Whether the sampler may stop: every quantile's interval is tight enough, or decisive.

    Cheap enough for a sampling loop (O(n) selection plus, with ``ess``, one FFT; no
    bootstrap): the interval of each quantile is the pair of order statistics the
    order-statistic bootstrap would give as its percentile bounds, ``x_(ceil(n u))`` with ``u``
    the ``alpha`` and ``1 - alpha`` quantiles of ``Beta(q (m + 1), (1 - q)(m + 1))``
    (``m`` = effective sample size, or ``n`` without ``ess``). A quantile is done when its
    relative half-width is at most its target. Below :func:`n_floor` it is never done.

    With ``baseline`` (its samples) and ``deltas``, a quantile is also done when the normal
    approximation of the ratio's interval lies wholly above ``1 + delta`` (a regression the
    gate will see) or wholly below it (a regression of ``delta`` is ruled out).

    Call it on a geometric schedule (every ~10% more samples): it costs O(n log n) with ESS.

    Parameters
    ----------
    samples : array_like
        Durations so far, in the order measured.
    quantiles : iterable of float, optional
        Quantiles that must be decisive.
    rel_halfwidth : float or mapping, optional
        Target relative half-width (default :data:`DEFAULT_REL_HALFWIDTH`, 0.05 for others).
    alpha : float, optional
        One-sided level of each bound.
    ess : bool, optional
        Widen the intervals by the effective sample size.
    baseline : array_like, optional
        Baseline samples for the decisive-against-baseline rule.
    deltas : float or mapping, optional
        Margin per quantile for that rule (required with ``baseline``).

    Returns
    -------
    SamplingState

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> sampling_decisive(rng.lognormal(0, 0.2, 40)).reason
    'p95: 40 of 59 samples; p99: 40 of 299 samples'
    """
    x = samples_iv(samples, "samples")
    qs = [quantile_iv(v, "quantiles") for v in quantiles]
    if not qs:
        raise ConfigError("`quantiles` must name at least one quantile.")
    alpha = alpha_iv(alpha)

    def per_q(
        value: float | Mapping[float, float] | None,
        name: str,
        dflt: Mapping[float, float],
        fallback: float,
    ) -> dict[float, float]:
        out: dict[float, float] = {}
        for q in qs:
            if value is None:
                v = dflt.get(q, fallback)
            elif isinstance(value, Mapping):
                if q not in value:
                    raise ConfigError(f"`{name}` has no entry for quantile {q}.")
                v = value[q]
            else:
                v = value
            out[q] = positive_iv(v, name)
        return out

    targets = per_q(rel_halfwidth, "rel_halfwidth", DEFAULT_REL_HALFWIDTH, 0.05)
    base: FloatArray | None = None
    margins: dict[float, float] = {}
    if baseline is not None:
        base = samples_iv(baseline, "baseline")
        if deltas is None:
            raise ConfigError("`deltas` is required with `baseline`.")
        margins = per_q(deltas, "deltas", {}, 0.0)
    n = x.size
    za = float(norm_ppf(1.0 - alpha))
    halfwidths: dict[float, float] = {}
    pending: list[str] = []
    for q in qs:
        name = qname(q)
        floor = n_floor(q, alpha)
        if n < floor:
            halfwidths[q] = math.inf
            pending.append(f"{name}: {n} of {floor} samples")
            continue
        lo, mid, hi = _log_interval(x, q, alpha, ess)
        half = (hi - lo) / 2.0
        rel = math.expm1(half) if math.isfinite(half) else math.inf
        halfwidths[q] = rel
        if base is not None and base.size >= floor:
            blo, bmid, bhi = _log_interval(base, q, alpha, ess)
            se = math.hypot(half, (bhi - blo) / 2.0) / za
            log_ratio = mid - bmid
            if math.isfinite(se) and math.isfinite(log_ratio):
                edge = math.log1p(margins[q])
                if log_ratio - za * se > edge or log_ratio + za * se < edge:
                    continue
        if not rel <= targets[q]:
            pending.append(f"{name}: +/-{rel:.1%} > target +/-{targets[q]:.1%}")
    decisive = not pending
    reason = "all intervals tight enough or decisive" if decisive else "; ".join(pending)
    return SamplingState(
        decisive=decisive,
        reason=reason,
        halfwidths=MappingProxyType(halfwidths),
        targets=MappingProxyType(targets),
        n=n,
    )
