"""The JSON document (DESIGN 2.5): the source of truth every other rendering can be rebuilt from."""

from __future__ import annotations

import json
import math
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_roofline.report.model import JSON_SCHEMA_VERSION, RunView, TestView

__all__ = ["run_document", "write_atomic", "write_json"]


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def _clean(value: Any) -> Any:
    """Replace NaN and infinities by ``None``: JSON has no such numbers and tools choke on them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _test_document(test: TestView) -> dict[str, Any]:
    summary = test.summary
    return {
        "nodeid": test.nodeid,
        "slice": test.slice_name,
        "source": test.source,
        "owner": ", ".join(test.owners) if test.owners else None,
        "owners": list(test.owners),
        "rollback_boundary": test.rollback_boundary,
        "decision": test.decision,
        "reasons": list(test.reasons),
        "first_failing_layer": None,
        "samples": summary.n,
        "batch_size": test.batch_size,
        "batched": test.batch_size > 1,
        "stop_reason": test.stop_reason,
        "elapsed_s": test.elapsed_s,
        "p50_s": summary.p50_s,
        "p95_s": summary.p95_s,
        "p99_s": summary.p99_s,
        "mean_s": summary.mean_s,
        "min_s": summary.min_s,
        "max_s": summary.max_s,
        "baseline": (
            {
                "p50_s": test.baseline.p50_s,
                "p95_s": test.baseline.p95_s,
                "p99_s": test.baseline.p99_s,
                "samples": test.baseline.n,
            }
            if test.baseline is not None
            else None
        ),
        "change": (
            {q: {"ratio": test.ratio(q)} for q in ("p50", "p95", "p99")}
            if test.baseline is not None
            else None
        ),
        "declared": test.declared,
        "roofline": test.roofline.to_dict() if test.roofline is not None else None,
        "counters": test.counters,
        "sla": {"spec": test.sla},
        "quality": test.quality,
    }


def run_document(view: RunView) -> dict[str, Any]:
    """Build the JSON document for ``view``."""
    document: dict[str, Any] = _clean(
        {
            "schema_version": JSON_SCHEMA_VERSION,
            "decision": view.decision,
            "reasons": list(view.reasons),
            "run": {
                "label": view.label,
                "baseline_label": view.baseline_label,
                "baseline_run_id": view.baseline_run_id,
                "tags": dict(view.tags),
                "tag_diff": {
                    k: {"baseline": b, "candidate": c} for k, (b, c) in view.tag_diff.items()
                },
                "target": view.target,
                "machine": view.machine,
                "started": _iso(view.started),
                "finished": _iso(view.finished),
                "common_mode": view.common_mode,
                "design": "two-run",
                "missing_from_baseline": list(view.missing_from_baseline),
                "missing_from_candidate": list(view.missing_from_candidate),
            },
            "observability": dict(view.observability),
            "tests": [_test_document(t) for t in view.tests],
        }
    )
    return document


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory and ``os.replace``: never a half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, view: RunView) -> None:
    write_atomic(path, json.dumps(run_document(view), indent=2, allow_nan=False) + "\n")
