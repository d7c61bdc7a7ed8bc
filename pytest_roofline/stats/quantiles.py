"""Tail quantiles of one sample: Harrell-Davis estimates, sample floors, effective sample size."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from scipy import special

from pytest_roofline.stats.validate import FloatArray, alpha_iv, quantile_iv

__all__ = [
    "DEFAULT_ALPHA",
    "N_FLOOR",
    "beta_bins",
    "hd_quantiles",
    "hd_sorted",
    "n_floor",
    "optimistic_ess",
    "tau_many",
]

DEFAULT_ALPHA = 0.05
"""One-sided level of each interval bound and of the p-values (the two bounds form a 90% CI)."""

N_FLOOR: Mapping[float, int] = MappingProxyType({0.5: 5, 0.95: 59, 0.99: 299})
"""Hard sample floors at ``alpha = 0.05`` (see :func:`n_floor`)."""

_ESS_MAX_TAU = 50.0  # n_eff is clipped to [n / 50, n]
_ESS_MAX_LAG_FRAC = 0.25
# The Geyer estimate of tau scatters upwards under iid data by up to ~10 / sqrt(n) (95th
# percentile, measured for the p95/p99 indicators at n = 59..5000). The sample floor is
# checked against an ESS with that allowance removed, so that iid samples at the floor are
# not declared insufficient by estimation noise alone.
_ESS_NOISE_ALLOWANCE = 10.0
_FFT_CHUNK_ELEMS = 1 << 22
_WINDOW_EPS = 1e-15


def n_floor(q: float, alpha: float = DEFAULT_ALPHA) -> int:
    """Smallest sample count for which a one-sided distribution-free bound of a quantile exists.

    A one-sided ``1 - alpha`` upper confidence bound for the ``q`` quantile exists only when
    ``q**n <= alpha``, i.e. ``n >= ln(alpha) / ln(q)``. Below it the largest sample is not even a
    bound, and a comparison of that quantile is ``insufficient``.

    Parameters
    ----------
    q : float
        Quantile in (0, 1).
    alpha : float, optional
        One-sided level in (0, 0.5).

    Returns
    -------
    int
        59 for p95 and 299 for p99 at ``alpha = 0.05``.

    References
    ----------
    .. [1] Conover, W. J. (1999), *Practical Nonparametric Statistics*, 3rd ed., section 3.2.

    Examples
    --------
    >>> n_floor(0.95), n_floor(0.99)
    (59, 299)
    """
    q = quantile_iv(q)
    alpha = alpha_iv(alpha)
    return max(1, math.ceil(math.log(alpha) / math.log(q) - 1e-9))


def beta_bins(n: int, a: float, b: float) -> tuple[int, FloatArray]:
    """``P(ceil(n U) = j + 1)`` for ``U ~ Beta(a, b)``, for ``j`` in ``[start, start + len(w))``.

    Only the window holding all but ~1e-15 of the mass is evaluated: the weights of the
    Harrell-Davis estimator and of the order-statistic bootstrap are concentrated within a few
    standard deviations (``~sqrt(q (1 - q) / n)``) of ``q``.
    """
    lo = float(special.betaincinv(a, b, _WINDOW_EPS))
    hi = 1.0 - float(special.betaincinv(b, a, _WINDOW_EPS))
    j0 = max(0, math.floor(lo * n) - 1) if math.isfinite(lo) else 0
    j1 = min(n, math.ceil(hi * n) + 1) if math.isfinite(hi) else n
    if j1 <= j0:
        j0, j1 = 0, n
    cdf = special.betainc(a, b, np.arange(j0, j1 + 1) / n)
    if j0 == 0:
        cdf[0] = 0.0
    if j1 == n:
        cdf[-1] = 1.0
    w: FloatArray = np.diff(cdf)
    return j0, w


@lru_cache(maxsize=4096)
def _hd_bins(n: int, q: float) -> tuple[int, FloatArray]:
    start, w = beta_bins(n, q * (n + 1), (1.0 - q) * (n + 1))
    w.setflags(write=False)
    return start, w


def hd_sorted(s: FloatArray, q: float) -> FloatArray:
    """Harrell-Davis estimate along the last axis of sorted samples."""
    start, w = _hd_bins(s.shape[-1], q)
    # multiply-and-sum rather than matmul: BLAS sums in an order that depends on the batch
    # shape, and a test's result must not depend on which other tests share its batch.
    return np.asarray((s[..., start : start + w.size] * w).sum(axis=-1), dtype=np.float64)


def hd_quantiles(samples: npt.ArrayLike, probs: npt.ArrayLike) -> FloatArray:
    """Harrell-Davis quantile estimates.

    ``HD_q = sum_i W_i x_(i)`` with ``W_i = I_{i/n}(a, b) - I_{(i-1)/n}(a, b)``,
    ``a = q (n + 1)``, ``b = (1 - q)(n + 1)`` and ``I`` the regularized incomplete beta
    function: a smooth weighted average of all order statistics, more efficient than one or two
    of them for light and moderate tails.

    Parameters
    ----------
    samples : array_like
        One sample (shape ``(n,)``) or many samples of equal length (shape ``(k, n)``).
    probs : array_like
        Quantile(s) in (0, 1).

    Returns
    -------
    numpy.ndarray
        Shape ``samples.shape[:-1] + np.shape(probs)``.

    References
    ----------
    .. [1] Harrell, F. E. and Davis, C. E. (1982), "A new distribution-free quantile
       estimator", *Biometrika* 69(3), 635-640.

    Examples
    --------
    >>> float(hd_quantiles([1.0, 2.0, 3.0, 4.0, 5.0], 0.5))
    3.0
    """
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim not in (1, 2) or x.shape[-1] == 0:
        raise ValueError(f"`samples` must be a non-empty 1-D or 2-D array; got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("`samples` must contain only finite values.")
    p = np.asarray(probs, dtype=np.float64)
    flat = [quantile_iv(float(v), "probs") for v in p.ravel()]
    s = np.sort(x, axis=-1)
    out = np.stack([hd_sorted(s, v) for v in flat], axis=-1)
    return np.asarray(out.reshape(x.shape[:-1] + p.shape), dtype=np.float64)


def _fft_len(m: int) -> int:
    """Smallest ``2**k`` or ``3 * 2**k`` that is at least ``m`` (few distinct FFT sizes)."""
    p = 1 << max(0, (m - 1).bit_length())
    return 3 * p // 4 if 3 * p // 4 >= m else p


def tau_many(indicators: Sequence[npt.NDArray[np.bool_]]) -> FloatArray:
    """Integrated autocorrelation time of each series (Geyer initial positive sequence).

    Series of different lengths share one FFT when their padded lengths agree: zero padding
    beyond ``2 n - 1`` leaves the linear autocorrelation unchanged.
    """
    k = len(indicators)
    tau = np.ones(k)
    buckets: dict[int, list[int]] = {}
    for i, ind in enumerate(indicators):
        if ind.size >= 4:
            buckets.setdefault(_fft_len(2 * ind.size - 1), []).append(i)
    for nfft, members in buckets.items():
        rows = max(1, _FFT_CHUNK_ELEMS // nfft)
        for start in range(0, len(members), rows):
            chunk = members[start : start + rows]
            ns = np.array([indicators[i].size for i in chunk])
            pairs = np.maximum(
                1, np.minimum((ns * _ESS_MAX_LAG_FRAC).astype(np.int64) // 2, (ns - 1) // 2)
            )
            r = np.zeros((len(chunk), nfft))
            for row, i in enumerate(chunk):
                ind = indicators[i]
                r[row, : ind.size] = ind
                r[row, : ind.size] -= r[row, : ind.size].mean()
            f = np.fft.rfft(r, axis=1)
            acf = np.fft.irfft(f.real**2 + f.imag**2, nfft, axis=1)[:, : 2 * int(pairs.max())]
            c0 = acf[:, :1]
            ok = c0[:, 0] > 1e-12 * ns
            rho = acf / np.where(ok[:, None], c0, 1.0)
            gamma = rho[:, 0::2] + rho[:, 1::2]  # Gamma_j = rho_2j + rho_2j+1
            usable = (gamma > 0) & (np.arange(gamma.shape[1]) < pairs[:, None])
            keep = np.cumprod(usable, axis=1, dtype=np.int8).astype(bool)
            t = -1.0 + 2.0 * np.where(keep, gamma, 0.0).sum(axis=1)
            tau[chunk] = np.where(ok, t, 1.0)
    return np.asarray(np.clip(tau, 1.0, _ESS_MAX_TAU), dtype=np.float64)


def optimistic_ess(n: FloatArray | float, tau: FloatArray | float) -> FloatArray:
    n_arr = np.asarray(n, dtype=np.float64)
    allowance = _ESS_NOISE_ALLOWANCE / np.sqrt(np.maximum(n_arr, 1.0))
    return np.asarray(n_arr / np.maximum(1.0, np.asarray(tau) - allowance), dtype=np.float64)
