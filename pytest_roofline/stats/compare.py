"""Two separate runs compared: one quantile's ratio, its bootstrap interval, p-value and verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pytest_roofline.errors import ConfigError
from pytest_roofline.stats.distributions import norm_ppf, norm_sf
from pytest_roofline.stats.quantiles import (
    DEFAULT_ALPHA,
    beta_bins,
    hd_sorted,
    n_floor,
    optimistic_ess,
    tau_many,
)
from pytest_roofline.stats.results import ConfidenceInterval, QuantileComparison
from pytest_roofline.stats.threeway import GateMargin, Outcome, as_margin, classify_three_way
from pytest_roofline.stats.validate import (
    FloatArray,
    alpha_iv,
    n_boot_iv,
    nonneg_iv,
    qname,
    quantile_iv,
    rng_iv,
    samples_iv,
    unit_iv,
    warn,
)
from pytest_roofline.vocabulary import Verdict

__all__ = [
    "ABS_FLOOR_S",
    "DEFAULT_N_BOOT",
    "POWER",
    "compare_quantile",
    "minimum_detectable_effect",
    "only_autocorrelated",
]

DEFAULT_N_BOOT = 2000
"""Bootstrap draws per side: the Monte Carlo error of a 5% bound is ~1% of the CI width."""

ABS_FLOOR_S = 1e-7
"""Smallest absolute change of a quantile (100 ns) that can count as a regression: below it,
timer overhead and quantisation dominate and ratios of tiny durations explode."""

POWER = 0.8
"""Power at which minimum detectable effects are quoted."""
# With few samples beyond the quantile (3 tail events for p99 at n = 300) one adjacent pair
# makes tau look like 1.7: the autocorrelation is not estimable, so the ESS floor check needs
# at least this many samples on the rarer side of the quantile (it still widens the interval).
_ESS_MIN_EVENTS = 20


class _Side:
    """Sorted log samples grouped by length, plus per-test HD estimate and ESS."""

    __slots__ = ("estimable", "groups", "hd", "n", "n_eff", "n_eff_opt")

    def __init__(self, arrays: Sequence[FloatArray], q: float) -> None:
        k = len(arrays)
        self.hd = np.empty(k)
        self.n = np.array([a.size for a in arrays], dtype=np.int64)
        indicators: list[npt.NDArray[np.bool_]] = [np.empty(0, dtype=bool)] * k
        by_len: dict[int, list[int]] = {}
        for i, a in enumerate(arrays):
            by_len.setdefault(a.size, []).append(i)
        self.groups: list[tuple[npt.NDArray[np.intp], FloatArray]] = []
        for members in by_len.values():
            idx = np.asarray(members, dtype=np.intp)
            x = (
                arrays[members[0]][None, :]
                if len(members) == 1
                else np.stack([arrays[i] for i in members])
            )
            s = np.sort(x, axis=1)
            hd = hd_sorted(s, q)
            self.hd[idx] = hd
            for i, row in zip(members, x <= hd[:, None], strict=True):
                indicators[i] = row
            with np.errstate(divide="ignore"):
                self.groups.append((idx, np.log(s)))
        tau = tau_many(indicators)
        below = np.array([int(np.count_nonzero(ind)) for ind in indicators])
        self.estimable = np.minimum(below, self.n - below) >= _ESS_MIN_EVENTS
        nf = self.n.astype(np.float64)
        self.n_eff = nf / tau
        self.n_eff_opt = optimistic_ess(nf, tau)

    def draws(self, q: float, gens: Sequence[np.random.Generator], n_boot: int) -> FloatArray:
        """Order-statistic bootstrap of log Q_q for every test: ``log x_(ceil(n U))``."""
        a = q * (self.n_eff + 1.0)
        b = (1.0 - q) * (self.n_eff + 1.0)
        out = np.empty((self.n.size, n_boot))
        for idx, logs in self.groups:
            n = logs.shape[1]
            u = np.empty((idx.size, n_boot))
            for row, i in enumerate(idx):
                u[row] = gens[i].beta(a[i], b[i], n_boot)
            pos = np.clip(np.ceil(u * n).astype(np.intp) - 1, 0, n - 1)
            out[idx] = np.take_along_axis(logs, pos, axis=1)
        return out


def _compare_core(
    bases: Sequence[FloatArray],
    cands: Sequence[FloatArray],
    q: float,
    *,
    margin: GateMargin,
    alpha: float,
    abs_floor_s: float,
    n_boot: int,
    gens: Sequence[np.random.Generator],
) -> list[QuantileComparison]:
    k = len(bases)
    if k == 0:
        return []
    bside, cside = _Side(bases, q), _Side(cands, q)
    log_b = bside.draws(q, gens, n_boot)
    log_c = cside.draws(q, gens, n_boot)
    d = np.subtract(log_c, log_b, out=log_c)
    finite = np.isfinite(d).all(axis=1)
    d[~finite] = 0.0
    lo, hi = np.quantile(d, [alpha, 1.0 - alpha], axis=1)
    sd = d.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = cside.hd / bside.hd
        log_ratio = np.log(ratio)
        # A heavy tail can pull the Harrell-Davis ratio (which weights extreme order statistics
        # linearly) outside the percentile interval of the log-ratio draws. Widen the interval
        # to contain the point estimate: conservative on both sides, and never a report whose
        # ratio lies outside its own interval.
        usable = np.isfinite(log_ratio)
        lo = np.where(usable, np.minimum(lo, log_ratio), lo)
        hi = np.where(usable, np.maximum(hi, log_ratio), hi)
        degenerate = ~finite | ~(sd > 0) | ~(bside.hd > 0) | ~(cside.hd > 0)
        p = norm_sf(log_ratio / np.where(degenerate, 1.0, sd))
        z = norm_ppf(1.0 - alpha) + norm_ppf(POWER)
        mde = np.expm1(z * sd)
    floor = n_floor(q, alpha)
    few = (bside.n < floor) | (cside.n < floor)
    autocorrelated = ~few & (
        (bside.estimable & (bside.n_eff_opt < floor))
        | (cside.estimable & (cside.n_eff_opt < floor))
    )
    name = qname(q)
    results: list[QuantileComparison] = []
    n_degenerate = 0
    for i in range(k):
        base_s, cand_s = float(bside.hd[i]), float(cside.hd[i])
        r = float(ratio[i]) if np.isfinite(ratio[i]) else math.nan
        abs_change = cand_s - base_s
        improvement = False
        outcome: Outcome = "unknown"
        if degenerate[i]:
            ci = ConfidenceInterval(math.nan, math.nan)
            p_i = mde_i = se_i = math.nan
        else:
            ci = ConfidenceInterval(float(math.exp(lo[i])), float(math.exp(hi[i])))
            p_i, mde_i, se_i = float(p[i]), float(mde[i]), float(sd[i])
        verdict: Verdict
        if few[i]:
            verdict = "insufficient"
            reason = (
                f"{name}: {min(int(bside.n[i]), int(cside.n[i]))} samples, {floor} needed "
                f"(baseline {int(bside.n[i])}, candidate {int(cside.n[i])})"
            )
        elif degenerate[i]:
            n_degenerate += 1
            verdict = "insufficient"
            reason = f"{name}: degenerate samples (no spread in the tail, or zero durations)"
        elif autocorrelated[i]:
            verdict = "insufficient"
            reason = (
                f"{name}: effective sample size {min(bside.n_eff[i], cside.n_eff[i]):.0f} "
                f"< {floor} (autocorrelated samples)"
            )
        else:
            three = classify_three_way(
                r, ci.low, ci.high, margin, base_s=base_s, abs_floor_s=abs_floor_s, label=name
            )
            verdict, improvement, outcome = three.verdict, three.improvement, three.outcome
            reason = three.reason
        results.append(
            QuantileComparison(
                quantile=q,
                ratio=r,
                ci=ci,
                p_value=p_i,
                p_adjusted=math.nan,
                verdict=verdict,
                improvement=improvement,
                delta=margin.margin,
                mde=mde_i,
                base_s=base_s,
                cand_s=cand_s,
                abs_change_s=abs_change,
                n_base=int(bside.n[i]),
                n_cand=int(cside.n[i]),
                n_eff_base=float(bside.n_eff[i]),
                n_eff_cand=float(cside.n_eff[i]),
                se_log=se_i,
                alpha=alpha,
                abs_floor_s=abs_floor_s,
                common_mode=1.0,
                reason=reason,
                outcome=outcome,
                margin_source=margin.source,
            )
        )
    if n_degenerate:
        warn(
            f"{n_degenerate} of {k} {name} comparisons have degenerate samples (no spread in the "
            "tail, or zero durations: timer resolution?); their interval and p-value are NaN."
        )
    return results


def compare_quantile(
    base: npt.ArrayLike,
    cand: npt.ArrayLike,
    q: float,
    *,
    delta: float | GateMargin,
    alpha: float = DEFAULT_ALPHA,
    abs_floor_s: float = ABS_FLOOR_S,
    n_boot: int = DEFAULT_N_BOOT,
    rng: np.random.Generator,
) -> QuantileComparison:
    """Compare one quantile of a candidate run with a baseline run.

    Point estimate: the ratio of Harrell-Davis quantiles. Interval: the percentile bootstrap of
    ``log Q_cand - log Q_base``, drawn with the order-statistic bootstrap: the ``k``-th order
    statistic of a resample is ``x_(ceil(n U))`` with ``U ~ Beta(q (m + 1), (1 - q)(m + 1))``,
    so each side costs O(B) after one sort, and ``m`` (the effective sample size of the tail
    indicator) widens the interval for autocorrelated samples. Each bound is one-sided at
    ``alpha``.

    Outcome and verdict (docs/gate.md, :func:`~pytest_roofline.stats.threeway.classify_three_way`):
    ``insufficient`` (UNKNOWN) when either side has fewer than :func:`n_floor` samples, or its
    effective sample size is below the floor even after allowing for estimation noise (checked
    when at least 20 samples lie beyond the quantile, so that the autocorrelation is
    estimable), or the samples are degenerate; otherwise DIFFERENT (``regression``: lower bound
    > 1, ratio >= 1 + margin, change above ``abs_floor_s``), SAME (``ok``: upper bound < 1 +
    margin, with ``improvement`` when clearly faster) or UNKNOWN (``suspect`` above the margin,
    ``not detected`` below it). The margin is ``delta``, never this comparison's own minimum
    detectable effect: a margin that grows with the noise lets anything pass. A
    :class:`~pytest_roofline.stats.threeway.GateMargin` also carries where the margin came
    from and whether the test is too noisy to gate.

    Parameters
    ----------
    base, cand : array_like
        Durations in seconds, in the order measured (the order matters for the ESS).
    q : float
        Quantile in (0, 1), e.g. 0.95.
    delta : float or GateMargin
        Relative margin (``0.05`` = 5%): usually :func:`~pytest_roofline.stats.threeway.gate_margin`
        of the configured minimum effect and the history noise floor.
    alpha : float, optional
        One-sided level of each bound and of the p-value.
    abs_floor_s : float, optional
        Smallest absolute change in seconds that can count as a regression.
    n_boot : int, optional
        Bootstrap draws per side (at least 100).
    rng : numpy.random.Generator
        Source of the bootstrap draws (base first, then candidate).

    Returns
    -------
    QuantileComparison

    Warns
    -----
    RooflineWarning
        Degenerate samples (interval, p-value and MDE are NaN; verdict ``insufficient``).

    Notes
    -----
    The p-value is ``norm.sf(log(ratio) / se)`` with ``se`` the bootstrap standard deviation of
    the log ratio: smooth, and not limited to ``1 / (B + 1)`` like a bootstrap count, which
    Benjamini-Hochberg over hundreds of tests needs. The MDE is
    ``exp((z_{1-alpha} + z_{0.8}) * se) - 1``: the resolution of this comparison, both sides'
    noise included. (Taking it from the baseline's spread alone was tried: at p99 the bootstrap
    spread of one sample scatters by a factor of 2-3 between samples of the same distribution,
    and the A/A rate of ``regression`` + ``suspect`` rose from 0% to 3.5% at n = 2000, with
    no gain in power against a p99-only regression.)

    References
    ----------
    .. [1] Harrell, F. E. and Davis, C. E. (1982), *Biometrika* 69(3), 635-640.
    .. [2] Efron, B. and Tibshirani, R. (1993), *An Introduction to the Bootstrap*, chapter 13
       (percentile intervals) and section 11 (the jackknife fails for quantiles, hence no BCa).
    .. [3] Wilcox, R. R., Erceg-Hurn, D. M., Clark, F. and Carlson, M. (2014), "Comparing two
       independent groups via the lower and upper quantiles", *J. Stat. Comput. Simul.* 84(7),
       1543-1551.
    .. [4] Akinshin, A., "Trinal statistical thresholds",
       https://aakinshin.net/posts/trinal-thresholds/ (the absolute floor).

    Examples
    --------
    >>> rng = np.random.default_rng(7)
    >>> base = rng.lognormal(-7, 0.2, 2000)
    >>> res = compare_quantile(base, base * 1.5, 0.95, delta=0.05, rng=rng)
    >>> res.verdict, round(res.ratio, 2)
    ('regression', 1.5)
    """
    q = quantile_iv(q)
    alpha = alpha_iv(alpha)
    margin = as_margin(delta)
    abs_floor_s = nonneg_iv(abs_floor_s, "abs_floor_s")
    n_boot = n_boot_iv(n_boot)
    rng = rng_iv(rng)
    b = samples_iv(base, "base")
    c = samples_iv(cand, "cand")
    return _compare_core(
        [b], [c], q, margin=margin, alpha=alpha, abs_floor_s=abs_floor_s, n_boot=n_boot, gens=[rng]
    )[0]


def _log_quantile_var(x_sorted: FloatArray, q: float, m: float) -> float:
    """Exact variance of the order-statistic bootstrap of log Q_q (discrete, Beta weights)."""
    start, w = beta_bins(x_sorted.size, q * (m + 1.0), (1.0 - q) * (m + 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(x_sorted[start : start + w.size])
    support = w > 0
    if not np.all(np.isfinite(logs[support])):
        return math.nan
    mu = float(w[support] @ logs[support])
    return float(w[support] @ (logs[support] - mu) ** 2)


def minimum_detectable_effect(
    samples: npt.ArrayLike,
    q: float,
    *,
    alpha: float = DEFAULT_ALPHA,
    power: float = POWER,
    n_other: int | None = None,
) -> float:
    """Smallest relative change of the ``q`` quantile that a comparison detects with ``power``.

    ``exp((z_{1-alpha} + z_power) * sqrt(v + v * n / n_other)) - 1``, where ``v`` is the exact
    variance of the order-statistic bootstrap of ``log Q_q`` for these samples (the bootstrap
    picks order statistic ``i`` with the Harrell-Davis-type weight of a
    ``Beta(q (m + 1), (1 - q)(m + 1))``, ``m`` the effective sample size), and the other side is
    assumed to have the same distribution with ``n_other`` samples. No randomness.

    Parameters
    ----------
    samples : array_like
        Durations in seconds (time order), typically the baseline.
    q : float
        Quantile in (0, 1).
    alpha : float, optional
        One-sided level of the comparison.
    power : float, optional
        Power in (0, 1).
    n_other : int, optional
        Samples on the other side (default: as many as here).

    Returns
    -------
    float
        Ratio minus 1 (``0.12`` = 12%); meaningful only when ``n >= n_floor(q)``. NaN with a
        warning for degenerate samples.

    References
    ----------
    .. [1] Cohen, J. (1988), *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.lognormal(0, 0.15, 1000)
    >>> 0.02 < minimum_detectable_effect(x, 0.95) < 0.08
    True
    """
    x = samples_iv(samples, "samples")
    q = quantile_iv(q)
    alpha = alpha_iv(alpha)
    power = unit_iv(power, "power")
    n = x.size
    if n_other is None:
        n_other = n
    if isinstance(n_other, bool) or not isinstance(n_other, (int, np.integer)) or n_other < 1:
        raise ConfigError(f"`n_other` must be a positive integer; got {n_other!r}.")
    s = np.sort(x)
    hd = float(hd_sorted(s, q))
    tau = float(tau_many([x <= hd])[0])
    var = _log_quantile_var(s, q, n / tau)
    if not (math.isfinite(var) and var > 0):
        warn(f"minimum_detectable_effect: no spread in the {qname(q)}; returning NaN.")
        return math.nan
    z = float(norm_ppf(1.0 - alpha) + norm_ppf(power))
    return math.expm1(z * math.sqrt(var * (1.0 + n / int(n_other))))


def only_autocorrelated(c: QuantileComparison) -> bool:
    """Whether a comparison is ``insufficient`` only because its samples are autocorrelated.

    Both sides reach the floor of :func:`n_floor` and the interval exists (degenerate samples
    have none), already widened for the effective sample size: only that size fell short of
    the floor, so the comparison cannot decide on its own. It can still corroborate one that
    does (:func:`pytest_roofline.gate.looks.corroborates_at_look`).

    Examples
    --------
    >>> import numpy as np
    >>> base = np.random.default_rng(0).lognormal(-7.0, 0.05, 200)
    >>> drifting = 5 * np.exp(-7.0) * np.linspace(1.0, 1.1, 47)
    >>> c = compare_quantile(base, drifting, 0.5, delta=0.35, rng=np.random.default_rng(1))
    >>> c.verdict, only_autocorrelated(c)
    ('insufficient', True)
    >>> few = compare_quantile(base, drifting[:4], 0.5, delta=0.35, rng=np.random.default_rng(1))
    >>> few.verdict, only_autocorrelated(few)
    ('insufficient', False)
    """
    return (
        c.verdict == "insufficient"
        and min(c.n_base, c.n_cand) >= n_floor(c.quantile, c.alpha)
        and math.isfinite(c.ci.low)
        and math.isfinite(c.ci.high)
    )
