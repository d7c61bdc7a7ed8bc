"""The roofline / workload / hardware fixtures, measured runs and the JSON document."""

from __future__ import annotations

import pytest

from .conftest import FAKE_CLOCK_CONFTEST, RunAndParse

GEMM_TEST = """
import numpy as np, pytest

@pytest.mark.roofline(slices="sizes", owner="kernels-team", rollback="revert GEMM_TILE", sla={"p99": "4s"})
def test_gemm(roofline, workload, hardware):
    n = workload.params["n"]
    a = np.ones((n, n), dtype=np.float32)
    roofline.declare(flops=2 * n**3, bytes_moved=3 * n * n * 4, precision="fp32")
    c = roofline(np.matmul, a, a)
    roofline.record_quality("max_abs_err", float(abs(c - n).max()), higher_is_better=False)
    assert hardware.name == "ci-runner"
"""


def test_without_roofline_fn_runs_once_and_nothing_is_recorded(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        calls = []
        def test_once(roofline):
            assert roofline(calls.append, 1) is None
            assert calls == [1]
            assert roofline.measurement is None
            assert not roofline.enabled
        """
    )
    result = project.runpytest("--roofline-json=out.json")
    result.assert_outcomes(passed=1)
    assert not (project.path / "out.json").exists()
    assert not (project.path / ".roofline").exists()
    result.stdout.no_fnmatch_line("*= roofline =*")


def test_a_measured_run_writes_every_slice_with_quantiles_declared_work_and_quality(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    project.makepyfile(test_k=GEMM_TEST)
    result, document = run_and_parse()
    result.assert_outcomes(passed=2)
    assert document["schema_version"] == 1
    assert document["run"]["target"]["name"] == "ci-runner"
    tests = {t["nodeid"]: t for t in document["tests"]}
    assert set(tests) == {"test_k.py::test_gemm[small]", "test_k.py::test_gemm[large]"}
    large = tests["test_k.py::test_gemm[large]"]
    assert large["slice"] == "large"
    assert large["source"] == "production"
    assert large["owner"] == "kernels-team"
    assert large["rollback_boundary"] == "revert GEMM_TILE"
    assert large["samples"] >= 5
    assert 0 < large["p50_s"] <= large["p95_s"] <= large["p99_s"]
    assert large["declared"] == {
        "flops": 2 * 64**3,
        "bytes_moved": 3 * 64 * 64 * 4,
        "precision": "fp32",
    }
    assert large["quality"]["max_abs_err"] == {
        "value": 0.0, "higher_is_better": False, "tolerance": None, "baseline": None, "ok": None,
    }  # fmt: skip
    # No baseline and a generous SLA: nothing can roll back; real timings may drift (escalate).
    assert large["decision"] in ("ship", "escalate")
    assert document["decision"] in ("ship", "escalate")
    assert large["baseline"] is None
    fidelity = large["counters"]["fidelity"]
    assert fidelity["flops"]["status"] == (
        "measured" if large["counters"]["status"]["perf.fp_ops"] == "ok" else "unmeasured"
    )
    cache = large["counters"]["status"]["perf.cache_misses"]
    assert fidelity["bytes_moved"]["status"] == ("measured" if cache == "ok" else "unmeasured")
    assert fidelity["bytes_moved"]["relative_error"] is None or cache == "ok"
    assert large["stop_reason"] in ("budget", "decisive", "max_samples")
    assert document["run"]["tags"]["python"]
    result.stdout.fnmatch_lines(["*= roofline =*", "*test_k.py::test_gemm[[]large[]]: n=*p95*"])


def test_the_terminal_summary_can_be_switched_off(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=GEMM_TEST)
    result = project.runpytest("--roofline", "--roofline-no-summary")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*= roofline =*")


def test_the_measurement_is_visible_to_the_test_after_the_call(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        def test_m(roofline):
            roofline.declare(flops=1e3, bytes_moved=8e3, precision="fp64")
            roofline(sum, range(100))
            m = roofline.measurement
            assert m.samples_s.size >= 5
            assert m.p50_s > 0 and m.p99_s >= m.p50_s
            assert m.roofline.bound in ("memory", "overhead", "ambiguous", "compute")
        """
    )
    project.runpytest("--roofline").assert_outcomes(passed=1)


def test_an_exception_from_fn_propagates_and_the_test_records_nothing(
    run_and_parse: RunAndParse, project: pytest.Pytester
) -> None:
    project.makepyfile(
        test_raises="""
        class Boom(Exception):
            pass
        n = {"calls": 0}
        def explode():
            n["calls"] += 1
            if n["calls"] == 3:
                raise Boom("third call")
        def test_raises(roofline):
            roofline(explode)
        def test_fine(roofline):
            roofline(len, "abc")
        """
    )
    result, document = run_and_parse()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*Boom: third call*"])
    assert [t["nodeid"] for t in document["tests"]] == ["test_raises.py::test_fine"]


