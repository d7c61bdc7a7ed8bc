"""Import of pytest-benchmark's saved runs: a ``.benchmarks/`` folder as a label's history, or one file.

pytest-benchmark saves a run (``--benchmark-save=NAME``, ``--benchmark-autosave``) as
``.benchmarks/<machine-id>/NNNN_<name>.json``, and ``--benchmark-json=FILE`` writes the same
document elsewhere. Each document becomes one stored run:

* **Order.** A folder's runs are saved in commit order (the commit's time), then run time, then
  pytest-benchmark's counter, so the latest one is the label's baseline and the others its
  history, as if ``--roofline-save`` had saved them one by one. A run already imported under the
  label (same document) is skipped, so importing a growing folder again adds only the new runs.
* **Samples.** With ``--benchmark-save-data`` (and always in ``--benchmark-json`` files) a
  benchmark has every round's per-call time: those are its samples, its ``iterations`` the batch
  size. Without them it is stored **summary-only**: no samples, its statistics (median, mean,
  min, max, quartiles) kept under :data:`pytest_roofline.store.summary_only.SUMMARY_ONLY_KEY`. A summary-only
  run is never a sample baseline; in a label's history its median counts towards the p50
  run-to-run noise floor.
* **Machine.** pytest-benchmark records ``machine_info`` (node, CPU brand and count, arch,
  Python). When the node, the architecture, the CPU brand and count (and, where both have them,
  the x86 family/model/stepping) match the machine doing the import, the run is recorded under
  this machine's :func:`~pytest_roofline.hardware.machine.machine_fingerprint`, so a later
  ``pytest --roofline`` here compares with it as with its own runs. Anything else is recorded
  as another machine, and a comparison with it escalates ("baseline measured on other
  hardware"). The Python version is a revision tag (runtime layer), not the machine.

No pytest. :func:`convert_document` is pure; :func:`import_benchmarks` reads the files and saves
into the store, and is what ``pytest-roofline import`` runs for pytest-benchmark input.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from pytest_roofline.config.benchmark_marker import AUTOSAVE_LABEL
from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.errors import CliError
from pytest_roofline.hardware.machine import cpuinfo
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.results import TestResult
from pytest_roofline.store import RunRecord, Store, StoredResult
from pytest_roofline.store.summary_only import SUMMARY_ONLY_KEY

__all__ = [
    "AUTOSAVE_LABEL",
    "BENCHMARK_LABEL",
    "FILE_LABEL",
    "BenchmarkImportError",
    "ImportSummary",
    "ImportedRun",
    "MachineIdentity",
    "convert_document",
    "import_benchmarks",
    "is_pytest_benchmark_document",
    "mapping",
    "saved_run_paths",
]

#: Default label of a single-file import.
FILE_LABEL = "pytest-benchmark"
BENCHMARK_LABEL = FILE_LABEL
_SAVED_RUN = re.compile(r"^(?P<counter>\d{4})_.*\.json$")
_SUMMARY_FIELDS = (
    ("median", "p50_s"),
    ("mean", "mean_s"),
    ("min", "min_s"),
    ("max", "max_s"),
    ("stddev", "stddev_s"),
    ("q1", "q1_s"),
    ("q3", "q3_s"),
    ("iqr", "iqr_s"),
)


class BenchmarkImportError(CliError):
    """A pytest-benchmark file or folder that cannot be imported; the message says why."""


# --------------------------------------------------------------------------- machine identity
def _clean(value: object) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _first_cpu(text: str) -> dict[str, str]:
    info: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if info:
                break
            continue
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    return info


@dataclass(frozen=True, slots=True)
class MachineIdentity:
    """What pytest-benchmark's ``machine_info`` says about a machine, comparable with this one.

    ``cpu_model`` is the x86 ``family F model M stepping S`` (``None`` elsewhere or unknown).
    """

    node: str | None
    arch: str | None
    cpu_brand: str | None
    cpu_count: int | None
    cpu_model: str | None
    python: str | None

    @classmethod
    def from_machine_info(cls, info: Mapping[str, Any]) -> MachineIdentity:
        cpu = info.get("cpu") if isinstance(info.get("cpu"), Mapping) else {}
        assert isinstance(cpu, Mapping)
        count = cpu.get("count")
        model = None
        if all(isinstance(cpu.get(k), int) for k in ("family", "model", "stepping")):
            model = f"family {cpu['family']} model {cpu['model']} stepping {cpu['stepping']}"
        return cls(
            node=_clean(info.get("node")),
            arch=_clean(info.get("machine")),
            cpu_brand=_clean(cpu.get("brand_raw") or cpu.get("brand")),
            cpu_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
            cpu_model=model,
            python=_clean(info.get("python_version")),
        )

    @classmethod
    def here(cls, *, cpuinfo_text: str | None = None) -> MachineIdentity:
        """This machine, read the way pytest-benchmark (py-cpuinfo) reads it on Linux."""
        # hardware.machine is the one /proc/cpuinfo reader; a given text is parsed the same way.
        info = cpuinfo() if cpuinfo_text is None else _first_cpu(cpuinfo_text)
        model = None
        if all(k in info for k in ("cpu family", "model", "stepping")):
            model = f"family {info['cpu family']} model {info['model']} stepping {info['stepping']}"
        return cls(
            node=_clean(platform.node()),
            arch=_clean(platform.machine()),
            cpu_brand=_clean(info.get("model name") or platform.processor()),
            cpu_count=os.cpu_count(),
            cpu_model=model,
            python=platform.python_version(),
        )

    def differences(self, other: MachineIdentity) -> tuple[str, ...]:
        """Why ``other`` may be another machine; empty when it is this one.

        The node, architecture, CPU brand and count must be known on both sides and equal
        (pytest-benchmark records no cache sizes, memory or CPU quota, so the node name is what
        tells two VMs with the same CPU model apart); the x86 model counts when both know it.
        """
        found = []
        for name, label in (
            ("node", "node"),
            ("arch", "architecture"),
            ("cpu_brand", "CPU"),
            ("cpu_count", "CPU count"),
        ):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is None or theirs is None:
                found.append(f"{label} not recorded")
            elif mine != theirs:
                found.append(f"{label} {theirs!r} there, {mine!r} here")
        if self.cpu_model and other.cpu_model and self.cpu_model != other.cpu_model:
            found.append(f"CPU {other.cpu_model!r} there, {self.cpu_model!r} here")
        return tuple(found)

    def describe(self) -> str:
        parts = [
            self.node and f"node {self.node}",
            self.cpu_brand,
            self.cpu_count is not None and f"{self.cpu_count} CPUs",
            self.arch,
        ]
        return ", ".join(p for p in parts if p) or "unknown machine"

    def to_dict(self) -> dict[str, object]:
        return {
            "node": self.node,
            "arch": self.arch,
            "cpu_brand": self.cpu_brand,
            "cpu_count": self.cpu_count,
            "cpu_model": self.cpu_model,
            "python": self.python,
        }


# --------------------------------------------------------------------------- one document
@dataclass(frozen=True, slots=True, eq=False)
class ImportedRun:
    """One pytest-benchmark document converted into a run for the store."""

    record: RunRecord
    results: tuple[StoredResult, ...]
    source: str
    key: str
    summary_only: bool
    same_machine: bool
    differences: tuple[str, ...]


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (for optional JSON objects)."""
    return value if isinstance(value, Mapping) else {}


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    # pytest-benchmark writes UTC; older versions without an offset.
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()


