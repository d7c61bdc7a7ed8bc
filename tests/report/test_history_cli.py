"""``pytest-roofline history`` against a real SQLite store of seeded synthetic runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline.cli import EXIT_OK, EXIT_USAGE, EXIT_WRITE_FAILED, main
from pytest_roofline.store import RunRecord, Store, StoredResult

STEP = "tests/perf/test_k.py::test_step"
FLAT = "tests/perf/test_k.py::test_flat"
DRIFT = "tests/perf/test_k.py::test_drift"
RUNS = 30
STEP_AT = 15


def _level(nodeid: str, k: int) -> float:
    """The true per-call time of ``nodeid`` in run ``k``."""
    if nodeid == STEP:
        return 1e-3 * (1.20 if k >= STEP_AT else 1.0)
    if nodeid == DRIFT:
        return 1e-3 * 1.02 ** max(0, k - 10)
    return 1e-3


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 runs of 'main': a +20% step at run 15 (with a dataset change), a flat test, a drift.

    Each run has its own level (run-to-run noise, log sd 0.02) and 400 samples around it.
    """
    path = tmp_path_factory.mktemp("history") / "store.sqlite"
    rng = np.random.default_rng(20261201)
    with Store.open(path) as store:
        for k in range(RUNS):
            results = []
            for nodeid in (STEP, FLAT, DRIFT):
                level = _level(nodeid, k) * np.exp(rng.normal(0.0, 0.02))
                samples = level * rng.lognormal(0.0, 0.05, 400)
                results.append(StoredResult(nodeid, {"nodeid": nodeid}, samples))
            tags = {
                "git_commit": f"{k:02d}" + "c" * 38,
                "dataset": "v2" if k >= STEP_AT else "v1",
                "python": "3.11.9",
            }
            record = RunRecord(
                label="main",
                started=1.7e9 + 3600 * k,
                finished=1.7e9 + 3600 * k + 60,
                tags=tags,
                target={},
                machine="ci",
            )
            store.save_run(record, results)
        store.save_run(
            RunRecord(label="other", started=1.0, finished=2.0, tags={}, target={}, machine="ci"),
            [StoredResult(FLAT, {}, rng.lognormal(-7, 0.05, 100))],
        )
    return path


def _history(store: Path, *args: str) -> int:
    return main(["history", "--store", str(store), *args])


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def test_a_step_is_found_confirmed_sized_and_attributed_to_its_layer(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "history.json"
    assert _history(store_path, "--label=main", f"--json={out}") == EXIT_OK
    document = _read(out)
    assert document["label"] == "main"
    assert len(document["runs"]) == RUNS
    assert document["runs"][0]["commit"] == "00" + "c" * 38
    assert document["runs"][0]["started"].startswith("2023-11-14T")
    tests = {t["nodeid"]: t for t in document["tests"]}
    (step,) = tests[STEP]["change_points"]
    assert step["index"] == STEP_AT
    assert step["run_id"] == document["runs"][STEP_AT]["run_id"]
    assert step["quantile"] == "p50"
    assert step["ci"][0] < 1.20 < step["ci"][1]
    assert step["ci"][0] > 1.1
    assert step["first_failing_layer"] == "data"
    assert step["tag_diff"]["dataset"] == ["v1", "v2"]
    assert step["commits"] == [f"{STEP_AT - 1:02d}" + "c" * 38, f"{STEP_AT:02d}" + "c" * 38]
    assert tests[FLAT]["change_points"] == []
    assert tests[FLAT]["drift"] is None
    shown = capsys.readouterr().out
    assert re.search(rf"{re.escape(STEP)} +#{step['run_id']} \(index {STEP_AT}\)", shown)
    assert "data" in shown


def test_the_json_has_the_keys_the_issue_names_in_its_order(
    store_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "history.json"
    assert _history(store_path, "--label=main", f"--json={out}", STEP) == EXIT_OK
    document = _read(out)
    assert list(document)[:1] == ["label"]
    assert {"label", "runs", "tests"} <= set(document)
    assert list(document["runs"][0]) == ["run_id", "commit", "started"]
    (test,) = document["tests"]
    assert list(test)[:2] == ["nodeid", "change_points"]
    keys = list(test["change_points"][0])
    assert keys[:6] == ["run_id", "index", "quantile", "ratio", "ci", "first_failing_layer"]


def test_a_slow_drift_is_reported_since_the_last_step(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "drift.json"
    assert _history(store_path, "--label=main", f"--json={out}", DRIFT, "--margin=0.05") == 0
    (test,) = _read(out)["tests"]
    # +2% a run from run 10: found either as steps or as a drift beyond 5% since the last one.
    found_up = [c for c in test["change_points"] if c["ratio"] > 1.0]
    assert found_up or (test["drift"] is not None and test["drift"]["ci"][0] > 1.05)
    assert all(c["index"] >= 8 for c in test["change_points"])


def test_only_the_tests_named_are_analysed(store_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    assert _history(store_path, "--label=main", f"--json={out}", FLAT, "--quantile=p95") == 0
    document = _read(out)
    assert [t["nodeid"] for t in document["tests"]] == [FLAT]
    assert document["quantile"] == "p95"


def test_a_test_not_in_the_label_is_a_usage_error_naming_it(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(store_path, "--label=main", "t.py::nope") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "'t.py::nope'" in err and "label 'main'" in err
    assert "Traceback" not in err


def test_a_label_without_runs_is_a_usage_error_listing_the_labels(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(store_path, "--label=nope") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "'nope'" in err and "'main'" in err and "'other'" in err


def test_too_few_runs_show_no_change_points(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(store_path, "--label=other") == EXIT_OK
    assert "no change points" in capsys.readouterr().out


def test_an_unwritable_json_path_exits_7(store_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing-dir" / "deeper" / "x.json"
    (tmp_path / "missing-dir").write_text("a file, not a directory")
    assert _history(store_path, "--label=main", f"--json={out}") == EXIT_WRITE_FAILED


def test_bad_settings_are_usage_errors(store_path: Path) -> None:
    assert _history(store_path, "--label=main", "--max-p-value=2") == EXIT_USAGE
    assert _history(store_path, "--label=main", "--window=5") == EXIT_USAGE
    assert _history(store_path, "--label=main", "--margin=-1") == EXIT_USAGE
    assert _history(store_path, "--label=main", "--quantile=p42") == EXIT_USAGE


def test_the_layer_order_of_roofline_yaml_in_the_working_directory_names_the_first_failing_layer(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The step changes both `dataset` (layer data, first by default) and `git_commit` (model).
    (tmp_path / "roofline.yaml").write_text(
        "layers:\n  model: [model, git_commit, git_dirty]\n  data: [dataset, 'slice*']\n"
    )
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "history.json"
    assert _history(store_path, "--label=main", f"--json={out}", STEP) == EXIT_OK
    (step,) = _read(out)["tests"][0]["change_points"]
    assert step["first_failing_layer"] == "model"
    assert step["layers_changed"] == ["model", "data"]


def test_a_bad_roofline_yaml_in_the_working_directory_is_a_usage_error_naming_it(
    store_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "roofline.yaml").write_text("layers: [dataset]\n")
    monkeypatch.chdir(tmp_path)
    assert _history(store_path, "--label=main", STEP) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "roofline.yaml" in err and "layers" in err and "Traceback" not in err
