"""The label's trend per test, carried by the run document for the signoff report (issue 14).

A run compared with a baseline label (or saved under a label that already has runs) shows, per
test, where it lands among that label's last runs: p50/p95/p99 with their 95% intervals and the
bound class of each run, this run last and marked, and the steps found in the p50 over those
runs, confirmed on the raw samples (:func:`pytest_roofline.gate.steps.analyse_test`, the analysis
``pytest-roofline history`` uses). The renderers draw it from ``run.trend`` and
``tests[].trend`` of the document (:mod:`pytest_roofline.model.document`); they never read the
store.

Inputs: the label's series, read once per session (:meth:`Store.series
<pytest_roofline.store.Store.series>`, one query for every test: ``docs/history.md`` measures
0.87 s for 1000 tests × 1000 runs), and this run's raw samples, from which its point is computed
exactly as the store computes a saved run's (:func:`~pytest_roofline.store.series.quantile_rows`:
Harrell-Davis points with the ESS-adjusted order-statistic interval). The steps are searched
over the shown runs only (at most :data:`TREND_RUNS`), this run included, so a step this run
makes is found at its position; the raw samples of the runs either side of a step are read
only for the steps found.

Size. Every number keeps four significant digits (the 95% intervals are wider than that), so a
test's trend over 30 runs is about 3 kB of JSON; the copy of the document kept in the store
leaves the trends out (:func:`without_trends`): the store's series already holds the numbers,
and 3 MB per saved run of 1000 tests would grow the store 30-fold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import numpy as np

from pytest_roofline.gate.steps import HistorySettings, SamplesLoader, StepFinding, analyse_test
from pytest_roofline.model.document import (
    RunDocument,
    TestTrendRecord,
    TrendRun,
    TrendRunsRecord,
    TrendStepRecord,
)
from pytest_roofline.store.series import (
    SERIES_COLUMNS,
    SERIES_QUANTILES,
    LabelSeries,
    SeriesRun,
    TestSeries,
    quantile_rows,
)
from pytest_roofline.vocabulary import BOUND_CLASSES

__all__ = [
    "CURRENT_RUN_ID",
    "TREND_RUNS",
    "CurrentRun",
    "label_trends",
    "with_trends",
    "without_trends",
]

TREND_RUNS = 30
"""How many runs a trend shows, this run included (the issue's N; ``history --last``'s default)."""

CURRENT_RUN_ID = -1
"""The run id this run has in the step analysis: stored ids start at 1 (SQLite AUTOINCREMENT)."""

_SIGNIFICANT = 4


@dataclass(frozen=True, slots=True, eq=False)
class CurrentRun:
    """This run, as the trend's last point: its commit, start, tags, raw samples per test and
    bound class per test (``None`` where unknown)."""

    commit: str | None
    started: float
    tags: Mapping[str, str]
    samples_s: Mapping[str, np.ndarray]
    bounds: Mapping[str, str | None]


def _rounded(value: float) -> float | None:
    if not math.isfinite(value):
        return None
    return float(f"{value:.{_SIGNIFICANT - 1}e}")


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def _extended(
    test: TestSeries | None, start: int, earlier: int, row: Sequence[float], bound: str | None
) -> TestSeries:
    """``test``'s values over the shown earlier runs with this run's appended."""
    values: dict[str, np.ndarray] = {}
    for k, name in enumerate(SERIES_COLUMNS[:-1]):
        before = test.values[name][start:] if test is not None else np.full(earlier, np.nan)
        values[name] = np.append(before, row[k])
    before_codes = test.bound_codes[start:] if test is not None else np.full(earlier, np.nan)
    code = float(BOUND_CLASSES.index(bound)) if bound in BOUND_CLASSES else math.nan
    nodeid = test.nodeid if test is not None else "?"
    return TestSeries(nodeid=nodeid, values=values, bound_codes=np.append(before_codes, code))


def _step(step: StepFinding, runs: Sequence[TrendRun]) -> TrendStepRecord:
    def number(value: float | None) -> float | None:
        return _rounded(value) if value is not None else None

    return TrendStepRecord(
        index=step.index,
        run_id=runs[step.index].run_id,
        quantile=step.quantile,
        ratio=number(step.ratio),
        ci=(number(step.ci_low), number(step.ci_high)),
        confirmed=step.confirmed,
        first_failing_layer=step.first_failing_layer,
    )


def label_trends(
    series: LabelSeries,
    current: CurrentRun,
    *,
    load: SamplesLoader,
    layers: Mapping[str, Sequence[str]],
    settings: HistorySettings | None = None,
    last: int = TREND_RUNS,
) -> tuple[TrendRunsRecord, dict[str, TestTrendRecord]] | None:
    """The trend of each test of this run over the label's last ``last`` runs (this one last).

    ``load`` reads stored raw samples (``Store.samples_of``) for the steps' confirmations; this
    run's come from ``current``. A test gets a trend when the label's shown runs hold a value
    for it; ``None`` when the label has no earlier run.
    """
    settings = settings if settings is not None else HistorySettings()
    if last < 2:
        raise ValueError(f"a trend needs at least 2 runs; got last={last}")
    if not series.runs:
        return None
    start = max(0, len(series.runs) - (last - 1))
    shown = series.runs[start:]
    earlier = len(shown)
    runs = (
        *(
            TrendRun(run_id=run.run_id, commit=run.commit, started=_iso(run.started))
            for run in shown
        ),
        TrendRun(run_id=None, commit=current.commit, started=_iso(current.started), current=True),
    )
    analysed_runs = (
        *(replace(run, index=i) for i, run in enumerate(shown)),
        SeriesRun(
            run_id=CURRENT_RUN_ID,
            index=earlier,
            started=current.started,
            commit=current.commit,
            tags=current.tags,
            canary_levels_s={},
        ),
    )
    nodeids = [
        nodeid
        for nodeid in sorted(current.samples_s)
        if nodeid in series.tests
        # a value, not a row: a summary-only run (pytest-benchmark import) has no quantiles
        and np.isfinite(series.tests[nodeid].values["p50_s"][start:]).any()
    ]
    samples = [np.asarray(current.samples_s[n], dtype=np.float64) for n in nodeids]
    points = quantile_rows(samples)

    def loader(nodeid: str, run_ids: Sequence[int]) -> Mapping[int, np.ndarray]:
        stored = [i for i in run_ids if i != CURRENT_RUN_ID]
        found = dict(load(nodeid, stored)) if stored else {}
        if CURRENT_RUN_ID in run_ids and nodeid in current.samples_s:
            found[CURRENT_RUN_ID] = np.asarray(current.samples_s[nodeid], dtype=np.float64)
        return found

    trends: dict[str, TestTrendRecord] = {}
    for nodeid, x, point in zip(nodeids, samples, points, strict=True):
        row = [float(x.size), *(math.nan if v is None else v for v in point), math.nan]
        bound = current.bounds.get(nodeid)
        test = _extended(series.tests[nodeid], start, earlier, row, bound)
        history = analyse_test(nodeid, test, analysed_runs, settings, loader, layers)
        columns = {
            f"{name}{part}": tuple(_rounded(float(v)) for v in test.values[f"{name}{part}"])
            for name in SERIES_QUANTILES
            for part in ("_s", "_low_s", "_high_s")
        }
        trends[nodeid] = TestTrendRecord(
            **columns,
            bound=test.bounds,
            steps=tuple(_step(step, runs) for step in history.steps),
        )
    return TrendRunsRecord(label=series.label, last=last, runs=runs), trends


def with_trends(
    document: RunDocument, runs: TrendRunsRecord, trends: Mapping[str, TestTrendRecord]
) -> RunDocument:
    """``document`` carrying ``run.trend`` and each test's trend (tests without one unchanged)."""
    return replace(
        document,
        run=replace(document.run, trend=runs),
        tests=tuple(
            replace(test, trend=trends[test.nodeid]) if test.nodeid in trends else test
            for test in document.tests
        ),
    )


def without_trends(document: RunDocument) -> RunDocument:
    """``document`` without ``run.trend`` and ``tests[].trend`` (the copy the store keeps)."""
    if document.run.trend is None and all(t.trend is None for t in document.tests):
        return document
    return replace(
        document,
        run=replace(document.run, trend=None),
        tests=tuple(replace(t, trend=None) if t.trend is not None else t for t in document.tests),
    )
