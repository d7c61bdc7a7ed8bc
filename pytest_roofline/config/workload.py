"""Workload slices: the reproducible inputs a performance test is measured on.

A slice group in ``roofline.yaml`` lists slices, and may take some from a trace: an entry
``{trace: PATH}`` stands for the slices in that JSON-lines file (one ``{name, params, tags}``
object a line; ``source`` ``production`` unless the entry says otherwise), so the shapes that
production saw are measured beside the synthetic ones and change when the trace does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from pytest_roofline.errors import ConfigError

__all__ = [
    "SLICE_SOURCES",
    "SliceSource",
    "WorkloadSlice",
    "parse_slice",
    "parse_slices",
    "trace_slices",
]

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


_TRACE_KEYS = ("trace", "source", "tags")


def trace_slices(
    entry: Mapping[str, object], *, where: str, base_dir: Path | None, group: str | None = None
) -> tuple[WorkloadSlice, ...]:
    """The slices a ``{trace: PATH, source: production, tags: [...]}`` entry stands for.

    ``PATH`` is a JSON-lines file, relative to ``base_dir`` (the config file's folder); each
    non-blank line is one slice ``{"name": ..., "params": {...}, "tags": [...]}``. The entry's
    ``source`` (default ``production``) and ``tags`` apply to every slice it yields.

    :raises ConfigError: for a missing or unreadable file, a line that is not a JSON object,
        or a slice that does not validate; the message names the file and the line.
    """
    unknown = sorted(set(map(str, entry)) - set(_TRACE_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown trace key(s) {unknown}; valid keys: {list(_TRACE_KEYS)}"
        )
    raw = entry.get("trace")
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{where}: 'trace' must be the path of a JSON-lines file, got {raw!r}")
    path = Path(raw)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the trace {path}: {exc.strerror or exc}") from None
    source = entry.get("source", "production")
    extra_tags = entry.get("tags", ())
    if isinstance(extra_tags, str) or not isinstance(extra_tags, Sequence):
        raise ConfigError(f"{where}: 'tags' must be a list of strings")
    slices = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        at = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{at}: not a JSON object ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ConfigError(f"{at}: expected a JSON object {{name, params, tags}}, got {line!r}")
        if "source" in record:
            raise ConfigError(f"{at}: a trace line takes no 'source'; set it on the trace entry")
        tags = record.get("tags", [])
        if isinstance(tags, list):
            record["tags"] = [*tags, *extra_tags]
        slices.append(parse_slice({**record, "source": source}, where=at, group=group))
    if not slices:
        raise ConfigError(f"{where}: the trace {path} holds no slices")
    return tuple(slices)


def parse_slices(
    value: object, *, where: str, group: str | None = None, base_dir: Path | None = None
) -> tuple[WorkloadSlice, ...]:
    """Validate a non-empty list of slices with unique names.

    An item ``{trace: PATH}`` expands to the slices of that trace (:func:`trace_slices`), read
    relative to ``base_dir``.
    """
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence) or not value:
        raise ConfigError(f"{where}: expected a non-empty list of slices, got {value!r}")
    slices = tuple(
        item_slice
        for index, item in enumerate(value)
        for item_slice in (
            trace_slices(item, where=f"{where}[{index}]", base_dir=base_dir, group=group)
            if isinstance(item, Mapping) and "trace" in item
            else (parse_slice(item, where=f"{where}[{index}]", group=group),)
        )
    )
    names = [s.name for s in slices]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{where}: slice names must be unique, repeated: {duplicates}")
    return slices