def test_a_short_function_is_batched_and_marked_as_such(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    project.makepyfile("def test_tiny(roofline):\n    roofline(int)\n")
    result, document = run_and_parse()
    result.assert_outcomes(passed=1)
    (test,) = document["tests"]
    assert test["batch_size"] > 1
    assert test["batched"] is True


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("roofline.declare(flops=-1)", "test_bad.py::test_bad: roofline.declare()*flops*"),
        (
            "roofline.declare(flops=float('nan'))",
            "test_bad.py::test_bad: roofline.declare()*flops*",
        ),
        (
            "roofline.declare(bytes_moved=float('inf'))",
            "test_bad.py::test_bad: roofline.declare()*bytes_moved*",
        ),
        (
            "roofline.declare(flops=1, precision='fp7')",
            "test_bad.py::test_bad: roofline.declare()*precision*",
        ),
        (
            "roofline.record_quality('err', float('nan'), higher_is_better=False)",
            "*record_quality()*finite*",
        ),
        ("roofline(len, 'a'); roofline(len, 'b')", "*called twice*"),
        ("roofline(42)", "*fn must be callable*"),
    ],
)
def test_bad_declarations_fail_the_test_with_a_message_naming_it(
    project: pytest.Pytester, body: str, message: str
) -> None:
    project.makepyfile(test_bad=f"def test_bad(roofline):\n    {body}\n")
    result = project.runpytest("--roofline")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*UsageError: {message}"])


def test_ini_keys_enable_measurement_and_set_the_json_path(project: pytest.Pytester) -> None:
    project.makeini(
        "[pytest]\nroofline = true\nroofline_json = fromini.json\nroofline_budget = 10ms\nroofline_min_samples = 3\n"
    )
    project.makepyfile("def test_x(roofline):\n    roofline(len, 'abc')\n")
    project.runpytest().assert_outcomes(passed=1)
    assert (project.path / "fromini.json").exists()


def test_command_line_tags_are_recorded(
    run_and_parse: RunAndParse, project: pytest.Pytester
) -> None:
    project.makepyfile("def test_x(roofline):\n    roofline(len, 'abc')\n")
    _, document = run_and_parse("--roofline-tag=dataset=imagenet", "--roofline-tag", "model=resnet")
    assert document["run"]["tags"]["dataset"] == "imagenet"
    assert document["run"]["tags"]["model"] == "resnet"
    assert document["run"]["tags"]["target"] == "ci-runner"


@pytest.mark.parametrize("flag", ["--roofline-blas-threads=1", "--roofline-blas_threads=1"])
def test_the_blas_thread_limit_is_spelled_as_documented_and_recorded_as_a_tag(
    project: pytest.Pytester, run_and_parse: RunAndParse, flag: str
) -> None:
    project.makepyfile("def test_x(roofline):\n    roofline(len, 'ab')\n")
    result, doc = run_and_parse(flag)
    assert result.ret == 0, result.stdout.str()
    assert doc["run"]["tags"]["blas_threads"] == "1"


def test_an_injected_clock_makes_samples_exact(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    project.makeconftest(FAKE_CLOCK_CONFTEST)
    project.makepyfile(
        "def test_x(roofline, advance):\n    roofline(advance, 2e-3)\n"
    )  # 2 ms per call
    _, document = run_and_parse()
    (test,) = document["tests"]
    assert test["samples"] == 10  # 20 ms budget / 2 ms
    assert test["p50_s"] == pytest.approx(2e-3)
    assert test["p99_s"] == pytest.approx(2e-3)


def test_a_plugin_can_supply_the_hardware_target(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    project.makeconftest(
        """
        import pytest
        from pytest_roofline.hardware.target import target_from_mapping
        @pytest.hookimpl
        def pytest_roofline_hardware_target(config, name):
            return target_from_mapping("lab-box", {"peak_flops_per_s": {"fp32": 1e12}, "peak_bytes_per_s": {"dram": 1e11}}, where="conftest")
        """
    )
    project.makepyfile(
        "def test_x(roofline, hardware):\n    assert hardware.name == 'lab-box'\n    roofline(len, 'a')\n"
    )
    result, document = run_and_parse()
    result.assert_outcomes(passed=1)
    assert document["run"]["target"]["name"] == "lab-box"


def test_a_gemm_like_workload_is_compute_bound_and_a_triad_like_one_memory_bound(
    project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    # Against ci-runner (ridge fp32 = 8e10 / 2e10 = 4 FLOP/B) the classes follow from the declared
    # intensity; the injected clock makes both run exactly at their attainable roof.
    project.makeconftest(FAKE_CLOCK_CONFTEST)
    project.makepyfile(
        """
        def test_gemm(roofline, advance):
            n = 1024
            flops, nbytes = 2 * n**3, 3 * n * n * 4        # intensity 170 FLOP/B
            roofline.declare(flops=flops, bytes_moved=nbytes, precision="fp32")
            roofline(advance, flops / 8e10)                 # at the compute roof
        def test_triad(roofline, advance):
            n = 1_000_000
            flops, nbytes = 2 * n, 24 * n                   # intensity 1/12 FLOP/B
            roofline.declare(flops=flops, bytes_moved=nbytes, precision="fp32")
            roofline(advance, nbytes / 2e10)                # at the memory roof
        """
    )
    result, document = run_and_parse()
    result.assert_outcomes(passed=2)
    points = {t["nodeid"].split("::")[1]: t["roofline"] for t in document["tests"]}
    assert points["test_gemm"]["bound"] == "compute"
    assert points["test_triad"]["bound"] == "memory"
    assert points["test_gemm"]["efficiency"] == pytest.approx(1.0, rel=1e-6)
    assert points["test_triad"]["efficiency"] == pytest.approx(1.0, rel=1e-6)
    assert points["test_triad"]["intensity"] == pytest.approx(1 / 12)
