"""The host canary in a real pytest session: an injected canary on the fake clock.

The canary's kernels advance the same fake clock the samples are timed with, and a file says how
much slower they run and for how many waits: a disturbed host is scripted, never measured.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import FAKE_CLOCK_CONFTEST

CONFTEST = (
    FAKE_CLOCK_CONFTEST
    + """
import json, pathlib, zlib
import numpy as np
from pytest_roofline.measure.canary import Canary, CanaryKernels, CanarySettings

HERE = pathlib.Path(__file__).parent

def state():
    return json.loads((HERE / "state.json").read_text())

# The disturbance starts with the measured test's first call ("from_start": with the session).
STARTED = {"test": False}

def kernel(ns):
    def call():
        # The host is slow while "disturbed_waits" says so; each wait for recovery uses one.
        s = state()
        on = s["disturbed_waits"] > 0 and (STARTED["test"] or s["from_start"])
        advance(ns * 1e-9 * (s["canary_x"] if on else 1.0))
    return call

def sleep(seconds):
    advance(seconds)
    s = state()
    s["disturbed_waits"] -= 1
    (HERE / "state.json").write_text(json.dumps(s))

@pytest.hookimpl
def pytest_roofline_canary(config):
    kernels = CanaryKernels(
        calls={"python": kernel(250_000), "stream": kernel(800_000)},
        spec={"python": "fake loop", "stream": "fake triad"},
    )
    # Tests of 20 ms here: the canary may take most of the run (it is the fake clock's time).
    settings = CanarySettings(budget_share=0.9, recovery_budget_share=0.9, recovery_max_reads=1)
    return Canary(kernels, settings=settings, clock=CLOCK, sleep=sleep)

@pytest.fixture
def work(request):
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))
    ms = state()["ms"]
    def call():
        STARTED["test"] = True
        advance(ms * 1e-3 * rng.lognormal(0.0, 0.05))
    return call
"""
)

TESTS = """
def test_kernel(roofline, work):
    roofline(work)
"""


@pytest.fixture
def canary_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(
        ".yaml",
        roofline="target: ci\ntargets:\n  ci: {peak_flops_per_s: {fp32: 1.0e11}, peak_bytes_per_s: {dram: 1.0e10}}\n",
    )
    pytester.makeini("[pytest]\nroofline_budget = 0.5\nroofline_warmup = 1ms\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_k=TESTS)
    return pytester


def set_state(
    project: pytest.Pytester,
    *,
    ms: float,
    canary_x: float = 1.0,
    waits: int = 0,
    from_start: bool = False,
) -> None:
    Path(project.path, "state.json").write_text(
        json.dumps(
            {"ms": ms, "canary_x": canary_x, "disturbed_waits": waits, "from_start": from_start}
        )
    )


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    result = project.runpytest("--roofline", "--roofline-json=out.json", *args)
    return result, json.loads(Path(project.path, "out.json").read_text())


def test_a_regression_measured_while_the_host_stays_disturbed_escalates_instead_of_rolling_back(
    canary_project: pytest.Pytester,
) -> None:
    set_state(canary_project, ms=1.0)
    result, _ = run(canary_project, "--roofline-save=main")
    result.assert_outcomes(passed=1)
    # Twice as slow, and the canary runs 3x slower through every wait for recovery.
    set_state(canary_project, ms=2.0, canary_x=3.0, waits=99)
    result, document = run(canary_project, "--roofline-baseline=main")
    result.assert_outcomes(passed=1)
    (test,) = document["tests"]
    assert test["decision"] == "escalate"
    assert test["host"]["state"] == "disturbed"
    assert not test["host"]["remeasured"]
    assert any("host was disturbed" in reason for reason in test["reasons"])
    assert "python canary x3.00" in test["host"]["reason"]
    assert document["run"]["canary"]["windows"]["disturbed"] == 1


def test_a_disturbed_window_is_measured_again_once_the_canary_recovers(
    canary_project: pytest.Pytester,
) -> None:
    set_state(canary_project, ms=1.0)
    run(canary_project, "--roofline-save=main")
    # The host recovers after one wait: the test is measured again on a quiet host, and the
    # regression measured there rolls back.
    set_state(canary_project, ms=3.0, canary_x=3.0, waits=1)
    result, document = run(canary_project, "--roofline-baseline=main")
    (test,) = document["tests"]
    assert test["host"]["state"] == "quiet"
    assert test["host"]["remeasured"] and test["host"]["windows"] == 2
    assert "measured again" in test["host"]["reason"]
    assert test["decision"] == "rollback", test["reasons"]
    result.assert_outcomes(failed=1)
    assert document["run"]["canary"]["remeasured"] == 1


def test_a_host_slower_than_at_the_baseline_escalates_a_two_run_regression(
    canary_project: pytest.Pytester,
) -> None:
    set_state(canary_project, ms=1.0)
    run(canary_project, "--roofline-save=main")
    # The whole session runs on a host 1.8x slower than the baseline's: every reading agrees
    # (the window is quiet against this session's level), but the level moved since.
    set_state(canary_project, ms=2.0, canary_x=1.8, waits=10**6, from_start=True)
    _, document = run(canary_project, "--roofline-baseline=main")
    (test,) = document["tests"]
    assert test["host"]["state"] == "quiet"
    assert test["host"]["baseline_ratios"]["python"] == pytest.approx(1.8, rel=0.02)
    assert "python canary x1.80" in test["host"]["host_shift"]
    assert test["decision"] == "escalate"
    assert any("slower than when the baseline was recorded" in r for r in test["reasons"])
    assert document["run"]["canary"]["baseline_ratios"]["stream"] == pytest.approx(1.8, rel=0.02)


def test_no_canary_turns_the_host_watch_off(canary_project: pytest.Pytester) -> None:
    set_state(canary_project, ms=1.0)
    result, document = run(canary_project, "--roofline-no-canary")
    result.assert_outcomes(passed=1)
    assert "host" not in document["tests"][0]
    assert "canary" not in document["run"]


def test_a_fake_clock_without_a_canary_hook_leaves_the_canary_off(
    pytester: pytest.Pytester,
) -> None:
    # A canary on the real clock would judge windows the fake-clock samples never saw.
    pytester.makeconftest(FAKE_CLOCK_CONFTEST)
    pytester.makepyfile(
        test_k="def test_k(roofline, advance):\n    roofline(lambda: advance(1e-3))\n"
    )
    result = pytester.runpytest(
        "--roofline",
        "--roofline-json=out.json",
        "--roofline-target=h100-sxm",
        "--roofline-budget=0.05",
    )
    result.assert_outcomes(passed=1)
    document = json.loads(Path(pytester.path, "out.json").read_text())
    assert "host" not in document["tests"][0]