def is_pytest_benchmark_document(document: object) -> bool:
    """Whether ``document`` looks like pytest-benchmark's JSON (a ``benchmarks`` list)."""
    return isinstance(document, Mapping) and isinstance(document.get("benchmarks"), list)


def _tags(document: Mapping[str, Any]) -> dict[str, str]:
    """Revision tags under the names the plugin itself records, so tag diffs line up."""
    machine = mapping(document.get("machine_info"))
    commit = mapping(document.get("commit_info"))
    cpu = mapping(machine.get("cpu"))
    # Outside a repository pytest-benchmark records stand-in commit ids, which name no revision.
    versioned = commit.get("id") not in (None, "", "unversioned", "unknown")
    dirty = commit.get("dirty") if versioned else None
    branch = commit.get("branch") if versioned else None
    candidates = {
        "python": machine.get("python_version"),
        "python_implementation": machine.get("python_implementation"),
        "machine": machine.get("machine"),
        "os": " ".join(str(v) for v in (machine.get("system"), machine.get("release")) if v)
        or None,
        "cpu": _clean(cpu.get("brand_raw")),
        "cpu_count": cpu.get("count"),
        "git_commit": commit.get("id") if versioned else None,
        "git_branch": branch if branch != "(unknown)" else None,
        "git_dirty": None if dirty is None else ("yes" if dirty else "no"),
    }
    return {k: str(v) for k, v in candidates.items() if v not in (None, "")}


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def _result(bench: Mapping[str, Any], where: str) -> tuple[StoredResult, bool, float]:
    """One benchmark as a stored result; also whether it is summary-only and its total seconds."""
    nodeid = bench.get("fullname")
    if not isinstance(nodeid, str) or not nodeid:
        raise BenchmarkImportError(f"{where}: has no 'fullname' (the test's node id)")
    stats = mapping(bench.get("stats"))
    iterations = stats.get("iterations", 1)
    batch = iterations if isinstance(iterations, int) and iterations >= 1 else 1
    summary_only = "data" not in stats
    if summary_only:
        samples = np.empty(0, dtype=np.float64)
        recorded = {ours: _positive(stats.get(theirs)) for theirs, ours in _SUMMARY_FIELDS}
        if recorded["p50_s"] is None:
            raise BenchmarkImportError(
                f"{where} ({nodeid}): neither raw timings (stats.data) nor a positive stats.median"
            )
        rounds = stats.get("rounds")
        summary: dict[str, Any] = {k: v for k, v in recorded.items() if v is not None}
        summary["rounds"] = rounds if isinstance(rounds, int) else None
        summary["iterations"] = batch
        total = float(recorded["mean_s"] or recorded["p50_s"]) * (summary["rounds"] or 1)
    else:
        try:
            samples = np.asarray(stats.get("data"), dtype=np.float64)
        except (TypeError, ValueError):
            raise BenchmarkImportError(
                f"{where} ({nodeid}): stats.data must be a list of seconds"
            ) from None
        if (
            samples.ndim != 1
            or samples.size == 0
            or not np.all(np.isfinite(samples) & (samples > 0))
        ):
            raise BenchmarkImportError(
                f"{where} ({nodeid}): stats.data must be a non-empty list of positive seconds"
            )
        total = float(samples.sum())
    measurement = Measurement(
        samples=SampleSet(
            samples_s=samples,
            batch_size=batch,
            warmup_calls=0,
            warmup_s=0.0,
            stop_reason="imported-summary" if summary_only else "imported",
            elapsed_s=total * batch,
            synced=False,
        ),
        declared=None,
        quality=(),
        counters=None,
    )
    result = TestResult(
        nodeid=nodeid, slice=None, owners=(), rollback=None, sla=SlaSpec(), precision=None,
        measurement=measurement,
    )  # fmt: skip
    payload: dict[str, Any] = result.to_dict(include_samples=False)
    payload["benchmark"] = {
        "group": bench.get("group"),
        "name": bench.get("name"),
        "param": bench.get("param"),
        "extra_info": bench.get("extra_info") or {},
    }
    if summary_only:
        payload[SUMMARY_ONLY_KEY] = summary
    return StoredResult(nodeid, payload, samples), summary_only, total * batch


