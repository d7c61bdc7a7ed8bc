"""Import of pytest-benchmark JSON files: a migration path from pytest-benchmark's saved runs."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.errors import CliError
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.results import TestResult
from pytest_roofline.store import RunRecord, StoredResult

__all__ = ["BENCHMARK_LABEL", "mapping", "pytest_benchmark_run"]

BENCHMARK_LABEL = "pytest-benchmark"


def mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _started(document: Mapping[str, Any]) -> float:
    stamp = document.get("datetime")
    if isinstance(stamp, str):
        try:
            parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            # pytest-benchmark writes UTC; older versions without an offset.
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()
    return time.time()


def _benchmark_tags(document: Mapping[str, Any]) -> dict[str, str]:
    """Revision tags under the names the plugin itself records, so tag diffs line up."""
    machine = mapping(document.get("machine_info"))
    commit = mapping(document.get("commit_info"))
    cpu = mapping(machine.get("cpu"))
    candidates = {
        "python": machine.get("python_version"),
        "python_implementation": machine.get("python_implementation"),
        "machine": machine.get("machine"),
        "os": " ".join(str(v) for v in (machine.get("system"), machine.get("release")) if v)
        or None,
        "cpu": cpu.get("brand_raw"),
        "git_commit": commit.get("id"),
        "git_branch": commit.get("branch"),
        "git_dirty": None
        if commit.get("dirty") is None
        else ("yes" if commit.get("dirty") else "no"),
    }
    return {k: str(v) for k, v in candidates.items() if v not in (None, "")}


def _benchmark_result(bench: Mapping[str, Any], where: str) -> StoredResult:
    nodeid = bench.get("fullname")
    if not isinstance(nodeid, str) or not nodeid:
        raise CliError(f"{where}: has no 'fullname' (the test's node id)")
    stats = mapping(bench.get("stats"))
    data = stats.get("data")
    try:
        samples = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise CliError(f"{where} ({nodeid}): stats.data must be a list of seconds") from None
    if samples.ndim != 1 or samples.size == 0 or not np.all(np.isfinite(samples) & (samples > 0)):
        raise CliError(
            f"{where} ({nodeid}): stats.data must be a non-empty list of positive seconds"
        )
    iterations = stats.get("iterations", 1)
    batch = int(iterations) if isinstance(iterations, int) and iterations >= 1 else 1
    # pytest-benchmark stores each round's time divided by its iterations: per-call seconds,
    # batched by ``iterations`` calls, which is exactly our batch_size.
    measurement = Measurement(
        samples=SampleSet(
            samples_s=samples,
            batch_size=batch,
            warmup_calls=0,
            warmup_s=0.0,
            stop_reason="imported",
            elapsed_s=float(samples.sum() * batch),
            synced=False,
        ),
        declared=None,
        quality=(),
        counters=None,
    )
    result = TestResult(
        nodeid=nodeid,
        slice=None,
        owners=(),
        rollback=None,
        sla=SlaSpec(),
        precision=None,
        measurement=measurement,
    )
    return StoredResult(nodeid, result.to_dict(include_samples=False), samples)


def pytest_benchmark_run(
    document: Mapping[str, Any], *, label: str | None, source: str
) -> tuple[RunRecord, list[StoredResult]]:
    """Convert a pytest-benchmark JSON document into a run the store and the plugin can read.

    Every benchmark needs its raw timings (``stats.data``): pytest-benchmark writes them to
    ``--benchmark-json`` files always, and to ``--benchmark-save``/``--benchmark-autosave``
    files only with ``--benchmark-save-data``. Each benchmark becomes a stored result whose samples are its per-call
    round times and whose batch size is its iteration count.

    :raises CliError: a benchmark without raw data (the message says to re-run with
        ``--benchmark-save-data``), a malformed entry, or two benchmarks with one node id.
    """
    benchmarks = [b for b in document.get("benchmarks") or () if isinstance(b, Mapping)]
    if not benchmarks:
        raise CliError(f"{source}: the pytest-benchmark file holds no benchmarks")
    without_data = [
        str(b.get("fullname") or b.get("name") or "?")
        for b in benchmarks
        if "data" not in mapping(b.get("stats"))
    ]
    if without_data:
        shown = ", ".join(without_data[:3]) + (
            f" and {len(without_data) - 3} more" if len(without_data) > 3 else ""
        )
        raise CliError(
            f"{source}: no raw timings for {shown}; pytest-roofline needs every round's time. "
            "Re-run pytest-benchmark with --benchmark-save-data (files saved with "
            "--benchmark-save/--benchmark-autosave carry the timings only then; "
            "--benchmark-json files always do), then import that file."
        )
    results = [_benchmark_result(b, f"{source}: benchmarks[{i}]") for i, b in enumerate(benchmarks)]
    seen: set[str] = set()
    for result in results:
        if result.nodeid in seen:
            raise CliError(f"{source}: two benchmarks share the node id {result.nodeid!r}")
        seen.add(result.nodeid)
    started = _started(document)
    finished = started + sum(
        float(r.samples_s.sum()) * int(r.payload["measurement"]["batch_size"]) for r in results
    )
    machine = mapping(document.get("machine_info"))
    record = RunRecord(
        label=label,
        started=started,
        finished=finished if math.isfinite(finished) else started,
        tags=_benchmark_tags(document),
        target={},
        machine="pytest-benchmark import: "
        + " · ".join(
            str(v) for v in (machine.get("node"), mapping(machine.get("cpu")).get("brand_raw")) if v
        ),
        summary={
            "tests": len(results),
            "decision": None,
            "imported_from": {
                "tool": "pytest-benchmark",
                "version": str(document.get("version", "")),
                "file": Path(source).name,
            },
        },
    )
    return record, results
