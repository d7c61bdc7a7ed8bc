"""Group-sequential three-way decisions: look again while UNKNOWN without inflating errors.

Pure numpy/scipy. A comparison that is UNKNOWN (``threeway``) is a reason to measure more: in
two-run mode the sampler keeps sampling the test up to a cap, looking at geometrically growing
sample counts; in paired mode the controller adds window pairs between a minimum and a maximum.
Each extra look is another chance for noise to cross a fixed 5% bound: eight looks at a
nominal one-sided 5% give a false-DIFFERENT rate of about 16%, and the same holds for SAME
under a true change of the margin (``docs/sequential.md`` has the simulated figures). So every
look uses **its own nominal level**, from a group-sequential boundary.

Method: Lan-DeMets error spending (Lan & DeMets 1983), computed by the recursive numerical
integration of Armitage, McPherson & Rowe (1969) as in Jennison & Turnbull (2000, ch. 7 and
19). Two one-sided boundaries are kept, each with its own error budget:

* **DIFFERENT** tests ``H0: log ratio <= 0`` against "slower": under no change the chance of
  ever declaring DIFFERENT over all looks is at most ``alpha``;
* **SAME** tests ``H0: log ratio >= log(1 + margin)`` against "less than the margin" (the upper
  bound of an equivalence test, Schuirmann 1987): under a true change of exactly the margin the
  chance of ever declaring SAME is at most ``alpha_same``.

Each boundary is computed as if the other did not stop the sequence ("non-binding"): stopping
early for the other outcome can only lower the error, so both budgets hold together. At look
``k`` with information fraction ``t_k`` (``n_k / n_max``, or for a fixed baseline the ratio of
variances, :meth:`SequentialPlan.for_two_run`) the critical value ``c_k`` solves
``P0(Z_1 < c_1, ..., Z_{k-1} < c_{k-1}, Z_k >= c_k) = a(t_k) - a(t_{k-1})`` for the canonical
joint distribution ``cov(Z_j, Z_k) = sqrt(t_j / t_k)``. The look's interval is then the
*repeated confidence interval* (Jennison & Turnbull 2000, ch. 9): ``exp(log ratio -/+ c * se)``,
its lower bound at the DIFFERENT level and its upper bound at the SAME level, and
:func:`threeway.classify_three_way` is applied to it unchanged. With a t statistic (paired
rounds, ``df`` from the rounds) the same nominal levels are used with t quantiles: the
"significance level approach" of Jennison & Turnbull for unknown variance, checked by
simulation in ``tests/unit/test_sequential.py``.

Spending functions (``a(t)`` with ``a(1) = alpha``):

* ``"obrien-fleming"``: ``2 - 2 Phi(z_{1 - alpha/2} / sqrt(t))``, Lan-DeMets' O'Brien-Fleming
  type. Almost nothing is spent early, so the first looks decide only clear cases, and the
  last look's level is close to the fixed-sample ``alpha``: the power at the cap is kept.
* ``"pocock"``: ``alpha ln(1 + (e - 1) t)``, Pocock type: spends evenly, decides sooner but
  with a stricter last look.
* ``"linear"``: ``alpha t`` (Hwang-Shih-DeCani with gamma = 0), in between.

Why spending and not Pinpoint's simulated thresholds: Pinpoint keeps a fixed ``p <= 0.01`` for
DIFFERENT at every look (its false-DIFFERENT rate grows with the number of looks) and
calibrates the SAME threshold by simulation per sample size for each effect size in IQR units,
on normal data and Mann-Whitney p-values (catapult ``pinpoint/models/compare/thresholds*.py``).
Error spending controls both errors over the whole sequence, works for any look schedule
(looks can come earlier or later than planned: only the information fraction matters), needs
no precomputed table, and takes any statistic that is approximately normal or t: the order
statistic bootstrap of a quantile (two-run) and the trimmed-mean t over window pairs (paired).

Bootstrap intervals: pass the comparison's ``se_log`` (:meth:`Estimate.from_comparison`), not
``alpha=`` the look's level. Early O'Brien-Fleming levels are far below ``1 / n_boot``, where a
percentile bound is just the smallest draw, and ``stats.n_floor`` grows with ``log(alpha)``.

References
----------
.. [1] Lan, K. K. G. and DeMets, D. L. (1983), "Discrete sequential boundaries for clinical
   trials", *Biometrika* 70(3), 659-663.
.. [2] Jennison, C. and Turnbull, B. W. (2000), *Group Sequential Methods with Applications to
   Clinical Trials*, Chapman & Hall/CRC: ch. 7 (error spending), ch. 9 (repeated confidence
   intervals), ch. 19 (numerical computation).
.. [3] Armitage, P., McPherson, C. K. and Rowe, B. C. (1969), "Repeated significance tests on
   accumulating data", *J. R. Statist. Soc. A* 132(2), 235-244.
.. [4] O'Brien, P. C. and Fleming, T. R. (1979), *Biometrics* 35(3), 549-556; Pocock, S. J.
   (1977), *Biometrika* 64(2), 191-199.
.. [5] Hwang, I. K., Shih, W. J. and DeCani, J. S. (1990), *Statistics in Medicine* 9(12),
   1439-1445.
.. [6] Chromium catapult, ``dashboard/pinpoint/models/compare/compare.py`` and
   ``thresholds_performance.py``.

Why one long module: error-spending boundaries, their numerical integration and the look loop
belong to one method; about 40% of the module is documentation and references.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Generic, Literal, Protocol, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
from scipy import special

from pytest_roofline.errors import ConfigError
from pytest_roofline.stats.distributions import norm_ppf, t_isf, t_ppf
from pytest_roofline.stats.threeway import GateMargin, Outcome, ThreeWay, classify_three_way

__all__ = [
    "DEFAULT_SPENDING",
    "Estimate",
    "HasOutcome",
    "LookBoundary",
    "SequentialPlan",
    "SequentialRun",
    "Spending",
    "StopReason",
    "decide_look",
    "detectable_change",
    "geometric_sizes",
    "run_noise_sd",
    "run_sequential",
    "sequential_interval",
    "spent",
    "two_run_information",
]

Spending: TypeAlias = Literal["obrien-fleming", "pocock", "linear"]
StopReason: TypeAlias = Literal["different", "same", "cap", "exhausted"]

DEFAULT_SPENDING: Spending = "obrien-fleming"
"""See the module docstring and ``docs/sequential.md`` for the measured comparison."""

FloatArray: TypeAlias = npt.NDArray[np.float64]

# Grid of the numerical integration: +/- 8.5 sd of the score (the mass beyond is < 1e-16), and
# at least 8 Simpson steps per sd of the smallest adjacent increment, which keeps the crossing
# probabilities within 1e-6 of their targets (checked against the bivariate normal CDF).
_GRID_SD = 8.5
_STEPS_PER_SD = 8
# A spending increment below this is "nothing to spend": the look cannot decide (infinite z).
_TINY = 1e-15
# A look that adds less than this share of information to the last informative one is treated
# as a repeat of it (its statistic barely moved); without this a near-zero increment would ask
# for a grid as fine as its standard deviation.
_STALL = 1e-3
# exp() overflows a float64 beyond about 709.78.
_MAX_EXP = 709.0


# ---------------------------------------------------------------------------------------------
# error spending and boundaries
# ---------------------------------------------------------------------------------------------
def spent(spending: Spending, t: float, alpha: float) -> float:
    """Cumulative error spent by information fraction ``t`` (Lan & DeMets 1983).

    Examples
    --------
    >>> round(spent("obrien-fleming", 1.0, 0.05), 12), round(spent("pocock", 0.5, 0.05), 4)
    (0.05, 0.031)
    """
    t = min(max(float(t), 0.0), 1.0)
    if t == 0.0:
        return 0.0
    if spending == "obrien-fleming":
        # 2 (1 - Phi(z_{1 - alpha/2} / sqrt(t))), with scipy.special for speed (called per look).
        return float(2.0 * special.ndtr(special.ndtri(alpha / 2.0) / math.sqrt(t)))
    if spending == "pocock":
        return alpha * math.log1p((math.e - 1.0) * t)
    if spending == "linear":
        return alpha * t
    raise ConfigError(
        f"`spending` must be one of 'obrien-fleming', 'pocock', 'linear'; got {spending!r}."
    )


def _simpson(lo: float, hi: float, step: float) -> tuple[FloatArray, FloatArray]:
    n = max(2, math.ceil((hi - lo) / step))
    n += n % 2
    x = np.linspace(lo, hi, n + 1)
    w = np.full(n + 1, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    return x, w * ((hi - lo) / n / 3.0)


@dataclass(frozen=True, slots=True)
class _Stage:
    """The recursion's state after a look: its critical value, the error actually spent so far,
    and the sub-density of the score on the paths still running (Simpson nodes ``x``, weights
    times density ``wf``), which refers to the score at information ``t_grid``."""

    z: float
    spent: float
    t_grid: float
    x: FloatArray
    wf: FloatArray
    alive: bool


_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _normal_pdf(z: FloatArray) -> FloatArray:
    out: FloatArray = np.exp(-0.5 * z * z) / _SQRT_2PI
    return out


def _convolve(x: FloatArray, wf: FloatArray, y: FloatArray, s: float) -> FloatArray:
    """``sum_i wf_i phi((y_j - x_i) / s) / s`` for every ``y_j``, in blocks of ``y`` against
    the ``x`` within 9 ``s`` of the block (the kernel is below 1e-17 beyond)."""
    out = np.empty(y.size)
    reach = 9.0 * s
    for start in range(0, y.size, 128):
        yb = y[start : start + 128]
        i0 = int(np.searchsorted(x, yb[0] - reach))
        i1 = int(np.searchsorted(x, yb[-1] + reach, side="right"))
        if i0 >= i1:
            out[start : start + yb.size] = 0.0
            continue
        kern = _normal_pdf((yb[None, :] - x[i0:i1, None]) / s)
        out[start : start + yb.size] = (wf[i0:i1] @ kern) / s
    return out


@lru_cache(maxsize=4096)
def _stage(
    information: tuple[float, ...], targets: tuple[float, ...], next_information: float
) -> _Stage:
    """Armitage-McPherson-Rowe recursion, one look at a time, on the score ``S_k = Z_k
    sqrt(t_k)`` whose increments are independent N(0, t_k - t_{k-1}) under the null. The
    stage of a prefix is cached, so looks at observed information fractions cost one step each.
    ``next_information`` sets the grid's resolution for the following increment (0: none)."""
    t_k = information[-1]
    prev = _stage(information[:-1], targets[:-1], t_k) if len(information) > 1 else None
    done = prev.spent if prev is not None else 0.0
    if prev is not None and not prev.alive:
        return prev
    t_from = prev.t_grid if prev is not None else 0.0
    if prev is not None and t_k - t_from < _STALL * t_k:
        # Next to no information since the grid's look (a stalled sampler): this look's
        # statistic is the previous one's, so it cannot decide anything new; what it would
        # have spent is left for the next look.
        return _Stage(math.inf, done, prev.t_grid, prev.x, prev.wf, True)
    want = targets[-1] - done
    s = math.sqrt(t_k - t_from)
    b: float
    crossed = want
    if want <= _TINY:
        b, crossed = math.inf, 0.0
    elif prev is None:
        b = -s * float(special.ndtri(want))
    else:
        x, wf = prev.x, prev.wf

        def excess(bound: float) -> float:
            return float(wf @ special.ndtr((x - bound) / s)) - want

        lo, hi = float(x[0]) - 12.0 * s, float(x[-1]) + 12.0 * s
        if excess(lo) <= 0.0:
            # More error asked for than paths are left: every path stops here.
            b, crossed = -math.inf, float(wf.sum())
        else:
            from scipy import optimize  # imported where used: see stats/distributions.py

            b = float(optimize.brentq(excess, lo, hi, xtol=1e-12))
    sd = math.sqrt(t_k)
    top = min(b, _GRID_SD * sd)
    alive = top > -_GRID_SD * sd
    if next_information <= t_k or not alive:
        return _Stage(b / sd, done + crossed, t_k, np.empty(0), np.empty(0), alive)
    # Resolve the next increment, but never finer than a stall (which reuses this grid).
    step = min(s, math.sqrt(max(next_information - t_k, _STALL * next_information)))
    xn, wn = _simpson(-_GRID_SD * sd, top, step / _STEPS_PER_SD)
    fn = _normal_pdf(xn / s) / s if prev is None else _convolve(prev.x, prev.wf, xn, s)
    return _Stage(b / sd, done + crossed, t_k, xn, wn * fn, True)


