"""The JSON document (DESIGN 2.5): the source of truth every other rendering can be rebuilt from."""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_roofline.report.model import JSON_SCHEMA_VERSION, RunView, TestView

if TYPE_CHECKING:
    from pytest_roofline.gate.evidence import TestEvidence
    from pytest_roofline.gate.policy import TestDecision

__all__ = ["evidence_document", "run_document", "write_atomic", "write_document"]


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


SERIES_POINTS = 400  # per side: enough for an ECDF and a timeline, small enough for 1000 tests


def _series(samples: np.ndarray | None) -> list[float] | None:
    """Samples thinned to at most :data:`SERIES_POINTS`, keeping their order (for the timeline)."""
    if samples is None:
        return None
    if samples.size <= SERIES_POINTS:
        return [float(x) for x in samples]
    index = np.linspace(0, samples.size - 1, SERIES_POINTS).round().astype(int)
    return [float(x) for x in samples[index]]


def evidence_document(
    evidence: TestEvidence,
    decision: TestDecision,
    *,
    replay_command: str,
    candidate_samples: np.ndarray,
    baseline_samples: np.ndarray | None,
) -> dict[str, Any]:
    """A test's evidence and decision in the JSON document's shape (rendering only)."""
    point, base_point, bound = evidence.point, evidence.baseline_point, evidence.bound_change
    roofline: dict[str, Any] | None = None
    if point is not None:
        roofline = {
            **point.to_dict(),
            "baseline_bound": base_point.bound if base_point else None,
            "baseline_intensity": base_point.intensity if base_point else None,
            "baseline_achieved_flops_per_s": base_point.achieved_flops_per_s
            if base_point
            else None,
            "baseline_efficiency": base_point.efficiency if base_point else None,
            "bound_changed": bound.changed if bound else None,
            "bound_change": bound.to_dict() if bound else None,
            "efficiency_ratio": evidence.efficiency_ratio,
        }
    violations = [c.detail for c in evidence.sla if c.status in ("breach", "possible breach")]
    return {
        **decision.to_dict(),
        "replay_command": replay_command,
        "change": {name: c.to_dict() for name, c in evidence.comparisons.items()} or None,
        "margins": dict(evidence.margins),
        "mde": dict(evidence.mde),
        "roofline": roofline,
        "sla": {
            "ok": (not violations) if evidence.sla else None,
            "violations": violations,
            "checks": [c.to_dict() for c in evidence.sla],
        },
        "quality": {q.name: q.to_dict() for q in evidence.quality},
        "missing_quality": list(evidence.missing_quality),
        "precision_change": list(evidence.precision_change) if evidence.precision_change else None,
        "replay": evidence.replay.to_dict() if evidence.replay else None,
        "drift": evidence.drift.to_dict() if evidence.drift else None,
        "common_mode_applied": evidence.common_mode,
        "counter_fidelity": {f.quantity: f.to_dict() for f in evidence.fidelity},
        "layers_changed": list(evidence.layers_changed),
        "hardware_differs": evidence.hardware_differs,
        "series": {"candidate": _series(candidate_samples), "baseline": _series(baseline_samples)},
    }


def _test_document(test: TestView) -> dict[str, Any]:
    summary = test.summary
    counters = dict(test.counters) if test.counters is not None else None
    if counters is not None and "counter_fidelity" in test.outcome:
        counters["fidelity"] = test.outcome["counter_fidelity"]
    return {
        "nodeid": test.nodeid,
        "slice": test.slice_name,
        "slice_group": test.slice_group,
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
        "change": None,
        "declared": test.declared,
        "roofline": None,
        "counters": counters,
        "sla": {"ok": None, "violations": [], "checks": []},
        "quality": {},
        "replay": None,
        **test.outcome,
    }


def _versions() -> dict[str, str | None]:
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "pytest_roofline": version("pytest-roofline"),
        "python": platform.python_version(),
        "pytest": version("pytest"),
        "numpy": version("numpy"),
        "scipy": version("scipy"),
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
                    k: {"baseline": b, "candidate": c, "layer": layer}
                    for k, (b, c, layer) in view.tag_diff.items()
                },
                "first_failing_layer": view.first_failing_layer,
                "first_failing_slices": dict(view.first_failing_slices),
                "target": view.target,
                "machine": view.machine,
                "started": _iso(view.started),
                "finished": _iso(view.finished),
                "common_mode": view.common_mode,
                "design": "two-run",
                "gate": dict(view.gate),
                "missing_from_baseline": list(view.missing_from_baseline),
                "missing_from_candidate": list(view.missing_from_candidate),
            },
            "observability": dict(view.observability),
            "versions": _versions(),
            "tests": [_test_document(t) for t in view.tests],
        }
    )
    return document


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory and ``os.replace``: never a half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    # mkstemp creates the file 0600; a report is an artifact others open: use the umask's mode.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_document(path: Path, document: Mapping[str, Any]) -> None:
    """Write a run document as JSON, atomically."""
    write_atomic(path, json.dumps(document, indent=2, allow_nan=False) + "\n")
