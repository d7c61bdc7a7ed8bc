"""Every default of pytest-roofline's settings, in one place (docs/configuration.md lists them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pytest_roofline.vocabulary import FailOn

__all__ = ["DEFAULTS", "GateOn"]

GateOn = FailOn


@dataclass(frozen=True, slots=True)
class _Defaults:
    target: str = "auto"
    store: str = ".roofline/store.sqlite"
    # Half a second per test samples a 1 ms kernel ~500 times (enough for p95; p99 needs 299) and
    # keeps a 20-test suite near 10 s, against pytest-benchmark's ~1.4 s per test.
    budget_s: float = 0.5
    # The p95 estimate needs 59 samples before any one-sided bound exists; below that a slow test
    # still gets its minimum and its verdict says "insufficient".
    min_samples: int = 10
    max_samples: int = 200_000
    warmup_s: float = 0.05
    # Warm-up runs before every measured test: a value past a minute is a typo (100000 for
    # 100 ms) that would hold a CI job for hours, not a warm-up.
    max_warmup_s: float = 60.0
    alpha: float = 0.05
    # The smallest change worth a rollback, per quantile (DESIGN 2.4).
    min_effect: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"p50": 0.05, "p95": 0.05, "p99": 0.10})
    )
    replay: int = 1
    history: int = 10
    gate_on: GateOn = "rollback"


DEFAULTS = _Defaults()
