"""Per-test service-level agreements: latency budgets, a minimum efficiency, a required bound."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from pytest_roofline.errors import ConfigError
from pytest_roofline.units import parse_duration

__all__ = ["SLA_BOUNDS", "SLA_KEYS", "SlaSpec", "parse_sla"]

SLA_KEYS = ("p50", "p95", "p99", "max", "min_efficiency", "bound")
# "overhead", "ambiguous" and "unknown" describe a failure to be placed, never a requirement.
SLA_BOUNDS = ("compute", "memory")


@dataclass(frozen=True, slots=True)
class SlaSpec:
    """What a test must meet; ``None`` means no requirement on that quantity."""

    p50_s: float | None = None
    p95_s: float | None = None
    p99_s: float | None = None
    max_s: float | None = None
    min_efficiency: float | None = None
    bound: str | None = None

    def overridden_by(self, other: SlaSpec) -> SlaSpec:
        """Return this spec with every key that ``other`` sets taken from ``other``."""
        changes = {f.name: getattr(other, f.name) for f in fields(other)}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def latency_budgets_s(self) -> dict[str, float]:
        """The latency budgets set, keyed ``p50`` / ``p95`` / ``p99`` / ``max``."""
        budgets = {"p50": self.p50_s, "p95": self.p95_s, "p99": self.p99_s, "max": self.max_s}
        return {k: v for k, v in budgets.items() if v is not None}

    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    def to_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> SlaSpec:
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})  # type: ignore[arg-type]


def parse_sla(value: object, *, where: str) -> SlaSpec:
    """Validate an SLA mapping such as ``{"p99": "4ms", "min_efficiency": 0.05}``."""
    if value is None:
        return SlaSpec()
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: sla must be a mapping with keys {list(SLA_KEYS)}, "
            f'e.g. {{"p99": "4ms"}}, got {value!r}'
        )
    unknown = sorted(str(k) for k in value if k not in SLA_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown sla key(s) {unknown}; valid keys: {list(SLA_KEYS)}")
    budgets = {
        key: parse_duration(value[key], where=f"{where}: sla.{key}")
        for key in ("p50", "p95", "p99", "max")
        if value.get(key) is not None
    }
    min_efficiency = value.get("min_efficiency")
    if min_efficiency is not None:
        if (
            isinstance(min_efficiency, bool)
            or not isinstance(min_efficiency, (int, float))
            or not math.isfinite(min_efficiency)
            or not 0 < min_efficiency <= 1
        ):
            raise ConfigError(
                f"{where}: sla.min_efficiency must be a fraction of the attainable roof "
                f"in (0, 1], got {min_efficiency!r}"
            )
        min_efficiency = float(min_efficiency)
    bound = value.get("bound")
    if bound is not None and bound not in SLA_BOUNDS:
        raise ConfigError(f"{where}: sla.bound must be one of {list(SLA_BOUNDS)}, got {bound!r}")
    return SlaSpec(
        p50_s=budgets.get("p50"),
        p95_s=budgets.get("p95"),
        p99_s=budgets.get("p99"),
        max_s=budgets.get("max"),
        min_efficiency=min_efficiency,
        bound=bound,
    )
