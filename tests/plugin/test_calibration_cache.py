"""The host calibration is measured once per machine and re-used by later sessions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pytest_roofline.hardware import calibration
from pytest_roofline.hardware.calibration import HostCalibration

GB = 1e9

TEST_FILE = """
def test_kernel(roofline, hardware):
    roofline.declare(flops=1e3, bytes_moved=1e3, precision="fp64")
    roofline(sum, range(10))
"""


def _calibration(key: str) -> HostCalibration:
    return HostCalibration(
        peak_flops_per_s={"fp64": 50 * GB, "fp32": 100 * GB},
        peak_bytes_per_s={"dram": 20 * GB, "llc": 80 * GB},
        dispatch_floor_s=3e-7,
        seconds_taken=1.5,
        threads=2,
        key=key,
        busy=False,
        busy_reason=None,
        created=1_795_000_000.0,
        spread={},
        rates={"dram.add": 20 * GB, "gemm.fp64": 50 * GB},
        sizes={"gemm_n.fp64": 1024},
        reps=7,
    )


class Recorder:
    """Stands in for the real calibration and drift probe (seconds of numpy) and counts them."""

    def __init__(self, probe_ratio: float) -> None:
        self.calibrations = 0
        self.probes = 0
        self.probe_ratio = probe_ratio

    def calibrate_host(self, **kwargs: Any) -> HostCalibration:
        self.calibrations += 1
        return _calibration(str(kwargs["key"]))

    def drift_probe(self, cal: HostCalibration, kernels: object) -> Mapping[str, float]:
        self.probes += 1
        return {name: rate * self.probe_ratio for name, rate in cal.rates.items()}


@pytest.fixture
def host_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", roofline="target: host\n")
    # One BLAS thread: on a busy machine the BLAS oversubscription warning would otherwise
    # trip the second session's ``-W error::UserWarning``, which is there for calibration warnings.
    pytester.makeini(
        "[pytest]\nroofline_budget = 0.01\nroofline_warmup = 1ms\nroofline_blas_threads = 1\n"
    )
    pytester.makepyfile(test_kernel=TEST_FILE)
    return pytester


@pytest.mark.parametrize("probe_ratio", [1.0, 0.4])  # an idle host, and a busy one reading slow
def test_a_second_session_reuses_the_cached_calibration(
    host_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, probe_ratio: float
) -> None:
    recorder = Recorder(probe_ratio)
    monkeypatch.setattr(calibration, "calibrate_host", recorder.calibrate_host)
    monkeypatch.setattr(calibration, "drift_probe", recorder.drift_probe)
    host_project.runpytest("--roofline").assert_outcomes(passed=1)
    assert (recorder.calibrations, recorder.probes) == (1, 0)
    result = host_project.runpytest("--roofline", "-W", "error::UserWarning")
    result.assert_outcomes(passed=1)
    assert (recorder.calibrations, recorder.probes) == (1, 1)  # checked, not measured again


def test_a_run_without_roofline_uses_the_cached_calibration(
    host_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(1.0)
    monkeypatch.setattr(calibration, "calibrate_host", recorder.calibrate_host)
    monkeypatch.setattr(calibration, "drift_probe", recorder.drift_probe)
    host_project.runpytest("--roofline").assert_outcomes(passed=1)
    host_project.runpytest().assert_outcomes(passed=1)  # functional run: `hardware` still resolves
    assert recorder.calibrations == 1


def test_a_host_that_now_reads_faster_than_its_cached_roofs_is_calibrated_again(
    host_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(1.0)
    monkeypatch.setattr(calibration, "calibrate_host", recorder.calibrate_host)
    monkeypatch.setattr(calibration, "drift_probe", recorder.drift_probe)
    host_project.runpytest("--roofline").assert_outcomes(passed=1)
    recorder.probe_ratio = 1.6  # e.g. the first calibration ran while the host was busy
    host_project.runpytest("--roofline").assert_outcomes(passed=1)
    assert recorder.calibrations == 2
