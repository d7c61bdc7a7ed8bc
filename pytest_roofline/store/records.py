"""What the store holds: run records, per-test results with raw samples, and baselines."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Baseline", "RunRecord", "StoredResult", "StoredRun"]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Run-level facts saved with every run."""

    label: str | None
    started: float
    finished: float
    tags: Mapping[str, str]
    target: Mapping[str, Any]
    machine: str
    design: str = "two-run"
    summary: Mapping[str, Any] = field(default_factory=dict)
    # Set (only by ``Store.list_runs``) when the run's row cannot be read: why, naming the field.
    problem: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class StoredResult:
    """One test's stored result: its JSON payload and its raw per-call samples in seconds."""

    nodeid: str
    payload: Mapping[str, Any]
    samples_s: np.ndarray


@dataclass(frozen=True, slots=True, eq=False)
class StoredRun:
    """A run read back from the store."""

    id: int
    record: RunRecord
    results: Mapping[str, StoredResult]


@dataclass(frozen=True, slots=True, eq=False)
class Baseline:
    """The latest run saved under a label, and the earlier runs under it (newest first)."""

    label: str
    latest: StoredRun
    history: tuple[StoredRun, ...]
    # Earlier runs under the label left out of the history because they cannot be read: why.
    skipped: tuple[str, ...] = ()
