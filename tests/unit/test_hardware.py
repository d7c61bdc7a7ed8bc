"""Hardware targets: presets against the research table, config targets, resolution, NVML names."""

from __future__ import annotations

import json
import math
import pickle
import sys
import types
from collections.abc import Iterator

import pytest
import yaml

from pytest_roofline.errors import ConfigError
from pytest_roofline.hardware.presets import (
    load_presets,
    nvml_gpu_name,
    preset_for_gpu_name,
    resolve_target,
)
from pytest_roofline.hardware.target import (
    HardwareTarget,
    Provenance,
    parse_rate,
    target_from_mapping,
)
from pytest_roofline.roofline import declared_work

T = 1e12  # TFLOP/s, TB/s
G = 1e9

# Dense peaks (precision -> FLOP/s) and bandwidths (level -> B/s), typed in from
# research/roofline.md §3 (B200 from NVIDIA's current HGX B200 table) — not read from the YAML.
EXPECTED: dict[str, tuple[dict[str, float], dict[str, float]]] = {
    "h100-sxm": (
        {
            "fp64": 67 * T,
            "fp32": 67 * T,
            "tf32": 494.7 * T,
            "bf16": 989.4 * T,
            "fp16": 989.4 * T,
            "fp8": 1978.9 * T,
            "int8": 1978.9 * T,
        },
        {"dram": 3.35 * T},
    ),
    "h100-pcie": (
        {
            "fp64": 51 * T,
            "fp32": 51 * T,
            "tf32": 378 * T,
            "bf16": 756 * T,
            "fp16": 756 * T,
            "fp8": 1513 * T,
            "int8": 1513 * T,
        },
        {"dram": 2.0 * T},
    ),
    "h200": (
        {
            "fp64": 67 * T,
            "fp32": 67 * T,
            "tf32": 494.7 * T,
            "bf16": 989.4 * T,
            "fp16": 989.4 * T,
            "fp8": 1978.9 * T,
            "int8": 1978.9 * T,
        },
        {"dram": 4.8 * T},
    ),
    "h200-nvl": (
        {
            "fp64": 60 * T,
            "fp32": 60 * T,
            "tf32": 417.5 * T,
            "bf16": 835.5 * T,
            "fp16": 835.5 * T,
            "fp8": 1670.5 * T,
            "int8": 1670.5 * T,
        },
        {"dram": 4.8 * T},
    ),
    "a100-80gb-sxm": (
        {
            "fp64": 19.5 * T,
            "fp32": 19.5 * T,
            "tf32": 156 * T,
            "bf16": 312 * T,
            "fp16": 312 * T,
            "int8": 624 * T,
        },
        {"dram": 2.039 * T, "l2": 7.2 * T},
    ),
    "b200": (
        {
            "fp64": 37 * T,
            "fp32": 75 * T,
            "tf32": 1100 * T,
            "bf16": 2250 * T,
            "fp16": 2250 * T,
            "fp8": 4500 * T,
            "int8": 4500 * T,
            "fp4": 9000 * T,
        },
        {"dram": 7.7 * T},
    ),
    "l4": (
        {
            "fp64": 0.4734 * T,
            "fp32": 30.3 * T,
            "tf32": 60 * T,
            "bf16": 121 * T,
            "fp16": 121 * T,
            "fp8": 242.5 * T,
            "int8": 242.5 * T,
        },
        {"dram": 300 * G},
    ),
    "l40s": (
        {
            "fp64": 1.431 * T,
            "fp32": 91.6 * T,
            "tf32": 183 * T,
            "bf16": 362 * T,
            "fp16": 362 * T,
            "fp8": 733 * T,
            "int8": 733 * T,
        },
        {"dram": 864 * G},
    ),
    "mi300x": (
        {
            "fp64": 163.4 * T,
            "fp32": 163.4 * T,
            "tf32": 653.7 * T,
            "bf16": 1307.4 * T,
            "fp16": 1307.4 * T,
            "fp8": 2614.9 * T,
            "int8": 2614.9 * T,
        },
        {"dram": 5.3 * T, "llc": 17 * T},
    ),
    "tpu-v5e": ({"bf16": 197 * T, "int8": 394 * T}, {"dram": 819 * G}),
    "xeon-8480": (
        {
            "fp64": 56 * 32 * 2.0 * G,
            "fp32": 56 * 64 * 2.0 * G,
            "bf16": 56 * 1024 * 2.0 * G,
            "int8": 56 * 2048 * 2.0 * G,
        },
        {"dram": 8 * 4800e6 * 8},
    ),
    "epyc-9654": (
        {
            "fp64": 96 * 16 * 2.4 * G,
            "fp32": 96 * 32 * 2.4 * G,
            "bf16": 96 * 64 * 2.4 * G,
            "int8": 96 * 128 * 2.4 * G,
        },
        {"dram": 12 * 4800e6 * 8},
    ),
}

