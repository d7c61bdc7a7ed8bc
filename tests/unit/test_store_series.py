"""The per-test series of the store: filled at save, backfilled for older runs, cheap to query."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline.errors import StoreError
from pytest_roofline.stats import hd_quantiles
from pytest_roofline.store import RunRecord, Store, StoredResult
from pytest_roofline.store import series as series_module
from pytest_roofline.store.series import SERIES_COLUMNS, SeriesRows, write_rows


def document(nodeids: list[str], bound: str = "memory", efficiency: float = 0.5) -> dict[str, Any]:
    return {
        "document": {
            "run": {"canary": {"levels_s": {"python": 2.5e-4, "stream": 1.0e-3}}},
            "tests": [
                {"nodeid": n, "roofline": {"bound": bound, "efficiency": efficiency}}
                for n in nodeids
            ],
        }
    }


def record(k: int, label: str = "main", **summary: Any) -> RunRecord:
    return RunRecord(
        label=label,
        started=1.7e9 + 60 * k,
        finished=1.7e9 + 60 * k + 30,
        tags={"git_commit": f"{k:040x}", "dataset": "v1"},
        target={},
        machine="m",
        summary=summary,
    )


def save(store: Store, k: int, nodeids: list[str], rng: np.random.Generator, **kw: Any) -> int:
    results = [StoredResult(n, {"nodeid": n}, rng.lognormal(-7, 0.1, 400)) for n in nodeids]
    return store.save_run(record(k, **kw), results)


def test_a_saved_run_adds_its_quantiles_intervals_bound_commit_and_canary_levels(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(1)
    samples = rng.lognormal(-7, 0.1, 800)
    with Store.open(tmp_path / "s.sqlite") as store:
        store.save_run(
            record(0, **document(["t.py::a"], bound="compute", efficiency=0.75)),
            [StoredResult("t.py::a", {"nodeid": "t.py::a"}, samples)],
        )
        got = store.series("main")
    (run,) = got.runs
    assert run.index == 0
    assert run.commit == f"{0:040x}"
    assert run.tags["dataset"] == "v1"
    assert run.canary_levels_s == {"python": 2.5e-4, "stream": 1.0e-3}
    test = got.tests["t.py::a"]
    expected = hd_quantiles(samples, [0.5, 0.95, 0.99])
    for name, value in zip(("p50", "p95", "p99"), expected, strict=True):
        assert test.quantile_s(name)[0] == pytest.approx(value)
        low, high = test.interval_s(name)
        assert low[0] < value < high[0]
    assert test.values["samples"][0] == 800
    assert test.values["efficiency"][0] == 0.75
    assert test.bounds == ("compute",)


def test_a_quantile_without_enough_samples_for_an_interval_has_none(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    with Store.open(tmp_path / "s.sqlite") as store:
        store.save_run(record(0), [StoredResult("t", {}, rng.lognormal(-7, 0.1, 100))])
        test = store.series("main").tests["t"]
    assert np.isfinite(test.interval_s("p95")[0][0])  # 100 >= 72
    assert np.isnan(test.interval_s("p99")[0][0])  # 100 < 368: no interval, not a guess
    assert np.isfinite(test.quantile_s("p99")[0])
    assert test.bounds == (None,)  # no report document


def test_runs_are_oldest_first_and_a_test_missing_from_a_run_is_nan(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    with Store.open(tmp_path / "s.sqlite") as store:
        save(store, 0, ["a", "b"], rng)
        save(store, 1, ["a"], rng, label="feature")
        save(store, 2, ["a"], rng)
        save(store, 3, ["a", "b"], rng)
        got = store.series("main")
        only_b = store.series("main", ["b"])
    assert [r.index for r in got.runs] == [0, 1, 2]
    assert [r.commit for r in got.runs] == [f"{k:040x}" for k in (0, 2, 3)]
    b = got.tests["b"].quantile_s()
    assert np.isfinite(b[0]) and np.isnan(b[1]) and np.isfinite(b[2])
    assert list(only_b.tests) == ["b"]
    np.testing.assert_array_equal(only_b.tests["b"].quantile_s(), b)


def test_a_missing_label_names_the_labels_present(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    with Store.open(tmp_path / "s.sqlite") as store:
        save(store, 0, ["a"], rng)
        with pytest.raises(StoreError, match=r"no run saved under label 'nope'.*'main'"):
            store.series("nope")


def test_runs_saved_before_the_series_table_are_backfilled_once_and_kept(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        for k in range(3):
            save(store, k, ["a", "b"], rng, **document(["a", "b"]))
    with sqlite3.connect(path) as db:  # as a store written by a version without the table
        db.execute("DROP TABLE series")
    with Store.open(path) as store:
        first = store.series("main")
        again = store.series("main")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM series").fetchone()[0] == 3
    assert first.tests.keys() == {"a", "b"}
    np.testing.assert_array_equal(first.tests["a"].quantile_s(), again.tests["a"].quantile_s())
    assert first.tests["a"].bounds == ("memory",) * 3
    assert [r.canary_levels_s["python"] for r in first.runs] == [2.5e-4] * 3


def test_a_store_that_cannot_be_written_is_still_queried_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(6)
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        for k in range(2):
            save(store, k, ["a"], rng)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE series")

    def read_only(*args: object) -> bool:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr("pytest_roofline.store.sqlite.write_rows", read_only)
    with Store.open(path) as store:
        got = store.series("main")
    assert np.isfinite(got.tests["a"].quantile_s()).all()
    with sqlite3.connect(path) as db:
        assert not db.execute("SELECT name FROM sqlite_master WHERE name = 'series'").fetchall()


def test_a_series_table_of_another_layout_never_blocks_a_save_or_a_query(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        save(store, 0, ["a"], rng)
    with sqlite3.connect(path) as db:
        db.executescript("DROP TABLE series; CREATE TABLE series (run_id INTEGER, other TEXT);")
    with Store.open(path) as store:
        save(store, 1, ["a"], rng)  # the run is saved; only its series row is left out
        got = store.series("main")
        assert len(store.run_ids("main")) == 2
    assert np.isfinite(got.tests["a"].quantile_s()).all()


def test_a_damaged_series_row_makes_only_its_run_read_without_tests(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        ids = [save(store, k, ["a"], rng) for k in range(3)]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE series SET numbers = x'0102' WHERE run_id = ?", (ids[1],))
        db.execute("UPDATE series SET nodeids = '{' WHERE run_id = ?", (ids[2],))
    with Store.open(path) as store:
        got = store.series("main")
    assert got.runs[0].problem is None
    assert got.runs[1].problem is not None and f"run {ids[1]}" in got.runs[1].problem
    assert got.runs[2].problem is not None and "nodeids" in got.runs[2].problem
    values = got.tests["a"].quantile_s()
    assert np.isfinite(values[0]) and np.isnan(values[1:]).all()


def test_a_run_that_cannot_be_read_is_backfilled_as_a_problem(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        ids = [save(store, k, ["a"], rng) for k in range(2)]
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE series")
        db.execute("UPDATE results SET samples = x'0102030405' WHERE run_id = ?", (ids[0],))
    with Store.open(path) as store:
        got = store.series("main")
    assert got.runs[0].problem is not None and "samples" in got.runs[0].problem
    assert got.runs[1].problem is None
    assert np.isfinite(got.tests["a"].quantile_s()[1])


def test_a_node_id_that_is_not_utf8_reads_back_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    nodeid = "t.py::test[\udcff]"
    with Store.open(tmp_path / "s.sqlite") as store:
        save(store, 0, [nodeid], rng)
        got = store.series("main", [nodeid])
    assert list(got.tests) == [nodeid]


def test_a_large_synthetic_history_reads_back_aligned(tmp_path: Path) -> None:
    """300 runs x 400 tests, tests coming and going: every value lands at its run and test."""
    rng = np.random.default_rng(11)
    runs, tests = 300, 400
    expected = np.full((tests, runs), np.nan)
    with Store.open(tmp_path / "s.sqlite") as store:
        db = store._db
        db.execute("BEGIN IMMEDIATE")
        for k in range(runs):
            present = np.flatnonzero(rng.random(tests) > 0.1)  # about 10% missing per run
            rng.shuffle(present)  # rows in any order
            cursor = db.execute(
                "INSERT INTO runs (label, started, finished, tags, target, machine, design,"
                " summary, schema_version) VALUES ('main', ?, ?, '{}', '{}', 'm', 'two-run', '{}', 1)",
                (float(k), float(k) + 1),
            )
            numbers = np.full((present.size, len(SERIES_COLUMNS)), np.nan)
            numbers[:, 0] = 100
            numbers[:, 1] = rng.lognormal(-7, 0.1, present.size)
            expected[present, k] = numbers[:, 1]
            write_rows(
                db,
                int(cursor.lastrowid or 0),
                SeriesRows(
                    commit=None,
                    canary_json="{}",
                    problem=None,
                    nodeids=tuple(f"t{i:03d}" for i in present),
                    numbers=numbers,
                ),
            )
        db.execute("COMMIT")
        whole = store.series("main")
        some = store.series("main", ["t007", "t399", "absent"])
    assert len(whole.runs) == runs and len(whole.tests) == tests
    for i in (0, 7, 123, 399):
        np.testing.assert_array_equal(whole.tests[f"t{i:03d}"].quantile_s(), expected[i])
    assert list(some.tests) == ["t007", "t399"]
    np.testing.assert_array_equal(some.tests["t399"].quantile_s(), expected[399])


def test_the_series_row_is_derived_data_and_leaves_the_schema_version_alone(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(12)
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        save(store, 0, ["a"], rng)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        nodeids = db.execute("SELECT nodeids FROM series").fetchone()[0]
    assert json.loads(nodeids) == ["a"]
    assert series_module.SERIES_QUANTILES == {"p50": 0.5, "p95": 0.95, "p99": 0.99}
