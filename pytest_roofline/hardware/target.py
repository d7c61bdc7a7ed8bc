"""Hardware targets: the roofs a test is placed against, with the provenance of every number.

A :class:`HardwareTarget` holds dense peak FLOP/s per precision and peak bytes/s per memory
level. Targets come from three places (``source``): ``preset`` (``hardware/presets.yaml``, vendor
datasheets with source and retrieval date), ``config`` (``targets:`` in ``roofline.yaml``) and
``measured`` (host calibration, :mod:`pytest_roofline.hardware.calibration`).

Never imports pytest. Errors in user input raise :class:`~pytest_roofline.errors.ConfigError`
with the source, the bad value and the valid form.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast, get_args

from pytest_roofline import roofline
from pytest_roofline.errors import ConfigError
from pytest_roofline.roofline import MEMORY_LEVELS, PRECISIONS, DeclaredWork, RooflinePoint
from pytest_roofline.roofline.work import LEVEL_ALIASES

__all__ = [
    "RESERVED_TARGET_NAMES",
    "HardwareTarget",
    "Provenance",
    "TargetSource",
    "parse_rate",
    "target_from_mapping",
]

TargetSource = Literal["preset", "config", "measured"]
_SOURCES: tuple[str, ...] = get_args(TargetSource)

#: Names that select how the target is found; config targets cannot use them.
RESERVED_TARGET_NAMES: tuple[str, ...] = ("auto", "host")

# Unit -> factor to SI. FLOP/s and OP/s (integer precisions) share the scale; "FLOPS" spellings
# are accepted because datasheets print them. Bytes are decimal (GB = 1e9) unless binary (GiB).
_FLOP_UNITS: Mapping[str, float] = {
    f"{prefix}{base}": scale
    for prefix, scale in (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15))
    for base in ("FLOP/s", "FLOPS", "OP/s", "OPS")
}
_BYTE_UNITS: Mapping[str, float] = {
    "B/s": 1.0,
    "kB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "TB/s": 1e12,
    "KiB/s": 2.0**10,
    "MiB/s": 2.0**20,
    "GiB/s": 2.0**30,
    "TiB/s": 2.0**40,
}
_CONFIG_KEYS = ("peak_flops_per_s", "peak_bytes_per_s", "sparse_peak_flops_per_s", "description")
_NUMBER_WITH_UNIT = re.compile(r"^\s*([-+]?[0-9][0-9_]*\.?[0-9_]*(?:[eE][-+]?[0-9]+)?)\s*(\S*)\s*$")


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where one peak figure comes from.

    ``value`` and ``unit`` are as the source states them (e.g. ``989.4`` ``"TFLOP/s"``); the
    target's peak maps hold the same figure in SI units. ``date`` is when the source was
    retrieved or the measurement taken (ISO date; empty when unknown). ``array_bytes``: for a
    measured bandwidth roof, the bytes per array it was measured on (a kernel meant for the
    same level can size its working set alike); ``None`` otherwise.
    """

    value: float
    unit: str
    sparse: bool
    source: str
    date: str
    note: str = ""
    array_bytes: int | None = None

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping (``array_bytes`` only when known)."""
        out: dict[str, object] = {
            "value": self.value,
            "unit": self.unit,
            "sparse": self.sparse,
            "source": self.source,
            "date": self.date,
            "note": self.note,
        }
        if self.array_bytes is not None:
            out["array_bytes"] = self.array_bytes
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object], *, where: str = "provenance") -> Provenance:
        """Rebuild from :meth:`to_dict` output.

        :raises ConfigError: when a field is missing or of the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
        value = data.get("value")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"{where}.value: expected a number, got {value!r}")
        return cls(
            value=float(value),
            unit=str(data.get("unit", "")),
            sparse=bool(data.get("sparse", False)),
            source=str(data.get("source", "")),
            date=str(data.get("date", "")),
            note=str(data.get("note", "")),
            array_bytes=_array_bytes(data.get("array_bytes"), where=f"{where}.array_bytes"),
        )


