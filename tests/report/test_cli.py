"""The ``pytest-roofline`` command against real SQLite stores in a temporary directory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, EXIT_WRITE_FAILED, main
from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.results import TestResult
from pytest_roofline.store import RunRecord, Store, StoredResult
from tests.report.documents import make_document
from tests.report.page import parse

NODEIDS = ("tests/perf/test_k.py::test_gemm[small]", "tests/perf/test_k.py::test_copy[large]")
TAGS = {"python": "3.11.9", "numpy": "2.1.0", "git_commit": "abc"}
TARGET = {
    "name": "ci-runner",
    "source": "config",
    "description": "",
    "peak_flops_per_s": {"fp64": 4e10},
    "peak_bytes_per_s": {"dram": 2e10},
}


def _result(nodeid: str, samples: np.ndarray) -> StoredResult:
    measurement = Measurement(
        samples=SampleSet(samples, 1, 10, 0.01, "budget", float(samples.sum()), False),
        declared=None,
        quality=(),
        counters=None,
    )
    result = TestResult(
        nodeid, None, ("kernels-team",), "revert the PR", SlaSpec(), None, measurement
    )
    return StoredResult(nodeid, result.to_dict(include_samples=False), samples)


def _save(
    store: Store,
    label: str | None,
    *,
    scale: float = 1.0,
    document: dict[str, Any] | None = None,
    seed: int = 0,
) -> int:
    rng = np.random.default_rng(seed)
    results = [_result(n, 1e-3 * scale * np.exp(0.02 * rng.standard_normal(2000))) for n in NODEIDS]
    summary: dict[str, Any] = {
        "tests": len(results),
        "decision": document["decision"] if document else None,
    }
    if document is not None:
        summary["document"] = document
    record = RunRecord(
        label, 1.7e9 + seed, 1.7e9 + seed + 60, TAGS, TARGET, "machine-a", summary=summary
    )
    return store.save_run(record, results)


def _only(decision: str) -> dict[str, Any]:
    document = make_document(12)
    for test in document["tests"]:
        test["decision"] = decision
    document["decision"] = decision
    return document


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store.sqlite"
    with Store.open(path) as store:
        _save(store, "main", document=_only("ship"), seed=1)  # run 1
        _save(store, "pr", scale=2.0, document=make_document(12), seed=2)  # run 2: rollback
        _save(store, "old", seed=3)  # run 3: saved without a report document
        _save(store, "esc", document=_only("escalate"), seed=4)  # run 4
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err


# --------------------------------------------------------------------------- runs
def test_runs_lists_every_run_newest_first(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    status, out, _ = run(capsys, "runs", "--store", str(store_path))
    assert status == EXIT_OK
    lines = out.splitlines()
    assert lines[0].split() == ["id", "label", "started", "(UTC)", "tests", "decision", "target"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["4", "esc"],
        ["3", "old"],
        ["2", "pr"],
        ["1", "main"],
    ]
    assert lines[2].split()[-2:] == ["-", "ci-runner"]  # no decision saved for run 3
    assert "rollback" in lines[3]


def test_runs_as_json(capsys: pytest.CaptureFixture[str], store_path: Path) -> None:
    status, out, _ = run(capsys, "runs", "--store", str(store_path), "--json")
    assert status == EXIT_OK
    runs = json.loads(out)
    assert [r["label"] for r in runs] == ["esc", "old", "pr", "main"]
    assert runs[0] | {"started": None} == {
        "id": 4,
        "label": "esc",
        "started": None,
        "tests": 2,
        "decision": "escalate",
        "target": "ci-runner",
    }


def test_runs_on_an_empty_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    Store.open(tmp_path / "empty.sqlite").close()
    status, out, _ = run(capsys, "runs", "--store", str(tmp_path / "empty.sqlite"))
    assert (status, out.strip()) == (EXIT_OK, f"no runs in {tmp_path / 'empty.sqlite'}")


@pytest.mark.parametrize("command", ["runs", "report 1", "export 1", "compare 1 2"])
def test_a_missing_store_is_a_clear_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    missing = tmp_path / "nope.sqlite"
    status, _, err = run(capsys, *command.split(), "--store", str(missing))
    assert status == EXIT_USAGE
    assert f"{missing}: no result store here" in err
    assert not missing.exists()
    _no_traceback(err)


def test_a_file_that_is_not_a_store_is_refused_untouched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not a database" * 100)
    status, _, err = run(capsys, "runs", "--store", str(bogus))
    assert status == EXIT_USAGE and "not a readable pytest-roofline store" in err
    assert bogus.read_text() == "not a database" * 100
    _no_traceback(err)


# --------------------------------------------------------------------------- report
def test_report_rerenders_a_stored_run(
    capsys: pytest.CaptureFixture[str], store_path: Path, tmp_path: Path
) -> None:
    html, md, js = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.json"
    status, out, _ = run(
        capsys,
        "report",
        "2",
        "--store",
        str(store_path),
        "--html",
        str(html),
        "--markdown",
        str(md),
        "--json",
        str(js),
    )
    assert status == EXIT_FAIL  # the stored decision is rollback, gated by default
    stored = make_document(12)
    assert json.loads(js.read_text()) == json.loads(json.dumps(stored))
    page = parse(html.read_text())
    assert len(page.by_id("test-table").find_all("tbody")[0].find_all("tr")) == 12
    assert md.read_text().startswith("## pytest-roofline: **ROLLBACK**")
    # Named relative to the summary: a local absolute path means nothing where it is read.
    assert "`r.html` (written beside this summary)" in md.read_text()
    assert f"wrote HTML to {html}" in out and "decision: ROLLBACK" in out
    assert "ROLLBACK tests/perf/" in out  # each non-ship test on its own line


@pytest.mark.parametrize(
    ("run_ref", "gate", "expected"),
    [
        ("main", "rollback", EXIT_OK),
        ("pr", "rollback", EXIT_FAIL),
        ("pr", "never", EXIT_OK),
        ("esc", "rollback", EXIT_OK),
        ("esc", "escalate", EXIT_FAIL),
        ("main", "escalate", EXIT_OK),
    ],
)
def test_report_exit_status_follows_the_decision_and_the_gate(
    capsys: pytest.CaptureFixture[str],
    store_path: Path,
    tmp_path: Path,
    run_ref: str,
    gate: str,
    expected: int,
) -> None:
    status, _, _ = run(
        capsys,
        "report",
        run_ref,
        "--store",
        str(store_path),
        "--gate",
        gate,
        "--html",
        str(tmp_path / "r.html"),
    )
    assert status == expected


def test_report_of_a_run_without_a_document_says_what_to_do(
    capsys: pytest.CaptureFixture[str], store_path: Path, tmp_path: Path
) -> None:
    status, _, err = run(
        capsys, "report", "old", "--store", str(store_path), "--html", str(tmp_path / "r.html")
    )
    assert status == EXIT_USAGE
    assert (
        "run 3 has no saved report document" in err and "pytest-roofline compare BASE '#3'" in err
    )
    assert not (tmp_path / "r.html").exists()
    _no_traceback(err)


@pytest.mark.parametrize(
    ("ref", "message"),
    [("99", "no run with id 99"), ("nightly", "'nightly' is neither a run id nor a label")],
)
def test_report_of_an_unknown_run(
    capsys: pytest.CaptureFixture[str], store_path: Path, tmp_path: Path, ref: str, message: str
) -> None:
    status, _, err = run(
        capsys, "report", ref, "--store", str(store_path), "--html", str(tmp_path / "r.html")
    )
    assert status == EXIT_USAGE and message in err
    _no_traceback(err)


def test_an_unwritable_output_is_a_clear_error_with_its_own_status(
    capsys: pytest.CaptureFixture[str], store_path: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status, _, err = run(
        capsys, "report", "1", "--store", str(store_path), "--html", str(blocker / "r.html")
    )
    assert status == EXIT_WRITE_FAILED and f"cannot write {blocker / 'r.html'}" in err
    _no_traceback(err)


# --------------------------------------------------------------------------- compare
def test_compare_two_stored_runs_offline(
    capsys: pytest.CaptureFixture[str], store_path: Path, tmp_path: Path
) -> None:
    html, js, md = tmp_path / "c.html", tmp_path / "c.json", tmp_path / "c.md"
    status, out, err = run(
        capsys,
        "compare",
        "main",
        "pr",
        "--store",
        str(store_path),
        "--html",
        str(html),
        "--json",
        str(js),
        "--markdown",
        str(md),
    )
    _no_traceback(err)
    document = json.loads(js.read_text())
    assert {t["nodeid"] for t in document["tests"]} == set(NODEIDS)
    # Every test is twice as slow with 2000 samples a side: a clear p95 regression.
    assert {t["change"]["p95"]["verdict"] for t in document["tests"]} == {"regression"}
    assert document["decision"] in ("rollback", "escalate")
    assert status == (EXIT_FAIL if document["decision"] == "rollback" else EXIT_OK)
    page = parse(html.read_text())
    assert len(page.find_all("article", cls="memo")) == 2
    assert f"wrote HTML to {html}" in out
    status, _, _ = run(
        capsys, "compare", "main", "pr", "--store", str(store_path), "--gate", "never"
    )
    assert status == EXIT_OK


def test_compare_with_an_unknown_run(capsys: pytest.CaptureFixture[str], store_path: Path) -> None:
    status, _, err = run(capsys, "compare", "main", "77", "--store", str(store_path))
    assert status == EXIT_USAGE and "no run with id 77" in err
    _no_traceback(err)


# --------------------------------------------------------------------------- export / import
def test_export_then_import_reproduces_the_run(
    capsys: pytest.CaptureFixture[str], store_path: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "run.json"
    status, _, err = run(capsys, "export", "pr", "--store", str(store_path), "-o", str(exported))
    assert status == EXIT_OK and f"exported run to {exported}" in err
    other = tmp_path / "other.sqlite"
    status, out, _ = run(
        capsys, "import", str(exported), "--store", str(other), "--label", "copied"
    )
    assert status == EXIT_OK and "as run 1 (label 'copied', 2 tests)" in out
    with Store.open(store_path) as source, Store.open(other) as target:
        original, copy = source.load_run(2), target.load_run(1)
    assert copy.record.label == "copied"
    assert copy.record.summary == original.record.summary
    for nodeid in NODEIDS:
        np.testing.assert_array_equal(
            copy.results[nodeid].samples_s, original.results[nodeid].samples_s
        )
        assert copy.results[nodeid].payload == original.results[nodeid].payload


def test_export_writes_json_to_stdout_by_default(
    capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    status, out, _ = run(capsys, "export", "1", "--store", str(store_path))
    assert status == EXIT_OK
    assert json.loads(out)["format"] == "pytest-roofline-run"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        (
            "{not json",
            "not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)",
        ),
        ('{"hello": "world"}', "neither a pytest-roofline run export"),
        (
            '{"format": "pytest-roofline-run", "schema_version": 99}',
            "export schema version 99 is not readable",
        ),
        (
            '{"format": "pytest-roofline-run", "schema_version": 1, "run": {}}',
            "run.started: missing",
        ),
        ('{"benchmarks": []}', "holds no benchmarks"),
        (
            '{"benchmarks": [{"fullname": "t.py::t", "stats": {"data": [1, -2]}}]}',
            "non-empty list of positive seconds",
        ),
    ],
    ids=["missing", "not-json", "unknown", "newer", "malformed", "empty-benchmark", "bad-data"],
)
def test_import_rejects_bad_files_clearly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(content)
    status, _, err = run(capsys, "import", str(path), "--store", str(tmp_path / "s.sqlite"))
    assert status == EXIT_USAGE
    assert message in err
    _no_traceback(err)


def _run_pytest_benchmark(pytester: pytest.Pytester, *extra: str) -> Path:
    """Run three benchmarks, saved as ``.benchmarks/*/0001_run.json``; return that file."""
    # pytest-benchmark switches itself off when it sees an xdist worker, which the inner run is
    # not even when this suite runs under -n.
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PYTEST_XDIST_WORKER", raising=False)
        return _benchmark_suite(pytester, *extra)


def _benchmark_suite(pytester: pytest.Pytester, *extra: str) -> Path:
    pytester.makepyfile(
        test_bench="""
        import pytest

        def test_sum(benchmark):
            benchmark(sum, range(200))

        @pytest.mark.parametrize("n", [10, 1000])
        def test_sorted(benchmark, n):
            benchmark(sorted, range(n, 0, -1))
        """
    )
    result = pytester.runpytest(
        "--benchmark-save=run", "--benchmark-min-rounds=25", "--benchmark-max-time=0.02",
        "--benchmark-warmup=off", *extra,
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    (saved,) = (pytester.path / ".benchmarks").glob("*/0001_run.json")
    return saved


