"""The view model every rendering reads, built once per run by :mod:`pytest_roofline.gate.run`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_roofline.model.results import QuantileSummary

__all__ = ["JSON_SCHEMA_VERSION", "RunView", "TestView"]

JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class TestView:
    """One test as every report shows it; ``outcome`` is its evidence and decision (JSON form)."""

    __test__ = False

    nodeid: str
    slice_name: str | None
    slice_group: str | None
    source: str | None
    owners: tuple[str, ...]
    rollback_boundary: str | None
    summary: QuantileSummary
    batch_size: int
    stop_reason: str
    elapsed_s: float
    baseline: QuantileSummary | None
    declared: Mapping[str, Any] | None
    counters: Mapping[str, Any] | None
    decision: str | None = None
    reasons: tuple[str, ...] = ()
    outcome: Mapping[str, Any] = field(default_factory=dict)

    def ratio(self, quantile: str) -> float | None:
        """Candidate / baseline of ``p50`` / ``p95`` / ``p99`` (the gate's estimate when compared)."""
        change = (self.outcome.get("change") or {}).get(quantile)
        if change and change.get("ratio") is not None:
            return float(change["ratio"])
        if self.baseline is None:
            return None
        cand = getattr(self.summary, f"{quantile}_s")
        base = getattr(self.baseline, f"{quantile}_s")
        if cand is None or base is None or base <= 0:
            return None
        return float(cand / base)


@dataclass(frozen=True, slots=True)
class RunView:
    """The run as every report shows it."""

    label: str | None
    baseline_label: str | None
    baseline_run_id: int | None
    tags: Mapping[str, str]
    tag_diff: Mapping[str, tuple[str | None, str | None, str | None]]
    target: Mapping[str, Any] | None
    machine: str
    started: float
    finished: float
    tests: Sequence[TestView]
    missing_from_baseline: tuple[str, ...] = ()
    missing_from_candidate: tuple[str, ...] = ()
    decision: str | None = None
    reasons: tuple[str, ...] = ()
    first_failing_layer: str | None = None
    observability: Mapping[str, Any] = field(default_factory=dict)
    common_mode: Mapping[str, Any] | None = None
    gate: Mapping[str, Any] = field(default_factory=dict)
    first_failing_slices: Mapping[str, str] = field(default_factory=dict)
