"""Input validation shared by the statistics modules (scipy.stats style).

Each check returns the value converted, or raises with a message that names the parameter and
the valid form. Degenerate data is not an error: :func:`warn` reports it and the caller returns
NaN.
"""

from __future__ import annotations

import math
import warnings
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from pytest_roofline.errors import ConfigError, RooflineWarning

__all__ = [
    "FloatArray",
    "alpha_iv",
    "n_boot_iv",
    "nonneg_iv",
    "positive_iv",
    "qname",
    "quantile_iv",
    "rng_iv",
    "samples_iv",
    "unit_iv",
    "warn",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]


def qname(q: float) -> str:
    return f"p{q * 100:g}"


def samples_iv(x: npt.ArrayLike, name: str, *, durations: bool = True) -> FloatArray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a one-dimensional array of numbers.") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"`{name}` must be a non-empty one-dimensional array of "
            f"{'durations in seconds' if durations else 'numbers'}; got shape {arr.shape}."
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"`{name}` must contain only finite values; found {arr[i]} at index {i}.")
    if durations:
        neg = arr < 0
        if neg.any():
            i = int(np.argmax(neg))
            raise ValueError(
                f"`{name}` must contain non-negative durations in seconds; "
                f"found {arr[i]} at index {i}."
            )
    return np.ascontiguousarray(arr)


def quantile_iv(q: float, name: str = "q") -> float:
    try:
        qf = float(q)
    except (TypeError, ValueError):
        raise ConfigError(
            f"`{name}` must be a number strictly between 0 and 1; got {q!r}."
        ) from None
    if not 0.0 < qf < 1.0:
        raise ConfigError(f"`{name}` must be strictly between 0 and 1; got {q!r}.")
    return qf


def unit_iv(value: float, name: str, *, low: float = 0.0, high: float = 1.0) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"`{name}` must be a number in ({low:g}, {high:g}); got {value!r}."
        ) from None
    if not low < v < high:
        raise ConfigError(f"`{name}` must be in ({low:g}, {high:g}); got {value!r}.")
    return v


def alpha_iv(alpha: float) -> float:
    return unit_iv(alpha, "alpha", high=0.5)


def nonneg_iv(value: float, name: str, *, allow_inf: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"`{name}` must be a non-negative number; got {value!r}.") from None
    if math.isnan(v) or v < 0 or (math.isinf(v) and not allow_inf):
        raise ConfigError(f"`{name}` must be a non-negative finite number; got {value!r}.")
    return v


def positive_iv(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"`{name}` must be a positive number; got {value!r}.") from None
    if not (math.isfinite(v) and v > 0):
        raise ConfigError(f"`{name}` must be a positive finite number; got {value!r}.")
    return v


def n_boot_iv(n_boot: int) -> int:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise ConfigError(f"`n_boot` must be an integer of at least 100; got {n_boot!r}.")
    return int(n_boot)


def rng_iv(rng: np.random.Generator) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` must be a numpy.random.Generator; got {type(rng).__name__}.")
    return rng


def warn(message: str) -> None:
    warnings.warn(message, RooflineWarning, stacklevel=3)
