"""Across a run: Benjamini-Hochberg over its comparisons, and the common-mode shift of its tests."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from pytest_roofline.stats.quantiles import DEFAULT_ALPHA
from pytest_roofline.stats.results import CommonMode, QuantileComparison
from pytest_roofline.stats.validate import FloatArray, alpha_iv, warn

__all__ = ["apply_bh", "bh_adjust", "common_mode"]


def bh_adjust(p_values: npt.ArrayLike) -> FloatArray:
    """Benjamini-Hochberg adjusted p-values (``scipy.stats.false_discovery_control``).

    The one implementation of the procedure: :func:`apply_bh` (paired runs, where it decides)
    and the run document's ``p_bh`` (two-run sessions, where it is reported) both use it.
    An empty input gives an empty array.

    References
    ----------
    .. [1] Benjamini, Y. and Hochberg, Y. (1995), "Controlling the false discovery rate",
       *J. R. Stat. Soc. B* 57(1), 289-300.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return p
    from scipy import stats  # imported where used: see stats/distributions.py

    return np.asarray(stats.false_discovery_control(p, method="bh"), dtype=np.float64)


def apply_bh(
    comparisons: Sequence[QuantileComparison], *, alpha: float = DEFAULT_ALPHA
) -> list[QuantileComparison]:
    """Benjamini-Hochberg over a run's comparisons; downgrade unconfirmed regressions.

    The family is every comparison that is not ``insufficient`` and has a finite p-value (pass
    all tests and both quantiles of a run together). Each gets ``p_adjusted``; a ``regression``
    whose adjusted p-value is ``>= alpha`` becomes ``suspect``: the change exceeds the margin but
    is not a discovery once the run's many comparisons are accounted for. BH is valid under the
    positive dependence that tests sharing a runner show.

    Parameters
    ----------
    comparisons : sequence of QuantileComparison
    alpha : float, optional
        False discovery rate.

    Returns
    -------
    list of QuantileComparison
        Same order; others get ``p_adjusted = NaN``.

    References
    ----------
    .. [1] Benjamini, Y. and Hochberg, Y. (1995), "Controlling the false discovery rate",
       *J. R. Stat. Soc. B* 57(1), 289-300.
    .. [2] Benjamini, Y. and Yekutieli, D. (2001), *Annals of Statistics* 29(4), 1165-1188.
    """
    alpha = alpha_iv(alpha)
    comps = list(comparisons)
    in_family = [
        i for i, c in enumerate(comps) if c.verdict != "insufficient" and math.isfinite(c.p_value)
    ]
    out = [replace(c, p_adjusted=math.nan) for c in comps]
    if not in_family:
        return out
    adjusted = bh_adjust([comps[i].p_value for i in in_family])
    for i, p_adj in zip(in_family, adjusted, strict=True):
        c = comps[i]
        p_adj = float(p_adj)
        if c.verdict == "regression" and p_adj >= alpha:
            out[i] = replace(
                c,
                p_adjusted=p_adj,
                verdict="suspect",
                outcome="unknown",
                reason=(
                    f"{c.reason}; but the BH-adjusted p = {p_adj:.3g} >= {alpha:g} "
                    f"over {len(in_family)} comparisons"
                ),
            )
        else:
            out[i] = replace(c, p_adjusted=p_adj)
    return out


def common_mode(log_ratios: npt.ArrayLike) -> CommonMode:
    """Run-wide common-mode factor: ``exp(median_i log ratio_i)`` over a run's tests.

    On a shared runner most of the run-to-run change is common to all tests of a run
    (``docs/noise.md``); the median of the per-test log ratios estimates it robustly to
    a minority of genuine regressions. It is reported; whether it escalates the run is the
    policy's decision.

    Parameters
    ----------
    log_ratios : array_like
        Per-test ``log(cand / base)``. NaN entries (degenerate comparisons) are skipped.

    Returns
    -------
    CommonMode
        NaN fields (and a warning) when no finite ratio is given.

    Warns
    -----
    RooflineWarning
        No finite log ratio.

    Examples
    --------
    >>> cm = common_mode(np.log([1.2, 1.21, 1.19, 1.2, 2.5]))
    >>> round(cm.factor, 2), cm.n_tests
    (1.2, 5)
    """
    x = np.asarray(log_ratios, dtype=np.float64).ravel()
    if np.isinf(x).any():
        raise ValueError("`log_ratios` must not contain infinity (a zero or infinite ratio).")
    x = x[~np.isnan(x)]
    if x.size == 0:
        warn("common_mode: no finite log ratio; the common-mode factor is NaN.")
        return CommonMode(math.nan, math.nan, 0, math.nan)
    med = float(np.median(x))
    spread = float(1.4826 * np.median(np.abs(x - med)))
    return CommonMode(factor=math.exp(med), log_factor=med, n_tests=int(x.size), spread=spread)