def test_a_pytest_benchmark_file_with_raw_data_imports_as_a_run(
    capsys: pytest.CaptureFixture[str], pytester: pytest.Pytester
) -> None:
    saved = _run_pytest_benchmark(pytester, "--benchmark-save-data")
    bench = json.loads(saved.read_text())
    store = pytester.path / "store.sqlite"
    status, out, err = run(capsys, "import", str(saved), "--store", str(store))
    _no_traceback(err)
    assert status == EXIT_OK and "as run 1 (label 'pytest-benchmark', 3 tests)" in out
    with Store.open(store) as opened:
        stored = opened.load_run(1)
    assert stored.record.summary["imported_from"]["tool"] == "pytest-benchmark"
    assert stored.record.tags["python"] == bench["machine_info"]["python_version"]
    expected = {b["fullname"]: b for b in bench["benchmarks"]}
    assert (
        set(stored.results)
        == set(expected)
        == {
            "test_bench.py::test_sum",
            "test_bench.py::test_sorted[10]",
            "test_bench.py::test_sorted[1000]",
        }
    )
    for nodeid, result in stored.results.items():
        stats = expected[nodeid]["stats"]
        np.testing.assert_allclose(result.samples_s, stats["data"])
        # The plugin reads the payload back: same samples, the iterations as batch size.
        test = TestResult.from_dict(result.payload, samples_s=result.samples_s)
        assert test.nodeid == nodeid
        assert test.measurement.samples.batch_size == stats["iterations"]
        assert test.summary().n == len(stats["data"])


