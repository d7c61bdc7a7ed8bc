"""A soak's latency timeline: does a later stretch of windows run slower than the first ones?

A soak (``--roofline-soak``) runs a test's callable for a long window and cuts the time into
consecutive windows; each window gives its median latency. This module asks, of that series of
window medians, whether and where it rises beyond a margin above its first windows (the
*reference*), with an interval on the size of the rise. It is pure: numbers in, a frozen
:class:`SoakScan` out; what the host did in each window is the gate's to weigh
(:mod:`pytest_roofline.gate.soak`).

The unit of replication is the window, not the sample. On a shared machine the host's speed
moves within seconds (``docs/noise.md``), so the samples of one window share a host state and
a per-sample test (Mann-Whitney on the samples of a window against those of the reference)
would call every host wobble significant. Here the noise is the spread *between* window
medians, estimated robustly from successive differences of their logs::

    sigma = median(|y[k+1] - y[k]|) / (Phi^-1(0.75) * sqrt(2))

(the MAD of first differences, as wild binary segmentation estimates the noise of a series with
steps [1]_: a step moves one difference, not the estimate). Then, for every block of ``block``
consecutive windows after the reference, the block's median log level is compared with the
reference's median::

    d_j = median(y[j : j + block]) - median(y[:reference])
    se  = sigma * sqrt(pi / 2) * sqrt(1 / block + 1 / reference)

``sqrt(pi / 2)`` is the large-sample efficiency loss of a median against a mean for normal data;
for 3-9 values the true factor is smaller (1.16-1.22), so the standard error is conservative.
The block's median makes one slow window (a host hiccup) unable to raise a block on its own.
Every block is a look, so the one-sided level is divided by the number of blocks (Bonferroni
[2]_; blocks overlap, so this is conservative). A block *fails* when ``d_j / se`` exceeds that
bound **and** its ratio ``exp(d_j)`` is at least ``1 + margin`` (the gate's three-way rule:
significant and large enough). Within the first failing block, the *onset* is the
least-squares split point (:func:`_onset`): for a step at window ``k`` the block starting at
``k - 1`` (or, by chance, ``k - 2``) already has a slow median, and the split finds ``k``.

:func:`shift_after` answers the narrower question asked when the host evidence names a window
(a GPU throttle reason turning on, the CPU clock dropping): is everything from that window on
slower than the reference? One pre-specified comparison, so no multiplicity correction; its onset is the split point in
the block from that window on (a throttle reason read at a window's end may turn on one window
before the latency shows it).

References
----------
.. [1] Fryzlewicz, P. (2014), "Wild binary segmentation for multiple change-point detection",
   *Annals of Statistics* 42(6), 2243-2281 (noise scale from the MAD of differences).
.. [2] Dunn, O. J. (1961), "Multiple comparisons among means", *JASA* 56, 52-64.
.. [3] Hinkley, D. V. (1970), "Inference about the change-point in a sequence of random
   variables", *Biometrika* 57(1), 1-17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from pytest_roofline.errors import ConfigError
from pytest_roofline.stats.distributions import norm_ppf, norm_sf
from pytest_roofline.stats.results import ConfidenceInterval
from pytest_roofline.stats.validate import FloatArray

__all__ = [
    "DEFAULT_BLOCK",
    "MIN_SIGMA_LOG",
    "SoakScan",
    "WindowShift",
    "reference_windows",
    "scan_windows",
    "shift_after",
    "window_sigma",
]

DEFAULT_BLOCK = 3
"""Windows per block: the smallest odd block whose median ignores one slow window."""

MIN_SIGMA_LOG = 1e-4
"""The noise scale never goes below 0.01%: a fake clock gives identical windows, and a zero
scale would make any difference infinitely significant (the margin still has to be met)."""

# Phi^-1(0.75): the MAD of a standard normal.
_MAD_NORMAL = float(norm_ppf(0.75))
# Variance of a median relative to a mean, for normal data, large samples.
_MEDIAN_SE = math.sqrt(math.pi / 2)

Method = Literal["scan", "after"]


@dataclass(frozen=True, slots=True)
class WindowShift:
    """A stretch of windows slower than the reference.

    :ivar onset: the first slow window's index (0 is the soak's first window): the split point
        of the failing block, or, after a named window, of the block that starts there.
    :ivar start: the first window of the stretch compared (the failing block's first window,
        or the window :func:`shift_after` was asked about).
    :ivar windows: how many windows the stretch compared has.
    :ivar ratio: the stretch's median level ÷ the reference's.
    :ivar ci: interval on ``ratio`` with the decision's critical value on each side (for a
        scan the Bonferroni-adjusted one: a two-sided ``1 - 2 alpha / looks`` interval).
    :ivar p_value: one-sided p-value of "not slower", adjusted for the scan's looks.
    :ivar method: ``scan`` (first failing block) or ``after`` (everything from a given window).
    """

    onset: int
    start: int
    windows: int
    ratio: float
    ci: ConfidenceInterval
    p_value: float
    method: Method


@dataclass(frozen=True, slots=True)
class SoakScan:
    """The window series as the scan saw it.

    :ivar windows: number of windows.
    :ivar reference: the first ``reference`` windows are the reference.
    :ivar block: windows per block.
    :ivar looks: blocks compared (the Bonferroni divisor).
    :ivar sigma_log: noise scale of one window's log median.
    :ivar ratios: each window's median ÷ the reference level (NaN where a window has none).
    :ivar shift: the first failing block, or ``None``.
    :ivar reason: why nothing could be compared (too few windows), else ``None``.
    """

    windows: int
    reference: int
    block: int
    looks: int
    sigma_log: float
    ratios: tuple[float, ...]
    shift: WindowShift | None
    reason: str | None = None


def reference_windows(windows: int) -> int:
    """How many first windows form the reference: a fifth of them, at least 3."""
    return max(3, windows // 5)


def _log_levels(p50_s: npt.ArrayLike) -> FloatArray:
    values = np.asarray(p50_s, dtype=np.float64)
    if values.ndim != 1:
        raise ConfigError(
            f"p50_s: expected a 1-D series of window medians, got shape {values.shape}"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(np.isfinite(values) & (values > 0), np.log(values), np.nan)
    return logs.astype(np.float64)


def window_sigma(log_levels: npt.ArrayLike) -> float:
    """Noise scale of a window's log level: MAD of successive differences / (0.6745 * sqrt 2)."""
    y = np.asarray(log_levels, dtype=np.float64)
    diffs = np.abs(np.diff(y))
    diffs = diffs[np.isfinite(diffs)]
    if diffs.size == 0:
        return MIN_SIGMA_LOG
    return max(MIN_SIGMA_LOG, float(np.median(diffs)) / (_MAD_NORMAL * math.sqrt(2.0)))


