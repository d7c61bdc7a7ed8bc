"""The few distribution functions the gate needs, from :mod:`scipy.special`.

``scipy.stats`` costs about 1.4 s of CPU to import (measured here: ``python -c "import pytest,
numpy, scipy.stats"`` 1.9 s against 0.5 s without it), and pytest imports this plugin in every
session, with ``--roofline`` or not, and in every paired worker. The gate only needs normal,
Student t and beta quantiles and tails, which ``scipy.special`` computes with the same Cephes
routines ``scipy.stats`` calls (``ndtri``, ``stdtrit``, ``betaincinv``); tests check them
against ``scipy.stats``. The tests that need ``scipy.stats`` itself (Kendall's tau, the
quantile test, Benjamini-Hochberg) import it where they run.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = ["beta_ppf", "norm_ppf", "norm_sf", "t_isf", "t_ppf", "t_sf"]

Value = TypeVar("Value", float, npt.NDArray[np.float64])


def _like(value: object, result: npt.NDArray[np.float64] | np.float64) -> object:
    return float(result) if np.ndim(result) == 0 and not isinstance(value, np.ndarray) else result


def norm_ppf(q: Value) -> Value:
    """The standard normal quantile function (``scipy.stats.norm.ppf``)."""
    return _like(q, special.ndtri(q))  # type: ignore[return-value]


def norm_sf(x: Value) -> Value:
    """The standard normal upper tail ``P(Z > x)`` (``scipy.stats.norm.sf``)."""
    return _like(x, special.ndtr(np.negative(x)))  # type: ignore[return-value]


def t_ppf(q: Value, df: float) -> Value:
    """Student's t quantile function with ``df`` degrees of freedom (``scipy.stats.t.ppf``);
    ``df = inf`` is the normal's."""
    if np.isinf(df):
        return norm_ppf(q)
    return _like(q, special.stdtrit(df, q))  # type: ignore[return-value]


def t_sf(x: Value, df: float) -> Value:
    """Student's t upper tail ``P(T > x)`` (``scipy.stats.t.sf``)."""
    if np.isinf(df):
        return norm_sf(x)
    return _like(x, special.stdtr(df, np.negative(x)))  # type: ignore[return-value]


def t_isf(p: Value, df: float) -> Value:
    """The ``x`` with ``P(T > x) = p`` (``scipy.stats.t.isf``)."""
    return _like(p, np.negative(t_ppf(p, df)))  # type: ignore[return-value]


def beta_ppf(q: Value, a: float, b: float) -> Value:
    """The beta distribution's quantile function (``scipy.stats.beta.ppf``)."""
    return _like(q, special.betaincinv(a, b, q))  # type: ignore[return-value]
