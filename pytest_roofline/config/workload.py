"""Workload slices: the reproducible inputs a performance test is measured on."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from pytest_roofline.errors import ConfigError

__all__ = ["SLICE_SOURCES", "SliceSource", "WorkloadSlice", "parse_slice", "parse_slices"]

SliceSource = Literal["synthetic", "production"]
SLICE_SOURCES: tuple[SliceSource, ...] = ("synthetic", "production")
_SLICE_KEYS = ("name", "params", "source", "tags")
# Slice names end up in test ids and file names: keep them to characters that need no quoting.
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


@dataclass(frozen=True, slots=True)
class WorkloadSlice:
    """One reproducible workload a test is measured on (its name appears in the test id)."""

    name: str
    params: Mapping[str, object] = field(default_factory=dict)
    source: SliceSource = "synthetic"
    tags: tuple[str, ...] = ()
    group: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "params": dict(self.params),
            "source": self.source,
            "tags": list(self.tags),
            "group": self.group,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> WorkloadSlice:
        return parse_slice(data, where="stored slice", group=cast("str | None", data.get("group")))


def parse_slice(value: object, *, where: str, group: str | None = None) -> WorkloadSlice:
    """Validate one slice: a mapping ``{name, params, source, tags}`` or a bare name."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: a slice must be a mapping such as "
            f"{{name: small, params: {{n: 256}}, source: synthetic}} or a name, got {value!r}"
        )
    unknown = sorted(set(map(str, value)) - set(_SLICE_KEYS) - {"group"})
    if unknown:
        raise ConfigError(
            f"{where}: unknown slice key(s) {unknown}; valid keys: {list(_SLICE_KEYS)}"
        )
    name = value.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"{where}: slice 'name' must be a non-empty string of letters, digits and '_.+-', "
            f"got {name!r}"
        )
    params = value.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
        raise ConfigError(f"{where}: slice {name!r} 'params' must be a mapping with string keys")
    source = value.get("source", "synthetic")
    if source not in SLICE_SOURCES:
        raise ConfigError(
            f"{where}: slice {name!r} 'source' must be one of {list(SLICE_SOURCES)}, got {source!r}"
        )
    tags = value.get("tags", ())
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise ConfigError(f"{where}: slice {name!r} 'tags' must be a list of strings")
    if not all(isinstance(t, str) for t in tags):
        raise ConfigError(f"{where}: slice {name!r} 'tags' must be a list of strings")
    return WorkloadSlice(
        name=name,
        params=dict(params),
        source=cast(SliceSource, source),
        tags=tuple(cast("Sequence[str]", tags)),
        group=group,
    )


def parse_slices(
    value: object, *, where: str, group: str | None = None
) -> tuple[WorkloadSlice, ...]:
    """Validate a non-empty list of slices with unique names."""
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence) or not value:
        raise ConfigError(f"{where}: expected a non-empty list of slices, got {value!r}")
    slices = tuple(
        parse_slice(item, where=f"{where}[{index}]", group=group)
        for index, item in enumerate(value)
    )
    names = [s.name for s in slices]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{where}: slice names must be unique, repeated: {duplicates}")
    return slices