def _check(margin: float, alpha: float, block: int) -> None:
    if not (math.isfinite(margin) and margin >= 0):
        raise ConfigError(f"margin: expected a relative margin >= 0 (0.05 = 5%), got {margin!r}")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha: expected a level in (0, 1), got {alpha!r}")
    if block < 1:
        raise ConfigError(f"block: expected at least 1 window per block, got {block!r}")


def _shift(
    y: FloatArray,
    ref: FloatArray,
    start: int,
    stop: int,
    sigma: float,
    z_crit: float,
    looks: int,
    margin: float,
    method: Method,
) -> WindowShift | None:
    """The stretch ``y[start:stop]`` against ``ref``; ``None`` unless significant and large."""
    stretch = y[start:stop]
    stretch = stretch[np.isfinite(stretch)]
    if stretch.size == 0 or ref.size == 0:
        return None
    level = float(np.median(ref))
    d = float(np.median(stretch)) - level
    se = sigma * _MEDIAN_SE * math.sqrt(1.0 / stretch.size + 1.0 / ref.size)
    z = d / se
    if not (z > z_crit and d >= math.log1p(margin)):
        return None
    # Where in the stretch the level steps up; after a named window, within a block of it.
    onset = _onset(y, start, stop - start if method == "scan" else min(DEFAULT_BLOCK, stop - start))
    p = float(norm_sf(z))
    return WindowShift(
        onset=onset,
        start=start,
        windows=int(stretch.size),
        ratio=math.exp(d),
        ci=ConfidenceInterval(math.exp(d - z_crit * se), math.exp(d + z_crit * se)),
        p_value=min(1.0, p * looks),
        method=method,
    )


