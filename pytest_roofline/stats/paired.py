"""Paired A/B statistics: baseline and candidate measured in alternating rounds of one job.

Pure numpy/scipy, no pytest.

Why rounds. On shared CI machines an unchanged test moves by ±20–30% between two pytest runs,
and machine speed drifts within seconds (``docs/noise.md``). Within-run intervals do
not see that drift, so a comparison of two separate runs needs a margin of about +30% on p95.
Measuring baseline and candidate in alternating short rounds (ABBA order: A B, B A, A B, ...)
puts both sides under the same machine conditions; the per-round log ratio
``log HD_q(cand_i) - log HD_q(base_i)`` removes what the round shares, and **rounds are the
unit of replication**: the interval comes from the spread of the per-round ratios (a Student t
interval on their mean, ``K - 1`` degrees of freedom), so it widens when the machine's speed
moves between the two halves of a round, which no within-run interval can see.

The result is a :class:`QuantileComparison`, with the gate's verdict vocabulary and margin
rule (``classify``, shared on purpose so that the two designs cannot drift apart), so
``gate``, ``policy`` and the reports work unchanged; :class:`PairedComparison` adds the
per-round ratios for the report's strip.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from pytest_roofline.errors import ConfigError, RooflineWarning
from pytest_roofline.stats import validate
from pytest_roofline.stats.compare import ABS_FLOOR_S
from pytest_roofline.stats.distributions import t_ppf, t_sf
from pytest_roofline.stats.quantiles import DEFAULT_ALPHA, hd_quantiles, n_floor
from pytest_roofline.stats.results import ConfidenceInterval, QuantileComparison
from pytest_roofline.stats.run import apply_bh
from pytest_roofline.stats.threeway import GateMargin, as_margin, classify_three_way
from pytest_roofline.vocabulary import Outcome, Verdict

__all__ = [
    "DEFAULT_POWER",
    "DEFAULT_TRIM",
    "MIN_ROUNDS",
    "PairedComparison",
    "Side",
    "abba_order",
    "apply_bh_paired",
    "cluster_design_effect",
    "compare_paired",
    "min_round_samples",
    "trimmed_mean_interval",
]

Side: TypeAlias = Literal["baseline", "candidate"]

MIN_ROUNDS = 3
"""Fewest usable rounds for a verdict: the t interval needs at least two degrees of freedom
(with one, ``t_{0.95, 1} = 6.3`` and no regression short of x2 could ever be established)."""

DEFAULT_POWER = 0.8
"""Power at which the minimum detectable effect is quoted (as in ``stats``)."""

DEFAULT_TRIM = 0.2
"""Share of rounds trimmed from each end of the per-round log ratios (``floor(0.2 K)``: none
below 5 rounds, one of 8, two of 12). On a shared machine a neighbour's burst lands on one
side of one round and makes that round's ratio an outlier; the plain mean lets that one round
move the estimate, and its variance hides everything else. 20% is Wilcox's recommendation for
the trimmed-mean t test: close to the t test's power under normal data, much better under
heavy tails."""

FloatArray: TypeAlias = npt.NDArray[np.float64]


def abba_order(rounds: int) -> tuple[tuple[Side, Side], ...]:
    """The order of the two sides in each round: ``(A, B), (B, A), (A, B), ...``.

    Alternating which side goes first cancels a steady drift of machine speed (and any
    "first process of the pair" effect) over every two rounds, so neither side is always
    measured on the faster half of a round. ``A`` is the baseline.

    Examples
    --------
    >>> abba_order(4)[:2]
    (('baseline', 'candidate'), ('candidate', 'baseline'))
    """
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ConfigError(f"`rounds` must be a positive integer; got {rounds!r}.")
    ab: tuple[Side, Side] = ("baseline", "candidate")
    ba: tuple[Side, Side] = ("candidate", "baseline")
    return tuple(ab if i % 2 == 0 else ba for i in range(int(rounds)))


def min_round_samples(q: float) -> int:
    """Samples a round needs on each side for its ``q`` quantile: ``ceil(1 / (1 - q))``.

    With fewer, a tail event is not expected in every round and the round's Harrell-Davis
    "p99" is really the top of a short sample (the expected maximum of 50 samples is about p98).
    p95: 20, p99: 100.

    Examples
    --------
    >>> min_round_samples(0.95), min_round_samples(0.99)
    (20, 100)
    """
    q = validate.quantile_iv(q)
    return math.ceil(1.0 / (1.0 - q) - 1e-9)


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """A paired comparison of one quantile over rounds.

    Attributes
    ----------
    comparison : QuantileComparison
        Ratio ``exp(mean of the per-round log ratios)``, its t interval (each bound one-sided at
        ``alpha``), p-value, verdict and margin, in the gate's vocabulary. ``base_s`` /
        ``cand_s`` are the Harrell-Davis quantiles of each side's pooled samples;
        ``n_base`` / ``n_cand`` the pooled sample counts; ``se_log`` the standard error of the
        mean log ratio over rounds.
    round_ratios : tuple of float
        Candidate / baseline quantile ratio of every round, in round order; NaN for a round
        that had too few samples on either side (not used).
    rounds_used : int
        Rounds that entered the interval.
    df : int
        Degrees of freedom of the t interval (``rounds_used - 1``; 0 when insufficient).
    """

    comparison: QuantileComparison
    round_ratios: tuple[float, ...]
    rounds_used: int
    df: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe ``dict``: the comparison's fields plus ``round_ratios`` (NaN as ``None``)."""
        return {
            **self.comparison.to_dict(),
            "round_ratios": [r if math.isfinite(r) else None for r in self.round_ratios],
            "rounds_used": self.rounds_used,
            "df": self.df,
        }


