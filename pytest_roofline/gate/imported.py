"""Baselines imported from another tool (pytest-benchmark): what they can and cannot be compared on.

Pure (no pytest, no I/O). A run imported by ``pytest-roofline import`` records
``summary["imported_from"]`` and only the revision tags the other tool knew (Python, OS, CPU,
commit); a tag it never recorded is unknown there, not changed, so it neither names a changed
layer nor appears in the report's tag diff (:func:`comparable_tags`). A summary-only result
(no samples; :mod:`pytest_roofline.store.summary_only`) is no sample baseline, but its median
counts in the label's history (:func:`history_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pytest_roofline.store import RunRecord, StoredRun
from pytest_roofline.store.summary_only import summary_only_quantiles

__all__ = ["comparable_tags", "history_of", "is_imported"]


def is_imported(record: RunRecord) -> bool:
    """Whether a stored run was imported from another tool (``pytest-roofline import``)."""
    return "imported_from" in record.summary


def comparable_tags(
    baseline_tags: Mapping[str, str], tags: Mapping[str, str], *, imported: bool
) -> Mapping[str, str]:
    """``tags`` restricted to what an imported baseline could have recorded (else unchanged)."""
    if not imported:
        return tags
    return {k: v for k, v in tags.items() if k in baseline_tags}


def history_of(
    nodeid: str, older: Sequence[StoredRun]
) -> tuple[list[np.ndarray], list[Mapping[str, float]]]:
    """A test's history (oldest first): each earlier run's samples and its summary-only quantiles.

    Both lists are aligned; a run with samples has ``{}`` quantiles, a summary-only run empty
    samples and the quantiles it recorded (``{"p50": seconds}``).
    """
    found = [run.results[nodeid] for run in older if nodeid in run.results]
    return [r.samples_s for r in found], [summary_only_quantiles(r.payload) for r in found]