def convert_document(
    document: Mapping[str, Any],
    *,
    label: str | None,
    source: str,
    here: MachineIdentity,
    fingerprint: str,
) -> ImportedRun:
    """Convert one pytest-benchmark document into a run (see the module docstring).

    :param here: the importing machine; a match records the run under ``fingerprint``.
    :raises BenchmarkImportError: no benchmarks, a malformed entry, two entries with one node id.
    """
    benchmarks = [b for b in document.get("benchmarks") or () if isinstance(b, Mapping)]
    if not benchmarks:
        raise BenchmarkImportError(f"{source}: the pytest-benchmark file holds no benchmarks")
    converted = [_result(b, f"{source}: benchmarks[{i}]") for i, b in enumerate(benchmarks)]
    seen: set[str] = set()
    for stored, *_ in converted:
        if stored.nodeid in seen:
            raise BenchmarkImportError(
                f"{source}: two benchmarks share the node id {stored.nodeid!r}"
            )
        seen.add(stored.nodeid)
    summary_only = all(flag for _, flag, _ in converted)
    machine_info = mapping(document.get("machine_info"))
    identity = MachineIdentity.from_machine_info(machine_info)
    differences = here.differences(identity)
    same = not differences
    started = _timestamp(document.get("datetime"))
    if started is None:
        raise BenchmarkImportError(f"{source}: has no valid 'datetime' (when the run was made)")
    finished = started + sum(total for *_, total in converted)
    key = hashlib.sha256(
        json.dumps(document, sort_keys=True, default=str).encode("utf-8")
    ).hexdigest()[:20]
    record = RunRecord(
        label=label,
        started=started,
        finished=finished if math.isfinite(finished) else started,
        tags=_tags(document),
        target={},
        machine=fingerprint if same else f"pytest-benchmark run on {identity.describe()}",
        summary={
            "tests": len(converted),
            "decision": None,
            "summary_only": summary_only,
            "imported_from": {
                "tool": "pytest-benchmark",
                "version": str(document.get("version", "")),
                "file": Path(source).name,
                "key": key,
                "machine_info": identity.to_dict(),
                "same_machine": same,
                "differences": list(differences),
            },
        },
    )
    return ImportedRun(
        record=record,
        results=tuple(stored for stored, *_ in converted),
        source=source,
        key=key,
        summary_only=summary_only,
        same_machine=same,
        differences=differences,
    )