# Ridges worked out by hand from the table (FLOP/byte against DRAM), a few per preset.
HAND_RIDGES = [
    ("h100-sxm", "bf16", 295.34),
    ("h100-sxm", "fp64", 20.0),
    ("h100-pcie", "fp8", 756.5),
    ("h200", "bf16", 206.13),
    ("h200-nvl", "fp64", 12.5),
    ("a100-80gb-sxm", "tf32", 76.51),
    ("b200", "fp4", 1168.8),
    ("b200", "fp64", 4.805),
    ("l4", "fp32", 101.0),
    ("l4", "fp64", 1.578),
    ("l40s", "fp8", 848.4),
    ("mi300x", "bf16", 246.68),
    ("tpu-v5e", "bf16", 240.54),
    ("xeon-8480", "fp64", 11.667),
    ("epyc-9654", "fp64", 8.0),
    ("epyc-9654", "int8", 64.0),
]


# --- presets -----------------------------------------------------------------------------
def test_the_preset_names_are_stable() -> None:
    assert set(load_presets()) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_preset_matches_the_research_table(name: str) -> None:
    target = load_presets()[name]
    flops, levels = EXPECTED[name]
    assert target.source == "preset"
    assert target.name == name
    assert dict(target.peak_flops_per_s) == pytest.approx(flops, rel=1e-9)
    assert dict(target.peak_bytes_per_s) == pytest.approx(levels, rel=1e-9)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_ridge_of_every_preset_is_peak_over_bandwidth(name: str) -> None:
    target = load_presets()[name]
    flops, levels = EXPECTED[name]
    for precision, peak in flops.items():
        for level, bandwidth in levels.items():
            assert target.ridge(precision, level) == pytest.approx(peak / bandwidth, rel=1e-9)


@pytest.mark.parametrize(("name", "precision", "expected"), HAND_RIDGES)
def test_hand_computed_ridges(name: str, precision: str, expected: float) -> None:
    assert load_presets()[name].ridge(precision) == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_preset_value_carries_provenance_in_its_own_unit(name: str) -> None:
    target = load_presets()[name]
    scale = {"TFLOP/s": T, "TOP/s": T, "TB/s": T, "GB/s": G}
    tables = {
        "flops": (target.peak_flops_per_s, False),
        "sparse_flops": (target.sparse_peak_flops_per_s, True),
        "bytes": (target.peak_bytes_per_s, False),
    }
    for prefix, (table, sparse) in tables.items():
        for key, value in table.items():
            prov = target.provenance[f"{prefix}.{key}"]
            assert prov.value * scale[prov.unit] == pytest.approx(value, rel=1e-12)
            assert prov.sparse is sparse
            assert prov.source and prov.date == "2026-11-29"
            if key == "int8":
                assert prov.unit.endswith("OP/s")
    derived = target.provenance.get("flops.fp64")
    if name in {"xeon-8480", "epyc-9654", "l4", "l40s"}:
        assert derived is not None and derived.note.startswith("derived:")


