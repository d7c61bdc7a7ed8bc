"""Declared work: what one call of a test does (FLOPs, bytes, precision), validated.

Pure (standard library only). FLOPs count a fused multiply-add as 2; bytes are the compulsory
traffic of one call to the memory level the roof is for. See :mod:`pytest_roofline.roofline`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_roofline.errors import ConfigError
from pytest_roofline.vocabulary import MEMORY_LEVELS, PRECISIONS

__all__ = [
    "DEFAULT_PRECISION",
    "LEVEL_ALIASES",
    "MEMORY_LEVELS",
    "PRECISIONS",
    "DeclaredWork",
    "declared_work",
    "normalize_memory_level",
    "normalize_precision",
    "work_change",
]


#: Precision used to place work declared without one: the default dtype of PyTorch and JAX and
#: the FP32 (non-tensor-core) GPU peak. numpy's default dtype is float64: declare ``"fp64"`` there.
DEFAULT_PRECISION = "fp32"

# Other names of main memory (GPU datasheets say HBM or GDDR).
LEVEL_ALIASES: Mapping[str, str] = {"hbm": "dram", "gddr": "dram"}

# Spellings users are likely to pass (numpy/torch dtype names): normalised to PRECISIONS.
_PRECISION_ALIASES: Mapping[str, str] = {
    "float64": "fp64",
    "double": "fp64",
    "f64": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "single": "fp32",
    "f32": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "i8": "int8",
    "float4": "fp4",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
}


def normalize_precision(precision: object, *, where: str) -> str:
    """Return the canonical precision name for ``precision``.

    Accepts the names in :data:`PRECISIONS` and common dtype spellings (``"float32"``,
    ``"bfloat16"``, ``"half"``, ...), case-insensitively.

    :param precision: the name to normalise.
    :param where: the source of the value, used in the error message.
    :raises ConfigError: when ``precision`` is not a string or not a known precision.
    """
    if not isinstance(precision, str):
        raise ConfigError(
            f"{where}: precision must be a string such as 'fp32', got {precision!r} "
            f"({type(precision).__name__}); valid: {', '.join(PRECISIONS)}"
        )
    key = precision.strip().lower().replace("-", "_")
    if key.startswith("torch.") or key.startswith("numpy."):
        key = key.split(".", 1)[1]
    if key in PRECISIONS:
        return key
    if key in _PRECISION_ALIASES:
        return _PRECISION_ALIASES[key]
    raise ConfigError(
        f"{where}: unknown precision {precision!r}; valid: {', '.join(PRECISIONS)} "
        "(dtype names such as 'float32' or 'bfloat16' are accepted too)"
    )


def _amount(value: object, name: str, where: str) -> float | None:
    """Validate one declared amount (FLOPs or bytes): None, or a finite number >= 0."""
    if value is None:
        return None
    # bool is an int subclass: ``flops=True`` is a bug, not one FLOP.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(
            f"{where}: {name} must be a number of {'FLOPs' if name == 'flops' else 'bytes'} "
            f"per call (e.g. {name}=2 * n**3), got {value!r} ({type(value).__name__})"
        )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if math.isnan(number) or math.isinf(number):
        raise ConfigError(f"{where}: {name} must be finite, got {value!r}")
    if number < 0:
        raise ConfigError(f"{where}: {name} must be >= 0, got {value!r}")
    return number


@dataclass(frozen=True, slots=True)
class DeclaredWork:
    """The work of ONE call of a measured function, as the test declares it.

    ``None`` means "not declared". FLOPs count an FMA as 2. ``precision`` is a canonical name
    from :data:`PRECISIONS`, or ``None`` when the test did not say (placement then uses
    :data:`DEFAULT_PRECISION` and says so in the point's ``note``). ``memory_level`` is the
    level the bytes are counted at and the roof they are placed against (a name from
    :data:`MEMORY_LEVELS`); ``None`` means main memory (``dram``).

    Build it with :func:`declared_work`, which validates and names the source of bad input.
    """

    flops: float | None = None
    bytes_moved: float | None = None
    precision: str | None = None
    memory_level: str | None = None

    def __post_init__(self) -> None:
        where = "DeclaredWork"
        object.__setattr__(self, "flops", _amount(self.flops, "flops", where))
        object.__setattr__(self, "bytes_moved", _amount(self.bytes_moved, "bytes_moved", where))
        if self.precision is not None:
            object.__setattr__(self, "precision", normalize_precision(self.precision, where=where))
        if self.memory_level is not None:
            object.__setattr__(
                self, "memory_level", normalize_memory_level(self.memory_level, where=where)
            )

    @property
    def declared(self) -> bool:
        """True when FLOPs or bytes (or both) are declared."""
        return self.flops is not None or self.bytes_moved is not None

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready mapping (``flops``, ``bytes_moved``, ``precision``, and
        ``memory_level`` when one other than main memory was declared)."""
        out: dict[str, object] = {
            "flops": self.flops,
            "bytes_moved": self.bytes_moved,
            "precision": self.precision,
        }
        if self.memory_level is not None:
            out["memory_level"] = self.memory_level
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object], *, where: str = "declared work") -> DeclaredWork:
        """Rebuild from :meth:`to_dict` output, validating it like :func:`declared_work`.

        :raises ConfigError: when a value is invalid; unknown keys are ignored (newer writers).
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping with flops, bytes_moved, precision")
        return declared_work(
            data.get("flops"),
            data.get("bytes_moved"),
            data.get("precision"),
            where=where,
            memory_level=data.get("memory_level"),
        )


def normalize_memory_level(level: object, *, where: str) -> str | None:
    """Return the canonical memory level for ``level`` (``hbm`` and ``gddr`` mean ``dram``).

    :raises ConfigError: when ``level`` is not one of :data:`MEMORY_LEVELS` (or an alias).
    """
    key = level.strip().lower() if isinstance(level, str) else None
    key = LEVEL_ALIASES.get(key, key) if key is not None else None
    if key not in MEMORY_LEVELS:
        raise ConfigError(
            f"{where}: memory_level must be one of {', '.join(MEMORY_LEVELS)} "
            f"(the level the declared bytes are counted at), got {level!r}"
        )
    return key


def declared_work(
    flops: object,
    bytes_moved: object,
    precision: object,
    *,
    where: str,
    memory_level: object = None,
) -> DeclaredWork:
    """Validate a declaration and return it as a :class:`DeclaredWork`.

    :param flops: FLOPs per call (FMA = 2), or ``None`` when not declared.
    :param bytes_moved: compulsory bytes per call to main memory, or ``None``.
    :param precision: a name from :data:`PRECISIONS` or a dtype spelling (``"float32"``), or
        ``None`` (placed against :data:`DEFAULT_PRECISION`, recorded as undeclared).
    :param memory_level: the level the bytes are counted at and placed against (``dram``,
        ``llc``, ``l2``, ``l1``), or ``None`` for main memory.
    :param where: the source, named in error messages, e.g.
        ``"test_x.py::test_gemm[small]: roofline.declare()"``.
    :raises ConfigError: for a negative, NaN, infinite, boolean or non-numeric amount, or an
        unknown precision; the message names ``where``, the bad value and the valid form.
    """
    return DeclaredWork(
        flops=_amount(flops, "flops", where),
        bytes_moved=_amount(bytes_moved, "bytes_moved", where),
        precision=None if precision is None else normalize_precision(precision, where=where),
        memory_level=None
        if memory_level is None
        else normalize_memory_level(memory_level, where=where),
    )


# Declared amounts are counts computed from sizes (often through floats): a relative difference
# below this is rounding, not another workload.
_SAME_AMOUNT = 1e-9


def work_change(
    baseline: DeclaredWork | None, candidate: DeclaredWork | None
) -> dict[str, tuple[float, float]]:
    """The amounts of one call's work declared on both sides that differ: ``{"flops" |
    "bytes_moved": (baseline, candidate)}``, empty when none does.

    Only amounts both sides declare are compared (declaring bytes where none were declared
    changes what is known, not the work). Bytes are compared only at the same declared
    precision: a precision change moves the byte count with the element size, and is judged as
    a precision change. FLOPs do not depend on the element size: a FLOP count that changed with
    the precision is another problem size.

    >>> work_change(DeclaredWork(bytes_moved=2e9, precision="fp64"),
    ...             DeclaredWork(bytes_moved=9.4e9, precision="fp64"))
    {'bytes_moved': (2000000000.0, 9400000000.0)}
    >>> work_change(DeclaredWork(bytes_moved=2e9, precision="fp64"),
    ...             DeclaredWork(bytes_moved=1e9, precision="fp32"))
    {}
    """
    if baseline is None or candidate is None:
        return {}
    same_precision = baseline.precision == candidate.precision
    changed: dict[str, tuple[float, float]] = {}
    for name in ("flops", "bytes_moved") if same_precision else ("flops",):
        base, cand = getattr(baseline, name), getattr(candidate, name)
        if base is None or cand is None:
            continue
        if abs(cand - base) > _SAME_AMOUNT * max(abs(base), abs(cand)):
            changed[name] = (base, cand)
    return changed
