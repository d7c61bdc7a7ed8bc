"""An unchanged pytest-benchmark suite under --roofline: the fixture, the options, the ownership rule, the import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.cli import main
from pytest_roofline.store import Store

from .conftest import FAKE_CLOCK_CONFTEST

# pytest-benchmark's documented examples (docs/usage.rst, "Usage", "Marker", "Extra info",
# "Pedantic mode"), unchanged except for module-level call counters this file checks.
DOCUMENTED = """
import time
import pytest

CALLS = {"something": 0, "stuff": 0}

def something(duration=0.000001):
    CALLS["something"] += 1
    time.sleep(duration)
    return 123

def test_my_stuff(benchmark):
    result = benchmark(something)
    assert result == 123

@pytest.mark.benchmark(
    group="group-name",
    min_time=0.1,
    max_time=0.5,
    min_rounds=5,
    timer=time.time,
    disable_gc=True,
    warmup=False
)
def test_marked(benchmark):
    @benchmark
    def result():
        return time.sleep(0.000001)
    assert result is None

def test_extra_info(benchmark):
    benchmark.extra_info['foo'] = 'bar'
    benchmark(time.sleep, 0.002)

def stuff(a, b, c, foo):
    CALLS["stuff"] += 1

def test_with_setup(benchmark):
    def setup():
        return (1, 2, 3), {'foo': 'bar'}
    benchmark.pedantic(stuff, setup=setup, rounds=100)

def test_sort_in_place(benchmark):
    def setup():
        return (list(range(500, 0, -1)),), {}
    def sort(values):
        values.sort()
        return values
    result = benchmark.pedantic(sort, setup=setup, rounds=20, warmup_rounds=2)
    assert result[:3] == [1, 2, 3]

@pytest.mark.parametrize("n", [10, 100])
def test_group_and_params(benchmark, n):
    benchmark.group = "sorting"
    benchmark(sorted, list(range(n, 0, -1)))
    assert benchmark.param == str(n) and benchmark.params == {"n": n}

def test_not_a_benchmark():
    assert CALLS
"""


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["nodeid"].split("::")[1]: t for t in document.get("tests", [])}


def test_pytest_benchmarks_documented_examples_run_unchanged_and_are_gated(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_docs=DOCUMENTED)
    result = project.runpytest("-p", "no:benchmark", "--roofline", "--roofline-json=out.json")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(
        ["roofline: the 'benchmark' fixture is pytest-roofline's (measured and gated)"]
    )
    tests = _tests(json.loads(Path(project.path, "out.json").read_text()))
    assert set(tests) == {
        "test_my_stuff", "test_marked", "test_extra_info", "test_with_setup",
        "test_sort_in_place", "test_group_and_params[10]", "test_group_and_params[100]",
    }  # fmt: skip
    for test in tests.values():
        assert test["decision"] == "ship" or test["reasons"]  # decided, with p50/p95/p99
        assert test["p50_s"] is not None
    assert tests["test_marked"]["benchmark"]["group"] == "group-name"
    assert tests["test_extra_info"]["benchmark"]["extra_info"] == {"foo": "bar"}
    assert tests["test_group_and_params[100]"]["benchmark"]["group"] == "sorting"
    assert tests["test_group_and_params[100]"]["benchmark"]["param"] == "100"
    # Pedantic: exactly the rounds asked for, one sample per round.
    assert tests["test_with_setup"]["samples"] == 100
    assert tests["test_with_setup"]["stop_reason"] == "rounds"
    assert tests["test_sort_in_place"]["samples"] == 20
    # min_time=0.1 s per round and min_rounds=5: rounds of >= 0.1 s, at least five of them.
    assert tests["test_marked"]["samples"] >= 5 and tests["test_marked"]["p50_s"] > 0
    # A ~60 µs call is timed alone by default; min_time=0.1 batches it into rounds of ~0.1 s.
    assert tests["test_marked"]["batch_size"] > 100


def test_without_roofline_the_examples_run_each_function_once(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_docs=DOCUMENTED
        + "\ndef test_zz_counts():\n    assert CALLS == {'something': 1, 'stuff': 1}\n"
    )
    result = project.runpytest("-p", "no:benchmark", "-p", "no:randomly")
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(
        [
            "roofline: the 'benchmark' fixture is pytest-roofline's (no --roofline: each function is called once)"
        ]
    )


# --------------------------------------------------------------------------- ownership
OWNER_PROBE = """
def test_owner(benchmark):
    benchmark(len, "abc")
    print("OWNER", type(benchmark).__module__)