def test_sparse_peaks_are_kept_apart_and_never_used_as_the_roof() -> None:
    h100 = load_presets()["h100-sxm"]
    assert h100.sparse_peak_flops_per_s["bf16"] == pytest.approx(1979 * T)
    # 9.894e14 FLOP in 1 s: exactly the dense roof, at an intensity far right of the ridge.
    point = h100.place(declared_work(989.4e12, 1e9, "bf16", where="t"), 1.0)
    assert point.bound == "compute"
    assert point.efficiency == pytest.approx(1.0)
    assert point.attainable_flops_per_s == pytest.approx(989.4 * T)


def test_dense_is_half_of_sparse_on_tensor_precisions() -> None:
    for name, target in load_presets().items():
        for precision, sparse in target.sparse_peak_flops_per_s.items():
            assert sparse / target.peak_flops_per_s[precision] == pytest.approx(2.0, rel=0.03), (
                name
            )  # L40S prints 362.05 | 733


# --- target methods ----------------------------------------------------------------------
def test_a_precision_the_target_lacks_is_an_error_for_ridge_and_unknown_for_place() -> None:
    tpu = load_presets()["tpu-v5e"]
    with pytest.raises(
        ConfigError, match=r"target 'tpu-v5e' has no fp64 compute roof; it has: bf16, int8"
    ):
        tpu.ridge("fp64")
    with pytest.raises(ConfigError, match=r"no 'l2' bandwidth roof; it has: dram"):
        tpu.attainable(1.0, "bf16", "l2")
    point = tpu.place(declared_work(2e9, 1e6, "fp32", where="t"), 1e-3)
    assert point.bound == "unknown"
    assert point.data_error is None
    assert point.note == "target 'tpu-v5e' has no fp32 compute roof (it has bf16, int8)"
    assert point.efficiency == pytest.approx(1e9 / 819e9)


def test_place_uses_the_declared_precision_and_memory_level() -> None:
    a100 = load_presets()["a100-80gb-sxm"]
    w = declared_work(2 * 4096**3, 3 * 4096**2 * 2, "bf16", where="t")
    point = a100.place(w, 2 * 4096**3 / 200e12)  # 200 TFLOP/s
    assert point.bound == "compute"
    assert point.precision == "bf16"
    assert point.efficiency == pytest.approx(200 / 312)
    l2 = a100.place(declared_work(1e6, 1e6, "fp32", where="t"), 1e6 / 5e12, memory_level="l2")
    assert l2.memory_level == "l2"
    assert l2.bound == "memory"
    assert l2.efficiency == pytest.approx(5 / 7.2)
    assert a100.attainable(1.0, "float32") == pytest.approx(2.039 * T)


def test_a_cache_resident_kernel_is_placed_against_the_level_it_declares() -> None:
    host = HardwareTarget("host", {"fp64": 100 * G}, {"dram": 20 * G, "llc": 80 * G}, "measured")
    triad = declared_work(2e5, 2.4e6, "fp64", where="t", memory_level="llc")
    seconds = 2.4e6 / (60 * G)  # 60 GB/s: above the DRAM roof, below the LLC roof
    point = host.place(triad, seconds)
    assert point.memory_level == "llc"
    assert point.bound == "memory"
    assert point.efficiency == pytest.approx(60 / 80)
    assert point.data_error is None
    as_dram = host.place(triad, seconds, memory_level="dram")  # an explicit level wins
    assert as_dram.data_error is not None and "dram bandwidth roof" in as_dram.data_error
    no_llc = HardwareTarget("ci", {"fp64": 100 * G}, {"dram": 20 * G}, "config")
    assert no_llc.place(triad, seconds).bound == "unknown"


