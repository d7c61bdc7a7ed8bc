"""Importing pytest-benchmark runs: machine identity, summary-only runs, a folder as a history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.cli.pytest_benchmark import (
    BenchmarkImportError,
    MachineIdentity,
    convert_document,
    import_benchmarks,
    saved_run_paths,
)
from pytest_roofline.store import Store

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD  EPYC
stepping\t: 1

processor\t: 1
model name\t: something else
"""
HERE = MachineIdentity("vm", "x86_64", "AMD EPYC", 2, "family 25 model 1 stepping 1", "3.11.7")
FINGERPRINT = "x86_64 | AMD EPYC | 2 CPUs"


def machine_info(**changes: Any) -> dict[str, Any]:
    cpu = {"brand_raw": "AMD EPYC", "count": 2, "family": 25, "model": 1, "stepping": 1}
    cpu.update(changes.pop("cpu", {}))
    info = {
        "node": "vm", "machine": "x86_64", "python_version": "3.11.7", "system": "Linux",
        "release": "6.1", "python_implementation": "CPython", "cpu": cpu,
    }  # fmt: skip
    info.update(changes)
    return info


def document(
    when: str = "2024-05-01T10:00:00+00:00",
    *,
    data: bool = True,
    commit_time: str | None = None,
    info: dict[str, Any] | None = None,
    names: tuple[str, ...] = ("t.py::test_a", "t.py::test_b"),
) -> dict[str, Any]:
    benchmarks = []
    for i, name in enumerate(names):
        stats: dict[str, Any] = {"median": 1e-3 * (i + 1), "mean": 1.1e-3 * (i + 1), "min": 9e-4,
                                 "max": 2e-3, "rounds": 3, "iterations": 2}  # fmt: skip
        if data:
            stats["data"] = [1e-3 * (i + 1), 1.1e-3 * (i + 1), 0.9e-3 * (i + 1)]
        benchmarks.append({"fullname": name, "name": name.split("::")[1], "group": "g",
                           "param": None, "extra_info": {"k": i}, "stats": stats})  # fmt: skip
    return {
        "machine_info": info if info is not None else machine_info(),
        "commit_info": {
            "id": "abc123",
            "time": commit_time or when,
            "dirty": False,
            "branch": "main",
        },
        "benchmarks": benchmarks,
        "datetime": when,
        "version": "5.3.1",
    }


def convert(doc: dict[str, Any]) -> Any:
    return convert_document(
        doc, label="autosave", source="0001_x.json", here=HERE, fingerprint=FINGERPRINT
    )


# --------------------------------------------------------------------------- identity
def test_this_machine_is_read_like_py_cpuinfo_reads_it_on_linux() -> None:
    here = MachineIdentity.here(cpuinfo_text=CPUINFO)
    assert here.cpu_brand == "AMD EPYC"  # whitespace collapsed, first CPU only
    assert here.cpu_model == "family 25 model 1 stepping 1"


def test_a_run_made_on_this_machine_is_recorded_under_this_machines_fingerprint() -> None:
    run = convert(document())
    assert run.same_machine and run.differences == ()
    assert run.record.machine == FINGERPRINT
    assert run.record.tags["cpu_count"] == "2" and run.record.tags["git_commit"] == "abc123"
    assert run.record.summary["imported_from"]["same_machine"] is True


@pytest.mark.parametrize(
    ("changes", "difference"),
    [
        ({"node": "laptop"}, "node 'laptop' there, 'vm' here"),
        ({"cpu": {"brand_raw": "Intel Xeon"}}, "CPU 'Intel Xeon' there, 'AMD EPYC' here"),
        ({"cpu": {"count": 64}}, "CPU count 64 there, 2 here"),
        ({"machine": "aarch64"}, "architecture 'aarch64' there, 'x86_64' here"),
        ({"cpu": {"model": 17}}, "CPU 'family 25 model 17 stepping 1' there"),
        ({"node": None}, "node not recorded"),
    ],
)
def test_a_run_from_another_machine_stays_another_machine(
    changes: dict[str, Any], difference: str
) -> None:
    run = convert(document(info=machine_info(**changes)))
    assert not run.same_machine
    assert any(difference in d for d in run.differences), run.differences
    assert run.record.machine.startswith("pytest-benchmark run on ")
    assert run.record.machine != FINGERPRINT


def test_a_different_python_is_a_tag_not_another_machine() -> None:
    run = convert(document(info=machine_info(python_version="3.12.1")))
    assert run.same_machine and run.record.tags["python"] == "3.12.1"


# --------------------------------------------------------------------------- samples
def test_raw_timings_become_samples_with_iterations_as_batch_size() -> None:
    run = convert(document())
    a = run.results[0]
    assert a.samples_s.tolist() == [1e-3, 1.1e-3, 0.9e-3]
    assert a.payload["measurement"]["batch_size"] == 2
    assert a.payload["benchmark"] == {
        "group": "g",
        "name": "test_a",
        "param": None,
        "extra_info": {"k": 0},
    }
    assert "summary_only" not in a.payload and not run.summary_only


