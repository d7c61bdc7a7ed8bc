"""Saving and loading baselines through the plugin, and every usage error it reports."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from .conftest import RunAndParse

SIMPLE = "def test_a(roofline):\n    roofline(sorted, [3, 1, 2])\n\ndef test_b(roofline):\n    roofline(len, 'ab')\n"


def test_a_saved_run_becomes_the_baseline_of_the_next_run(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    project.makepyfile(test_s=SIMPLE)
    first, _ = run_and_parse("--roofline-save=main", "--roofline-tag=model=v1")
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["*roofline: saved run 1 as 'main' in *store.sqlite*"])
    assert (project.path / ".roofline" / "store.sqlite").exists()

    # Real timings: the gate may see noise here; this test is about the baseline plumbing.
    second, document = run_and_parse(
        "--roofline-baseline=main", "--roofline-tag=model=v2", "--roofline-gate=never"
    )
    second.assert_outcomes(passed=2)
    assert document["run"]["baseline_label"] == "main"
    assert document["run"]["baseline_run_id"] == 1
    assert document["run"]["tag_diff"]["model"] == {
        "baseline": "v1",
        "candidate": "v2",
        "layer": "model",
    }
    for test in document["tests"]:
        assert test["baseline"]["samples"] >= 5
        assert test["baseline"]["p95_s"] > 0
        assert test["change"]["p95"]["ratio"] > 0
    second.stdout.fnmatch_lines(["*compared with baseline 'main' (run 1)*", "*model: v1 -> v2*"])


def test_the_baseline_is_the_latest_run_under_its_label(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    project.makepyfile(test_s=SIMPLE)
    for _ in range(3):
        run_and_parse("--roofline-save=main")
    _, document = run_and_parse("--roofline-baseline=main")
    assert document["run"]["baseline_run_id"] == 3


def test_a_test_missing_from_the_candidate_is_listed(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    project.makepyfile(test_s=SIMPLE)
    run_and_parse("--roofline-save=main")
    _, document = run_and_parse("--roofline-baseline=main", "-k", "test_a")
    assert document["run"]["missing_from_candidate"] == ["test_s.py::test_b"]


def test_an_unknown_baseline_label_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_s=SIMPLE)
    project.runpytest("--roofline", "--roofline-save=main")
    result = project.runpytest("--roofline", "--roofline-baseline=nightly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*no run saved under label 'nightly'*labels present: 'main'*--roofline-save=nightly*"]
    )


def test_a_corrupt_store_is_a_usage_error_and_is_left_untouched(project: pytest.Pytester) -> None:
    project.makepyfile(test_s=SIMPLE)
    store = project.path / "results.sqlite"
    store.write_bytes(b"garbage" * 1000)
    result = project.runpytest("--roofline", f"--roofline-store={store}", "--roofline-save=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*not a readable pytest-roofline store*left untouched*"])
    assert store.read_bytes() == b"garbage" * 1000


def test_a_store_from_a_newer_version_is_refused(project: pytest.Pytester) -> None:
    project.makepyfile(test_s=SIMPLE)
    project.runpytest("--roofline", "--roofline-save=main").assert_outcomes(passed=2)
    path = project.path / ".roofline" / "store.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.close()
    result = project.runpytest("--roofline", "--roofline-baseline=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*schema version 99 is newer*"])


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "import pytest\n@pytest.mark.roofline(owners='x')\ndef test_k(roofline):\n    pass\n",
            "*test_k.py::test_k: @pytest.mark.roofline: *unexpected keyword argument 'owners'*",
        ),
        (
            "import pytest\n@pytest.mark.roofline(sla={'p99': 'soon'})\ndef test_k(roofline):\n    pass\n",
            "*test_k.py::test_k: @pytest.mark.roofline(sla=...): sla.p99: expected a duration*",
        ),
        (
            "import pytest\n@pytest.mark.roofline(slices='nope')\ndef test_k(roofline, workload):\n    pass\n",
            "*test_k.py::test_k: @pytest.mark.roofline(slices='nope') names no slice group*groups: [[]'sizes'[]]*",
        ),
        (
            "def test_k(roofline, workload):\n    pass\n",
            "*test_k.py::test_k: uses the 'workload' fixture but names no slices*",
        ),
        (
            "import pytest\n@pytest.mark.roofline(slices=[{'name': 'a', 'params': 3}])\ndef test_k(workload):\n    pass\n",
            "*test_k.py::test_k: *'params' must be a mapping*",
        ),
    ],
)
def test_marker_errors_are_usage_errors_naming_the_test(
    project: pytest.Pytester, source: str, message: str
) -> None:
    project.makepyfile(test_k=source)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert len(result.stderr.lines) <= 2  # each problem reported once


def test_config_errors_are_usage_errors_naming_the_file_and_key(project: pytest.Pytester) -> None:
    project.makefile(".yaml", roofline="gate: {alpha: 7}\n")
    project.makepyfile(test_s=SIMPLE)
    result = project.runpytest("--roofline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: *roofline.yaml: gate.alpha: expected a significance level in (0, 0.5)*"]
    )


def test_an_unknown_target_is_a_usage_error_listing_the_known_ones(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_s=SIMPLE)
    result = project.runpytest("--roofline", "--roofline-target=h900")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --roofline-target: *h900*ci-runner*h200*"])


def test_bad_option_values_are_usage_errors(project: pytest.Pytester) -> None:
    project.makepyfile(test_s=SIMPLE)
    result = project.runpytest("--roofline", "--roofline-budget=forever")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --roofline-budget: expected a duration*"])
    result = project.runpytest("--roofline", "--roofline-tag=oops")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --roofline-tag: expected KEY=VALUE*"])


def test_a_json_path_that_cannot_be_written_fails_the_run_with_status_7(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_s=SIMPLE)
    blocker = project.path / "blocker"
    blocker.write_text("a file, not a directory")
    result = project.runpytest("--roofline", f"--roofline-json={blocker / 'out.json'}")
    result.assert_outcomes(passed=2)
    assert result.ret == 7
    result.stdout.fnmatch_lines(["*roofline: ERROR could not write the JSON to*"])


def test_measurements_arrive_from_xdist_workers(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    pytest.importorskip("xdist")
    project.makepyfile(
        test_s=SIMPLE, test_t=SIMPLE.replace("test_a", "test_c").replace("test_b", "test_d")
    )
    result, document = run_and_parse("-n", "2", "--roofline-save=main", subprocess=True)
    result.assert_outcomes(passed=4)
    assert sorted(t["nodeid"] for t in document["tests"]) == [
        "test_s.py::test_a", "test_s.py::test_b", "test_t.py::test_c", "test_t.py::test_d",
    ]  # fmt: skip
    assert all(t["samples"] >= 5 for t in document["tests"])
    assert document["run"]["target"]["name"] == "ci-runner"
    assert Path(project.path, ".roofline", "store.sqlite").exists()


def test_xdist_workers_never_measure_at_the_same_time(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    project.makepyfile(
        test_lock="""
        import pathlib, time
        import pytest
        LOG = pathlib.Path(__file__).with_name("intervals.log")

        @pytest.mark.parametrize("i", range(6))
        def test_k(roofline, i):
            seen = []
            def fn():
                seen.append(time.monotonic())  # CLOCK_MONOTONIC: comparable across processes
                time.sleep(0.0005)
            roofline(fn)
            with LOG.open("a") as log:
                log.write(f"{seen[0]} {seen[-1]}\\n")
        """
    )
    result = project.runpytest_subprocess("--roofline", "-n", "2")
    result.assert_outcomes(passed=6)
    intervals = sorted(
        tuple(map(float, line.split()))
        for line in (project.path / "intervals.log").read_text().splitlines()
    )
    assert len(intervals) == 6
    for (_, end), (start, _) in itertools.pairwise(intervals):
        assert end <= start, "two workers were measuring at the same time"