def test_targets_round_trip_through_json_and_pickle() -> None:
    for target in load_presets().values():
        again = HardwareTarget.from_dict(json.loads(json.dumps(target.to_dict())))
        assert again == target
        assert pickle.loads(pickle.dumps(target)) == target


def test_a_target_is_a_copy_of_the_mappings_it_was_given() -> None:
    peaks = {"fp64": 1.0}
    target = HardwareTarget("t", peaks, {"dram": 1.0}, "config")
    peaks["fp64"] = 2.0
    assert target.peak_flops_per_s["fp64"] == 1.0


def test_a_target_record_that_is_malformed_is_a_clear_error() -> None:
    good = load_presets()["l4"].to_dict()
    with pytest.raises(ConfigError, match=r"stored target.source: expected one of"):
        HardwareTarget.from_dict({**good, "source": "datasheet"}, where="stored target")
    with pytest.raises(
        ConfigError, match=r"stored target: hardware target 'l4': peak_bytes_per_s needs 'dram'"
    ):
        HardwareTarget.from_dict({**good, "peak_bytes_per_s": {"l2": 1.0}}, where="stored target")
    with pytest.raises(ConfigError, match=r"peak_flops_per_s.fp32: expected a number"):
        HardwareTarget.from_dict(
            {**good, "peak_flops_per_s": {"fp32": "fast"}}, where="stored target"
        )


def test_provenance_round_trips() -> None:
    prov = Provenance(1.0, "TFLOP/s", False, "datasheet", "2026-01-01", "note")
    assert Provenance.from_dict(prov.to_dict()) == prov


# --- config targets ----------------------------------------------------------------------
WHERE = "roofline.yaml: targets.ci-runner"


def test_the_design_example_loads_although_yaml_reads_its_numbers_as_strings() -> None:
    raw = yaml.safe_load(
        "ci-runner: {peak_flops_per_s: {fp64: 4.0e10, fp32: 8.0e10},"
        " peak_bytes_per_s: {dram: 2.0e10}}"
    )["ci-runner"]
    assert raw["peak_flops_per_s"]["fp64"] == "4.0e10"  # PyYAML: no sign in the exponent
    target = target_from_mapping("ci-runner", raw, where=WHERE)
    assert target.source == "config"
    assert dict(target.peak_flops_per_s) == {"fp64": 4.0e10, "fp32": 8.0e10}
    assert dict(target.peak_bytes_per_s) == {"dram": 2.0e10}
    assert target.ridge("fp64") == pytest.approx(2.0)
    prov = target.provenance["flops.fp64"]
    assert prov.source == "roofline.yaml: targets.ci-runner.peak_flops_per_s.fp64"
    assert (prov.unit, prov.sparse) == ("FLOP/s", False)


