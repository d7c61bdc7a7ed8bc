"""Counter fidelity: how far what the counters measured is from what the test declared.

Pure. The roofline is placed from the *declared* work (the only numbers available everywhere);
where a counter measures the same quantity, the relative error between the two says how far
that placement can be trusted. Where nothing measures a quantity, the result says so instead of
inventing a number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pytest_roofline.measure.counters import CounterReading
from pytest_roofline.roofline import DeclaredWork

__all__ = ["CACHE_LINE_BYTES", "Fidelity", "FidelityStatus", "counter_fidelity"]

FidelityStatus = Literal["measured", "unmeasured", "undeclared"]
# Bytes from last-level-cache misses: one line per miss. An estimate of DRAM traffic (hardware
# prefetches and write-backs are not misses), so its error bounds are loose: it is a cross-check.
CACHE_LINE_BYTES = 64

# quantity -> (counter, scale to the declared unit, what the counter is)
_SOURCES: Mapping[str, tuple[str, float, str]] = {
    "flops": ("perf.fp_ops", 1.0, "retired floating-point operations (perf.fp_ops, FMA = 2)"),
    "bytes_moved": (
        "perf.cache_misses",
        float(CACHE_LINE_BYTES),
        f"last-level cache misses x {CACHE_LINE_BYTES} B (perf.cache_misses; an estimate of DRAM traffic)",
    ),
}


@dataclass(frozen=True, slots=True)
class Fidelity:
    """One declared quantity against its counter, per call."""

    quantity: str
    status: FidelityStatus
    declared_per_call: float | None
    measured_per_call: float | None
    relative_error: float | None
    source: str | None
    note: str

    def to_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "declared_per_call": self.declared_per_call,
            "measured_per_call": self.measured_per_call,
            "relative_error": self.relative_error,
            "source": self.source,
            "note": self.note,
        }


def counter_fidelity(
    declared: DeclaredWork | None, counters: CounterReading | None, *, calls: int
) -> tuple[Fidelity, ...]:
    """Fidelity of each declared quantity, given counters read over ``calls`` calls."""
    out = []
    for quantity, (counter, scale, description) in _SOURCES.items():
        amount = getattr(declared, quantity) if declared is not None else None
        if amount is None:
            out.append(
                Fidelity(
                    quantity, "undeclared", None, None, None, None, f"{quantity} was not declared"
                )
            )
            continue
        status = counters.status.get(counter) if counters is not None else None
        value = counters.values.get(counter) if counters is not None else None
        if status != "ok" or value is None or calls <= 0:
            why = (
                "counters were off"
                if counters is None
                else f"{counter} is {status or 'not requested'} here"
            )
            out.append(
                Fidelity(
                    quantity,
                    "unmeasured",
                    amount,
                    None,
                    None,
                    counter,
                    f"nothing measures {quantity}: {why}",
                )
            )
            continue
        measured = value * scale / calls
        error = (measured - amount) / amount if amount > 0 else None
        out.append(Fidelity(quantity, "measured", amount, measured, error, counter, description))
    return tuple(out)
