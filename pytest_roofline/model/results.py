"""One measured test as the controller sees it: who owns it, what it ran on, what was measured."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.config.workload import WorkloadSlice
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.stats import hd_quantiles
from pytest_roofline.vocabulary import QUANTILES

__all__ = ["QuantileSummary", "TestResult", "summarize"]


@dataclass(frozen=True, slots=True)
class QuantileSummary:
    """Harrell-Davis point estimates of the per-call latency quantiles, in seconds."""

    n: int
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    mean_s: float | None
    min_s: float | None
    max_s: float | None

    def to_dict(self) -> dict[str, object]:
        return {
            "samples": self.n,
            "p50_s": self.p50_s,
            "p95_s": self.p95_s,
            "p99_s": self.p99_s,
            "mean_s": self.mean_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
        }


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def summarize(samples_s: np.ndarray) -> QuantileSummary:
    """Point estimates of p50/p95/p99 (Harrell-Davis), mean, min and max of ``samples_s``."""
    n = int(samples_s.size)
    if n == 0:
        return QuantileSummary(0, None, None, None, None, None, None)
    p50, p95, p99 = (float(v) for v in hd_quantiles(samples_s, list(QUANTILES.values())))
    return QuantileSummary(
        n=n,
        p50_s=_finite(p50),
        p95_s=_finite(p95),
        p99_s=_finite(p99),
        mean_s=_finite(float(np.mean(samples_s))),
        min_s=_finite(float(np.min(samples_s))),
        max_s=_finite(float(np.max(samples_s))),
    )


@dataclass(frozen=True, slots=True, eq=False)
class TestResult:
    """A measured test: identity, ownership, requirements and the measurement itself."""

    __test__ = False  # not a pytest test class

    nodeid: str
    slice: WorkloadSlice | None
    owners: tuple[str, ...]
    rollback: str | None
    sla: SlaSpec
    precision: str | None
    measurement: Measurement

    def summary(self) -> QuantileSummary:
        return summarize(self.measurement.samples_s)

    def to_dict(self, *, include_samples: bool = True) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "slice": self.slice.to_dict() if self.slice else None,
            "owners": list(self.owners),
            "rollback": self.rollback,
            "sla": self.sla.to_dict(),
            "precision": self.precision,
            "measurement": self.measurement.to_dict(include_samples=include_samples),
        }

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, samples_s: np.ndarray | None = None
    ) -> TestResult:
        slice_data = data.get("slice")
        return cls(
            nodeid=str(data["nodeid"]),
            slice=WorkloadSlice.from_dict(slice_data) if slice_data else None,
            owners=tuple(data.get("owners") or ()),
            rollback=data.get("rollback"),
            sla=SlaSpec.from_dict(data.get("sla") or {}),
            precision=data.get("precision"),
            measurement=Measurement.from_dict(data["measurement"], samples_s=samples_s),
        )
