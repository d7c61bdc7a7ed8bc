"""The label's trend per test (gate.trend): this run last, steps found and confirmed, one query."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.config.settings import DEFAULT_LAYERS
from pytest_roofline.gate.steps import HistorySettings
from pytest_roofline.gate.trend import (
    CURRENT_RUN_ID,
    TREND_RUNS,
    CurrentRun,
    label_trends,
    with_trends,
    without_trends,
)
from pytest_roofline.model.document import RunDocument, RunInfo, TestRecord
from pytest_roofline.store import RunRecord, Store, StoredResult

STEP = "t.py::test_step"
FLAT = "t.py::test_flat"
NEW = "t.py::test_new"


def _samples(rng: np.random.Generator, level_s: float) -> np.ndarray:
    return level_s * np.exp(rng.normal(0.0, 0.01)) * rng.lognormal(0.0, 0.03, 400)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """40 runs of 'main'; test_step is +30% slower from run 34 (the dataset changed there)."""
    rng = np.random.default_rng(14)
    opened = Store.open(tmp_path / "store.sqlite")
    for k in range(40):
        results = [
            StoredResult(STEP, {}, _samples(rng, 1e-3 * (1.3 if k >= 34 else 1.0))),
            StoredResult(FLAT, {}, _samples(rng, 2e-3)),
        ]
        tags = {"git_commit": f"{k:02d}" + "a" * 38, "dataset": "v2" if k >= 34 else "v1"}
        record = RunRecord(
            label="main", started=1.7e9 + 60 * k, finished=1.7e9 + 60 * k + 5, tags=tags,
            target={}, machine="m",
        )  # fmt: skip
        opened.save_run(record, results)
    return opened


def _current(rng: np.random.Generator) -> CurrentRun:
    return CurrentRun(
        commit="ff" * 20,
        started=1.8e9,
        tags={"git_commit": "ff" * 20, "dataset": "v2"},
        samples_s={
            STEP: _samples(rng, 1.3e-3),
            FLAT: _samples(rng, 2e-3),
            NEW: _samples(rng, 1e-3),
        },
        bounds={STEP: "memory", FLAT: None, NEW: None},
    )


def test_the_trend_shows_the_last_runs_with_this_run_last_and_finds_the_step(store: Store) -> None:
    loaded: list[tuple[str, tuple[int, ...]]] = []

    def load(nodeid: str, run_ids: Sequence[int]) -> Mapping[int, np.ndarray]:
        loaded.append((nodeid, tuple(run_ids)))
        return store.samples_of(nodeid, run_ids)

    series = store.series("main", [STEP, FLAT, NEW])
    found = label_trends(
        series, _current(np.random.default_rng(1)), load=load, layers=DEFAULT_LAYERS
    )
    assert found is not None
    runs, trends = found
    assert runs.label == "main" and runs.last == TREND_RUNS
    assert len(runs.runs) == TREND_RUNS
    assert [r.run_id for r in runs.runs[:-1]] == [r.run_id for r in series.runs[-29:]]
    assert runs.runs[-1].current and runs.runs[-1].run_id is None
    assert runs.current_index == TREND_RUNS - 1
    assert set(trends) == {STEP, FLAT}  # a test the label never ran has no trend
    step_trend = trends[STEP]
    assert len(step_trend.p50_s) == len(step_trend.p99_high_s) == len(step_trend.bound) == 30
    current = step_trend.p50_s[-1]
    assert current is not None and 1.2e-3 < current < 1.4e-3
    assert step_trend.bound[-1] == "memory"
    # Four significant digits are kept.
    assert all(v is None or float(f"{v:.3e}") == v for v in step_trend.p95_s)
    (step,) = step_trend.steps
    # Run 34 of 40 is position 34 - 11 = 23 of the 29 earlier runs shown.
    assert step.index == 23 and step.run_id == series.runs[34].run_id
    assert step.confirmed and step.ci is not None
    low, high = step.ci
    assert low is not None and high is not None and low < 1.3 < high
    assert step.first_failing_layer == "data"
    assert trends[FLAT].steps == ()
    # Raw samples were read for the one step only, never for this run (it is in memory).
    assert [nodeid for nodeid, _ in loaded] == [STEP]
    assert all(CURRENT_RUN_ID not in ids for _, ids in loaded)


def test_a_step_made_by_this_run_is_confirmed_with_its_own_samples(store: Store) -> None:
    # Seen from run 37 with this run and two more at the new level: the step is within the
    # last three points and needs this run's samples for its confirmation.
    series = store.series("main", [STEP])
    shortened = type(series)(label="main", runs=series.runs[:36], tests={
        STEP: type(series.tests[STEP])(
            nodeid=STEP,
            values={k: v[:36] for k, v in series.tests[STEP].values.items()},
            bound_codes=series.tests[STEP].bound_codes[:36],
        )
    })  # fmt: skip
    asked: list[int] = []

    def load(nodeid: str, run_ids: Sequence[int]) -> Mapping[int, np.ndarray]:
        asked.extend(run_ids)
        return store.samples_of(nodeid, run_ids)

    found = label_trends(
        shortened,
        _current(np.random.default_rng(2)),
        load=load,
        layers=DEFAULT_LAYERS,
        settings=HistorySettings(margin=0.05),
        last=12,
    )
    assert found is not None
    runs, trends = found
    assert len(runs.runs) == 12
    (step,) = trends[STEP].steps
    assert step.index == 34 - (36 - 11) and step.confirmed
    # Three stored runs before the step, two stored after it; the third after is this run.
    assert sorted(asked) == [r.run_id for r in series.runs[31:36]]


def test_without_earlier_runs_there_is_no_trend_and_a_trend_needs_two_runs(store: Store) -> None:
    series = store.series("main", [STEP])
    empty = type(series)(label="main", runs=(), tests={})
    current = _current(np.random.default_rng(3))
    assert label_trends(empty, current, load=store.samples_of, layers=DEFAULT_LAYERS) is None
    with pytest.raises(ValueError, match="at least 2 runs"):
        label_trends(series, current, load=store.samples_of, layers=DEFAULT_LAYERS, last=1)


def test_the_document_carries_the_trends_and_the_stored_copy_leaves_them_out(
    store: Store,
) -> None:
    series = store.series("main", [STEP, FLAT])
    found = label_trends(
        series, _current(np.random.default_rng(4)), load=store.samples_of, layers=DEFAULT_LAYERS
    )
    assert found is not None
    document = RunDocument(
        run=RunInfo(label="pr"), tests=(TestRecord(nodeid=STEP), TestRecord(nodeid=NEW))
    )
    carried = with_trends(document, *found)
    assert carried.run.trend == found[0]
    assert carried.tests[0].trend == found[1][STEP] and carried.tests[1].trend is None
    assert RunDocument.from_json(carried.to_json()) == carried
    assert without_trends(carried) == document
    assert "trend" not in without_trends(carried).to_json()["run"]
