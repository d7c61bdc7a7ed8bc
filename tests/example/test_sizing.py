"""The example suite's working-set sizes: its ``dram`` slices follow the host calibration."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from pytest_roofline.hardware.target import HardwareTarget, Provenance

MIB = 2**20
SIZING = Path(__file__).resolve().parents[2] / "example_suite" / "sizing.py"


@pytest.fixture(scope="module")
def sizing() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_sizing", SIZING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _target(array_bytes: int | None) -> HardwareTarget:
    dram = Provenance(1e10, "B/s", False, "host calibration", "2026-12-01", "", array_bytes)
    return HardwareTarget(
        name="host",
        peak_flops_per_s={"fp64": 1e11},
        peak_bytes_per_s={"dram": 1e10},
        source="measured",
        provenance={"bytes.dram": dram},
    )


def test_dram_arrays_take_the_size_the_calibration_measured_main_memory_on(
    sizing: ModuleType,
) -> None:
    assert sizing.main_memory_bytes(_target(128 * MIB), 2) == 128 * MIB


def test_without_a_measured_size_dram_arrays_are_past_every_llc(
    sizing: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sizing, "last_level_caches", lambda: (40 * MIB, 80 * MIB))
    assert sizing.main_memory_bytes(_target(None), 2) == 160 * MIB
    preset = HardwareTarget("box", {"fp64": 1e11}, {"dram": 1e10}, "preset")
    assert sizing.main_memory_bytes(preset, 2) == 160 * MIB


def test_dram_arrays_are_never_below_the_floor(
    sizing: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sizing, "last_level_caches", lambda: (4 * MIB, 4 * MIB))
    assert sizing.main_memory_bytes(_target(None), 2) == sizing.DRAM_MIN_BYTES
    assert sizing.main_memory_bytes(_target(16 * MIB), 2) == sizing.DRAM_MIN_BYTES