def _onset(y: FloatArray, start: int, block: int) -> int:
    """Where in a failing block the level steps up: the least-squares split point.

    Among the block's windows, the split ``k`` that maximises the CUSUM statistic
    ``sqrt((k - a)(b - k) / (b - a)) * |mean(y[a:k]) - mean(y[k:b])|`` over the windows from the
    soak's start ``a`` to one block past the failing one ``b`` (the least-squares estimate of a
    single change point, Hinkley 1970). A block's median is raised by its two slowest windows,
    so the block can fail one or two windows before the step itself.
    """
    b = min(int(y.size), start + 2 * block)
    best, best_score = start, -math.inf
    for k in range(start, min(start + block, b)):
        before, after = y[:k], y[k:b]
        before, after = before[np.isfinite(before)], after[np.isfinite(after)]
        if before.size == 0 or after.size == 0:
            continue
        weight = math.sqrt(before.size * after.size / (before.size + after.size))
        score = weight * (float(np.mean(after)) - float(np.mean(before)))
        if score > best_score:
            best, best_score = k, score
    return best


def scan_windows(
    p50_s: npt.ArrayLike,
    *,
    margin: float,
    alpha: float = 0.05,
    reference: int | None = None,
    block: int = DEFAULT_BLOCK,
) -> SoakScan:
    """Find the first block of windows slower than the reference beyond ``margin``.

    Parameters
    ----------
    p50_s : array_like
        Each window's median latency, seconds, in time order (NaN or 0 for a window without
        samples; it joins no comparison).
    margin : float
        The smallest rise that counts (0.05 = 5%; the gate passes ``gate.min_effect`` for p50).
    alpha : float, optional
        One-sided level of the whole scan (divided over its blocks).
    reference : int, optional
        How many first windows form the reference (default :func:`reference_windows`).
    block : int, optional
        Windows per compared block.

    Returns
    -------
    SoakScan
        ``shift`` is the first failing block, ``None`` when none fails; ``reason`` says why
        nothing was compared when there are fewer than ``reference + block`` windows.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> p50 = 1e-3 * rng.lognormal(0, 0.02, 30)
    >>> p50[12:] *= 1.2
    >>> scan_windows(p50, margin=0.05).shift.onset
    12
    """
    _check(margin, alpha, block)
    y = _log_levels(p50_s)
    n = int(y.size)
    ref_n = reference_windows(n) if reference is None else int(reference)
    if ref_n < 1:
        raise ConfigError(f"reference: expected at least 1 window, got {reference!r}")
    sigma = window_sigma(y)
    ref = y[:ref_n][np.isfinite(y[:ref_n])]
    level = float(np.median(ref)) if ref.size else math.nan
    ratios = tuple(float(math.exp(v - level)) if math.isfinite(v) else math.nan for v in y)
    looks = n - ref_n - block + 1
    if looks < 1 or ref.size == 0:
        return SoakScan(
            windows=n,
            reference=ref_n,
            block=block,
            looks=0,
            sigma_log=sigma,
            ratios=ratios,
            shift=None,
            reason=f"{n} windows: at least {ref_n + block} are needed "
            f"({ref_n} for the reference and a block of {block})",
        )
    z_crit = float(-norm_ppf(alpha / looks))
    for start in range(ref_n, ref_n + looks):
        found = _shift(y, ref, start, start + block, sigma, z_crit, looks, margin, "scan")
        if found is not None:
            return SoakScan(n, ref_n, block, looks, sigma, ratios, found)
    return SoakScan(n, ref_n, block, looks, sigma, ratios, None)


def shift_after(
    p50_s: npt.ArrayLike,
    onset: int,
    *,
    margin: float,
    alpha: float = 0.05,
    reference: int | None = None,
) -> WindowShift | None:
    """Whether the windows from ``onset`` on are slower than the reference beyond ``margin``.

    For a window named by other evidence (a throttle reason turning on): one comparison, at
    level ``alpha``. When ``onset`` falls inside the default reference, the windows before it
    are the reference (at least 2 are needed).

    Returns
    -------
    WindowShift or None
        The shift (``method="after"``) when significant and at least ``1 + margin``.
    """
    _check(margin, alpha, 1)
    y = _log_levels(p50_s)
    n = int(y.size)
    if not 0 <= onset < n:
        return None
    ref_n = reference_windows(n) if reference is None else int(reference)
    ref_n = min(ref_n, onset)
    if ref_n < 2:
        return None
    ref = y[:ref_n][np.isfinite(y[:ref_n])]
    z_crit = float(-norm_ppf(alpha))
    return _shift(y, ref, onset, n, window_sigma(y), z_crit, 1, margin, "after")
