from __future__ import annotations

import pytest

from pytest_roofline.gate.fidelity import counter_fidelity
from pytest_roofline.measure.counters import CounterReading
from pytest_roofline.roofline import DeclaredWork


def reading(**status_values: tuple[str, float | None]) -> CounterReading:
    status = {name.replace("_", ".", 1): s for name, (s, _) in status_values.items()}
    values = {
        name.replace("_", ".", 1): v for name, (s, v) in status_values.items() if v is not None
    }
    return CounterReading(
        status=status, values=values, completeness=1.0, cpu_share=1.0, wall_s=1.0, threads=1
    )


def test_a_counted_quantity_gets_its_relative_error_per_call() -> None:
    counters = reading(perf_fp_ops=("ok", 2.2e9), perf_cache_misses=("ok", 1.5e6))
    flops, bytes_moved = counter_fidelity(DeclaredWork(2e6, 8e4, "fp64"), counters, calls=1000)
    assert flops.status == "measured"
    assert flops.measured_per_call == pytest.approx(2.2e6)
    assert flops.relative_error == pytest.approx(0.1)
    assert bytes_moved.measured_per_call == pytest.approx(1.5e3 * 64)
    assert bytes_moved.relative_error == pytest.approx(96_000 / 80_000 - 1)


def test_an_unsupported_counter_says_nothing_measures_the_quantity() -> None:
    counters = reading(perf_fp_ops=("unsupported", None), perf_cache_misses=("denied", None))
    flops, bytes_moved = counter_fidelity(DeclaredWork(2e6, 8e4, "fp64"), counters, calls=10)
    assert (flops.status, flops.relative_error, flops.measured_per_call) == (
        "unmeasured",
        None,
        None,
    )
    assert "perf.fp_ops is unsupported here" in flops.note
    assert "perf.cache_misses is denied here" in bytes_moved.note


def test_undeclared_work_and_missing_counters_are_stated() -> None:
    flops, bytes_moved = counter_fidelity(DeclaredWork(None, 8e4, None), None, calls=10)
    assert flops.status == "undeclared"
    assert bytes_moved.status == "unmeasured"
    assert "counters were off" in bytes_moved.note