def test_plain():
    pass
"""


def test_an_active_pytest_benchmark_keeps_the_fixture_and_the_header_says_so(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    project.makepyfile(test_owner=OWNER_PROBE)
    result = project.runpytest(
        "--roofline", "-s", "--benchmark-max-time=0.01", "--benchmark-disable-gc"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "roofline: the 'benchmark' fixture is pytest-benchmark's: those tests are not gated*",
        "*OWNER pytest_benchmark.fixture*",
    ])  # fmt: skip


def test_roofline_can_take_the_fixture_from_an_installed_pytest_benchmark(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    project.makepyfile(test_owner=OWNER_PROBE)
    # pytest-benchmark's own spellings stay accepted and are honoured.
    result = project.runpytest(
        "--roofline", "-s", "--roofline-benchmark=roofline", "--benchmark-only",
        "--benchmark-compare-fail=median:10%", "--roofline-json=out.json",
    )  # fmt: skip
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "roofline: the 'benchmark' fixture is pytest-roofline's (measured and gated)",
        "*OWNER pytest_roofline.plugin.benchmark_fixture*",
    ])  # fmt: skip
    assert set(_tests(json.loads(Path(project.path, "out.json").read_text()))) == {"test_owner"}


def test_pytest_benchmarks_measurement_options_are_honoured_when_roofline_owns_the_fixture(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    project.makepyfile(test_owner=OWNER_PROBE)
    taken = ("--roofline", "--roofline-benchmark=roofline", "--roofline-json=out.json")
    result = project.runpytest(*taken, "--benchmark-min-rounds=400", "--benchmark-max-time=0.001")
    result.assert_outcomes(passed=2)
    assert (
        _tests(json.loads(Path(project.path, "out.json").read_text()))["test_owner"]["samples"]
        >= 400
    )
    refused = project.runpytest(*taken, "--benchmark-timer=time.process_time")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--benchmark-* options, as @pytest.mark.benchmark(timer=time.process_time) cannot be kept"
        in refused.stderr.str()
    )


def test_asking_for_pytest_benchmark_when_it_is_off_leaves_no_benchmark_fixture(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_owner=OWNER_PROBE)
    result = project.runpytest("-p", "no:benchmark", "--roofline-benchmark=pytest-benchmark")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'benchmark' not found*"])


# --------------------------------------------------------------------------- options
@pytest.mark.parametrize(
    ("options", "outcomes", "measured"),
    [
        (("--benchmark-only",), {"passed": 1, "skipped": 1}, {"test_owner"}),
        (("--roofline-only",), {"passed": 1, "skipped": 1}, {"test_owner"}),
        (("--benchmark-skip",), {"passed": 1, "skipped": 1}, set()),
        (("--roofline-skip",), {"passed": 1, "skipped": 1}, set()),
        (("--benchmark-only", "--benchmark-skip"), {"passed": 1, "skipped": 1}, {"test_owner"}),
        (("--benchmark-disable",), {"passed": 2}, None),
        (("--roofline-disable",), {"passed": 2}, None),
        (("--benchmark-save-data",), {"passed": 2}, {"test_owner"}),
    ],
    ids=["benchmark-only", "roofline-only", "benchmark-skip", "roofline-skip", "only-wins", "benchmark-disable", "roofline-disable", "save-data"],
)  # fmt: skip
def test_pytest_benchmark_options_map_onto_roofline(
    project: pytest.Pytester,
    options: tuple[str, ...],
    outcomes: dict[str, int],
    measured: set[str] | None,
) -> None:
    project.makepyfile(test_owner=OWNER_PROBE)
    result = project.runpytest(
        "-p", "no:benchmark", "--roofline", "--roofline-json=out.json", *options
    )
    result.assert_outcomes(**outcomes)
    out = Path(project.path, "out.json")
    if measured is None:  # disabled: nothing measured, no document
        assert not out.exists()
    else:
        assert set(_tests(json.loads(out.read_text()))) == measured


@pytest.mark.parametrize("option", ["--benchmark-autosave", "--roofline-autosave"])
def test_autosave_measures_and_keeps_every_run_under_one_label(
    project: pytest.Pytester, option: str
) -> None:
    project.makepyfile(test_owner=OWNER_PROBE)
    for _ in range(2):
        project.runpytest("-p", "no:benchmark", option).assert_outcomes(
            passed=2
        )  # no --roofline needed
    with Store.open(project.path / ".roofline" / "store.sqlite") as store:
        runs = [(record.label, n) for _, record, n in store.list_runs()]
    assert runs == [("autosave", 1), ("autosave", 1)]


COSTED = (
    FAKE_CLOCK_CONFTEST
    + """
