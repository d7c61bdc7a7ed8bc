"""The label's history in the gate: a noise floor since the last step, and cumulative drift.

Pure (numpy, :mod:`pytest_roofline.stats.changepoint`; no store): it works on the per-run values
the gate already has, the baseline label's runs oldest first and the candidate.

* **Noise floor without the steps.** The run-to-run noise floor (:func:`margins
  <pytest_roofline.gate.evidence.margins>`) is the spread of a test's per-run quantile over the
  baseline label's runs. Computed across a step it measures the step, not the noise, and widens
  the margin a regression must exceed. :func:`level_segments` finds the label's change points
  (Apache Otava's E-divisive means, :func:`~pytest_roofline.stats.changepoint.
  detect_change_points`) and moves each earlier segment to the level of the current one (in log
  space): the floor then sees the noise within every segment and none of the steps between
  them. Keeping only the runs since the last step (:func:`since_last_step`) would do the same
  for the steps but throw the earlier runs' noise away: the floor's estimator
  (:func:`pytest_roofline.stats.noise_floor`) shrinks towards the default floor (+35% at p50)
  with five pseudo-runs, so a short segment would raise the margin after every step (p50 floor,
  11 runs with a +30% step at the seventh, log noise 0.03, median of 200 seeded series:
  +26.8% from the segment, +21.4% levelled; +21.9% from all runs as they are, because the robust
  estimator already discounts one step's successive difference; several steps, or the
  non-robust estimator, it does not).
* **Cumulative drift.** Each merged pull request compared with its predecessor can stay within
  the margin while the label drifts: five +2% steps are +10%. :func:`cumulative_drift_check`
  appends the candidate's value to the label's current segment (since its last step) and
  measures the change accumulated over it (:func:`~pytest_roofline.stats.changepoint.
  cumulative_drift`: Theil-Sen slope times span, Sen's interval); when the whole interval lies
  beyond the quantile's ``gate.min_effect``, slower, the test escalates: "cumulative drift since
  <commit>". The threshold is ``min_effect`` rather than the gate's margin because the margin is
  widened by the run-to-run noise floor, which Sen's interval already carries (the series'
  scatter sets its width); using both would count that noise twice.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_roofline.stats.changepoint import cumulative_drift, detect_change_points
from pytest_roofline.stats.quantiles import hd_quantiles

__all__ = [
    "DIRTY_SUFFIX",
    "LEVEL_RUNS",
    "HistoryDrift",
    "cumulative_drift_check",
    "label_drift",
    "latest_run_level",
    "level_segments",
    "since_last_step",
]


DIRTY_SUFFIX = "+dirty"
"""Appended to a run's commit (as the gate passes them here) when it had uncommitted changes."""


def _log(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(arr) & (arr > 0), np.log(arr), np.nan)


def since_last_step(per_run: Sequence[float]) -> list[float]:
    """The per-run values (oldest first) since the last change point; all of them without one.

    Too few runs to find a step (fewer than six) are returned as they are.
    """
    values = list(per_run)
    changes = detect_change_points(_log(values))
    return values[changes[-1].index :] if changes else values


def level_segments(per_run: Sequence[float]) -> list[float]:
    """The per-run values (oldest first) with each segment before the last step moved, as a
    ratio, to the level (mean log) of the segment since it; unchanged without a step.

    Too few runs to find a step (fewer than six) are returned as they are; NaN stays NaN.
    """
    values = list(per_run)
    logs = _log(values)
    changes = detect_change_points(logs)
    if not changes:
        return values
    bounds = [0, *(c.index for c in changes), len(values)]
    level = float(np.nanmean(logs[bounds[-2] :]))
    shifted = logs.copy()
    for start, stop in itertools.pairwise(bounds[:-1]):
        shifted[start:stop] += level - float(np.nanmean(logs[start:stop]))
    return [float(v) if math.isfinite(v) else math.nan for v in np.exp(shifted)]


LEVEL_RUNS = 5
"""Runs of a label (the latest and those before it, since its last step) whose median value
is the label's level for :func:`latest_run_level`."""


def latest_run_level(per_run: Sequence[float], *, runs: int = LEVEL_RUNS) -> float:
    """The latest run's value over the median of the label's last ``runs`` runs since its last
    step (oldest first); NaN with fewer than three usable runs there.

    A two-run comparison is against the latest run, and that run's process drew its own speed
    for each test: in stop 45's A/A runs a label's three runs of an attention decode read p50
    354, 375 and 286 µs, and every candidate compared with the 286 µs run read slower
    (x1.14-x4.59). Below 1, the latest run is faster than the label's level, and a ratio against
    it overstates a slowdown by that much.

    >>> round(latest_run_level([354e-6, 375e-6, 286e-6]), 3)
    0.808
    >>> latest_run_level([1.0, 1.1])
    nan
    """
    recent = [v for v in since_last_step(per_run)[-runs:] if math.isfinite(v) and v > 0]
    if len(recent) < 3 or not math.isfinite(per_run[-1]) or not per_run[-1] > 0:
        return math.nan
    return float(per_run[-1] / np.median(recent))


