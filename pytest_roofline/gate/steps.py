"""Steps in a label's history, confirmed on raw samples and attributed: what ``history`` shows.

For each test, the per-run log quantile of a label's runs (:mod:`pytest_roofline.store.series`)
is searched for change points (:func:`pytest_roofline.stats.changepoint.detect_change_points`,
Apache Otava's windowed E-divisive means). A change point in a per-run series is a claim about
run-level numbers; each one is then **confirmed** on the raw samples: the samples of up to
``confirm_runs`` runs just before the step are pooled and compared with those of as many runs
just after it (:func:`pytest_roofline.stats.compare_quantile`: Harrell-Davis ratio with an
order-statistic bootstrap interval, two-sided 95%). A step is confirmed when that interval lies
wholly on the side the detector found (above 1 for a slowdown, below 1 for a speed-up); it is
sized by that comparison's ratio and interval.

The pooled comparison sees within-run sampling noise only, not the run-to-run noise (a slow
host for a run); that is what the detector's pooled-t interval (``series_ci``) covers. A step
is reported when both agree: the detector finds it in the run-level series and the raw samples
either side of it differ in the same direction.

Attribution: the revision-tag diff between the last run before the step and the first run after
it (:func:`~pytest_roofline.gate.layers.tag_diff`), the layers it touches in configured order
(the first is the step's first failing layer), and the commit range ``before..after`` (the
``git_commit`` tags of those two runs).

A slow drift is reported by :func:`~pytest_roofline.stats.changepoint.cumulative_drift` over the
segment since the last step, when its whole interval lies beyond the margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_roofline import stats
from pytest_roofline.gate.evidence import rng_for
from pytest_roofline.gate.layers import layers_changed, tag_diff
from pytest_roofline.stats.changepoint import (
    DEFAULT_MAX_P_VALUE,
    DEFAULT_MIN_SEGMENT,
    DEFAULT_WINDOW,
    ChangePoint,
    cumulative_drift,
    detect_change_points,
)
from pytest_roofline.store.series import SERIES_QUANTILES, LabelSeries, SeriesRun, TestSeries

__all__ = [
    "DriftFinding",
    "HistorySettings",
    "SamplesLoader",
    "StepFinding",
    "TestHistory",
    "analyse_label",
    "analyse_test",
]

SamplesLoader = Callable[[str, Sequence[int]], Mapping[int, np.ndarray]]
"""``loader(nodeid, run_ids)``: the raw samples of ``nodeid`` in each readable run of ``run_ids``."""

# Two-sided 95%: each bound of the raw-sample comparison at 2.5%.
_CONFIRM_ALPHA = 0.025


@dataclass(frozen=True, slots=True)
class HistorySettings:
    """How steps are searched, confirmed and judged.

    ``margin`` is the relative change a drift must confidently exceed (and the margin the
    raw-sample comparison is classified against): by default the gate's ``min_effect`` of the
    quantile. ``confirm_runs`` runs either side of a step are pooled for its confirmation.
    """

    quantile: str = "p50"
    window: int = DEFAULT_WINDOW
    max_p_value: float = DEFAULT_MAX_P_VALUE
    min_segment: int = DEFAULT_MIN_SEGMENT
    min_magnitude: float = 0.0
    margin: float = 0.05
    confirm_runs: int = 3
    n_boot: int = 2000


@dataclass(frozen=True, slots=True)
class StepFinding:
    """A step in one test's history.

    ``index`` is the position (oldest run 0) of the first run after the step and ``run_id``
    that run. ``ratio``/``ci_low``/``ci_high`` size it on the raw samples (``None`` where the
    samples could not be read); ``series_ratio``/``series_ci_*``/``p_value`` are the detector's.
    ``confirmed`` is true when the raw-sample interval lies wholly on the detector's side of 1.
    """

    run_id: int
    index: int
    quantile: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    confirmed: bool
    series_ratio: float
    series_ci_low: float
    series_ci_high: float
    p_value: float
    runs_compared: tuple[int, int]
    commit_before: str | None
    commit_after: str | None
    tag_diff: Mapping[str, tuple[str | None, str | None]]
    layers_changed: tuple[str, ...]
    note: str | None = None

    @property
    def first_failing_layer(self) -> str | None:
        """The first layer (in configured order) whose tags changed at the step."""
        return self.layers_changed[0] if self.layers_changed else None


@dataclass(frozen=True, slots=True)
class DriftFinding:
    """Change accumulated since the last step, beyond the margin (its whole interval)."""

    since_index: int
    since_run_id: int
    since_commit: str | None
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    runs: int


@dataclass(frozen=True, slots=True)
class TestHistory:
    """One test's steps (confirmed and not) and drift since the last step."""

    __test__ = False

    nodeid: str
    steps: tuple[StepFinding, ...]
    drift: DriftFinding | None

    @property
    def confirmed(self) -> tuple[StepFinding, ...]:
        return tuple(s for s in self.steps if s.confirmed)

    @property
    def unconfirmed(self) -> tuple[StepFinding, ...]:
        return tuple(s for s in self.steps if not s.confirmed)