import json, pathlib, zlib
import numpy as np

@pytest.fixture
def work(request):
    scale = json.loads(pathlib.Path(__file__).with_name("scale.json").read_text())
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))
    return lambda: advance(1e-3 * scale[request.node.name] * rng.lognormal(0.0, 0.02))
"""
)
COSTED_TESTS = "".join(f"\ndef test_{c}(benchmark, work):\n    benchmark(work)\n" for c in "abcdef")


def costed_project(project: pytest.Pytester) -> tuple[dict[str, float], tuple[str, ...]]:
    """Six ``benchmark`` tests of 1 ms each on a fake clock, a baseline ``main`` saved: their
    scales (``scale.json``) and the options each later run takes."""
    project.makeconftest(COSTED)
    project.makepyfile(test_costed=COSTED_TESTS)
    project.makeini("[pytest]\nroofline_budget = 0.4\nroofline_warmup = 1ms\n")
    scale = dict.fromkeys((f"test_{c}" for c in "abcdef"), 1.0)
    (project.path / "scale.json").write_text(json.dumps(scale))
    common = ("-p", "no:benchmark", "--roofline", "--roofline-json=out.json")
    project.runpytest(*common, "--roofline-save=main").assert_outcomes(passed=6)
    return scale, common


def test_an_explicit_threshold_escalates_a_real_change_the_noise_floor_would_ship(
    project: pytest.Pytester,
) -> None:
    # No git here, so no paired rounds: two runs alone do not attribute +15% to the code (a
    # shift between runs is as likely, gate.thresholds), so the threshold escalates it, and
    # --roofline-gate=escalate makes that fail the run.
    scale, common = costed_project(project)
    (project.path / "scale.json").write_text(
        json.dumps({**scale, "test_c": 1.15})
    )  # +15% on one test
    shipped = project.runpytest(*common, "--roofline-baseline=main")
    shipped.assert_outcomes(passed=6)  # +15% is inside the no-history noise floor (+35% on p50)
    assert json.loads((project.path / "out.json").read_text())["decision"] == "ship"
    flagged = project.runpytest(
        *common, "--roofline-baseline=main", "--benchmark-compare-fail=median:10%"
    )
    flagged.assert_outcomes(passed=6)
    flagged.stdout.fnmatch_lines(
        [
            "ESCALATE test_costed.py::test_c: *",
            "    p50 x1.150 * is above the explicit threshold +10% (--roofline-fail), but no paired rounds compared it with the baseline's commit (the baseline run recorded no git commit)*",
        ]
    )
    assert json.loads((project.path / "out.json").read_text())["decision"] == "escalate"
    gated = project.runpytest(
        *common,
        "--roofline-baseline=main",
        "--benchmark-compare-fail=median:10%",
        "--roofline-gate=escalate",
    )
    gated.assert_outcomes(passed=5, failed=1)
    assert (
        project.runpytest(*common, "--roofline-baseline=main", "--roofline-fail=p50:20%").ret == 0
    )


def test_two_benchmark_tests_three_times_slower_are_replayed_in_one_fresh_process(
    project: pytest.Pytester,
) -> None:
    # Without paired rounds (no git here) each rollback needs a fresh process to reproduce it:
    # one worker serves both, so it must have collected the `benchmark` tests as well.
    scale, common = costed_project(project)
    (project.path / "scale.json").write_text(json.dumps({**scale, "test_b": 3.0, "test_e": 3.0}))
    slower = project.runpytest(*common, "--roofline-baseline=main")
    slower.assert_outcomes(passed=4, failed=2)
    assert slower.stdout.str().count("candidate worker (pid") == 1
    document = json.loads((project.path / "out.json").read_text())
    replayed = {t["nodeid"]: t["fresh_replay"] for t in document["tests"] if "fresh_replay" in t}
    assert set(replayed) == {"test_costed.py::test_b", "test_costed.py::test_e"}
    assert all(2.8 < r["change"]["p50"]["ratio"] < 3.2 for r in replayed.values()), replayed


# --------------------------------------------------------------------------- refused
@pytest.mark.parametrize(
    ("source", "options", "message"),
    [
        ("import time, pytest\n@pytest.mark.benchmark(timer=time.process_time)\ndef test_t(benchmark):\n    benchmark(len, 'a')\n",
         (), "test_refused.py::test_t: @pytest.mark.benchmark(timer=time.process_time) cannot be kept by pytest-roofline"),
        ("import pytest\n@pytest.mark.benchmark(precision=0.01)\ndef test_t(benchmark):\n    benchmark(len, 'a')\n",
         (), "test_refused.py::test_t: @pytest.mark.benchmark(precision=...) cannot be kept"),
        ("import pytest\n@pytest.mark.benchmark(rounds=3)\ndef test_t(benchmark):\n    benchmark(len, 'a')\n",
         (), "test_refused.py::test_t: @pytest.mark.benchmark(rounds=...): unknown keyword"),
        ("import pytest\n@pytest.mark.roofline(budget=1)\n@pytest.mark.benchmark(max_time=2)\ndef test_t(benchmark):\n    benchmark(len, 'a')\n",
         (), "test_refused.py::test_t: both @pytest.mark.benchmark(max_time=...) and @pytest.mark.roofline(budget=...)"),
        ("def test_t(benchmark):\n    benchmark(len, 'a')\n", ("--roofline-fail=mean:5%",), "--roofline-fail='mean:5%': pytest-roofline gates the quantiles"),
        ("def test_t(benchmark):\n    benchmark(len, 'a')\n", ("--benchmark-compare-fail=median:0.001",), "an absolute threshold in seconds cannot be kept"),
    ],
    ids=["custom-timer", "precision", "unknown-key", "two-budgets", "mean-threshold", "absolute-threshold"],
)  # fmt: skip
def test_each_refused_combination_is_a_usage_error_naming_what_and_why(
    project: pytest.Pytester, source: str, options: tuple[str, ...], message: str
) -> None:
    project.makepyfile(test_refused=source)
    result = project.runpytest("-p", "no:benchmark", "--roofline", *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_pedantic_refuses_iterations_with_setup_like_pytest_benchmark(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_p="def test_p(benchmark):\n    benchmark.pedantic(len, setup=lambda: None, iterations=10, rounds=3)\n"
    )
    result = project.runpytest("-p", "no:benchmark", "--roofline")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*ValueError: Can't use more than 1 `iterations` with a `setup` function."]
    )


# --------------------------------------------------------------------------- import
SLEEPERS = """
import time

