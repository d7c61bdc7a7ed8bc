"""The words the JSON document and every layer share: decisions, verdicts, bound classes.

One definition each (the JSON document's values: docs/report.md); the statistics, the
roofline model, the policy, the document model and the renderers all import them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, TypeAlias, get_args

__all__ = [
    "BOUND_CLASSES",
    "DECISIONS",
    "FAILS_ON",
    "LATENCY_SLA_KEYS",
    "MEMORY_LEVELS",
    "OUTCOMES",
    "PRECISIONS",
    "QUANTILES",
    "SLA_STATUSES",
    "VERDICTS",
    "BoundClass",
    "Decision",
    "FailOn",
    "Outcome",
    "QuantileName",
    "SlaStatus",
    "Verdict",
    "fails_run",
]

Decision: TypeAlias = Literal["ship", "rollback", "escalate"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)

BoundClass: TypeAlias = Literal["compute", "memory", "overhead", "ambiguous", "unknown"]
BOUND_CLASSES: tuple[BoundClass, ...] = get_args(BoundClass)

Outcome: TypeAlias = Literal["different", "same", "unknown"]
"""A comparison's three-way outcome (Chromium Pinpoint's DIFFERENT / SAME / UNKNOWN)."""
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

Verdict: TypeAlias = Literal["insufficient", "regression", "suspect", "ok", "not detected"]
"""Per-quantile verdict. An improvement is ``"ok"`` with ``improvement=True``."""
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

SlaStatus: TypeAlias = Literal["met", "breach", "possible breach", "not detected", "unassessable"]
SLA_STATUSES: tuple[SlaStatus, ...] = get_args(SlaStatus)
LATENCY_SLA_KEYS: tuple[str, ...] = ("p50", "p95", "p99", "max")
"""SLA keys whose thresholds are durations (the others: ``min_efficiency``, ``bound``)."""

PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
"""Precision names, in the order tables list them. ``int8`` counts integer ops as "FLOPs"."""

MEMORY_LEVELS: tuple[str, ...] = ("dram", "llc", "l2", "l1")
"""Memory levels a roof can be given for; ``dram`` (main memory, HBM/GDDR on GPUs) is the default."""

QuantileName: TypeAlias = Literal["p50", "p95", "p99"]
QUANTILES: Mapping[str, float] = MappingProxyType({"p50": 0.50, "p95": 0.95, "p99": 0.99})
"""The latency quantiles the gate compares, by the name every document and report uses."""

FailOn: TypeAlias = Literal["rollback", "escalate", "never"]
"""``--roofline-gate``: which decisions fail the run."""
FAILS_ON: tuple[FailOn, ...] = get_args(FailOn)


def fails_run(decision: Decision | None, fail_on: FailOn) -> bool:
    """Whether ``decision`` fails a test (and the run) under ``--roofline-gate=fail_on``."""
    if fail_on == "never" or decision is None:
        return False
    return decision == "rollback" or (decision == "escalate" and fail_on == "escalate")