# --------------------------------------------------------------------------- files and folders
def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchmarkImportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BenchmarkImportError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkImportError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None


def saved_run_paths(folder: Path) -> list[Path]:
    """The saved runs (``NNNN_*.json``) of a ``.benchmarks/`` folder or of one machine-id folder.

    :raises BenchmarkImportError: no saved run, or runs in several machine-id folders (pytest-
        benchmark never compares across them; the message lists them so one can be chosen).
    """
    direct = sorted(p for p in folder.iterdir() if p.is_file() and _SAVED_RUN.match(p.name))
    if direct:
        return direct
    groups = {
        sub: sorted(p for p in sub.iterdir() if p.is_file() and _SAVED_RUN.match(p.name))
        for sub in sorted(folder.iterdir())
        if sub.is_dir()
    }
    groups = {sub: paths for sub, paths in groups.items() if paths}
    if not groups:
        raise BenchmarkImportError(
            f"{folder}: no saved pytest-benchmark runs (NNNN_*.json) here or in its sub-folders; "
            "pytest-benchmark saves them with --benchmark-autosave or --benchmark-save=NAME"
        )
    if len(groups) > 1:
        names = ", ".join(str(sub) for sub in groups)
        raise BenchmarkImportError(
            f"{folder}: saved runs in {len(groups)} machine-id folders ({names}); pytest-benchmark "
            "never compares runs across them, and one label's history should not mix them. "
            "Import one folder per label: pytest-roofline import FOLDER --label LABEL"
        )
    return next(iter(groups.values()))


def _order(path: Path, document: Mapping[str, Any]) -> tuple[float, float, int]:
    run_time = _timestamp(document.get("datetime")) or 0.0
    commit_time = _timestamp(mapping(document.get("commit_info")).get("time"))
    match = _SAVED_RUN.match(path.name)
    counter = int(match["counter"]) if match else 0
    return (commit_time if commit_time is not None else run_time, run_time, counter)