def _rounds_iv(rounds: Sequence[npt.ArrayLike], name: str) -> list[FloatArray]:
    out = []
    for i, r in enumerate(rounds):
        try:
            arr = np.asarray(r, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"`{name}[{i}]` must be a one-dimensional array of seconds.") from None
        if arr.ndim != 1:
            raise ValueError(
                f"`{name}[{i}]` must be a one-dimensional array of seconds (empty for a round "
                f"with no samples); got shape {arr.shape}."
            )
        if arr.size and not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
            raise ValueError(f"`{name}[{i}]` must contain non-negative finite durations.")
        out.append(arr)
    return out


def trimmed_mean_interval(
    values: npt.ArrayLike, *, trim: float = DEFAULT_TRIM
) -> tuple[float, float, int]:
    """Trimmed mean, its standard error and degrees of freedom (Tukey-McLaughlin / Yuen).

    ``g = floor(trim * K)`` values are dropped at each end; the standard error comes from the
    winsorized variance, ``se = sqrt((K - 1) s_w**2 / (h (h - 1)))`` with ``h = K - 2 g``, and
    ``(mean - mu) / se`` follows a t distribution with ``h - 1`` degrees of freedom. With
    ``g = 0`` this is the ordinary mean, standard error and ``K - 1``.

    References
    ----------
    .. [1] Tukey, J. W. and McLaughlin, D. H. (1963), *Sankhya A* 25, 331-352.
    .. [2] Wilcox, R. R. (2017), *Introduction to Robust Estimation and Hypothesis Testing*,
       4th ed., section 4.4.1.

    Examples
    --------
    >>> m, se, df = trimmed_mean_interval([0.1, 0.11, 0.09, 0.1, 0.12, 0.08, 0.1, 0.9])
    >>> round(m, 3), df
    (0.103, 5)
    """
    x = np.sort(np.asarray(values, dtype=np.float64))
    k = int(x.size)
    if k < 2:
        raise ValueError(f"`values` must hold at least 2 numbers; got {k}.")
    if isinstance(trim, bool) or not isinstance(trim, (int, float)) or not 0 <= trim < 0.5:
        raise ConfigError(f"`trim` must be a share in [0, 0.5); got {trim!r}.")
    g = math.floor(trim * k + 1e-9)
    h = k - 2 * g
    if h < 2:
        raise ValueError(f"trimming {g} of {k} values at each end leaves fewer than 2.")
    mean = float(x[g : k - g].mean())
    winsorized = np.clip(x, x[g], x[k - g - 1])
    var_w = float(winsorized.var(ddof=1))
    se = math.sqrt((k - 1) * var_w / (h * (h - 1)))
    return mean, se, h - 1


