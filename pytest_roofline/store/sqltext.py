"""Text in SQLite columns: UTF-8 text as text, anything else (lone surrogates) as its exact bytes."""

from __future__ import annotations

from pytest_roofline.text import is_utf8

__all__ = ["from_sql", "to_sql"]


def to_sql(text: str | None) -> str | bytes | None:
    """Text for a TEXT column: as is when it is UTF-8, else its exact bytes (surrogates kept)."""
    if text is None or is_utf8(text):
        return text
    return text.encode("utf-8", "surrogatepass")


def from_sql(value: object) -> str:
    """Text read back from a column written by :func:`to_sql`."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    return str(value)