def test_imported_pytest_benchmark_runs_can_be_compared(
    capsys: pytest.CaptureFixture[str], pytester: pytest.Pytester
) -> None:
    store = str(pytester.path / "store.sqlite")
    bench = str(_run_pytest_benchmark(pytester, "--benchmark-save-data"))
    assert run(capsys, "import", bench, "--store", store, "--label", "before")[0] == EXIT_OK
    assert run(capsys, "import", bench, "--store", store, "--label", "after")[0] == EXIT_OK
    status, _, err = run(
        capsys,
        "compare",
        "before",
        "after",
        "--store",
        store,
        "--json",
        str(pytester.path / "c.json"),
    )
    _no_traceback(err)
    document = json.loads((pytester.path / "c.json").read_text())
    assert len(document["tests"]) == 3
    # The same samples on both sides: ratio 1 and nothing to roll back. (A short pytest-benchmark
    # series may still escalate for drift within the run; that is the policy's call.)
    assert all(t["change"]["p95"]["ratio"] == pytest.approx(1.0) for t in document["tests"])
    assert document["decision"] in ("ship", "escalate")
    assert status == EXIT_OK


def test_a_pytest_benchmark_file_without_raw_data_imports_summary_only_and_says_so(
    capsys: pytest.CaptureFixture[str], pytester: pytest.Pytester
) -> None:
    saved = _run_pytest_benchmark(pytester)
    bench = json.loads(saved.read_text())
    store = pytester.path / "s.sqlite"
    status, out, err = run(capsys, "import", str(saved), "--store", str(store))
    _no_traceback(err)
    assert status == EXIT_OK
    assert "without raw timings (saved without --benchmark-save-data) stored summary-only" in out
    with Store.open(store) as opened:
        stored = opened.load_run(1)
    assert stored.record.summary["summary_only"] is True
    medians = {b["fullname"]: b["stats"]["median"] for b in bench["benchmarks"]}
    for nodeid, result in stored.results.items():
        assert result.samples_s.size == 0
        assert result.payload["summary_only"]["p50_s"] == pytest.approx(medians[nodeid])


