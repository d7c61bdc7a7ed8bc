"""Which presets a run's declared work is projected onto: those of the run's kind of processor."""

from __future__ import annotations

import pytest

from pytest_roofline.gate.record import platform_kind, platform_targets, relevant_presets
from pytest_roofline.hardware.presets import load_presets
from pytest_roofline.hardware.target import HardwareTarget, target_from_mapping

CPU_PRESETS = {"xeon-8480", "epyc-9654"}


def _host() -> HardwareTarget:
    return HardwareTarget(
        name="host",
        peak_flops_per_s={"fp64": 3e10},
        peak_bytes_per_s={"dram": 1e10},
        source="measured",
        description="this host, measured 2026-11-29: x86_64",
    )


def test_a_host_target_is_a_cpu_and_sees_only_the_cpu_presets() -> None:
    host = _host()
    assert platform_kind(host) == "cpu"
    assert set(relevant_presets(host)) == CPU_PRESETS
    assert {p.name for p in platform_targets(host)} == CPU_PRESETS


@pytest.mark.parametrize("name", ["h100-sxm", "mi300x", "tpu-v5e", "l4"])
def test_an_accelerator_target_sees_the_accelerator_presets_and_no_cpu(name: str) -> None:
    target = load_presets()[name]
    assert platform_kind(target) == "accelerator"
    names = set(relevant_presets(target))
    assert name in names and not names & CPU_PRESETS
    assert "tpu-v5e" in names and "h100-sxm" in names


@pytest.mark.parametrize("name", sorted(CPU_PRESETS))
def test_a_cpu_preset_sees_the_cpu_presets(name: str) -> None:
    assert set(relevant_presets(load_presets()[name])) == CPU_PRESETS


def test_a_target_of_unknown_kind_or_none_sees_every_preset() -> None:
    box = target_from_mapping(
        "golden-box",
        {"peak_flops_per_s": {"fp64": 4e10}, "peak_bytes_per_s": {"dram": 2e10}},
        where="t",
    )
    assert platform_kind(box) is None
    assert set(relevant_presets(box)) == set(load_presets())
    assert set(relevant_presets(None)) == set(load_presets())
