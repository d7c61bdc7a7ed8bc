"""Steps the host made, not the code: shared by most tests at one run, or by the host canary.

A change of the code moves the tests it touches; a change of the host (another machine, a
noisy neighbour that left, a kernel or firmware update) moves every test at once, and the host
canary with them. ``pytest-roofline history`` confirms each step on the raw samples of the runs
either side (:mod:`pytest_roofline.gate.steps`), and that comparison cannot tell the two apart:
the real series of ``docs/history.md`` had a slow stretch end at one run and two tests "step"
by -72% and -75% there, both confirmed. So a step is labelled a **host event** when

* **most tests step there**: at least ``min_share`` (half) of the tests with a value at that
  run, and at least ``min_tests`` (3) of them, have a step (confirmed or not) within
  ``tolerance`` runs of it (one: the detector locates a step to ±1 run in most cases,
  ``docs/history.md`` table 1), or
* **the host canary stepped there**: the canary's level of some kernel (``run.canary.levels_s``
  of each run, kept in the store's series) has a change point within ``tolerance`` runs of the
  step, in the same direction (a slower host makes tests slower). The canary series is searched
  with the same detector as the tests (:func:`~pytest_roofline.stats.changepoint.
  detect_change_points`, Apache Otava's E-divisive means, p = 0.001).

Pure: it reads the label's series and the steps found; it decides nothing about the code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_roofline.gate.steps import TestHistory
from pytest_roofline.stats.changepoint import ChangePoint, detect_change_points
from pytest_roofline.store.series import LabelSeries

__all__ = ["HostEvent", "canary_steps", "host_events", "host_reasons"]


@dataclass(frozen=True, slots=True)
class HostEvent:
    """Why the step of ``nodeid`` at run position ``index`` is the host's."""

    nodeid: str
    index: int
    reason: str


def canary_steps(series: LabelSeries) -> dict[str, tuple[ChangePoint, ...]]:
    """The change points of each canary kernel's per-run level (runs without it are NaN)."""
    kinds = sorted({kind for run in series.runs for kind in run.canary_levels_s})
    found = {}
    for kind in kinds:
        levels = np.array(
            [run.canary_levels_s.get(kind, math.nan) for run in series.runs], dtype=np.float64
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(levels > 0, np.log(levels), np.nan)
        changes = detect_change_points(logs)
        if changes:
            found[kind] = tuple(changes)
    return found


def host_events(
    series: LabelSeries,
    histories: Sequence[TestHistory],
    *,
    quantile: str = "p50",
    min_share: float = 0.5,
    min_tests: int = 3,
    tolerance: int = 1,
) -> dict[tuple[str, int], HostEvent]:
    """The steps of ``histories`` (over ``series``' runs) that are host events, by
    ``(nodeid, index)`` (see the module docstring)."""
    canary = canary_steps(series)
    step_positions = {h.nodeid: [s.index for s in h.steps] for h in histories}
    values = {
        h.nodeid: series.tests[h.nodeid].quantile_s(quantile)
        for h in histories
        if h.nodeid in series.tests
    }
    events: dict[tuple[str, int], HostEvent] = {}
    for history in histories:
        for step in history.steps:
            near = range(step.index - tolerance, step.index + tolerance + 1)
            with_value = [n for n, v in values.items() if math.isfinite(v[step.index])]
            stepped = [n for n in with_value if any(i in near for i in step_positions[n])]
            reasons = []
            if len(stepped) >= min_tests and len(stepped) >= min_share * len(with_value):
                reasons.append(
                    f"{len(stepped)} of the {len(with_value)} tests with a value at this run "
                    f"step within {tolerance} run(s) of it"
                )
            up = step.series_ratio > 1.0
            kinds = [
                f"{kind} {change.ratio - 1.0:+.0%}"
                for kind, changes in canary.items()
                for change in changes
                if change.index in near and (change.ratio > 1.0) == up
            ]
            if kinds:
                reasons.append(f"the host canary's level stepped here ({', '.join(kinds)})")
            if reasons:
                events[history.nodeid, step.index] = HostEvent(
                    nodeid=history.nodeid,
                    index=step.index,
                    reason="host event: " + "; ".join(reasons),
                )
    return events


def host_reasons(events: Mapping[tuple[str, int], HostEvent], nodeid: str) -> dict[int, str]:
    """The host-event reasons of one test's steps, by step index."""
    return {index: event.reason for (n, index), event in events.items() if n == nodeid}