def test_config_rates_may_carry_units_and_aliases() -> None:
    target = target_from_mapping(
        "lab",
        {
            "peak_flops_per_s": {"float64": "40 GFLOP/s", "bf16": 1.5e12},
            "peak_bytes_per_s": {"HBM": "1.2 TB/s", "llc": "800 GiB/s"},
            "sparse_peak_flops_per_s": {"bf16": "3 TFLOPS"},
            "description": "lab box",
        },
        where=WHERE,
    )
    assert target.peak_flops_per_s == {"fp64": 40e9, "bf16": 1.5e12}
    assert target.peak_bytes_per_s == {"dram": 1.2e12, "llc": 800 * 2**30}
    assert target.sparse_peak_flops_per_s == {"bf16": 3e12}
    assert target.provenance["bytes.dram"].unit == "TB/s"
    assert target.provenance["sparse_flops.bf16"].sparse is True
    assert target.description == "lab box"


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ("fast", r"^roofline.yaml: targets.ci-runner: expected a mapping like \{peak_flops_per_s"),
        (
            {
                "peak_flops_per_s": {"fp64": 1e10},
                "peak_bytes_per_s": {"dram": 1e10},
                "peak_flop": 1,
            },
            r"unknown key\(s\) 'peak_flop'; valid: peak_flops_per_s, peak_bytes_per_s, "
            r"sparse_peak_flops_per_s, description",
        ),
        ({"peak_bytes_per_s": {"dram": 1e10}}, r"ci-runner: missing peak_flops_per_s \(e.g."),
        (
            {"peak_flops_per_s": {"fp64": 1e10}},
            r"missing peak_bytes_per_s \(e.g. peak_bytes_per_s: \{dram: 2.0e10\}\)",
        ),
        (
            {"peak_flops_per_s": {}, "peak_bytes_per_s": {"dram": 1e10}},
            r"ci-runner.peak_flops_per_s: expected a mapping of precision to peak",
        ),
        (
            {"peak_flops_per_s": {"fp64": 1e10}, "peak_bytes_per_s": {"l2": 1e10}},
            r"ci-runner.peak_bytes_per_s: needs a 'dram' entry",
        ),
        (
            {"peak_flops_per_s": {"fp64": -4e10}, "peak_bytes_per_s": {"dram": 1e10}},
            r"ci-runner.peak_flops_per_s.fp64: peak must be positive and finite, "
            r"got -40000000000.0",
        ),
        (
            {"peak_flops_per_s": {"fp64": 0}, "peak_bytes_per_s": {"dram": 1e10}},
            r"peak_flops_per_s.fp64: peak must be positive",
        ),
        (
            {"peak_flops_per_s": {"fp64": 1e10}, "peak_bytes_per_s": {"dram": "1e400"}},
            r"peak_bytes_per_s.dram: peak must be positive and finite, got '1e400'",
        ),
        (
            {"peak_flops_per_s": {"fp64": True}, "peak_bytes_per_s": {"dram": 1e10}},
            r"peak_flops_per_s.fp64: expected a positive FLOP/s value like 4.0e10 or "
            r"'40 GFLOP/s', got True",
        ),
        (
            {"peak_flops_per_s": {"fp64": "nan"}, "peak_bytes_per_s": {"dram": 1e10}},
            r"peak_flops_per_s.fp64: cannot read 'nan' as a rate",
        ),
        (
            {"peak_flops_per_s": {"fp65": 1e10}, "peak_bytes_per_s": {"dram": 1e10}},
            r"peak_flops_per_s.fp65: unknown precision 'fp65'; valid: fp64, fp32",
        ),
        (
            {"peak_flops_per_s": {"fp64": 1e10}, "peak_bytes_per_s": {"dram": 1e10, "l3": 1e11}},
            r"peak_bytes_per_s.l3: unknown memory level 'l3'; valid: dram, llc, l2, l1",
        ),
        (
            {"peak_flops_per_s": {"fp64": "40 Gflop"}, "peak_bytes_per_s": {"dram": 1e10}},
            r"peak_flops_per_s.fp64: unknown unit 'Gflop' in '40 Gflop'; valid: FLOP/s, GFLOP/s",
        ),
        (
            {"peak_flops_per_s": {"fp64": 1e10}, "peak_bytes_per_s": {"dram": "20 Gb/s"}},
            r"peak_bytes_per_s.dram: unknown unit 'Gb/s'",
        ),
        (
            {
                "peak_flops_per_s": {"fp64": 1e10, "float64": 2e10},
                "peak_bytes_per_s": {"dram": 1e10},
            },
            r"peak_flops_per_s.float64: precision 'fp64' given twice",
        ),
        (
            {
                "peak_flops_per_s": {"fp64": 1e10},
                "peak_bytes_per_s": {"dram": 1e10},
                "description": 3,
            },
            r"ci-runner.description: expected a string",
        ),
    ],
)
def test_bad_config_targets_name_the_key_the_value_and_the_valid_form(
    mapping: object, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        target_from_mapping("ci-runner", mapping, where=WHERE)
    assert str(info.value).startswith(WHERE)


@pytest.mark.parametrize("name", ["auto", "host", "", "  "])
def test_reserved_or_empty_names_cannot_be_config_targets(name: str) -> None:
    spec = {"peak_flops_per_s": {"fp64": 1e10}, "peak_bytes_per_s": {"dram": 1e10}}
    with pytest.raises(ConfigError, match=r"reserved|non-empty"):
        target_from_mapping(name, spec, where=WHERE)


def test_parse_rate_reports_si_and_as_written() -> None:
    assert parse_rate("1_000 GB/s", "bytes", where="w") == (1e12, 1000.0, "GB/s")
    assert parse_rate(5, "flops", where="w") == (5.0, 5.0, "FLOP/s")
    assert parse_rate("2.5e+3 TOP/s", "flops", where="w")[0] == pytest.approx(2.5e15)


# --- device names and resolution ---------------------------------------------------------
@pytest.mark.parametrize(
    ("device", "preset"),
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("nvidia a100 sxm4 80gb", "a100-80gb-sxm"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("  NVIDIA  L40S ", "l40s"),
        ("AMD Instinct MI300X", "mi300x"),
        ("NVIDIA A100-SXM4-40GB", None),  # other bandwidth
        ("NVIDIA A100 80GB PCIe", None),
        ("NVIDIA H100 NVL", None),
        ("NVIDIA L40", None),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", None),  # a slice has a fraction of the peaks
        ("NVIDIA GeForce RTX 4090", None),
        ("", None),
    ],
)
def test_nvml_device_names_map_to_presets_only_when_the_peaks_are_the_same(
    device: str, preset: str | None
) -> None:
    assert preset_for_gpu_name(device) == preset


class HostCalls:
    def __init__(self) -> None:
        self.calls = 0
        self.target = HardwareTarget("host", {"fp64": 1e11}, {"dram": 2e10}, "measured")

    def __call__(self) -> HardwareTarget:
        self.calls += 1
        return self.target


CONFIG = {
    "ci-runner": target_from_mapping(
        "ci-runner",
        {"peak_flops_per_s": {"fp64": 4e10}, "peak_bytes_per_s": {"dram": 2e10}},
        where=WHERE,
    )
}


def test_auto_picks_the_gpu_preset_without_calibrating_the_host() -> None:
    host = HostCalls()
    target = resolve_target(
        "auto", config_targets=CONFIG, host=host, gpu_name=lambda: "NVIDIA H200"
    )
    assert target.name == "h200"
    assert host.calls == 0


@pytest.mark.parametrize("gpu", [None, "NVIDIA GeForce RTX 4090"])
def test_auto_without_a_known_gpu_measures_the_host(gpu: str | None) -> None:
    host = HostCalls()
    target = resolve_target("auto", config_targets=CONFIG, host=host, gpu_name=lambda: gpu)
    assert target is host.target
    assert host.calls == 1


def test_named_targets_resolve_config_first_then_presets() -> None:
    host = HostCalls()
    assert (
        resolve_target("host", config_targets={}, host=host, gpu_name=lambda: None) is host.target
    )
    assert (
        resolve_target("ci-runner", config_targets=CONFIG, host=host, gpu_name=lambda: None)
        is CONFIG["ci-runner"]
    )
    assert (
        resolve_target("l4", config_targets=CONFIG, host=host, gpu_name=lambda: None).name == "l4"
    )
    shadow = {"l4": CONFIG["ci-runner"]}
    assert (
        resolve_target("l4", config_targets=shadow, host=host, gpu_name=lambda: None)
        is CONFIG["ci-runner"]
    )
    assert host.calls == 1


def test_an_unknown_target_lists_every_known_name() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_target(
            "h300",
            config_targets=CONFIG,
            host=HostCalls(),
            gpu_name=lambda: None,
            where="--roofline-target",
        )
    message = str(info.value)
    assert message.startswith(
        "--roofline-target: unknown hardware target 'h300'; known: auto, host, ci-runner, "
    )
    for name in EXPECTED:
        assert name in message


# --- NVML --------------------------------------------------------------------------------
class FakeNvml(types.ModuleType):
    def __init__(self, name: object = "NVIDIA H200", fail: str = "") -> None:
        super().__init__("pynvml")
        self.name = name
        self.fail = fail
        self.handles: list[object] = []
        self.shutdown = 0

    def nvmlInit(self) -> None:
        if self.fail == "init":
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetHandleByIndex(self, index: int) -> object:
        self.handles.append(index)
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> object:
        self.handles.append(uuid)
        return uuid

    def nvmlDeviceGetName(self, handle: object) -> object:
        if self.fail == "name":
            raise RuntimeError("GPU is lost")
        return self.name

    def nvmlShutdown(self) -> None:
        self.shutdown += 1


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNvml]:
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    yield fake


