"""Preset targets (``presets.yaml``: vendor datasheet peaks with their sources) and how a target
name resolves: ``auto`` (the visible NVIDIA GPU's preset via NVML, else the host), ``host``, a
config target, or a preset.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import os
from collections.abc import Callable, Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal, cast

import yaml

from pytest_roofline.errors import ConfigError
from pytest_roofline.hardware.target import (
    RESERVED_TARGET_NAMES,
    HardwareTarget,
    Provenance,
    parse_rate,
)
from pytest_roofline.vocabulary import MEMORY_LEVELS, PRECISIONS

__all__ = ["load_presets", "nvml_gpu_name", "preset_for_gpu_name", "resolve_target"]

_PRESETS_FILE = "pytest_roofline/hardware/presets.yaml"


def _normalize_device_name(name: str) -> str:
    return " ".join(name.replace("-", " ").replace("_", " ").split()).casefold()


def _preset_entry(
    raw: object,
    *,
    kind: Literal["flops", "bytes"],
    where: str,
    sources: Mapping[str, tuple[str, str]],
    sparse: bool,
) -> tuple[float, Provenance]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected {{value, unit, source[, note]}}, got {raw!r}")
    extra = set(map(str, raw)) - {"value", "unit", "source", "note"}
    if extra:
        raise ConfigError(
            f"{where}: unknown key(s) {sorted(extra)}; valid: value, unit, source, note"
        )
    source_id = raw.get("source")
    if source_id not in sources:
        raise ConfigError(
            f"{where}.source: unknown source {source_id!r}; defined: {sorted(sources)}"
        )
    citation, retrieved = sources[str(source_id)]
    value = raw.get("value")
    unit = raw.get("unit")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{where}.value: expected a number, got {value!r}")
    if not isinstance(unit, str):
        raise ConfigError(f"{where}.unit: expected a unit string such as 'TFLOP/s', got {unit!r}")
    si_value, as_written, unit_written = parse_rate(f"{value!r} {unit}", kind, where=where)
    note = raw.get("note", "")
    return si_value, Provenance(
        value=as_written,
        unit=unit_written,
        sparse=sparse,
        source=citation,
        date=retrieved,
        note=str(note),
    )


def _parse_presets(
    document: object, where: str
) -> dict[str, tuple[HardwareTarget, tuple[str, ...]]]:
    """Validate the presets file; returns name -> (target, normalised device names)."""
    if not isinstance(document, Mapping) or document.get("schema_version") != 1:
        raise ConfigError(f"{where}: expected a mapping with schema_version: 1")
    raw_sources = document.get("sources")
    raw_presets = document.get("presets")
    if not isinstance(raw_sources, Mapping) or not isinstance(raw_presets, Mapping):
        raise ConfigError(f"{where}: expected 'sources' and 'presets' mappings")
    sources: dict[str, tuple[str, str]] = {}
    for source_id, entry in raw_sources.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("citation"), str):
            raise ConfigError(f"{where}: sources.{source_id}: expected {{citation, retrieved}}")
        sources[str(source_id)] = (str(entry["citation"]), str(entry.get("retrieved", "")))

    presets: dict[str, tuple[HardwareTarget, tuple[str, ...]]] = {}
    for name, spec in raw_presets.items():
        base = f"{where}: presets.{name}"
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{base}: expected a mapping")
        extra = set(map(str, spec)) - {
            "description",
            "device_names",
            "flops",
            "sparse_flops",
            "bytes",
        }
        if extra:
            raise ConfigError(f"{base}: unknown key(s) {sorted(extra)}")
        tables: dict[str, dict[str, float]] = {"flops": {}, "sparse_flops": {}, "bytes": {}}
        provenance: dict[str, Provenance] = {}
        for section, kind in (("flops", "flops"), ("sparse_flops", "flops"), ("bytes", "bytes")):
            entries = spec.get(section) or {}
            if not isinstance(entries, Mapping):
                raise ConfigError(f"{base}.{section}: expected a mapping")
            for key, raw in entries.items():
                key_where = f"{base}.{section}.{key}"
                valid = PRECISIONS if kind == "flops" else MEMORY_LEVELS
                if key not in valid:
                    raise ConfigError(
                        f"{key_where}: unknown key {key!r}; valid: {', '.join(valid)}"
                    )
                value, prov = _preset_entry(
                    raw,
                    kind=cast(Literal["flops", "bytes"], kind),
                    where=key_where,
                    sources=sources,
                    sparse=section == "sparse_flops",
                )
                tables[section][str(key)] = value
                provenance[f"{section}.{key}"] = prov
        device_names = spec.get("device_names") or []
        if not isinstance(device_names, list) or not all(isinstance(d, str) for d in device_names):
            raise ConfigError(f"{base}.device_names: expected a list of strings")
        try:
            target = HardwareTarget(
                name=str(name),
                peak_flops_per_s=tables["flops"],
                peak_bytes_per_s=tables["bytes"],
                source="preset",
                provenance=provenance,
                sparse_peak_flops_per_s=tables["sparse_flops"],
                description=str(spec.get("description", "")),
            )
        except ValueError as exc:
            raise ConfigError(f"{base}: {exc}") from None
        presets[str(name)] = (target, tuple(_normalize_device_name(d) for d in device_names))
    return presets


@functools.cache
def _presets_with_names() -> Mapping[str, tuple[HardwareTarget, tuple[str, ...]]]:
    text = resources.files("pytest_roofline.hardware").joinpath("presets.yaml").read_text("utf-8")
    # libyaml's loader where PyYAML has it: the pure-Python one took 56 ms for this file against
    # 6 ms (docs/validation/ab_fixed_costs_stop37.txt), in every run that shows the platform matrix.
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return MappingProxyType(_parse_presets(yaml.load(text, Loader=loader), _PRESETS_FILE))


def load_presets() -> Mapping[str, HardwareTarget]:
    """Return the preset targets from ``hardware/presets.yaml``, by name (read once, cached).

    :raises ConfigError: if the packaged file is malformed (a packaging bug).
    """
    return MappingProxyType({name: entry[0] for name, entry in _presets_with_names().items()})


def preset_for_gpu_name(device_name: str) -> str | None:
    """Map a device name as NVML reports it (``"NVIDIA H100 80GB HBM3"``) to a preset name.

    Matching is exact after folding case, dashes and spaces, so a variant with other peaks
    (``"NVIDIA A100-SXM4-40GB"``, ``"NVIDIA H100 NVL"``, a MIG slice) maps to no preset
    rather than to a wrong one.

    :returns: the preset name, or ``None`` when no preset describes this device.
    """
    wanted = _normalize_device_name(device_name)
    for name, (_, device_names) in _presets_with_names().items():
        if wanted in device_names:
            return name
    return None


def resolve_target(
    name: str,
    *,
    config_targets: Mapping[str, HardwareTarget],
    host: Callable[[], HardwareTarget],
    gpu_name: Callable[[], str | None],
    where: str = "target",
) -> HardwareTarget:
    """Find the target that ``name`` selects.

    - ``"auto"``: the preset of the first visible GPU when :func:`preset_for_gpu_name` knows
      it, else ``host()``;
    - ``"host"``: ``host()`` (measured on this machine);
    - a config target name (config targets shadow presets of the same name);
    - a preset name.

    :param host: called only when the host target is needed (calibration takes seconds).
    :param gpu_name: returns the GPU's device name or ``None`` (e.g. :func:`nvml_gpu_name`).
    :param where: the source of ``name`` for error messages.
    :raises ConfigError: for an unknown name; the message lists every known name.
    """
    if name == "auto":
        device = gpu_name()
        preset = preset_for_gpu_name(device) if device else None
        return load_presets()[preset] if preset is not None else host()
    if name == "host":
        return host()
    if name in config_targets:
        return config_targets[name]
    presets = load_presets()
    if name in presets:
        return presets[name]
    known = [*RESERVED_TARGET_NAMES, *sorted(config_targets), *presets]
    raise ConfigError(f"{where}: unknown hardware target {name!r}; known: {', '.join(known)}")


def _nvml_handle(nvml: Any) -> Any:
    """The NVML handle of the first device this process would use (CUDA_VISIBLE_DEVICES)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return nvml.nvmlDeviceGetHandleByIndex(0)
    first = visible.split(",")[0].strip()
    if not first or first.startswith("-"):
        raise LookupError("no visible GPU")
    if first.isdigit():
        # CUDA orders devices fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, NVML by PCI
        # bus; on a machine of identical GPUs (the usual case) the name is the same either way.
        return nvml.nvmlDeviceGetHandleByIndex(int(first))
    # A UUID ("GPU-..." or a MIG slice "MIG-..."): a MIG slice's name carries "MIG" and so
    # maps to no full-GPU preset, which is right: it has a fraction of the peaks.
    return nvml.nvmlDeviceGetHandleByUUID(first)


def nvml_gpu_name() -> str | None:
    """The name NVML reports for the first visible NVIDIA GPU, or ``None``.

    Imports ``pynvml`` (package ``nvidia-ml-py``) lazily; any failure (not installed, no driver,
    no GPU, ``CUDA_VISIBLE_DEVICES`` empty) gives ``None``.
    """
    try:
        import pynvml
    except Exception:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        name = pynvml.nvmlDeviceGetName(_nvml_handle(pynvml))
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