@dataclass(frozen=True, slots=True)
class HistoryDrift:
    """A candidate's change accumulated over the label's current segment, beyond the margin.

    ``since_commit`` is the commit of the segment's first run (``None`` where runs carry no
    ``git_commit`` tag); ``runs`` counts the runs of the segment including the candidate.
    ``new`` is true when this candidate is what takes the drift beyond the margin (the label's
    runs alone do not exceed it): the drift is reported once, when it accumulates, and
    afterwards as a note until the detector cuts a step and a new segment begins.
    """

    quantile: str
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    runs: int
    margin: float
    since_commit: str | None
    new: bool = True
    # Every label run of the segment is this one clean commit: no code was merged along it.
    one_commit: str | None = None

    @property
    def escalates(self) -> bool:
        """Whether the drift escalates the test: news, accumulated over merged code.

        Over runs of one clean commit the drift is the host's (or a layer no tag names), not
        the code's: escalating every pull request for it would cry wolf, and the candidate's
        own step is judged by its comparison. Measured on 2026-12-01 (run 13a of docs/gate.md):
        10 of 30 A/A escalations were such drifts, +18% to +62% over 6-12 runs of one commit.
        """
        return self.new and self.one_commit is None

    @property
    def reason(self) -> str:
        """One line for the decision's reasons."""
        since = self.since_commit[:12] if self.since_commit else "the label's last step"
        if self.one_commit is not None:
            what = (
                f"every run of the label since then is commit {self.one_commit[:12]}, so it is "
                "the host's or an untagged layer's, not the code's: noted, not escalated"
            )
        else:
            what = "escalate" if self.new else "the label's runs were already beyond it"
        return (
            f"cumulative drift since {since}: {self.quantile} {self.ratio - 1.0:+.0%} "
            f"[{self.ci_low - 1.0:+.0%}, {self.ci_high - 1.0:+.0%}] over {self.runs} runs "
            f"(this one included), beyond the +{self.margin:.0%} margin: {what}"
        )


def cumulative_drift_check(
    history: Mapping[str, Sequence[float]],
    candidate: Mapping[str, float],
    margins: Mapping[str, float],
    commits: Sequence[str | None] = (),
) -> HistoryDrift | None:
    """The first quantile whose drift since the label's last step, with the candidate, exceeds
    its margin (slower), or ``None``.

    Parameters
    ----------
    history : mapping of str to sequence of float
        Per quantile name, the baseline label's per-run values in seconds, oldest first.
    candidate : mapping of str to float
        Per quantile name, the candidate's value (after any common-mode correction).
    margins : mapping of str to float
        Per quantile name, the gate's margin (0.05 = 5%).
    commits : sequence of str or None, optional
        The ``git_commit`` of each baseline run, aligned with ``history`` (for the reason),
        with :data:`DIRTY_SUFFIX` where the run had uncommitted changes: a drift over runs of
        one clean commit is noted, not escalated (:attr:`HistoryDrift.escalates`).
    """
    for name, values in history.items():
        value = candidate.get(name)
        margin = margins.get(name)
        if value is None or margin is None or not math.isfinite(value) or value <= 0:
            continue
        logs = _log(values)
        changes = detect_change_points(logs)
        series = np.append(logs, math.log(value))
        drift = cumulative_drift(series, changes)
        if drift is None or not (drift.exceeds(margin) and drift.ratio > 1.0):
            continue
        before = cumulative_drift(logs, changes) if len(logs) else None
        already = before is not None and before.exceeds(margin) and before.ratio > 1.0
        start = drift.start_index
        segment = set(commits[start : len(values)]) if len(commits) == len(values) else set()
        (one,) = segment if len(segment) == 1 else (None,)
        return HistoryDrift(
            quantile=name,
            ratio=drift.ratio,
            ci_low=drift.ci_low,
            ci_high=drift.ci_high,
            p_value=drift.p_value,
            runs=drift.runs,
            margin=margin,
            since_commit=commits[start] if start < len(commits) else None,
            new=not already,
            one_commit=one if one and not one.endswith(DIRTY_SUFFIX) else None,
        )
    return None


def label_drift(
    runs_samples: Sequence[np.ndarray],
    candidate_samples: np.ndarray,
    quantiles: Mapping[str, float],
    margins: Mapping[str, float],
    commits: Sequence[str | None] = (),
) -> HistoryDrift | None:
    """:func:`cumulative_drift_check` from raw samples: the baseline label's runs (oldest first,
    the latest last) and the candidate's, each quantile by Harrell-Davis."""
    probs = list(quantiles.values())
    per_run = [
        hd_quantiles(s, probs) if s.size else np.full(len(probs), np.nan) for s in runs_samples
    ]
    if candidate_samples.size == 0 or not per_run:
        return None
    cand = hd_quantiles(candidate_samples, probs)
    history = {name: [float(r[k]) for r in per_run] for k, name in enumerate(quantiles)}
    candidate = {name: float(cand[k]) for k, name in enumerate(quantiles)}
    return cumulative_drift_check(history, candidate, margins, commits)