def test_sleep_1ms(benchmark):
    benchmark(time.sleep, 0.001)

def test_sleep_2ms(benchmark):
    benchmark(time.sleep, 0.002)

def test_sleep_3ms(benchmark):
    benchmark(time.sleep, 0.003)
"""

# pytest-benchmark's timer for the runs that make the .benchmarks/ folder (--benchmark-timer): a
# fake clock that ticks once per read (pytest-benchmark measures the timer's precision first) and
# moves by whatever ``advance`` is given, so pytest-benchmark records exact, seeded per-call times.
PB_CLOCK = """
class _Clock:
    now = 0.0

CLOCK = _Clock()

def now():
    CLOCK.now += 1e-9
    return CLOCK.now

def advance(seconds):
    CLOCK.now += seconds
"""

# The same tests, with one function that, under pytest-benchmark, advances its fake timer by
# seeded lognormal per-call times around N ms (a different seed per saved run), and, under
# pytest-roofline, advances roofline's fake clock by times drawn from what pytest-benchmark
# recorded in its latest saved run: the two sides share one distribution, so the A/A verdict
# does not depend on how busy this shared machine happens to be between the runs.
RESAMPLED = (
    FAKE_CLOCK_CONFTEST.replace("@pytest.hookimpl\n", "@pytest.hookimpl(optionalhook=True)\n")
    + """
