"""Stored runs read as the gate reads them: every result, the target and the report document.

The store checks what it can see itself (JSON, numbers, samples; :mod:`pytest_roofline.store.checks`);
this module checks that each payload *decodes* into the values the gate and the renderers use,
so a damaged or poisoned run is refused where it is first read (an import, a baseline, a
``compare``), with a message naming the run (or the export's field) and the row, instead of
failing later inside the statistics or a renderer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_roofline.errors import RooflineError, StoreError
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.model.document import RunDocument
from pytest_roofline.model.results import TestResult
from pytest_roofline.store import RunRecord, StoredResult, StoredRun
from pytest_roofline.text import shown

__all__ = ["check_export", "check_stored_run", "decode_result", "stored_document"]

# What decoding a malformed payload raises: our own errors, and the built-in ones a missing key,
# a wrong type or a bad number raise on the way.
_DECODE_ERRORS = (RooflineError, KeyError, TypeError, ValueError, AttributeError, IndexError)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, RooflineError) else str(exc)


def decode_result(stored: StoredResult, *, where: str) -> TestResult:
    """A stored result decoded; :raises StoreError: naming ``where``."""
    try:
        return TestResult.from_dict(stored.payload, samples_s=stored.samples_s)
    except _DECODE_ERRORS as exc:
        raise StoreError(f"{where}: the stored result cannot be read ({_why(exc)})") from None


def _check_target(target: Mapping[str, Any], *, where: str) -> None:
    if not target:
        return
    try:
        HardwareTarget.from_dict(target, where=where)
    except _DECODE_ERRORS as exc:
        raise StoreError(f"{where}: cannot be read ({_why(exc)})") from None


def stored_document(summary: Mapping[str, Any], *, where: str) -> RunDocument | None:
    """The report document a run was saved with, or ``None`` when it has none."""
    data = summary.get("document")
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise StoreError(f"{where}: expected the run's report document (an object)")
    # The document's reader is lenient by design (older versions read with defaults), so the
    # containers a renderer walks are checked here.
    tests = data.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, Mapping) for t in tests):
        raise StoreError(f"{where}.tests: expected a list of test records")
    if not isinstance(data.get("run", {}), Mapping):
        raise StoreError(f"{where}.run: expected an object")
    try:
        return RunDocument.read(data)
    except _DECODE_ERRORS as exc:
        raise StoreError(f"{where}: the report document cannot be read ({_why(exc)})") from None


def check_stored_run(run: StoredRun, *, store: object = "") -> dict[str, TestResult]:
    """Every result of ``run`` decoded, its target checked.

    :param store: the store's path, for messages.
    :raises StoreError: ``{store}: run {id}, test {nodeid}: ...`` for the first unreadable row.
    """
    prefix = f"{store}: " if store else ""
    _check_target(run.record.target, where=f"{prefix}run {run.id}: target")
    return {
        nodeid: decode_result(stored, where=f"{prefix}run {run.id}, test {shown(nodeid)!r}")
        for nodeid, stored in run.results.items()
    }


def check_export(record: RunRecord, results: Sequence[StoredResult], *, source: str) -> None:
    """The semantic half of an import's validation (the store checked the rest).

    :raises StoreError: ``{source}: results[i].payload: ...``, ``{source}: run.target: ...`` or
        ``{source}: run.summary.document: ...``.
    """
    _check_target(record.target, where=f"{source}: run.target")
    stored_document(record.summary, where=f"{source}: run.summary.document")
    for i, stored in enumerate(results):
        decode_result(stored, where=f"{source}: results[{i}].payload")
