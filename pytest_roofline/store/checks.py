"""What a stored or imported run must hold: checked field by field, naming the field.

A run that breaks these rules breaks every later run that reads it (NaN samples poison the
statistics, a timestamp of 1e300 cannot be shown as a date, a tags column that is not a JSON
mapping cannot be compared), so :meth:`Store.import_run <pytest_roofline.store.Store.import_run>`
refuses such a run before writing anything, and reading one back from a damaged store makes that
run (and only that run) unusable, with a message naming the run and the row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pytest_roofline.errors import StoreError
from pytest_roofline.store.records import RunRecord, StoredResult
from pytest_roofline.store.summary_only import is_summary_only
from pytest_roofline.text import is_utf8, shown

__all__ = [
    "LATEST_TIMESTAMP",
    "check_json_mapping",
    "check_samples",
    "check_tags",
    "check_text",
    "check_timestamp",
    "decode_json_mapping",
    "parse_export",
    "samples_from_blob",
]

# 9999-12-31 23:59:59 UTC: the last moment ``datetime`` can show.
LATEST_TIMESTAMP = 253_402_300_799.0


def check_timestamp(value: object, *, where: str) -> float:
    """A time in seconds since the epoch that a date can show."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StoreError(f"{where}: expected a time in seconds since 1970, got {value!r}")
    seconds = float(value)
    if not math.isfinite(seconds) or not 0 <= seconds <= LATEST_TIMESTAMP:
        raise StoreError(
            f"{where}: {value!r} is not a time (seconds since 1970, before the year 10000)"
        )
    return seconds


def check_samples(samples: np.ndarray, *, where: str, summary_only: bool = False) -> np.ndarray:
    """Per-call times in seconds: at least one, each finite and not negative.

    :param summary_only: the result is summary-only (:mod:`~.summary_only`): no samples is right.
    """
    if summary_only and samples.ndim == 1 and samples.size == 0:
        return samples
    if samples.ndim != 1 or samples.size == 0:
        raise StoreError(f"{where}: no samples (a measured test has at least one)")
    bad = ~np.isfinite(samples) | (samples < 0)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise StoreError(
            f"{where}: sample {index} is {samples[index]!r}; samples are finite, non-negative "
            "times in seconds"
        )
    return samples


def samples_from_blob(blob: object, *, where: str, summary_only: bool = False) -> np.ndarray:
    """The samples of a stored row: little-endian float64, checked."""
    if not isinstance(blob, bytes) or len(blob) % 8:
        size = len(blob) if isinstance(blob, (bytes, str)) else type(blob).__name__
        raise StoreError(
            f"{where}: the samples are not a whole number of float64 values ({size} bytes)"
        )
    return check_samples(
        np.frombuffer(blob, dtype="<f8").astype(np.float64), where=where, summary_only=summary_only
    )


def _non_finite(value: object, path: str) -> str | None:
    """The path of the first NaN or infinity inside a JSON value, or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _non_finite(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _non_finite(item, f"{path}[{i}]")
            if found:
                return found
    return None


def check_json_mapping(value: object, *, where: str) -> dict[str, Any]:
    """A JSON object with finite numbers only (it is stored with ``allow_nan=False``)."""
    if not isinstance(value, Mapping):
        raise StoreError(f"{where}: expected a JSON object, got {type(value).__name__}")
    found = _non_finite(value, where)
    if found is not None:
        raise StoreError(f"{found}: NaN and infinity are not numbers JSON can hold")
    return dict(value)


def decode_json_mapping(text: object, *, where: str) -> dict[str, Any]:
    """A stored JSON column that must hold an object."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    if not isinstance(text, str):
        raise StoreError(f"{where}: expected JSON text, got {type(text).__name__}")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"{where}: not JSON ({exc})") from None
    return check_json_mapping(value, where=where)


def check_text(value: object, *, where: str, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise StoreError(f"{where}: expected text, got {value!r}")
    if not empty and not value.strip():
        raise StoreError(f"{where}: empty")
    return value


def check_tags(value: object, *, where: str) -> dict[str, str]:
    """Revision tags: a mapping of text to text."""
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise StoreError(f"{where}: expected a mapping of tag name to text, got {value!r}")
    return dict(value)


def _check_label(value: object, *, where: str) -> str | None:
    if value is None:
        return None
    label = check_text(value, where=where)
    if not is_utf8(label):
        raise StoreError(f"{where}: the label {shown(label)} is not valid UTF-8")
    if label.startswith("#"):
        raise StoreError(f"{where}: {shown(label)}: labels may not start with '#'")
    return label


def _field(mapping: Mapping[str, Any], key: str, *, where: str) -> Any:
    if key not in mapping:
        raise StoreError(f"{where}.{key}: missing")
    return mapping[key]


def _samples_list(value: object, *, where: str, summary_only: bool = False) -> np.ndarray:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise StoreError(f"{where}: expected a list of times in seconds, got {value!r}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise StoreError(f"{where}: expected numbers (seconds), got {list(value)[:3]!r}...")
    return check_samples(
        np.asarray(value, dtype=np.float64), where=where, summary_only=summary_only
    )


def parse_export(
    document: Mapping[str, Any], *, source: str
) -> tuple[RunRecord, list[StoredResult]]:
    """Every field of a ``pytest-roofline-run`` export, checked; nothing is written here.

    :raises StoreError: ``{source}: {field}: ...`` for the first field that breaks a rule.
    """
    run = _field(document, "run", where=source)
    if not isinstance(run, Mapping):
        raise StoreError(f"{source}: run: expected an object, got {type(run).__name__}")
    at = f"{source}: run"
    record = RunRecord(
        label=_check_label(run.get("label"), where=f"{at}.label"),
        started=check_timestamp(_field(run, "started", where=at), where=f"{at}.started"),
        finished=check_timestamp(_field(run, "finished", where=at), where=f"{at}.finished"),
        tags=check_tags(_field(run, "tags", where=at), where=f"{at}.tags"),
        target=check_json_mapping(_field(run, "target", where=at), where=f"{at}.target"),
        machine=check_text(_field(run, "machine", where=at), where=f"{at}.machine", empty=True),
        design=check_text(run.get("design", "two-run"), where=f"{at}.design"),
        summary=check_json_mapping(run.get("summary", {}), where=f"{at}.summary"),
    )
    items = _field(document, "results", where=source)
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise StoreError(f"{source}: results: expected a list, got {type(items).__name__}")
    results: list[StoredResult] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        at = f"{source}: results[{i}]"
        if not isinstance(item, Mapping):
            raise StoreError(f"{at}: expected an object, got {type(item).__name__}")
        nodeid = check_text(_field(item, "nodeid", where=at), where=f"{at}.nodeid")
        if nodeid in seen:
            raise StoreError(f"{at}.nodeid: {shown(nodeid)} appears twice in the export")
        seen.add(nodeid)
        payload = check_json_mapping(_field(item, "payload", where=at), where=f"{at}.payload")
        samples = _samples_list(
            _field(item, "samples_s", where=at),
            where=f"{at}.samples_s",
            summary_only=is_summary_only(payload),
        )
        results.append(StoredResult(nodeid=nodeid, payload=payload, samples_s=samples))
    return record, results