import json, pathlib, zlib
import numpy as np
import pbclock

@pytest.fixture
def work(request):
    seconds = int(request.node.name.rsplit("_", 1)[1].rstrip("ms")) / 1000
    saved = sorted(pathlib.Path(request.config.rootpath, ".benchmarks").glob("*/*.json"))
    seed = zlib.crc32(request.node.nodeid.encode())
    if not request.config.pluginmanager.has_plugin("roofline"):
        rng = np.random.default_rng([seed, len(saved)])
        return lambda: pbclock.advance(seconds * float(rng.lognormal(0.0, 0.05)))
    benchmarks = json.loads(saved[-1].read_text())["benchmarks"]
    data = next(b["stats"]["data"] for b in benchmarks if b["fullname"] == request.node.nodeid)
    rng = np.random.default_rng(seed)
    return lambda: advance(float(rng.choice(data)))
"""
)
RESAMPLED_TESTS = "".join(
    f"\ndef test_sleep_{n}ms(benchmark, work):\n    benchmark(work)\n" for n in (1, 2, 3)
)


def _resampled_project(project: pytest.Pytester) -> None:
    project.makeconftest(RESAMPLED)
    project.makepyfile(test_sleep=RESAMPLED_TESTS, pbclock=PB_CLOCK)
    project.syspathinsert()


def test_a_benchmarks_folder_made_here_imports_as_this_machine_and_ships_a_to_a(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # pytest-benchmark switches itself off when it sees an xdist worker.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    _resampled_project(project)
    project.makeini("[pytest]\nroofline_budget = 1\nroofline_warmup = 5ms\n")
    # pytest-benchmark itself, twice: .benchmarks/<machine>/0001_*.json and 0002_*.json
    for _ in range(2):
        project.runpytest(
            "-p", "no:roofline", "--benchmark-autosave", "--benchmark-save-data",
            "--benchmark-max-time=0.3", "--benchmark-min-rounds=100",
            "--benchmark-timer=pbclock.now",
        ).assert_outcomes(passed=3)  # fmt: skip
    store = project.path / ".roofline" / "store.sqlite"
    assert main(["import", str(project.path / ".benchmarks"), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "imported 2 pytest-benchmark run(s) as runs 1-2 (label 'autosave', commit order)" in out
    assert "machine: this machine" in out
    result = project.runpytest(
        "-p",
        "no:benchmark",
        "--roofline",
        "--roofline-baseline=autosave",
        "--roofline-json=out.json",
    )
    result.assert_outcomes(passed=3)
    document = json.loads(Path(project.path, "out.json").read_text())
    tests = document["tests"]
    assert len(tests) == 3
    for test in tests:
        assert (
            test["change"]["p50"]["ratio"] is not None
        )  # compared with pytest-benchmark's samples
        assert not any("other hardware" in reason for reason in test["reasons"]), test["reasons"]
    # Tags pytest-benchmark never records (numpy, blas, target...) are unknown there, not changed.
    assert all(c["layer"] is None for c in document["run"]["tag_diff"].values()), document["run"][
        "tag_diff"
    ]
    assert document["decision"] == "ship", [(t["decision"], t["reasons"]) for t in tests]


def test_a_run_from_another_machine_escalates_with_the_reason(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    _resampled_project(project)
    project.runpytest(
        "-p", "no:roofline", "--benchmark-autosave", "--benchmark-save-data",
        "--benchmark-max-time=0.05", "--benchmark-min-rounds=20", "--benchmark-timer=pbclock.now",
    ).assert_outcomes(passed=3)  # fmt: skip
    (saved,) = (project.path / ".benchmarks").glob("*/0001_*.json")
    document = json.loads(saved.read_text())
    document["machine_info"]["node"] = "another-host"
    saved.write_text(json.dumps(document))
    store = project.path / ".roofline" / "store.sqlite"
    assert main(["import", str(saved), "--store", str(store), "--label", "theirs"]) == 0
    assert "made on another machine (node 'another-host' there" in capsys.readouterr().out
    result = project.runpytest(
        "-p", "no:benchmark", "--roofline", "--roofline-baseline=theirs", "--roofline-gate=escalate"
    )
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*baseline measured on other hardware: machine 'pytest-benchmark run on node another-host*"
        ]
    )


def test_a_summary_only_baseline_is_named_in_the_header_and_compares_nothing(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    project.makepyfile(test_sleep=SLEEPERS)
    project.runpytest(
        "-p", "no:roofline", "--benchmark-autosave", "--benchmark-max-time=0.02", "--benchmark-min-rounds=5",
    ).assert_outcomes(passed=3)  # fmt: skip
    store = project.path / ".roofline" / "store.sqlite"
    assert main(["import", str(project.path / ".benchmarks"), "--store", str(store)]) == 0
    assert "stored summary-only" in capsys.readouterr().out
    result = project.runpytest(
        "-p",
        "no:benchmark",
        "--roofline",
        "--roofline-baseline=autosave",
        "--roofline-json=out.json",
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "roofline: baseline 'autosave' (run 1) was imported from pytest-benchmark without raw timings*"
        ]
    )
    tests = json.loads(Path(project.path, "out.json").read_text())["tests"]
    assert all(not t.get("change") for t in tests)


def test_the_benchmark_fixture_is_measured_on_xdist_workers_with_its_extra_info(
    project: pytest.Pytester,
) -> None:
    pytest.importorskip("xdist")
    project.makepyfile(
        test_x="""
        import pytest

        @pytest.mark.parametrize("n", range(4))
        def test_x(benchmark, n):
            benchmark.extra_info["n"] = n
            benchmark(sum, range(50 * (n + 1)))
        """
    )
    result = project.runpytest(
        "-p", "no:benchmark", "-n", "2", "--roofline", "--roofline-json=out.json"
    )
    result.assert_outcomes(passed=4)
    tests = _tests(json.loads(Path(project.path, "out.json").read_text()))
    assert {t["benchmark"]["extra_info"]["n"] for t in tests.values()} == {0, 1, 2, 3}


def test_a_sync_keyword_goes_to_the_measured_function_as_in_pytest_benchmark(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_s="""
        def f(x, sync=False):
            return (x, sync)

        def test_call(benchmark):
            assert benchmark(f, 1, sync=True) == (1, True)

        def test_pedantic(benchmark):
            assert benchmark.pedantic(f, args=(2,), kwargs={"sync": "yes"}, rounds=3) == (2, "yes")
        """
    )
    project.runpytest("-p", "no:benchmark", "--roofline").assert_outcomes(passed=2)