# --------------------------------------------------------------------------- calibrate, usage
def test_calibrate_prints_the_host_roofs_and_caches_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "cal.sqlite"
    status, out, _ = run(capsys, "calibrate", "--store", str(store))
    assert status == EXIT_OK
    assert out.startswith("hardware target host (measured)")
    assert "compute fp64" in out and "bandwidth dram" in out


def test_calibrate_refresh_is_passed_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_roofline.hardware import calibration
    from pytest_roofline.hardware.presets import load_presets

    seen: list[bool] = []

    def fake(cache: object, *, refresh: bool = False, **_: object) -> Any:
        seen.append(refresh)
        return load_presets()["l4"]

    monkeypatch.setattr(calibration, "host_target", fake)
    status, out, _ = run(capsys, "calibrate", "--store", str(tmp_path / "c.sqlite"), "--refresh")
    assert status == EXIT_OK and seen == [True]
    assert out.startswith("hardware target l4 (preset)")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["report"],
        ["runs", "--gate", "never"],
        ["compare", "1", "2", "--store", "s", "--gate", "maybe"],
    ],
    ids=["no-command", "unknown-command", "no-run", "unknown-option", "bad-gate"],
)
def test_usage_errors_exit_2_with_the_usage(
    capsys: pytest.CaptureFixture[str], argv: Sequence[str]
) -> None:
    status, _, err = run(capsys, *argv)
    assert status == EXIT_USAGE
    assert err.startswith("usage: pytest-roofline")
    _no_traceback(err)