def _fractions_iv(values: Sequence[float], name: str) -> tuple[float, ...]:
    try:
        t = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ConfigError(
            f"`{name}` must be increasing positive numbers; got {values!r}."
        ) from None
    if not t or not all(math.isfinite(v) and v > 0 for v in t):
        raise ConfigError(f"`{name}` must be increasing positive numbers; got {values!r}.")
    if any(b <= a for a, b in itertools.pairwise(t)):
        raise ConfigError(f"`{name}` must be strictly increasing; got {values!r}.")
    return t


def _level_iv(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"`{name}` must be a level in (0, 0.5]; got {value!r}.") from None
    if not 0.0 < v <= 0.5:
        raise ConfigError(f"`{name}` must be a level in (0, 0.5]; got {value!r}.")
    return v


def _count_iv(value: int, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ConfigError(f"`{name}` must be an integer >= {low}; got {value!r}.")
    return int(value)


def geometric_sizes(first: int, last: int, *, growth: float = 1.5) -> tuple[int, ...]:
    """Look sizes ``first, first g, first g^2, ...`` (rounded, distinct), ending at ``last``.

    The two-run sampler's look schedule (and a paired one: window pairs at each look). A last
    step shorter than a fifth of the growth is merged into the cap, so the final look is not a
    near-repeat of the one before.

    Examples
    --------
    >>> geometric_sizes(6, 40)
    (6, 9, 14, 21, 32, 40)
    >>> geometric_sizes(200, 800, growth=2.0)
    (200, 400, 800)
    """
    first = _count_iv(first, "first")
    last = _count_iv(last, "last", first)
    g = float(growth)
    if not (math.isfinite(g) and g > 1.0):
        raise ConfigError(f"`growth` must be a number > 1; got {growth!r}.")
    sizes = [first]
    while True:
        nxt = max(sizes[-1] + 1, round(sizes[-1] * g))
        if nxt >= last or last / nxt < 1.0 + (g - 1.0) / 5.0:
            break
        sizes.append(nxt)
    if sizes[-1] != last:
        sizes.append(last)
    return tuple(sizes)


@dataclass(frozen=True, slots=True)
class LookBoundary:
    """The nominal levels of one look.

    Attributes
    ----------
    look : int
        1-based look number.
    information : float
        Information fraction of this look (1 at the planned last look).
    final : bool
        The last look: all remaining error is spent here, and UNKNOWN now means escalate.
    z_different, z_same : float
        Normal critical values of the lower bound (DIFFERENT) and upper bound (SAME); ``inf``
        when nothing is spent at this look (the look cannot decide that way).
    alpha_different, alpha_same : float
        The nominal one-sided levels ``1 - Phi(z)`` of the two bounds at this look.
    spent_different, spent_same : float
        Cumulative error spent up to and including this look.
    """

    look: int
    information: float
    final: bool
    z_different: float
    z_same: float
    alpha_different: float
    alpha_same: float
    spent_different: float
    spent_same: float

    def critical(self, df: float = math.inf) -> tuple[float, float]:
        """``(lower, upper)`` critical multipliers of ``se``: normal, or t with ``df``.

        With a t statistic the nominal levels are kept and the quantiles taken from the t
        distribution (Jennison & Turnbull's significance level approach).
        """
        if math.isinf(df):
            return self.z_different, self.z_same
        if not df > 0:
            return math.nan, math.nan

        def q(z: float, a: float) -> float:
            return math.inf if math.isinf(z) else float(t_isf(a, df))

        return q(self.z_different, self.alpha_different), q(self.z_same, self.alpha_same)


@dataclass(frozen=True, slots=True)
class SequentialPlan:
    """A group-sequential plan: how many looks, their information, and the error budgets.

    Parameters
    ----------
    max_looks : int
        Looks at most (the cap).
    alpha : float, optional
        Total chance of DIFFERENT over all looks when nothing changed (one-sided).
    alpha_same : float, optional
        Total chance of SAME over all looks when the true change is exactly the margin.
    spending : Spending, optional
        Spending function of the DIFFERENT boundary.
    spending_same : Spending, optional
        Spending function of the SAME boundary (default: ``spending``).
    information : sequence of float, optional
        Planned information fraction of each look, increasing, the last normally 1 (default
        ``k / max_looks``). :meth:`for_sizes` and :meth:`for_two_run` fill it in.

    Examples
    --------
    >>> plan = SequentialPlan.for_sizes((6, 9, 14, 21, 32, 40))
    >>> b = plan.boundary(6)
    >>> b.final, round(b.alpha_different, 4)
    (True, 0.0413)
    """

    max_looks: int
    alpha: float = 0.05
    alpha_same: float = 0.05
    spending: Spending = DEFAULT_SPENDING
    spending_same: Spending | None = None
    information: tuple[float, ...] | None = None
    sizes: tuple[int, ...] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        k = _count_iv(self.max_looks, "max_looks")
        _level_iv(self.alpha, "alpha")
        _level_iv(self.alpha_same, "alpha_same")
        spent(self.spending, 1.0, self.alpha)
        if self.spending_same is not None:
            spent(self.spending_same, 1.0, self.alpha_same)
        if self.information is None:
            info = tuple((i + 1) / k for i in range(k))
        else:
            info = _fractions_iv(self.information, "information")
            if len(info) != k:
                raise ConfigError(
                    f"`information` must give one fraction per look ({k}); got {len(info)}."
                )
        object.__setattr__(self, "information", info)

    @classmethod
    def for_sizes(
        cls,
        sizes: Sequence[int],
        *,
        alpha: float = 0.05,
        alpha_same: float = 0.05,
        spending: Spending = DEFAULT_SPENDING,
        spending_same: Spending | None = None,
    ) -> SequentialPlan:
        """Looks after ``sizes[k]`` replicates (window pairs, or samples with both sides
        growing): information ``sizes[k] / sizes[-1]``."""
        n = tuple(_count_iv(s, "sizes") for s in sizes)
        info = _fractions_iv([s / n[-1] for s in n], "sizes")
        return cls(len(n), alpha, alpha_same, spending, spending_same, info, n)

    @classmethod
    def for_two_run(
        cls,
        n_base: int,
        cand_sizes: Sequence[int],
        *,
        alpha: float = 0.05,
        alpha_same: float = 0.05,
        spending: Spending = DEFAULT_SPENDING,
        spending_same: Spending | None = None,
    ) -> SequentialPlan:
        """Looks at ``cand_sizes[k]`` candidate samples against a fixed baseline of ``n_base``.

        The baseline does not grow, so the variance of the log ratio is ``v (1 / n_base +
        1 / n_k)`` (equal per-sample variance on both sides) and the information fraction is
        ``(1 / n_base + 1 / n_K) / (1 / n_base + 1 / n_k)``: it rises towards a ceiling, and
        looks far beyond ``n_base`` add little.

        Examples
        --------
        >>> plan = SequentialPlan.for_two_run(200, (200, 400, 800))
        >>> [round(t, 3) for t in plan.information]
        [0.625, 0.833, 1.0]
        """
        nb = _count_iv(n_base, "n_base")
        n = tuple(_count_iv(s, "cand_sizes") for s in cand_sizes)
        if not n:
            raise ConfigError("`cand_sizes` must name at least one look.")
        last = 1.0 / nb + 1.0 / n[-1]
        info = _fractions_iv([last / (1.0 / nb + 1.0 / s) for s in n], "cand_sizes")
        return cls(len(n), alpha, alpha_same, spending, spending_same, info, n)

    @property
    def fractions(self) -> tuple[float, ...]:
        """The planned information fractions (never None after construction)."""
        assert self.information is not None
        return self.information

    def boundary(
        self,
        look: int,
        *,
        information: Sequence[float] | None = None,
        final: bool = False,
    ) -> LookBoundary:
        """The nominal levels of look ``look`` (1-based).

        Parameters
        ----------
        look : int
            1 .. ``max_looks``.
        information : sequence of float, optional
            The information fractions actually reached at looks 1 .. ``look`` (relative to the
            planned maximum), when they differ from the plan: Lan-DeMets spending needs only
            these. Default: the plan's.
        final : bool, optional
            Make this the last look even before ``max_looks`` (the budget ran out): everything
            not yet spent is spent here. The planned last look is always final.
        """
        look = _count_iv(look, "look")
        if look > self.max_looks:
            raise ConfigError(f"`look` must be at most max_looks = {self.max_looks}; got {look}.")
        if information is None:
            info = self.fractions[:look]
        else:
            info = _fractions_iv(information, "information")
            if len(info) != look:
                raise ConfigError(
                    f"`information` must give one fraction per look so far ({look}); "
                    f"got {len(info)}."
                )
        final = final or look == self.max_looks
        same_fn = self.spending_same or self.spending

        def targets(fn: Spending, alpha: float) -> tuple[float, ...]:
            cum = [spent(fn, t, alpha) for t in info]
            if final:
                cum[-1] = alpha
            return tuple(cum)

        td, ts = targets(self.spending, self.alpha), targets(same_fn, self.alpha_same)
        diff_stage, same_stage = _stage(info, td, 0.0), _stage(info, ts, 0.0)
        zd, zs = diff_stage.z, same_stage.z
        return LookBoundary(
            look=look,
            information=info[-1],
            final=final,
            z_different=zd,
            z_same=zs,
            alpha_different=float(special.ndtr(-zd)),
            alpha_same=float(special.ndtr(-zs)),
            spent_different=diff_stage.spent,
            spent_same=same_stage.spent,
        )

    def boundaries(self) -> tuple[LookBoundary, ...]:
        """Every planned look's boundary."""
        return tuple(self.boundary(k + 1) for k in range(self.max_looks))


# ---------------------------------------------------------------------------------------------
# estimates and one look's decision
# ---------------------------------------------------------------------------------------------
class _RatioSe(Protocol):
    @property
    def ratio(self) -> float: ...
    @property
    def se_log(self) -> float: ...


class _Paired(Protocol):
    @property
    def comparison(self) -> _RatioSe: ...
    @property
    def df(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Estimate:
    """An approximately normal (or t) estimate of a log ratio.

    Attributes
    ----------
    log_ratio : float
        ``log(candidate / baseline)``.
    se_log : float
        Its standard error.
    df : float
        Degrees of freedom of a t statistic; ``inf`` for a normal one (bootstrap).
    """

    log_ratio: float
    se_log: float
    df: float = math.inf

    @classmethod
    def from_comparison(cls, comparison: _RatioSe) -> Estimate:
        """From a ``stats.QuantileComparison``: its ratio and bootstrap ``se_log`` (normal)."""
        r = float(comparison.ratio)
        lr = math.log(r) if math.isfinite(r) and r > 0 else math.nan
        return cls(lr, float(comparison.se_log))

    @classmethod
    def from_paired(cls, paired: _Paired) -> Estimate:
        """From a ``paired.PairedComparison``: trimmed-mean ratio, its se and the t ``df``."""
        c = paired.comparison
        r = float(c.ratio)
        lr = math.log(r) if math.isfinite(r) and r > 0 else math.nan
        return cls(lr, float(c.se_log), float(paired.df) if paired.df > 0 else math.nan)

    def with_run_noise(self, ratio_sd_log: float) -> Estimate:
        """Add the between-run variance of a two-run comparison to the interval.

        A within-run interval does not see that the machine ran at another speed in the
        baseline's run; with ``ratio_sd_log`` (:func:`run_noise_sd` of the history floor) the
        SAME bound covers it too (``docs/sequential.md``: without it, SAME ships a regression
        of exactly the margin about half the time whenever the run-to-run noise dominates).
        """
        sd = float(ratio_sd_log)
        if not (math.isfinite(sd) and sd >= 0):
            raise ConfigError(
                f"`ratio_sd_log` must be a non-negative number; got {ratio_sd_log!r}."
            )
        return Estimate(self.log_ratio, math.hypot(self.se_log, sd), self.df)


def run_noise_sd(history_floor: float, *, confidence: float = 0.99) -> float:
    """The log-scale sd of a candidate-run / baseline ratio implied by a history noise floor.

    ``stats.noise_floor`` is the one-sided ``confidence`` bound ``exp(z s) - 1`` of that ratio,
    so ``s = log(1 + floor) / z``.

    Examples
    --------
    >>> round(run_noise_sd(0.262), 3)
    0.1
    """
    floor = float(history_floor)
    if not (math.isfinite(floor) and floor >= 0):
        raise ConfigError(f"`history_floor` must be a non-negative number; got {history_floor!r}.")
    c = float(confidence)
    if not 0.5 < c < 1.0:
        raise ConfigError(f"`confidence` must be in (0.5, 1); got {confidence!r}.")
    return math.log1p(floor) / float(norm_ppf(c))


def two_run_information(n_base: int, n: int, n_max: float) -> float:
    """Information fraction of a look at ``n`` candidate samples against a fixed baseline.

    The variance of the log ratio is ``v (1 / n_base + 1 / n)``, so the fraction of the
    information at ``n_max`` samples is ``(1 / n_base + 1 / n_max) / (1 / n_base + 1 / n)``
    (:meth:`SequentialPlan.for_two_run`), clipped to (0, 1].

    Examples
    --------
    >>> round(two_run_information(200, 200, 800), 3)
    0.625
    """
    if n_base < 1 or n < 1 or not n_max > 0:
        raise ConfigError(
            f"`n_base`, `n` and `n_max` must be positive; got {n_base!r}, {n!r}, {n_max!r}."
        )
    n_max = max(float(n_max), float(n))
    return min(1.0, (1.0 / n_base + 1.0 / n_max) / (1.0 / n_base + 1.0 / n))


def _exp(v: float) -> float:
    return math.inf if v > 700.0 else math.exp(v)


def sequential_interval(estimate: Estimate, boundary: LookBoundary) -> tuple[float, float, float]:
    """``(ratio, low, high)``: the repeated confidence interval of this look.

    ``low = exp(log ratio - c_diff se)`` at the DIFFERENT level and ``high = exp(log ratio +
    c_same se)`` at the SAME level (t quantiles when the estimate has finite ``df``). NaN
    when the estimate has no usable standard error.
    """
    lr, se = estimate.log_ratio, estimate.se_log
    qd, qs = boundary.critical(estimate.df)
    if not (math.isfinite(lr) and math.isfinite(se) and se >= 0 and not math.isnan(qd)):
        return (_exp(lr) if math.isfinite(lr) else math.nan), math.nan, math.nan
    low = 0.0 if math.isinf(qd) else _exp(lr - qd * se)
    high = math.inf if math.isinf(qs) else _exp(lr + qs * se)
    return _exp(lr), low, high


def decide_look(
    estimate: Estimate,
    boundary: LookBoundary,
    margin: float | GateMargin,
    *,
    base_s: float = math.nan,
    abs_floor_s: float = 0.0,
    label: str = "",
) -> ThreeWay:
    """:func:`threeway.classify_three_way` on this look's repeated confidence interval."""
    ratio, low, high = sequential_interval(estimate, boundary)
    return classify_three_way(
        ratio, low, high, margin, base_s=base_s, abs_floor_s=abs_floor_s, label=label
    )


def detectable_change(
    se_log: float, boundary: LookBoundary, *, power: float = 0.8, df: float = math.inf
) -> float:
    """Smallest change DIFFERENT would catch with ``power`` at this look (ratio minus 1).

    ``exp((c_diff + q_power) se) - 1``: what an escalation at the cap reports as "the smallest
    detectable change here".
    """
    qd, _ = boundary.critical(df)
    qp = float(norm_ppf(power) if math.isinf(df) else t_ppf(power, df))
    if not math.isfinite(qd):
        return math.inf
    # A t quantile at an early look's tiny level, with few degrees of freedom, can be in the
    # thousands: the change it could detect is beyond any float, i.e. none.
    exponent = (qd + qp) * se_log
    return math.expm1(exponent) if exponent < _MAX_EXP else math.inf


# ---------------------------------------------------------------------------------------------
# the loop
# ---------------------------------------------------------------------------------------------
class HasOutcome(Protocol):
    """Anything with an ``outcome`` (a :class:`threeway.ThreeWay`, or a whole test's result)."""

    @property
    def outcome(self) -> Outcome: ...


D = TypeVar("D")
R = TypeVar("R", bound=HasOutcome)


@dataclass(frozen=True, slots=True)
class SequentialRun(Generic[R]):
    """How a sequential comparison ended.

    Attributes
    ----------
    outcome : Outcome
        The last look's outcome (UNKNOWN when stopped at the cap or exhausted: escalate).
    looks : int
        Looks made.
    stop : StopReason
        ``"different"`` / ``"same"`` (decided), ``"cap"`` (UNKNOWN at the final look) or
        ``"exhausted"`` (the data source had no more data before the plan's end).
    reason : str
        One line for the report, e.g. ``"UNKNOWN after 6 looks (the cap)"``.
    results : tuple
        Every look's result, in order.
    boundaries : tuple of LookBoundary
        Every look's boundary, in order.
    """

    outcome: Outcome
    looks: int
    stop: StopReason
    reason: str
    results: tuple[R, ...]
    boundaries: tuple[LookBoundary, ...]

    @property
    def last(self) -> R | None:
        """The last look's result (None when no look was made)."""
        return self.results[-1] if self.results else None


def run_sequential(
    plan: SequentialPlan,
    data: Callable[[int], D | None],
    compare: Callable[[D, LookBoundary], R],
    *,
    is_last: Callable[[int, D], bool] | None = None,
    information_of: Callable[[int, D], float] | None = None,
) -> SequentialRun[R]:
    """Look, and measure more while UNKNOWN, up to the plan's cap.

    At look ``k`` (1-based): ``data(k)`` returns the data so far (measuring more as needed;
    ``None`` when no more can be had), ``compare(data, boundary)`` decides it at the look's
    nominal levels (typically :func:`decide_look` on an :class:`Estimate`, or a per-test
    combination of several quantiles' decisions). The loop stops at the first DIFFERENT or
    SAME, or at the final look with UNKNOWN (escalate; report :func:`detectable_change`).

    A caller gating several quantiles of one test should keep each quantile's first SAME (its
    SAME boundary was crossed at that look; later looks only watch for DIFFERENT) and combine
    them with :func:`threeway.combine_outcomes`.

    Parameters
    ----------
    plan : SequentialPlan
    data : callable
        ``data(look) -> D | None``.
    compare : callable
        ``compare(data, boundary) -> R`` with ``R.outcome`` an :data:`threeway.Outcome`.
    is_last : callable, optional
        ``is_last(look, data)``: no further look is possible after this one (the time cap is
        reached), so this look spends everything left.
    information_of : callable, optional
        ``information_of(look, data)``: the information fraction actually reached (e.g.
        ``n / n_max``), when looks do not land exactly on the plan's sizes.

    Returns
    -------
    SequentialRun
    """
    results: list[R] = []
    bounds: list[LookBoundary] = []
    observed: list[float] = []
    for look in range(1, plan.max_looks + 1):
        d = data(look)
        if d is None:
            return SequentialRun(
                "unknown",
                look - 1,
                "exhausted",
                f"UNKNOWN: no more data after {look - 1} of {plan.max_looks} looks",
                tuple(results),
                tuple(bounds),
            )
        last = bool(is_last(look, d)) if is_last is not None else False
        info: list[float] | None = None
        if information_of is not None:
            t = float(information_of(look, d))
            # Information never goes backwards; a stalled look repeats the previous fraction.
            observed.append(max(t, observed[-1] * (1 + 1e-9)) if observed else t)
            info = observed
        b = plan.boundary(look, information=info, final=last)
        r = compare(d, b)
        results.append(r)
        bounds.append(b)
        if r.outcome != "unknown":
            verb = "DIFFERENT" if r.outcome == "different" else "SAME"
            return SequentialRun(
                r.outcome,
                look,
                r.outcome,
                f"{verb} at look {look} of {plan.max_looks}",
                tuple(results),
                tuple(bounds),
            )
        if b.final:
            why = "the cap" if look == plan.max_looks else "the budget ran out"
            return SequentialRun(
                "unknown",
                look,
                "cap",
                f"UNKNOWN after {look} looks ({why})",
                tuple(results),
                tuple(bounds),
            )
    raise AssertionError("unreachable: the plan's last look is final")