@dataclass(frozen=True, slots=True, eq=False)
class ImportSummary:
    """What an import did: the runs saved (oldest first, with their ids) and those skipped."""

    label: str
    saved: tuple[tuple[int, ImportedRun], ...]
    skipped: tuple[str, ...]

    def lines(self, store_path: str) -> list[str]:
        """What ``pytest-roofline import`` prints."""
        saved = [run for _, run in self.saved]
        lines = []
        if len(saved) == 1 and not self.skipped:
            run_id, run = self.saved[0]
            lines.append(
                f"imported pytest-benchmark file {run.source} as run {run_id} (label "
                f"{self.label!r}, {len(run.results)} tests) into {store_path}"
            )
        else:
            ids = [str(run_id) for run_id, _ in self.saved]
            span = (
                f"runs {ids[0]}-{ids[-1]}" if len(ids) > 1 else f"run {ids[0]}" if ids else "no run"
            )
            lines.append(
                f"imported {len(saved)} pytest-benchmark run(s) as {span} (label {self.label!r}, "
                f"commit order) into {store_path}"
                + (f"; {len(self.skipped)} already imported, skipped" if self.skipped else "")
            )
        summary_only = sum(run.summary_only for run in saved)
        if summary_only:
            lines.append(
                f"  {summary_only} run(s) without raw timings (saved without --benchmark-save-data) "
                "stored summary-only: their medians feed the history's noise floor, but they are "
                "never a sample baseline"
            )
        other = [run for run in saved if not run.same_machine]
        if saved and not other:
            lines.append("  machine: this machine (node, CPU and architecture match)")
        for run in other[:3]:
            lines.append(
                f"  {Path(run.source).name}: made on another machine ({'; '.join(run.differences)}): "
                "a comparison with it escalates"
            )
        if len(other) > 3:
            lines.append(f"  ... and {len(other) - 3} more run(s) from another machine")
        return lines


def import_benchmarks(
    store: Store,
    path: Path,
    *,
    label: str | None = None,
    here: MachineIdentity | None = None,
    fingerprint: Callable[[], str] | None = None,
) -> ImportSummary:
    """Import a pytest-benchmark JSON file, or every saved run of a ``.benchmarks/`` folder.

    :param label: default :data:`AUTOSAVE_LABEL` (the label ``--roofline-autosave`` saves under,
        so the imported history and the runs saved from now on form one series) for a folder,
        :data:`FILE_LABEL` for a file.
    :raises BenchmarkImportError: unreadable input, nothing to import, runs that would land
        before the label's latest run (they would become its baseline), malformed entries.
    """
    if fingerprint is None:
        from pytest_roofline.hardware.machine import machine_fingerprint

        fingerprint = machine_fingerprint
    here = here or MachineIdentity.here()
    if path.is_dir():
        paths = saved_run_paths(path)
        label = label or AUTOSAVE_LABEL
    else:
        paths = [path]
        label = label or FILE_LABEL
    documents: list[tuple[Path, Mapping[str, Any]]] = []
    for item in paths:
        document = _read(item)
        if not is_pytest_benchmark_document(document):
            raise BenchmarkImportError(
                f"{item}: not a pytest-benchmark JSON file (no 'benchmarks' list)"
            )
        documents.append((item, document))
    documents.sort(key=lambda pair: _order(*pair))
    machine = fingerprint()
    runs = [
        convert_document(document, label=label, source=str(item), here=here, fingerprint=machine)
        for item, document in documents
    ]
    existing = [record for _, record, _ in store.list_runs() if record.label == label]
    known = {mapping(r.summary.get("imported_from")).get("key") for r in existing}
    skipped = tuple(run.source for run in runs if run.key in known)
    fresh = [run for run in runs if run.key not in known]
    latest = max((r.started for r in existing), default=None)
    if fresh and latest is not None and fresh[0].record.started < latest:
        raise BenchmarkImportError(
            f"label {label!r} already holds a run from after {fresh[0].source} was made; imported "
            "now, older runs would become the label's latest run and so its baseline. Import them "
            "into a new label (--label NAME)"
        )
    saved = tuple((store.save_run(run.record, list(run.results)), run) for run in fresh)
    return ImportSummary(label, saved, skipped)
