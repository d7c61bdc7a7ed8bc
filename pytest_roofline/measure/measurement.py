"""The record of one measured test, as it travels from the worker to the store."""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from pytest_roofline.errors import ConfigError
from pytest_roofline.measure.counters import CounterReading
from pytest_roofline.measure.hostwatch import HostRecord
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.measure.soak import SoakMeasurement
from pytest_roofline.roofline import DeclaredWork

__all__ = [
    "MEASUREMENT_SCHEMA_VERSION",
    "Measurement",
    "QualityRecord",
    "decode_samples",
    "encode_samples",
]

MEASUREMENT_SCHEMA_VERSION = 1


def encode_samples(samples: np.ndarray) -> str:
    """Samples as base64 little-endian float64: exact and about 4x smaller than a JSON list."""
    return base64.b64encode(np.ascontiguousarray(samples, dtype="<f8").tobytes()).decode("ascii")


def decode_samples(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f8").astype(np.float64)


@dataclass(frozen=True, slots=True)
class QualityRecord:
    """A numerical-quality value reported by the test (error norms, accuracy), to guard precision wins.

    ``tolerance`` is the absolute worsening, in the value's own unit, allowed against the baseline.
    """

    name: str
    value: float
    higher_is_better: bool
    tolerance: float | None = None

    @classmethod
    def validated(
        cls, name: object, value: object, higher_is_better: object, tolerance: object, *, where: str
    ) -> QualityRecord:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{where}: name must be a non-empty string, got {name!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ConfigError(f"{where}: value of {name!r} must be a real number, got {value!r}")
        if not math.isfinite(float(value)):
            raise ConfigError(f"{where}: value of {name!r} must be finite, got {value!r}")
        if not isinstance(higher_is_better, bool):
            raise ConfigError(
                f"{where}: higher_is_better must be True or False, got {higher_is_better!r}"
            )
        if tolerance is not None and (
            isinstance(tolerance, bool)
            or not isinstance(tolerance, (int, float))
            or not math.isfinite(tolerance)
            or tolerance < 0
        ):
            raise ConfigError(
                f"{where}: tolerance of {name!r} must be a finite absolute amount >= 0 or None, "
                f"got {tolerance!r}"
            )
        return cls(
            name, float(value), higher_is_better, None if tolerance is None else float(tolerance)
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "higher_is_better": self.higher_is_better,
            "tolerance": self.tolerance,
        }


@dataclass(frozen=True, slots=True, eq=False)
class Measurement:
    """Samples, declared work, quality records, counters and the host watch's record of one test.

    Schema version 1; ``host`` was added in 0.2.0 (absent in older stored results: ``None``),
    and ``soak`` (the soak's windows, ``--roofline-soak``) after it (absent: no soak).
    """

    samples: SampleSet
    declared: DeclaredWork | None
    quality: tuple[QualityRecord, ...]
    counters: CounterReading | None
    host: HostRecord | None = None
    soak: SoakMeasurement | None = None
    schema_version: int = MEASUREMENT_SCHEMA_VERSION

    @property
    def samples_s(self) -> np.ndarray:
        return self.samples.samples_s

    def to_dict(self, *, include_samples: bool = True) -> dict[str, Any]:
        sample_set = self.samples
        data: dict[str, Any] = {
            "schema_version": self.schema_version,
            "n_samples": int(sample_set.samples_s.size),
            "batch_size": sample_set.batch_size,
            "warmup_calls": sample_set.warmup_calls,
            "warmup_s": sample_set.warmup_s,
            "stop_reason": sample_set.stop_reason,
            "elapsed_s": sample_set.elapsed_s,
            "synced": sample_set.synced,
            "looks": list(sample_set.looks),
            "declared": self.declared.to_dict() if self.declared else None,
            "quality": {q.name: q.to_dict() for q in self.quality},
            "counters": self.counters.to_dict() if self.counters else None,
            "host": self.host.to_dict() if self.host else None,
        }
        if self.soak is not None:
            data["soak"] = self.soak.to_dict()
        if include_samples:
            data["samples_f64_b64"] = encode_samples(sample_set.samples_s)
        return data

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, samples_s: np.ndarray | None = None
    ) -> Measurement:
        version = data.get("schema_version")
        if version != MEASUREMENT_SCHEMA_VERSION:
            raise ConfigError(
                f"measurement schema_version {version!r} is not supported "
                f"(this pytest-roofline reads version {MEASUREMENT_SCHEMA_VERSION})"
            )
        if samples_s is None:
            samples_s = decode_samples(cast(str, data["samples_f64_b64"]))
        quality = tuple(
            QualityRecord(name, float(q["value"]), bool(q["higher_is_better"]), q.get("tolerance"))
            for name, q in cast(
                "Mapping[str, Mapping[str, Any]]", data.get("quality") or {}
            ).items()
        )
        declared = data.get("declared")
        counters = data.get("counters")
        host = data.get("host")
        soak = data.get("soak")
        return cls(
            samples=SampleSet(
                samples_s=samples_s,
                batch_size=int(data["batch_size"]),
                warmup_calls=int(data["warmup_calls"]),
                warmup_s=float(data["warmup_s"]),
                stop_reason=str(data["stop_reason"]),
                elapsed_s=float(data["elapsed_s"]),
                synced=bool(data["synced"]),
                looks=tuple(float(t) for t in data.get("looks") or ()),
            ),
            declared=DeclaredWork.from_dict(declared) if declared else None,
            quality=quality,
            counters=CounterReading.from_dict(counters) if counters else None,
            host=HostRecord.from_dict(host) if host else None,
            soak=SoakMeasurement.from_dict(soak) if isinstance(soak, Mapping) else None,
        )
