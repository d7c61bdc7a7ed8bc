"""Host events: a step most tests share at one run, or one the host canary shares (gate.host_events)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.cli import EXIT_OK, main
from pytest_roofline.config.settings import DEFAULT_LAYERS
from pytest_roofline.gate.host_events import canary_steps, host_events
from pytest_roofline.gate.steps import HistorySettings, analyse_label
from pytest_roofline.store import RunRecord, Store, StoredResult

TESTS = ("t.py::a", "t.py::b", "t.py::c", "t.py::d")
RUNS = 24
HOST_AT = 12  # a, b and c are 40% slower from here (the host); d is not
CODE_AT = 6  # d is 30% slower from here (its code)


def _level(nodeid: str, k: int, canary_step: bool) -> float:
    if canary_step:  # only d steps, at HOST_AT, with the canary
        return 1e-3 * (1.4 if nodeid == "t.py::d" and k >= HOST_AT else 1.0)
    if nodeid == "t.py::d":
        return 1e-3 * (1.3 if k >= CODE_AT else 1.0)
    return 1e-3 * (1.4 if k >= HOST_AT else 1.0)


def _save(path: Path, *, canary_step: bool) -> Store:
    rng = np.random.default_rng(7)
    store = Store.open(path)
    for k in range(RUNS):
        results = [
            StoredResult(
                n, {}, _level(n, k, canary_step) * np.exp(rng.normal(0, 0.01)) * rng.lognormal(0, 0.03, 300)
            )
            for n in TESTS
        ]  # fmt: skip
        canary = (
            2e-4 * (1.3 if canary_step and k >= HOST_AT else 1.0) * np.exp(rng.normal(0, 0.005))
        )
        summary = {"document": {"run": {"canary": {"levels_s": {"triad": canary}}}}}
        record = RunRecord(
            label="main", started=1.7e9 + 3600 * k, finished=1.7e9 + 3600 * k + 60,
            tags={"git_commit": f"{k:02d}" + "e" * 38}, target={}, machine="m", summary=summary,
        )  # fmt: skip
        store.save_run(record, results)
    return store


def test_a_step_most_tests_share_at_one_run_is_a_host_event_and_a_lone_one_is_not(
    tmp_path: Path,
) -> None:
    with _save(tmp_path / "s.sqlite", canary_step=False) as store:
        series = store.series("main")
        histories = analyse_label(series, HistorySettings(), store.samples_of, DEFAULT_LAYERS)
    steps = {h.nodeid: [s.index for s in h.steps] for h in histories}
    assert steps["t.py::d"] == [CODE_AT]
    assert all(abs(steps[n][0] - HOST_AT) <= 1 for n in TESTS[:3])
    assert canary_steps(series) == {}  # the canary held still
    events = host_events(series, histories)
    assert {nodeid for nodeid, _ in events} == set(TESTS[:3])
    reason = next(iter(events.values())).reason
    assert reason.startswith("host event: 3 of the 4 tests with a value at this run step")
    assert ("t.py::d", CODE_AT) not in events
    # With a floor of four tests, three are not enough.
    assert host_events(series, histories, min_tests=4) == {}


def test_a_step_the_host_canary_shares_is_a_host_event(tmp_path: Path) -> None:
    with _save(tmp_path / "s.sqlite", canary_step=True) as store:
        series = store.series("main")
        histories = analyse_label(series, HistorySettings(), store.samples_of, DEFAULT_LAYERS)
    (change,) = canary_steps(series)["triad"]
    assert change.index == HOST_AT and change.ratio == pytest.approx(1.3, rel=0.02)
    (d,) = [h for h in histories if h.nodeid == "t.py::d"]
    (step,) = d.steps
    events = host_events(series, histories)
    assert set(events) == {("t.py::d", step.index)}
    assert (
        "the host canary's level stepped here (triad +30%)" in events["t.py::d", step.index].reason
    )


def test_history_labels_host_events_in_its_json_and_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.sqlite"
    _save(path, canary_step=False).close()
    out = tmp_path / "h.json"
    assert main(["history", "--store", str(path), "--label=main", f"--json={out}"]) == EXIT_OK
    tests = {t["nodeid"]: t for t in json.loads(out.read_text())["tests"]}
    for nodeid in TESTS[:3]:
        (step,) = tests[nodeid]["change_points"]
        assert step["host_event"] is True and step["first_failing_layer"] is None
        assert step["host_reason"].startswith("host event: 3 of the 4 tests")
    (code,) = tests["t.py::d"]["change_points"]
    assert code["host_event"] is False and code["host_reason"] is None
    assert code["first_failing_layer"] == "model"  # its commit changed
    shown = capsys.readouterr().out
    assert shown.count("host event") >= 2 * 3  # the layer column and the reason lines