def test_a_run_saved_without_data_is_stored_summary_only_with_its_statistics() -> None:
    run = convert(document(data=False))
    assert run.summary_only and run.record.summary["summary_only"] is True
    b = run.results[1]
    assert b.samples_s.size == 0
    assert b.payload["measurement"]["stop_reason"] == "imported-summary"
    assert b.payload["summary_only"]["p50_s"] == pytest.approx(2e-3)
    assert b.payload["summary_only"]["rounds"] == 3


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(benchmarks=[]), "holds no benchmarks"),
        (lambda d: d["benchmarks"][0]["stats"].update(data=[1, -2]), "non-empty list of positive seconds"),
        (lambda d: d["benchmarks"][0].pop("fullname"), "has no 'fullname'"),
        (lambda d: d["benchmarks"][1].update(fullname="t.py::test_a"), "two benchmarks share the node id"),
        (lambda d: d.update(datetime="yesterday"), "has no valid 'datetime'"),
        (lambda d: [b["stats"].pop(k) for b in d["benchmarks"] for k in ("data", "median")], "neither raw timings"),
    ],
    ids=["empty", "negative", "no-fullname", "duplicate", "no-datetime", "no-median"],
)  # fmt: skip
def test_malformed_documents_are_refused_clearly(mutate: Any, message: str) -> None:
    doc = document()
    mutate(doc)
    with pytest.raises(BenchmarkImportError, match=message):
        convert(doc)


# --------------------------------------------------------------------------- folders
def save(folder: Path, name: str, doc: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


def test_a_folder_imports_every_saved_run_in_commit_order_as_one_labels_history(
    tmp_path: Path,
) -> None:
    machine_dir = tmp_path / ".benchmarks" / "Linux-CPython-3.11-64bit"
    # Counter order differs from commit order: 0002 was run later on an older commit.
    save(
        machine_dir,
        "0001_new.json",
        document("2024-05-02T10:00:00+00:00", commit_time="2024-05-02T09:00:00+00:00"),
    )
    save(
        machine_dir,
        "0002_old.json",
        document("2024-05-03T10:00:00+00:00", commit_time="2024-05-01T09:00:00+00:00", data=False),
    )
    save(machine_dir, "0003_newest.json", document("2024-05-04T10:00:00+00:00"))
    (machine_dir / "notes.json").write_text("{}")  # not a saved run
    with Store.open(tmp_path / "s.sqlite") as store:
        summary = import_benchmarks(
            store, tmp_path / ".benchmarks", here=HERE, fingerprint=lambda: FINGERPRINT
        )
        assert summary.label == "autosave"
        assert [Path(run.source).name for _, run in summary.saved] == [
            "0002_old.json",
            "0001_new.json",
            "0003_newest.json",
        ]
        baseline = store.load_baseline("autosave")
        assert (
            Path(baseline.latest.record.summary["imported_from"]["file"]).name == "0003_newest.json"
        )
        assert len(baseline.history) == 2
        lines = summary.lines("s.sqlite")
        assert (
            "imported 3 pytest-benchmark run(s) as runs 1-3 (label 'autosave', commit order)"
            in lines[0]
        )
        assert any("1 run(s) without raw timings" in line for line in lines)
        assert any("machine: this machine" in line for line in lines)
        # Importing the grown folder again adds only the new run.
        save(machine_dir, "0004_next.json", document("2024-05-05T10:00:00+00:00"))
        again = import_benchmarks(
            store, tmp_path / ".benchmarks", here=HERE, fingerprint=lambda: FINGERPRINT
        )
        assert [Path(run.source).name for _, run in again.saved] == ["0004_next.json"]
        assert len(again.skipped) == 3
        # An older run would become the label's baseline: refused.
        save(machine_dir, "0005_late.json", document("2024-04-01T10:00:00+00:00"))
        with pytest.raises(BenchmarkImportError, match="would become the label's latest run"):
            import_benchmarks(store, machine_dir, here=HERE, fingerprint=lambda: FINGERPRINT)


def test_a_folder_with_several_machine_ids_asks_for_one(tmp_path: Path) -> None:
    save(tmp_path / "Linux-CPython-3.11-64bit", "0001_a.json", document())
    save(tmp_path / "Linux-CPython-3.12-64bit", "0001_a.json", document())
    with pytest.raises(BenchmarkImportError, match="saved runs in 2 machine-id folders"):
        saved_run_paths(tmp_path)


def test_an_empty_folder_says_how_runs_are_saved(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkImportError, match="--benchmark-autosave"):
        saved_run_paths(tmp_path)