def test_nvml_name_of_the_first_device(fake_nvml: FakeNvml) -> None:
    assert nvml_gpu_name() == "NVIDIA H200"
    assert fake_nvml.handles == [0]
    assert fake_nvml.shutdown == 1
    fake_nvml.name = b"NVIDIA L4"  # old bindings return bytes
    assert nvml_gpu_name() == "NVIDIA L4"


def test_nvml_follows_cuda_visible_devices(
    fake_nvml: FakeNvml, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert nvml_gpu_name() == "NVIDIA H200"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8a1b")
    assert nvml_gpu_name() == "NVIDIA H200"
    assert fake_nvml.handles == [3, "GPU-8a1b"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert nvml_gpu_name() is None


@pytest.mark.parametrize("fail", ["init", "name"])
def test_any_nvml_failure_means_no_gpu(fake_nvml: FakeNvml, fail: str) -> None:
    fake_nvml.fail = fail
    assert nvml_gpu_name() is None


def test_without_pynvml_there_is_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    assert nvml_gpu_name() is None


def test_all_peaks_are_finite_and_positive() -> None:
    for target in load_presets().values():
        for value in [*target.peak_flops_per_s.values(), *target.peak_bytes_per_s.values()]:
            assert value > 0 and math.isfinite(value)


def test_figures_measured_on_an_h200_sit_under_its_roofs_and_tf32_does_not() -> None:
    # torch 2.11 on an H200 (NVML name "NVIDIA H200"), 8192^3 matmuls and copies, median time.
    h200 = load_presets()[preset_for_gpu_name("NVIDIA H200") or ""]
    n = 8192

    def gemm(precision: str, itemsize: int, tflops: float):  # type: ignore[no-untyped-def]
        w = declared_work(2 * n**3, 3 * n * n * itemsize, precision, where="h200")
        return h200.place(w, 2 * n**3 / (tflops * T))

    for precision, itemsize, tflops, efficiency in [
        ("bf16", 2, 879.7, 0.89),
        ("fp32", 4, 50.8, 0.76),
        ("fp64", 8, 64.5, 0.96),  # above the 34 TFLOP/s vector figure: the roof is FP64 tensor
    ]:
        point = gemm(precision, itemsize, tflops)
        assert (point.bound, point.data_error) == ("compute", None)
        assert point.efficiency == pytest.approx(efficiency, abs=0.01)
    tf32 = gemm("fp32", 4, 445.8)  # allow_tf32=True but declared fp32
    assert tf32.data_error is not None and "faster precision than declared" in tf32.data_error
    big = h200.place(declared_work(0, 2**31, "fp32", where="h200"), 2**31 / 4.21e12)
    assert (big.bound, round(big.efficiency or 0, 2)) == ("memory", 0.88)
    small = h200.place(declared_work(0, 2**23, "fp32", where="h200"), 15.0e-6)
    assert small.bound == "overhead"  # 0.12 of the roof: launch latency dominates