def test_the_command_runs_as_a_program() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_roofline.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0
    for command in ("runs", "report", "compare", "export", "import", "calibrate"):
        assert command in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "pytest_roofline.cli", "runs", "--store", "/nonexistent/store.sqlite"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == EXIT_USAGE and "no result store here" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_console_script_is_declared() -> None:
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("pytest-roofline") == "pytest_roofline.cli:main"


# --------------------------------------------------------------------------- one default store
@pytest.mark.parametrize(
    "argv",
    [
        ("runs",),
        ("report", "pr"),
        ("compare", "main", "pr"),
        ("export", "main"),
        ("calibrate",),
        ("ab", "--baseline=HEAD"),
        ("import", "run.json"),
    ],
)
def test_every_subcommand_has_the_plugins_default_store(argv: tuple[str, ...]) -> None:
    from pytest_roofline.cli import _parser
    from pytest_roofline.config.defaults import DEFAULTS

    args = _parser().parse_args(list(argv))
    assert args.store == DEFAULTS.store


def test_report_compare_export_and_import_work_without_store_in_the_default_location(
    capsys: pytest.CaptureFixture[str],
    store_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = tmp_path / "project"
    (project / ".roofline").mkdir(parents=True)
    (project / ".roofline" / "store.sqlite").write_bytes(store_path.read_bytes())
    monkeypatch.chdir(project)
    status, out, err = run(capsys, "report", "main", "--markdown", "summary.md")
    assert status == EXIT_OK, err
    assert (project / "summary.md").exists()
    status, out, err = run(capsys, "compare", "main", "pr", "--json", "compare.json")
    assert status in (EXIT_OK, EXIT_FAIL), err
    assert (project / "compare.json").exists()
    status, out, err = run(capsys, "export", "main", "-o", "main.json")
    assert status == EXIT_OK, err
    status, out, err = run(capsys, "import", "main.json", "--label", "again")
    assert status == EXIT_OK, err
    assert "into .roofline/store.sqlite" in out


def test_without_a_store_in_the_default_location_the_error_names_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, "report", "1")
    assert status == EXIT_USAGE
    assert ".roofline/store.sqlite" in err
    _no_traceback(err)
