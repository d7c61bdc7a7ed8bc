"""Summary-only results: a pytest-benchmark run imported without its raw timings.

pytest-benchmark keeps every round's time in a saved run only with ``--benchmark-save-data``;
without it a run holds statistics alone (median, mean, min, max, quartiles). Such a run is
imported (``pytest-roofline import``) with no samples and its statistics under
:data:`SUMMARY_ONLY_KEY` in each result's payload. The store reads those results back with
empty samples (every other result needs at least one); the gate never compares with them, but
counts their medians in the label's history noise floor (:func:`summary_only_quantiles`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["SUMMARY_ONLY_KEY", "is_summary_only", "summary_only_quantiles"]

#: The stored-result payload key of a summary-only result: the statistics pytest-benchmark
#: recorded, in seconds (``p50_s``, ``mean_s``, ``min_s``, ``max_s``...), and ``rounds``.
SUMMARY_ONLY_KEY = "summary_only"
# The quantiles a summary can stand in for: pytest-benchmark records the median, no tails.
_QUANTILE_KEYS = {"p50": "p50_s", "p95": "p95_s", "p99": "p99_s"}


def is_summary_only(payload: Mapping[str, Any]) -> bool:
    """Whether a stored result's payload is a summary-only result (it has no samples)."""
    return isinstance(payload.get(SUMMARY_ONLY_KEY), Mapping)


def summary_only_quantiles(payload: Mapping[str, Any]) -> dict[str, float]:
    """The gated quantiles a summary-only result recorded (``{"p50": seconds}``), else ``{}``."""
    summary = payload.get(SUMMARY_ONLY_KEY)
    if not isinstance(summary, Mapping):
        return {}
    out = {}
    for name, key in _QUANTILE_KEYS.items():
        value = summary.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(float(value)) and value > 0:
            out[name] = float(value)
    return out
