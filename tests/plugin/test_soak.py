"""Soaks in a real pytest session: a fake clock, a fake GPU, a slowdown and throttling injected.

The fake clock (``pytest_roofline_clock``) makes 30 s soaks cost a fraction of a second. A fake
``pynvml`` is put in ``sys.modules`` for the inner session (the import boundary the NVML
backend reads through); its temperature reads the fake clock in seconds, so each window's
record says when the window ended, and its clock-event reasons turn on (hardware thermal
slowdown) when the test's work starts running hot.
"""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from .conftest import FAKE_CLOCK_CONFTEST, RunAndParse

HOT_AT_S = 15.0  # fake seconds since the session began: inside the first soak

CONFTEST = (
    FAKE_CLOCK_CONFTEST
    + f"""
import pynvml

pynvml.fake_state["clock"] = CLOCK
HOT_AT_NS = int({HOT_AT_S} * 1e9)

@pytest.fixture
def work_heating():
    def call():
        hot = CLOCK.now >= HOT_AT_NS
        pynvml.fake_state["hot"] = hot
        advance(0.010 * (1.3 if hot else 1.0))
    return call

@pytest.fixture
def work_steady():
    pynvml.fake_state["hot"] = False
    def call():
        advance(0.010)
    return call
"""
)

TESTS = """
import pytest

@pytest.mark.roofline(soak="30s")
def test_heats_up(roofline, work_heating):
    roofline(work_heating)

@pytest.mark.roofline(soak="30s")
def test_steady(roofline, work_steady):
    roofline(work_steady)

@pytest.mark.roofline(soak=0)
def test_not_soaked(roofline, work_steady):
    roofline(work_steady)
"""


def _fake_nvml() -> ModuleType:
    """A ``pynvml`` whose device follows ``fake_state`` (the inner conftest sets its clock)."""
    mod = ModuleType("pynvml")
    state: dict[str, Any] = {"clock": None, "hot": False}
    mod.fake_state = state  # type: ignore[attr-defined]
    mod.NVML_CLOCK_SM, mod.NVML_CLOCK_MEM, mod.NVML_TEMPERATURE_GPU = 1, 2, 0  # type: ignore[attr-defined]

    def now_s() -> float:
        return state["clock"].now / 1e9 if state["clock"] is not None else 0.0

    def clock_info(handle: object, kind: int) -> int:
        return (1410 if state["hot"] else 1980) if kind == 1 else 3201

    functions = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 1,
        "nvmlDeviceGetHandleByIndex": lambda index: "gpu0",
        "nvmlDeviceGetName": lambda handle: "Fake H200",
        "nvmlDeviceGetClockInfo": clock_info,
        "nvmlDeviceGetPowerUsage": lambda handle: 650_000 if state["hot"] else 500_000,
        "nvmlDeviceGetTotalEnergyConsumption": lambda handle: int(now_s() * 1e6),
        # The window's end, in fake seconds: the soak keeps the higher of two readings.
        "nvmlDeviceGetTemperature": lambda handle, sensor: now_s(),
        "nvmlDeviceGetCurrentClocksEventReasons": lambda handle: 0x040 if state["hot"] else 0,
        "nvmlDeviceGetUtilizationRates": lambda handle: SimpleNamespace(gpu=99, memory=40),
    }
    for name, function in functions.items():
        setattr(mod, name, function)
    return mod


@pytest.fixture
def soak_project(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml())
    project.makeconftest(CONFTEST)
    project.makepyfile(test_soaked=TESTS)
    return project


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["nodeid"].split("::")[-1]: t for t in document["tests"]}


def test_a_test_that_heats_up_escalates_at_its_first_failing_window(
    soak_project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    result, document = run_and_parse(
        "--roofline-soak=10", "--roofline-gate=escalate", "--roofline-report=r.html"
    )
    tests = _tests(document)
    heated, steady = tests["test_heats_up"], tests["test_steady"]

    # The marker's soak= wins over --roofline-soak: 30 windows of 1 s, and none for soak=0.
    assert heated["soak"]["duration_s"] == 30.0 and len(heated["soak"]["windows"]) == 30
    assert "soak" not in tests["test_not_soaked"]

    windows = heated["soak"]["windows"]
    # The fake GPU's temperature is the fake clock at each window's end: the window in which
    # the work turned hot is the first one that ended past HOT_AT_S. Its reasons are read at
    # its end, so they show there; its median may still be the cool calls'.
    hot = next(i for i, w in enumerate(windows) if w["gpu_temperature_c"] >= HOT_AT_S)
    slow = next(i for i, w in enumerate(windows) if w["ratio"] > 1.15)
    assert hot <= slow <= hot + 1
    finding = heated["soak"]["finding"]
    assert finding["kind"] == "throttling"
    assert finding["window"] == slow
    assert 1.25 < finding["ratio"] < 1.35 and finding["ci_low"] > 1.0
    assert f"hw_thermal_slowdown at window {hot}" in finding["throttle"]
    assert windows[hot]["gpu_throttle"] == ["hw_thermal_slowdown"]
    assert windows[hot - 1]["gpu_throttle"] == []
    assert windows[-1]["gpu_sm_clock_mhz"] == 1410.0 and windows[0]["gpu_sm_clock_mhz"] == 1980.0

    assert heated["decision"] == "escalate"
    assert any(r.startswith(f"soak: throttling onset at window {slow} ") for r in heated["reasons"])
    result.stdout.fnmatch_lines(
        [
            "ESCALATE*test_heats_up*",
            f"*soak: throttling onset at window {slow} (+*",
            "*soak 30 s, 30 windows of 1 s: stable*",
        ]
    )

    # The unaffected test ships, with its soak recorded as stable.
    assert steady["decision"] == "ship" and steady["soak"]["finding"] is None
    assert any("stable" in r for r in steady["reasons"])
    # Host evidence recorded per window, and the statuses of what this machine cannot read.
    status = heated["soak"]["status"]
    assert status["gpu"] == "ok" and status["canary"] == "unsupported"  # fake clock: no canary
    assert status["cpu_share"] == "ok" and windows[0]["cpu_share"] is not None
    assert status["cpu_mhz"] in ("ok", "unsupported")

    page = (soak_project.path / "r.html").read_text()
    assert page.count('<details class="soak ') == 2
    assert f'class="soak-dot soak-faildot" data-window="{slow}"' in page


def test_a_soak_option_soaks_every_roofline_test_without_a_marker(
    soak_project: pytest.Pytester, run_and_parse: RunAndParse
) -> None:
    soak_project.makepyfile(
        test_soaked="""
def test_plain(roofline, work_steady):
    roofline(work_steady)
"""
    )
    result, document = run_and_parse("--roofline-soak=6s")
    (test,) = document["tests"]
    assert test["decision"] == "ship"
    assert test["soak"]["duration_s"] == 6.0 and len(test["soak"]["windows"]) == 6
    assert result.ret == 0


def test_a_bad_soak_value_is_a_usage_error_naming_the_test(
    soak_project: pytest.Pytester,
) -> None:
    soak_project.makepyfile(
        test_soaked="""
import pytest

@pytest.mark.roofline(soak="forever")
def test_x(roofline, work_steady):
    roofline(work_steady)
"""
    )
    result = soak_project.runpytest("--roofline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_x*soak=...*forever*"])
