from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.errors import StoreError
from pytest_roofline.store import STORE_SCHEMA_VERSION, RunRecord, Store, StoredResult


def record(label: str | None = "main", started: float = 1.0) -> RunRecord:
    return RunRecord(
        label=label,
        started=started,
        finished=started + 1,
        tags={"python": "3.11"},
        target={"name": "ci-runner"},
        machine="fp",
    )


def result(nodeid: str, rng: np.random.Generator) -> StoredResult:
    return StoredResult(nodeid, {"nodeid": nodeid, "x": 1}, rng.lognormal(-7, 0.1, size=300))


def test_a_saved_run_reads_back_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    saved = [result("t.py::a", rng), result("t.py::b", rng)]
    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = store.save_run(record(), saved)
        run = store.load_run(run_id)
    assert run.record.label == "main"
    assert run.record.tags == {"python": "3.11"}
    assert set(run.results) == {"t.py::a", "t.py::b"}
    np.testing.assert_array_equal(run.results["t.py::a"].samples_s, saved[0].samples_s)
    assert run.results["t.py::b"].payload == {"nodeid": "t.py::b", "x": 1}


def test_the_baseline_is_the_latest_run_under_the_label_with_earlier_runs_as_history(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(2)
    with Store.open(tmp_path / "s.sqlite") as store:
        first = store.save_run(record(started=1), [result("a", rng)])
        store.save_run(record("feature", started=2), [result("a", rng)])
        second = store.save_run(record(started=3), [result("a", rng)])
        third = store.save_run(record(started=4), [result("a", rng)])
        baseline = store.load_baseline("main", history=10)
        short = store.load_baseline("main", history=1)
    assert baseline.latest.id == third
    assert [r.id for r in baseline.history] == [second, first]
    assert [r.id for r in short.history] == [second]


def test_a_missing_label_names_the_labels_present_and_how_to_save_one(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.sqlite") as store:
        store.save_run(record("main"), [])
        with pytest.raises(
            StoreError, match=r"no run saved under label 'nightly'.*'main'.*--roofline-save=nightly"
        ):
            store.load_baseline("nightly")


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    content = b"not a database at all, but precious" * 100
    path.write_bytes(content)
    with pytest.raises(StoreError, match="not a readable pytest-roofline store"):
        Store.open(path)
    assert path.read_bytes() == content


def test_another_programs_sqlite_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE precious (x)")
    db.execute("INSERT INTO precious VALUES (42)")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a pytest-roofline store"):
        Store.open(path)
    assert path.read_bytes() == before


def test_a_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store.open(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={STORE_SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this pytest-roofline understands"):
        Store.open(path)


def test_opening_without_create_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no result store here"):
        Store.open(tmp_path / "missing.sqlite", create=False)
    assert not (tmp_path / "missing.sqlite").exists()


def test_a_failed_save_leaves_nothing_behind(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    with Store.open(tmp_path / "s.sqlite") as store:
        duplicate = [result("a", rng), result("a", rng)]  # violates the (run, nodeid) key
        with pytest.raises(StoreError, match="nothing was saved"):
            store.save_run(record(), duplicate)
        assert store.run_ids() == []


def test_two_writers_at_once_both_land(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store.open(path).close()
    errors: list[BaseException] = []

    def writer(label: str) -> None:
        try:
            rng = np.random.default_rng(len(label))
            with Store.open(path) as store:
                for i in range(20):
                    store.save_run(record(label, started=i), [result(f"t{i}", rng)])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(path) as store:
        assert len(store.run_ids("left")) == 20
        assert len(store.run_ids("right")) == 20


def test_calibrations_are_cached_by_key(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.sqlite") as store:
        assert store.get_calibration("k") is None
        store.put_calibration("k", {"dram": 1.0})
        store.put_calibration("k", {"dram": 2.0})
        assert store.get_calibration("k") == {"dram": 2.0}


def test_an_exported_run_imports_back_identically(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    with Store.open(tmp_path / "a.sqlite") as source:
        run_id = source.save_run(record(), [result("a", rng)])
        document = source.export_run(run_id)
    with Store.open(tmp_path / "b.sqlite") as target:
        new_id = target.import_run(document)
        copy = target.load_run(new_id)
    np.testing.assert_array_equal(copy.results["a"].samples_s, document["results"][0]["samples_s"])
    assert copy.record.label == "main"


def test_importing_something_else_is_refused(tmp_path: Path) -> None:
    with (
        Store.open(tmp_path / "s.sqlite") as store,
        pytest.raises(StoreError, match="not a pytest-roofline run export"),
    ):
        store.import_run({"benchmarks": []}, source="bench.json")
