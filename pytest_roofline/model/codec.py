"""JSON for frozen dataclasses: one encoder and one decoder, driven by the field types.

Every record of the run document (:mod:`pytest_roofline.model.document`) derives from
:class:`Record`. Encoding writes each field under its own name (``NaN`` and infinities become
``null``: JSON has no such numbers). Decoding is the one place documents are read, and it is
lenient on purpose: a document saved by an older version lacks newer keys, and a hand-edited or
damaged one may hold a wrong type; a missing or unusable value takes the field's default, so a
report shows a gap ("n/a") instead of failing. Unknown keys (a newer writer) are ignored.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar, Union

__all__ = ["Record", "decode_value", "encode_value"]

R = TypeVar("R", bound="Record")


class _Missing:
    """The decoder's "no usable value here" (``None`` is a usable value)."""


_MISSING = _Missing()


def encode_value(value: Any) -> Any:
    """A JSON-ready copy of ``value`` (records, tuples, mappings, numbers)."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [encode_value(v) for v in value]
    raise TypeError(f"cannot encode {type(value).__name__} in a run document")


def _decode_scalar(tp: Any, value: Any) -> Any:
    if tp is bool:
        return value if isinstance(value, bool) else _MISSING
    if tp is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _MISSING
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
            return number if math.isfinite(number) else _MISSING
        return _MISSING
    if tp is str:
        if isinstance(value, str):
            return value
        # A number where text belongs (a node id written as 3) is still readable text.
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return _MISSING
    if tp is Any or tp is object:
        return value
    raise TypeError(f"run document: no decoder for field type {tp!r}")


def decode_value(tp: Any, value: Any) -> Any:
    """``value`` read as type ``tp``, or the private missing marker when it cannot be."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Union or origin is types.UnionType:
        if value is None:
            return None if type(None) in args else _MISSING
        for option in args:
            if option is type(None):
                continue
            decoded = decode_value(option, value)
            if decoded is not _MISSING:
                return decoded
        return None if type(None) in args else _MISSING
    if origin is Literal:
        return value if isinstance(value, (str, int)) and value in args else _MISSING
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            return _MISSING
        if len(args) == 2 and args[1] is Ellipsis:
            items = (decode_value(args[0], v) for v in value)
            return tuple(item for item in items if item is not _MISSING)
        if len(args) != len(value):
            return _MISSING
        fixed = tuple(decode_value(a, v) for a, v in zip(args, value, strict=True))
        return _MISSING if any(v is _MISSING for v in fixed) else fixed
    if origin is Mapping or origin is dict:
        if not isinstance(value, Mapping):
            return _MISSING
        decoded_items = ((str(k), decode_value(args[1], v)) for k, v in value.items())
        return {k: v for k, v in decoded_items if v is not _MISSING}
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_json(value) if isinstance(value, Mapping) else _MISSING
    return _decode_scalar(tp, value)


_FIELD_TYPES: dict[type, tuple[tuple[str, Any], ...]] = {}


def _field_types(cls: type) -> tuple[tuple[str, Any], ...]:
    """``(name, type)`` of each field of a record class, resolved once per class."""
    types_ = _FIELD_TYPES.get(cls)
    if types_ is None:
        hints = typing.get_type_hints(cls)
        types_ = tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))
        _FIELD_TYPES[cls] = types_
    return types_


class Record:
    """A frozen dataclass that writes and reads itself as JSON (see the module docstring).

    Subclasses add keys derived from their fields (kept in the JSON for its readers, never read
    back) by overriding :meth:`_derived`, and name in ``_OMIT_IF_NONE`` the keys that only some
    documents have (written only when set).
    """

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]
    _OMIT_IF_NONE: ClassVar[tuple[str, ...]] = ()

    def _derived(self) -> Mapping[str, Any]:
        return {}

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON-ready ``dict``."""
        out = {
            name: encode_value(value)
            for name, _ in _field_types(type(self))
            if (value := getattr(self, name)) is not None or name not in self._OMIT_IF_NONE
        }
        out.update({k: encode_value(v) for k, v in self._derived().items()})
        return out

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        """Read the record from JSON; missing or unusable values take the field's default."""
        values: dict[str, Any] = {}
        for name, tp in _field_types(cls):
            if name not in data:
                continue
            decoded = decode_value(tp, data[name])
            if decoded is not _MISSING:
                values[name] = decoded
        return cls(**values)