def _array_bytes(value: object, *, where: str) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (value > 0 and float(value).is_integer())
    ):
        raise ConfigError(f"{where}: expected a positive whole number of bytes, got {value!r}")
    return int(value)


def _check_peaks(peaks: Mapping[str, float], valid: tuple[str, ...], what: str, name: str) -> None:
    for key, value in peaks.items():
        if key not in valid:
            raise ValueError(f"hardware target {name!r}: unknown {what} {key!r}; valid: {valid}")
        if isinstance(value, bool) or not (
            isinstance(value, numbers.Real) and value > 0 and math.isfinite(value)
        ):
            raise ValueError(
                f"hardware target {name!r}: peak for {key!r} must be positive, got {value!r}"
            )


@dataclass(frozen=True, slots=True)
class HardwareTarget:
    """The roofs of one piece of hardware.

    :ivar name: preset or config name, or ``"host"`` for a measured target.
    :ivar peak_flops_per_s: precision → DENSE peak FLOP/s (OP/s for ``int8``).
    :ivar peak_bytes_per_s: memory level → peak bytes/s; ``"dram"`` (main memory, HBM/GDDR on
        GPUs) is always present.
    :ivar source: ``"preset"``, ``"config"`` or ``"measured"``.
    :ivar provenance: ``"flops.<precision>"``, ``"bytes.<level>"``,
        ``"sparse_flops.<precision>"`` (and for measured targets ``"dispatch_floor"``) →
        :class:`Provenance`.
    :ivar sparse_peak_flops_per_s: structured-sparsity peaks, kept for reference and never
        used as a roof.
    :ivar description: one line for humans.
    """

    name: str
    peak_flops_per_s: Mapping[str, float]
    peak_bytes_per_s: Mapping[str, float]
    source: TargetSource
    provenance: Mapping[str, Provenance] = field(default_factory=dict)
    sparse_peak_flops_per_s: Mapping[str, float] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        # Copies, so a caller's dict changing later cannot change a frozen target. Plain dicts
        # (not MappingProxyType) keep targets picklable for multiprocessing and xdist.
        for attr in ("peak_flops_per_s", "peak_bytes_per_s", "sparse_peak_flops_per_s"):
            object.__setattr__(
                self, attr, {str(k): float(v) for k, v in getattr(self, attr).items()}
            )
        object.__setattr__(self, "provenance", dict(self.provenance))
        if not self.name:
            raise ValueError("hardware target: name must not be empty")
        if self.source not in _SOURCES:
            raise ValueError(f"hardware target {self.name!r}: source must be one of {_SOURCES}")
        _check_peaks(self.peak_flops_per_s, PRECISIONS, "precision", self.name)
        _check_peaks(self.sparse_peak_flops_per_s, PRECISIONS, "precision", self.name)
        _check_peaks(self.peak_bytes_per_s, MEMORY_LEVELS, "memory level", self.name)
        if "dram" not in self.peak_bytes_per_s:
            raise ValueError(f"hardware target {self.name!r}: peak_bytes_per_s needs 'dram'")

    def _peak_flops(self, precision: str) -> float:
        canonical = roofline.normalize_precision(precision, where=f"target {self.name!r}")
        try:
            return self.peak_flops_per_s[canonical]
        except KeyError:
            raise ConfigError(
                f"target {self.name!r} has no {canonical} compute roof; it has: "
                f"{', '.join(self.peak_flops_per_s)}"
            ) from None

    def _peak_bytes(self, level: str) -> float:
        try:
            return self.peak_bytes_per_s[LEVEL_ALIASES.get(level, level)]
        except KeyError:
            raise ConfigError(
                f"target {self.name!r} has no {level!r} bandwidth roof; it has: "
                f"{', '.join(self.peak_bytes_per_s)}"
            ) from None

    def ridge(self, precision: str, level: str = "dram") -> float:
        """Ridge point (FLOP/byte) of ``precision`` against memory ``level``.

        :raises ConfigError: when the target has no peak for ``precision`` or ``level``.
        """
        return roofline.ridge(self._peak_flops(precision), self._peak_bytes(level))

    def attainable(self, intensity: float, precision: str, level: str = "dram") -> float:
        """Attainable FLOP/s at ``intensity`` (FLOP/byte) for ``precision`` and memory ``level``.

        :raises ConfigError: when the target has no peak for ``precision`` or ``level``.
        """
        return roofline.attainable(intensity, self._peak_flops(precision), self._peak_bytes(level))

    def place(
        self,
        work: DeclaredWork,
        seconds_per_call: float,
        *,
        memory_level: str | None = None,
        ridge_margin: float = roofline.DEFAULT_RIDGE_MARGIN,
        overhead_efficiency: float = roofline.DEFAULT_OVERHEAD_EFFICIENCY,
        roof_tolerance: float = roofline.DEFAULT_ROOF_TOLERANCE,
    ) -> RooflinePoint:
        """Place ``work`` taking ``seconds_per_call`` on this target (see :func:`roofline.place`).

        The compute roof is the dense peak of the work's precision (``fp32`` when undeclared);
        the bandwidth roof is that of ``memory_level``, else the level the work declares, else
        ``dram``.
        A precision or memory level this target has no peak for gives the class ``unknown``
        with a note naming what the target has (e.g. ``fp64`` on ``tpu-v5e``); it is not a
        data error, since the measurement itself contradicts nothing.
        """
        precision = work.precision or roofline.DEFAULT_PRECISION
        chosen = memory_level or work.memory_level or "dram"
        level = LEVEL_ALIASES.get(chosen, chosen)
        peak_f = self.peak_flops_per_s.get(precision)
        peak_b = self.peak_bytes_per_s.get(level)
        point = roofline.place(
            work,
            seconds_per_call,
            peak_flops_per_s=peak_f,
            peak_bytes_per_s=peak_b,
            memory_level=level,
            ridge_margin=ridge_margin,
            overhead_efficiency=overhead_efficiency,
            roof_tolerance=roof_tolerance,
        )
        if point.note is None or (peak_f is not None and peak_b is not None):
            return point
        # Name the target and what it does have, so "unknown" explains itself.
        note = point.note.replace(
            f"no {precision} compute roof on this target",
            f"target {self.name!r} has no {precision} compute roof "
            f"(it has {', '.join(self.peak_flops_per_s)})",
        ).replace(
            f"no {level} bandwidth roof on this target",
            f"target {self.name!r} has no {level} bandwidth roof "
            f"(it has {', '.join(self.peak_bytes_per_s)})",
        )
        return dataclasses.replace(point, note=note)

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping (what :meth:`from_dict` reads)."""
        return {
            "name": self.name,
            "source": self.source,
            "description": self.description,
            "peak_flops_per_s": dict(self.peak_flops_per_s),
            "peak_bytes_per_s": dict(self.peak_bytes_per_s),
            "sparse_peak_flops_per_s": dict(self.sparse_peak_flops_per_s),
            "provenance": {key: p.to_dict() for key, p in self.provenance.items()},
        }

    @classmethod
    def from_dict(
        cls, data: Mapping[str, object], *, where: str = "hardware target record"
    ) -> HardwareTarget:
        """Rebuild from :meth:`to_dict` output.

        :raises ConfigError: when the record is malformed (names ``where`` and the field).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
        name = data.get("name")
        source = data.get("source")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}.name: expected a non-empty string, got {name!r}")
        if source not in _SOURCES:
            raise ConfigError(f"{where}.source: expected one of {list(_SOURCES)}, got {source!r}")
        raw_provenance = data.get("provenance") or {}
        if not isinstance(raw_provenance, Mapping):
            raise ConfigError(f"{where}.provenance: expected a mapping")
        try:
            return cls(
                name=name,
                source=cast(TargetSource, source),
                description=str(data.get("description") or ""),
                peak_flops_per_s=_number_map(
                    data.get("peak_flops_per_s"), f"{where}.peak_flops_per_s"
                ),
                peak_bytes_per_s=_number_map(
                    data.get("peak_bytes_per_s"), f"{where}.peak_bytes_per_s"
                ),
                sparse_peak_flops_per_s=_number_map(
                    data.get("sparse_peak_flops_per_s") or {}, f"{where}.sparse_peak_flops_per_s"
                ),
                provenance={
                    str(key): Provenance.from_dict(value, where=f"{where}.provenance.{key}")
                    for key, value in raw_provenance.items()
                },
            )
        except ValueError as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{where}: {exc}") from None


