"""Result types of the statistics: frozen, JSON-safe through ``to_dict`` (NaN becomes ``None``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from pytest_roofline.stats.validate import qname
from pytest_roofline.vocabulary import Outcome, SlaStatus, Verdict

__all__ = [
    "CommonMode",
    "ConfidenceInterval",
    "Drift",
    "QuantileComparison",
    "SamplingState",
    "SlaCheck",
]


def _json_value(value: Any) -> Any:
    if isinstance(value, _ToDict):
        return value.to_dict()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, Mapping):
        return {
            (qname(k) if isinstance(k, float) else str(k)): _json_value(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


class _ToDict:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe ``dict`` (NaN and infinity become ``None``)."""
        return {f.name: _json_value(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ConfidenceInterval(_ToDict):
    """A confidence interval ``[low, high]``; NaN where a bound does not exist."""

    low: float
    high: float


@dataclass(frozen=True, slots=True)
class QuantileComparison(_ToDict):
    """Candidate against baseline for one quantile of one test.

    Attributes
    ----------
    quantile : float
        The quantile compared, e.g. ``0.95``.
    ratio : float
        Harrell-Davis estimate of the candidate's quantile over the baseline's.
    ci : ConfidenceInterval
        Percentile-bootstrap interval of the ratio, each bound one-sided at ``alpha``.
    p_value : float
        One-sided p-value for "the candidate is slower" (normal approximation of the bootstrap
        distribution of the log ratio; smooth, so usable for Benjamini-Hochberg).
    p_adjusted : float
        The p-value after :func:`apply_bh`; NaN until then.
    verdict : Verdict
        ``insufficient`` / ``regression`` / ``suspect`` / ``ok`` / ``not detected``.
    improvement : bool
        The candidate is established faster by at least the margin (always with ``ok``).
    delta : float
        The margin used: the largest of the minimum effect and the history noise floor, capped.
    mde : float
        Minimum detectable effect at 80% power, as a ratio minus 1 (``0.12`` = 12%).
    base_s, cand_s : float
        Harrell-Davis quantile estimates in seconds (as measured).
    abs_change_s : float
        ``cand_s / common_mode - base_s``.
    n_base, n_cand : int
        Sample counts.
    n_eff_base, n_eff_cand : float
        Effective sample sizes of the tail indicator.
    se_log : float
        Bootstrap standard deviation of the log ratio.
    alpha, abs_floor_s : float
        The level and the absolute floor used.
    common_mode : float
        Common-mode factor divided out of the candidate (1.0 when none).
    reason : str
        One line saying why the verdict is what it is.
    outcome : Outcome
        ``different`` / ``same`` / ``unknown`` (docs/gate.md; the verdict says which path).
    margin_source : str or None
        Where ``delta`` came from: ``min_effect``, ``history`` (the noise floor) or ``cap``.
    """

    quantile: float
    ratio: float
    ci: ConfidenceInterval
    p_value: float
    p_adjusted: float
    verdict: Verdict
    improvement: bool
    delta: float
    mde: float
    base_s: float
    cand_s: float
    abs_change_s: float
    n_base: int
    n_cand: int
    n_eff_base: float
    n_eff_cand: float
    se_log: float
    alpha: float
    abs_floor_s: float
    common_mode: float
    reason: str
    outcome: Outcome = "unknown"
    margin_source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe ``dict``; the interval is flattened to ``ci_low`` / ``ci_high``."""
        out = _ToDict.to_dict(self)
        ci = out.pop("ci")
        out["ci_low"], out["ci_high"] = ci["low"], ci["high"]
        return out


@dataclass(frozen=True, slots=True)
class CommonMode(_ToDict):
    """Run-wide shift shared by all tests: ``factor = exp(median log ratio)``.

    ``spread`` is the robust standard deviation (1.4826 MAD) of the log ratios around it.
    """

    factor: float
    log_factor: float
    n_tests: int
    spread: float


@dataclass(frozen=True, slots=True)
class Drift(_ToDict):
    """Within-run trend: Kendall's tau against sample index and the first-to-last window change."""

    tau: float
    p_value: float
    window_change: float
    drifting: bool


@dataclass(frozen=True, slots=True)
class SlaCheck(_ToDict):
    """One SLA key checked against one run's samples (``quantile`` is a float or ``"max"``)."""

    quantile: float | str
    threshold_s: float
    estimate_s: float
    ci: ConfidenceInterval
    p_value: float
    status: SlaStatus
    n: int


@dataclass(frozen=True, slots=True)
class SamplingState(_ToDict):
    """Whether sampling may stop: every quantile's interval is tight enough (or decisive)."""

    decisive: bool
    reason: str
    halfwidths: Mapping[float, float]
    targets: Mapping[float, float]
    n: int