def _neighbours(
    values: np.ndarray, start: int, stop: int, count: int, *, before: bool
) -> list[int]:
    """Up to ``count`` positions with a value in ``[start, stop)``, nearest the step first."""
    positions = [i for i in range(start, stop) if math.isfinite(values[i])]
    return positions[-count:] if before else positions[:count]


def _confirm(
    nodeid: str,
    runs: Sequence[SeriesRun],
    before: Sequence[int],
    after: Sequence[int],
    change: ChangePoint,
    settings: HistorySettings,
    load: SamplesLoader,
) -> tuple[float | None, float | None, float | None, bool, str | None]:
    ids_before = [runs[i].run_id for i in before]
    ids_after = [runs[i].run_id for i in after]
    loaded = load(nodeid, [*ids_before, *ids_after])
    base = [loaded[i] for i in ids_before if i in loaded]
    cand = [loaded[i] for i in ids_after if i in loaded]
    if not base or not cand:
        return None, None, None, False, "the raw samples either side could not be read"
    comparison = stats.compare_quantile(
        np.concatenate(base),
        np.concatenate(cand),
        SERIES_QUANTILES[settings.quantile],
        delta=settings.margin,
        alpha=_CONFIRM_ALPHA,
        n_boot=settings.n_boot,
        rng=rng_for(nodeid, change.index),
    )
    low, high = comparison.ci.low, comparison.ci.high
    if not (math.isfinite(comparison.ratio) and math.isfinite(low) and math.isfinite(high)):
        return None, None, None, False, comparison.reason or "the raw samples are degenerate"
    up = change.ratio > 1.0
    confirmed = low > 1.0 if up else high < 1.0
    note = None if confirmed else "the raw samples either side do not show it"
    return comparison.ratio, low, high, confirmed, note


def analyse_test(
    nodeid: str,
    test: TestSeries,
    runs: Sequence[SeriesRun],
    settings: HistorySettings,
    load: SamplesLoader,
    layers: Mapping[str, Sequence[str]],
) -> TestHistory:
    """Steps and drift of one test over ``runs`` (oldest first).

    ``load`` reads raw samples for the confirmations; ``layers`` are the revision-tag layers in
    configured order (``config.settings.DEFAULT_LAYERS`` unless configured otherwise).
    """
    values = test.quantile_s(settings.quantile)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_values = np.where(values > 0, np.log(values), np.nan)
    changes = detect_change_points(
        log_values,
        window=settings.window,
        max_p_value=settings.max_p_value,
        min_magnitude=settings.min_magnitude,
        min_segment=settings.min_segment,
        confidence=0.95,
    )
    bounds = [0, *(c.index for c in changes), len(runs)]
    steps = []
    for k, change in enumerate(changes):
        before = _neighbours(values, bounds[k], change.index, settings.confirm_runs, before=True)
        after = _neighbours(
            values, change.index, bounds[k + 2], settings.confirm_runs, before=False
        )
        ratio, low, high, confirmed, note = _confirm(
            nodeid, runs, before, after, change, settings, load
        )
        last, first = runs[before[-1]], runs[after[0]]
        steps.append(
            StepFinding(
                run_id=runs[change.index].run_id,
                index=change.index,
                quantile=settings.quantile,
                ratio=ratio,
                ci_low=low,
                ci_high=high,
                confirmed=confirmed,
                series_ratio=change.ratio,
                series_ci_low=change.ci_low,
                series_ci_high=change.ci_high,
                p_value=change.p_value,
                runs_compared=(len(before), len(after)),
                commit_before=last.commit,
                commit_after=first.commit,
                tag_diff=tag_diff(last.tags, first.tags),
                layers_changed=layers_changed(last.tags, first.tags, layers),
                note=note,
            )
        )
    drift = cumulative_drift(log_values, changes)
    finding = None
    if drift is not None and drift.exceeds(settings.margin):
        since = runs[drift.start_index]
        finding = DriftFinding(
            since_index=drift.start_index,
            since_run_id=since.run_id,
            since_commit=since.commit,
            ratio=drift.ratio,
            ci_low=drift.ci_low,
            ci_high=drift.ci_high,
            p_value=drift.p_value,
            runs=drift.runs,
        )
    return TestHistory(nodeid=nodeid, steps=tuple(steps), drift=finding)


def analyse_label(
    series: LabelSeries,
    settings: HistorySettings,
    load: SamplesLoader,
    layers: Mapping[str, Sequence[str]],
) -> tuple[TestHistory, ...]:
    """:func:`analyse_test` for every test of ``series``, in node-id order."""
    return tuple(
        analyse_test(nodeid, test, series.runs, settings, load, layers)
        for nodeid, test in sorted(series.tests.items())
    )