def cluster_design_effect(
    values: Sequence[float], groups: Sequence[int], count: int, *, trim: float = DEFAULT_TRIM
) -> float:
    """By how much group offsets widen the variance of the grand mean of ``values`` beyond what
    their overall spread says: the one-way ANOVA's between-group mean square over the total
    mean square (non-finite values left out), winsorized at ``trim`` as
    :func:`trimmed_mean_interval`.

    :func:`trimmed_mean_interval`'s standard error comes from the values' total spread, which
    treats them as independent: about ``MS_total / N``. When each group carries an offset of its
    own (a random-effects, or cluster, design), the grand mean's variance is about
    ``MS_between / N`` instead (``E[MS_between] = sigma**2 + n0 * tau**2``, with ``n0`` about the
    values per group), so the ratio is the factor to widen that variance by: the design effect,
    about ``1 + (n0 - 1) * rho`` for an intra-group correlation ``rho``. It is at most
    ``(N - 1) / (k - 1)`` (every value equal to its group's mean) and 1 or less on average when
    there are no offsets. A group of one value counts (it carries a between-group difference);
    ``nan`` when fewer than two groups hold values or the values do not spread at all.

    :param groups: each value's group (0-based, below ``count``), one per value.
    :raises ValueError: ``groups`` and ``values`` differ in length.

    >>> agree = [0.0, 0.01, -0.01, 0.02, -0.02, 0.0]
    >>> round(cluster_design_effect(agree, [0, 1, 2] * 2, 3, trim=0.0), 3)
    0.75
    >>> cluster_design_effect([0.3, 0.0, 0.0, 0.32, 0.01, 0.02], [0, 1, 2] * 2, 3) > 2
    True
    """
    if len(groups) != len(values):
        raise ValueError(f"{len(groups)} groups named for {len(values)} values")
    x = np.asarray(values, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    ok = np.isfinite(x)
    x, g = x[ok], g[ok]
    if x.size >= 2:
        ordered = np.sort(x)
        cut = math.floor(trim * x.size + 1e-9)
        x = np.clip(x, ordered[cut], ordered[x.size - cut - 1])
    members = [m for m in (x[g == i] for i in range(count)) if m.size]
    if len(members) < 2:
        return math.nan
    pooled = np.concatenate(members)
    grand = float(pooled.mean())
    between = sum(m.size * (float(m.mean()) - grand) ** 2 for m in members) / (len(members) - 1)
    total = float(((pooled - grand) ** 2).sum()) / (pooled.size - 1)
    return between / total if total > 0 else math.nan


def _hd(x: FloatArray, q: float) -> float:
    return float(hd_quantiles(x, [q])[0]) if x.size else math.nan


def compare_paired(
    base_rounds: Sequence[npt.ArrayLike],
    cand_rounds: Sequence[npt.ArrayLike],
    q: float,
    *,
    delta: float | GateMargin,
    alpha: float = DEFAULT_ALPHA,
    abs_floor_s: float = ABS_FLOOR_S,
    min_rounds: int = MIN_ROUNDS,
    round_samples: int | None = None,
    power: float = DEFAULT_POWER,
    trim: float = DEFAULT_TRIM,
) -> PairedComparison:
    """Compare one quantile of a candidate with a baseline measured in alternating rounds.

    Each round ``i`` gives ``d_i = log HD_q(cand_i) - log HD_q(base_i)``. Over the ``K``
    usable rounds (both sides with at least ``round_samples`` samples):

    * point estimate ``ratio = exp(m)``, ``m`` the ``trim``-trimmed mean of the ``d_i``
      (:func:`trimmed_mean_interval`; the plain mean below 5 rounds);
    * interval ``exp(m -/+ t_{1-alpha, df} * se)``, each bound one-sided at ``alpha`` (a 90%
      interval at the default), ``se`` from the winsorized spread of the ``d_i``;
    * p-value ``t.sf(m / se, df)`` for "the candidate is slower";
    * minimum detectable effect ``exp((t_{1-alpha, df} + t_{power, df}) * se) - 1``.

    Rounds, not samples, are the replication unit: the samples inside a round share the
    machine's speed of that moment, so their count says little about how far the next round's
    ratio can move. Trimming keeps one disturbed round (a neighbour's burst on one side) from
    deciding the estimate or swamping the spread.

    Outcome and verdict: the gate's three-way rule, as for :func:`stats.compare_quantile`
    (DIFFERENT / SAME / UNKNOWN with the margin ``delta``, never the comparison's own MDE: an
    interval widened by disturbed rounds cannot rule out a large change, so it stays UNKNOWN
    and the caller adds rounds or escalates). ``insufficient`` when fewer than ``min_rounds``
    rounds are usable, when either side's pooled samples are below :func:`n_floor`, or when
    every round gives the same ratio (no spread: a fake clock).

    Parameters
    ----------
    base_rounds, cand_rounds : sequence of array_like
        Per-call durations in seconds of each round, one array per round and side (empty for a
        round in which the test was not measured); both sequences in round order, same length.
    q : float
        Quantile in (0, 1), e.g. 0.95.
    delta : float or GateMargin
        The practical margin (``0.05`` = 5%): the user's ``min_effect``.
    alpha : float, optional
        One-sided level of each bound and of the p-value.
    abs_floor_s : float, optional
        Smallest absolute change of the quantile (seconds) that can count as a regression.
    min_rounds : int, optional
        Fewest usable rounds for a verdict (at least 2).
    round_samples : int, optional
        Samples each side needs in a round for the round to count (default
        :func:`min_round_samples`).
    power : float, optional
        Power of the minimum detectable effect.
    trim : float, optional
        Share of rounds trimmed from each end (0 for the plain mean and t interval).

    Returns
    -------
    PairedComparison

    Warns
    -----
    RooflineWarning
        Every usable round gives the same ratio (the interval does not exist).

    References
    ----------
    .. [1] Kalibera, T. and Jones, R. (2013), "Rigorous benchmarking in reasonable time",
       ISMM 2013 (replicate at the level with the most variance).
    .. [2] Student (1908), "The probable error of a mean", *Biometrika* 6(1), 1-25.
    .. [3] Harrell, F. E. and Davis, C. E. (1982), *Biometrika* 69(3), 635-640.

    Examples
    --------
    >>> rng = np.random.default_rng(5)
    >>> speed = rng.lognormal(0, 0.1, 8)                 # the machine's speed in each round
    >>> base = [s * rng.lognormal(-7, 0.2, 400) for s in speed]
    >>> cand = [s * 1.5 * rng.lognormal(-7, 0.2, 400) for s in speed]
    >>> res = compare_paired(base, cand, 0.95, delta=0.05)
    >>> res.comparison.verdict, res.rounds_used
    ('regression', 8)
    """
    q = validate.quantile_iv(q)
    alpha = validate.alpha_iv(alpha)
    margin = as_margin(delta)
    abs_floor_s = validate.nonneg_iv(abs_floor_s, "abs_floor_s")
    power = validate.unit_iv(power, "power")
    if isinstance(min_rounds, bool) or not isinstance(min_rounds, (int, np.integer)):
        raise ConfigError(f"`min_rounds` must be an integer >= 2; got {min_rounds!r}.")
    if min_rounds < 2:
        raise ConfigError(f"`min_rounds` must be an integer >= 2; got {min_rounds!r}.")
    need = min_round_samples(q) if round_samples is None else int(round_samples)
    if need < 1:
        raise ConfigError(f"`round_samples` must be a positive integer; got {round_samples!r}.")
    bases = _rounds_iv(base_rounds, "base_rounds")
    cands = _rounds_iv(cand_rounds, "cand_rounds")
    if len(bases) != len(cands):
        raise ValueError(
            "`base_rounds` and `cand_rounds` must hold one array per round each; "
            f"got {len(bases)} and {len(cands)}."
        )
    name = validate.qname(q)
    pooled_b = np.concatenate(bases) if bases else np.empty(0)
    pooled_c = np.concatenate(cands) if cands else np.empty(0)
    base_s, cand_s = _hd(pooled_b, q), _hd(pooled_c, q)

    ratios = []
    for b, c in zip(bases, cands, strict=True):
        if b.size < need or c.size < need:
            ratios.append(math.nan)
            continue
        hb, hc = _hd(b, q), _hd(c, q)
        ratios.append(hc / hb if hb > 0 and hc > 0 else math.nan)
    used = np.log(np.array([r for r in ratios if math.isfinite(r)], dtype=np.float64))
    k = int(used.size)

    def result(
        *,
        ratio: float,
        ci: ConfidenceInterval,
        p: float,
        verdict: Verdict,
        improvement: bool,
        outcome: Outcome,
        mde: float,
        se: float,
        reason: str,
        df: int,
    ) -> PairedComparison:
        finite = math.isfinite(ratio) and math.isfinite(base_s)
        comparison = QuantileComparison(
            quantile=q,
            ratio=ratio,
            ci=ci,
            p_value=p,
            p_adjusted=math.nan,
            verdict=verdict,
            improvement=improvement,
            delta=margin.margin,
            mde=mde,
            base_s=base_s,
            cand_s=cand_s,
            # The paired ratio, not the pooled quantiles, is the estimate of the change.
            abs_change_s=base_s * (ratio - 1.0) if finite else math.nan,
            n_base=int(pooled_b.size),
            n_cand=int(pooled_c.size),
            n_eff_base=float(pooled_b.size),
            n_eff_cand=float(pooled_c.size),
            se_log=se,
            alpha=alpha,
            abs_floor_s=abs_floor_s,
            common_mode=1.0,
            reason=reason,
            outcome=outcome,
            margin_source=margin.source,
        )
        return PairedComparison(comparison, tuple(ratios), k, df)

    def insufficient(ratio: float, *, se: float, reason: str, df: int) -> PairedComparison:
        nan_ci = ConfidenceInterval(math.nan, math.nan)
        return result(
            ratio=ratio,
            ci=nan_ci,
            p=math.nan,
            verdict="insufficient",
            improvement=False,
            outcome="unknown",
            mde=math.nan,
            se=se,
            reason=reason,
            df=df,
        )

    floor = n_floor(q, alpha)
    few_samples = pooled_b.size < floor or pooled_c.size < floor
    if k < min_rounds or few_samples:
        if few_samples:
            why = (
                f"{name}: {min(pooled_b.size, pooled_c.size)} samples over all rounds, {floor} "
                f"needed (baseline {pooled_b.size}, candidate {pooled_c.size})"
            )
        else:
            why = (
                f"{name}: {k} of {len(ratios)} rounds had at least {need} samples on both sides, "
                f"{min_rounds} needed (raise the budget or the rounds)"
            )
        ratio = math.exp(float(np.median(used))) if k else math.nan
        return insufficient(ratio, se=math.nan, reason=why, df=0)

    mean, se, df = trimmed_mean_interval(used, trim=trim)
    ratio = math.exp(mean)
    if not se > 0:
        warnings.warn(
            f"compare_paired: all {k} rounds give the same {name} ratio; no interval exists.",
            RooflineWarning,
            stacklevel=2,
        )
        return insufficient(
            ratio,
            se=0.0,
            reason=f"{name}: no spread between the {k} rounds' ratios (identical rounds: a fake clock?)",
            df=df,
        )
    t_alpha = float(t_ppf(1.0 - alpha, df))
    t_power = float(t_ppf(power, df))
    ci = ConfidenceInterval(math.exp(mean - t_alpha * se), math.exp(mean + t_alpha * se))
    p = float(t_sf(mean / se, df))
    mde = math.expm1((t_alpha + t_power) * se)
    # The outcome rule is the gate's own: one implementation for both designs.
    three = classify_three_way(
        ratio, ci.low, ci.high, margin, base_s=base_s, abs_floor_s=abs_floor_s, label=name
    )
    return result(
        ratio=ratio,
        ci=ci,
        p=p,
        verdict=three.verdict,
        improvement=three.improvement,
        outcome=three.outcome,
        mde=mde,
        se=se,
        reason=f"{three.reason} (paired over {k} rounds, trimmed-mean t with {df} df)",
        df=df,
    )


def apply_bh_paired(
    comparisons: Sequence[PairedComparison], *, alpha: float = DEFAULT_ALPHA
) -> list[PairedComparison]:
    """Benjamini-Hochberg over a paired run's comparisons (:func:`apply_bh`).

    In paired mode every comparison exists before any decision is made (the rounds finish
    first), so the run-level procedure applies directly; the gate's per-test Bonferroni bound,
    needed there because each test is decided as it finishes, is not used.
    """
    adjusted = apply_bh([c.comparison for c in comparisons], alpha=alpha)
    return [replace(p, comparison=c) for p, c in zip(comparisons, adjusted, strict=True)]