def _number_map(raw: object, where: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping of name to number, got {raw!r}")
    out: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"{where}.{key}: expected a number, got {value!r}")
        out[str(key)] = float(value)
    return out


def parse_rate(
    raw: object, kind: Literal["flops", "bytes"], *, where: str
) -> tuple[float, float, str]:
    """Parse a peak rate given as a number (SI) or a string ``"<number> [unit]"``.

    Numbers may be strings because PyYAML reads ``4.0e10`` (no sign in the exponent) as a
    string. Units: ``FLOP/s``, ``GFLOP/s``, ``TFLOP/s``, ``PFLOP/s`` (also ``TFLOPS`` and
    ``OP/s`` spellings) for compute; ``B/s``, ``MB/s``, ``GB/s``, ``TB/s``, ``GiB/s``,
    ``TiB/s`` for bandwidth (B = bytes).

    :returns: ``(si_value, value_as_written, unit_as_written)``.
    :raises ConfigError: for anything else, or a value that is not positive and finite.
    """
    units = _FLOP_UNITS if kind == "flops" else _BYTE_UNITS
    si_unit = "FLOP/s" if kind == "flops" else "B/s"
    example = "4.0e10 or '40 GFLOP/s'" if kind == "flops" else "2.0e10 or '20 GB/s'"
    if isinstance(raw, bool):
        raise ConfigError(
            f"{where}: expected a positive {si_unit} value like {example}, got {raw!r}"
        )
    if isinstance(raw, numbers.Real):
        value, unit = float(raw), si_unit
    elif isinstance(raw, str):
        match = _NUMBER_WITH_UNIT.match(raw)
        if match is None:
            raise ConfigError(
                f"{where}: cannot read {raw!r} as a rate; expected a number in {si_unit} or "
                f"'<number> <unit>', e.g. {example}"
            )
        value = float(match.group(1).replace("_", ""))
        unit = match.group(2) or si_unit
        if unit not in units:
            valid = (
                sorted(units, key=lambda u: units[u])
                if kind == "bytes"
                else ["FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "TOP/s"]
            )
            raise ConfigError(
                f"{where}: unknown unit {unit!r} in {raw!r}; valid: {', '.join(valid)}"
            )
    else:
        raise ConfigError(
            f"{where}: expected a positive {si_unit} value like {example}, got {raw!r} "
            f"({type(raw).__name__})"
        )
    # Rounded to 15 significant digits so 2.039 TB/s is 2.039e12, not 2.0390000000000002e12.
    si_value = float(f"{value * units[unit]:.15g}")
    if not (si_value > 0 and math.isfinite(si_value)):
        raise ConfigError(f"{where}: peak must be positive and finite, got {raw!r}")
    return si_value, value, unit


def _peak_table(
    raw: object,
    *,
    kind: Literal["flops", "bytes"],
    where: str,
    required: bool,
) -> dict[str, tuple[float, float, str]]:
    """Validate a ``{precision|level: rate}`` mapping; keys canonicalised."""
    if raw is None and not required:
        return {}
    what = "precision" if kind == "flops" else "memory level"
    valid = PRECISIONS if kind == "flops" else MEMORY_LEVELS
    if not isinstance(raw, Mapping) or (required and not raw):
        example = "{fp64: 4.0e10, fp32: 8.0e10}" if kind == "flops" else "{dram: 2.0e10}"
        raise ConfigError(
            f"{where}: expected a mapping of {what} to peak, e.g. {example}; got {raw!r}"
        )
    out: dict[str, tuple[float, float, str]] = {}
    for key, value in raw.items():
        key_where = f"{where}.{key}"
        if kind == "flops":
            canonical = roofline.normalize_precision(key, where=key_where)
        else:
            name = str(key).strip().lower()
            canonical = LEVEL_ALIASES.get(name, name)
            if canonical not in valid:
                raise ConfigError(
                    f"{key_where}: unknown memory level {key!r}; valid: {', '.join(valid)} "
                    "(dram = main memory, HBM/GDDR on GPUs)"
                )
        if canonical in out:
            raise ConfigError(f"{key_where}: {what} {canonical!r} given twice")
        out[canonical] = parse_rate(value, kind, where=key_where)
    if kind == "bytes" and required and "dram" not in out:
        raise ConfigError(
            f"{where}: needs a 'dram' entry (main memory bandwidth, the default roof), e.g. "
            "{dram: 2.0e10}"
        )
    return out


def target_from_mapping(name: str, mapping: object, *, where: str) -> HardwareTarget:
    """Build a config target from its ``roofline.yaml`` form.

    Form (rates in SI units, or strings with a unit)::

        ci-runner:
          peak_flops_per_s: {fp64: 4.0e10, fp32: 8.0e10}   # dense; FMA = 2 FLOPs
          peak_bytes_per_s: {dram: 2.0e10, llc: 6.0e10}     # dram required
          sparse_peak_flops_per_s: {bf16: ...}              # optional, never a roof
          description: "GitHub runner, 4 vCPU"              # optional

    :param name: the target's name (not ``auto`` or ``host``).
    :param mapping: the parsed YAML value.
    :param where: the source, e.g. ``"roofline.yaml: targets.ci-runner"``.
    :raises ConfigError: for unknown keys, missing roofs, unknown precisions or levels, and
        non-positive or unreadable rates; the message names ``where`` and the key.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: target name must be a non-empty string, got {name!r}")
    if name in RESERVED_TARGET_NAMES:
        raise ConfigError(
            f"{where}: {name!r} is reserved ({', '.join(RESERVED_TARGET_NAMES)} select how the "
            "target is found); choose another name"
        )
    if not isinstance(mapping, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping like {{peak_flops_per_s: {{fp64: 4.0e10}}, "
            f"peak_bytes_per_s: {{dram: 2.0e10}}}}, got {mapping!r}"
        )
    unknown = [str(k) for k in mapping if k not in _CONFIG_KEYS]
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
            f"valid: {', '.join(_CONFIG_KEYS)}"
        )
    for required in ("peak_flops_per_s", "peak_bytes_per_s"):
        if required not in mapping:
            raise ConfigError(
                f"{where}: missing {required} (e.g. {required}: "
                f"{'{fp64: 4.0e10}' if 'flops' in required else '{dram: 2.0e10}'})"
            )
    description = mapping.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{where}.description: expected a string, got {description!r}")
    flops = _peak_table(
        mapping["peak_flops_per_s"], kind="flops", where=f"{where}.peak_flops_per_s", required=True
    )
    sparse = _peak_table(
        mapping.get("sparse_peak_flops_per_s"),
        kind="flops",
        where=f"{where}.sparse_peak_flops_per_s",
        required=False,
    )
    levels = _peak_table(
        mapping["peak_bytes_per_s"], kind="bytes", where=f"{where}.peak_bytes_per_s", required=True
    )

    provenance: dict[str, Provenance] = {}
    for prefix, table, field_name, is_sparse in (
        ("flops", flops, "peak_flops_per_s", False),
        ("sparse_flops", sparse, "sparse_peak_flops_per_s", True),
        ("bytes", levels, "peak_bytes_per_s", False),
    ):
        for key, (_, as_written, unit) in table.items():
            provenance[f"{prefix}.{key}"] = Provenance(
                value=as_written,
                unit=unit,
                sparse=is_sparse,
                source=f"{where}.{field_name}.{key}",
                date="",
            )
    return HardwareTarget(
        name=name,
        peak_flops_per_s={k: v[0] for k, v in flops.items()},
        peak_bytes_per_s={k: v[0] for k, v in levels.items()},
        source="config",
        provenance=provenance,
        sparse_peak_flops_per_s={k: v[0] for k, v in sparse.items()},
        description=description or f"config target from {where}",
    )
