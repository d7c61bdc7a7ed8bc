"""The soak's timeline analysis: the first failing window, throttling onset, false alarms.

Window medians are simulated with seeded generators: lognormal noise between windows (the
window-to-window spread measured here is 1-5%), a step or a ramp injected at a known window,
and host evidence (GPU clock-event reasons, CPU clock) injected per window.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_roofline.errors import ConfigError
from pytest_roofline.gate.soak import SLOWDOWN_REASONS, assess_soak, throttle_onset
from pytest_roofline.measure.soak import SoakMeasurement, SoakWindow, WindowHost
from pytest_roofline.stats.soak import (
    reference_windows,
    scan_windows,
    shift_after,
    window_sigma,
)

MARGIN = 0.05


def _series(rng: np.random.Generator, n: int = 30, sd: float = 0.02) -> np.ndarray:
    return 1e-3 * rng.lognormal(0.0, sd, n)


def _soak(p50_s: np.ndarray, hosts: list[WindowHost] | None = None) -> SoakMeasurement:
    hosts = hosts or [WindowHost() for _ in p50_s]
    windows = tuple(
        SoakWindow(offset_s=float(i), duration_s=1.0, n=100, p50_s=float(p), host=h)
        for i, (p, h) in enumerate(zip(p50_s, hosts, strict=True))
    )
    return SoakMeasurement(
        duration_s=float(len(windows)),
        window_s=1.0,
        elapsed_s=float(len(windows)),
        batch_size=1,
        windows=windows,
    )


def test_a_steady_series_has_no_failing_window() -> None:
    rng = np.random.default_rng(1)
    for _ in range(20):
        assert scan_windows(_series(rng), margin=MARGIN).shift is None


@pytest.mark.parametrize("step_at", [6, 12, 20, 26])
def test_a_step_of_twenty_percent_is_found_at_its_window(step_at: int) -> None:
    rng = np.random.default_rng(step_at)
    p50 = _series(rng)
    p50[step_at:] *= 1.2
    shift = scan_windows(p50, margin=MARGIN).shift
    assert shift is not None
    assert abs(shift.onset - step_at) <= 1
    assert shift.ci.low > 1.0 and 1.1 < shift.ratio < 1.3
    assert shift.ci.low <= shift.ratio <= shift.ci.high


def test_a_step_below_the_margin_is_not_a_finding_however_clear() -> None:
    p50 = np.full(30, 1e-3)
    p50[15:] *= 1.03  # exact data: significant, but below +5%
    assert scan_windows(p50, margin=MARGIN).shift is None
    p50[15:] *= 1.05 / 1.03
    shift = scan_windows(p50, margin=MARGIN).shift
    assert shift is not None and shift.onset == 15


def test_one_slow_window_does_not_fail_a_block() -> None:
    rng = np.random.default_rng(3)
    p50 = _series(rng, sd=0.01)
    p50[14] *= 2.0  # a host hiccup in one window
    assert scan_windows(p50, margin=MARGIN).shift is None


def test_a_slow_ramp_fails_once_it_passes_the_margin() -> None:
    rng = np.random.default_rng(4)
    p50 = _series(rng, sd=0.01) * np.linspace(1.0, 1.3, 30)  # +1% a window
    shift = scan_windows(p50, margin=MARGIN).shift
    assert shift is not None
    # The reference (first 6 windows) sits near +2.5%, so +5% above it is near +7.5%: window ~8;
    # the block must also be significant, which a ramp reaches a few windows later.
    assert 7 <= shift.onset <= 16


def test_too_few_windows_say_why_nothing_was_compared() -> None:
    scan = scan_windows(np.full(5, 1e-3), margin=MARGIN)
    assert scan.shift is None and scan.looks == 0
    assert scan.reason is not None and "at least 6" in scan.reason


def test_the_false_alarm_rate_on_null_series_stays_below_alpha() -> None:
    # 500 series of 30 windows with only noise, at several noise levels: the scan's level is
    # alpha (0.05) by construction; the bound asserted is alpha, the rate seen here ~1-3%.
    rng = np.random.default_rng(20261201)
    for sd in (0.01, 0.03, 0.08):
        alarms = sum(
            scan_windows(_series(rng, sd=sd), margin=MARGIN, alpha=0.05).shift is not None
            for _ in range(500)
        )
        assert alarms / 500 < 0.05, (sd, alarms)


def test_the_assessment_keeps_false_alarms_low_on_slowly_wandering_noise() -> None:
    # Autocorrelated window noise (AR(1), phi 0.5, 3% spread): host speed that wanders over
    # seconds, which a scan of independent windows reads as a step about 1 time in 5; the
    # sustain condition brings it near alpha (docs/history.md, Soak). Stated bound: 10%.
    rng = np.random.default_rng(20261202)
    phi, sd, alarms = 0.5, 0.03, 0
    for _ in range(300):
        e = np.zeros(30)
        for k in range(30):
            e[k] = (phi * e[k - 1] if k else 0.0) + rng.normal(0.0, sd * math.sqrt(1 - phi**2))
        alarms += assess_soak(_soak(1e-3 * np.exp(e)), margin=MARGIN).finding is not None
    assert alarms / 300 < 0.10, alarms


def test_the_noise_scale_ignores_a_single_step() -> None:
    rng = np.random.default_rng(5)
    y = rng.normal(0.0, 0.02, 40)
    stepped = y.copy()
    stepped[20:] += 0.5
    assert window_sigma(stepped) == pytest.approx(window_sigma(y), rel=0.2)
    assert 0.012 < window_sigma(y) < 0.03


def test_a_shift_after_a_named_window_needs_no_multiplicity_correction() -> None:
    rng = np.random.default_rng(6)
    p50 = _series(rng, sd=0.03)
    p50[18:] *= 1.12
    after = shift_after(p50, 18, margin=MARGIN)
    assert after is not None and after.onset == 18 and after.method == "after"
    assert after.windows == 12
    assert shift_after(p50, 1, margin=MARGIN) is None  # one window cannot be a reference


def test_bad_arguments_name_the_parameter() -> None:
    with pytest.raises(ConfigError, match="margin"):
        scan_windows(np.ones(10), margin=-0.1)
    with pytest.raises(ConfigError, match="alpha"):
        scan_windows(np.ones(10), margin=0.05, alpha=1.5)
    assert reference_windows(30) == 6 and reference_windows(10) == 3


def test_windows_without_samples_join_no_comparison() -> None:
    p50 = np.full(30, 1e-3)
    p50[[3, 17]] = math.nan
    scan = scan_windows(p50, margin=MARGIN)
    assert scan.shift is None and math.isnan(scan.ratios[3])


# -- throttling onset and the assessment ------------------------------------------------------
def _gpu(reasons: int = 0, sm: float = 1980.0) -> WindowHost:
    return WindowHost(gpu={"throttle_reasons": float(reasons), "sm_clock_mhz": sm})


def test_a_steady_soak_is_stable_and_has_no_finding() -> None:
    rng = np.random.default_rng(7)
    assessment = assess_soak(_soak(_series(rng)), margin=MARGIN)
    assert assessment.finding is None and assessment.onset is None
    assert "stable" in assessment.summary


def test_a_drift_is_reported_with_its_first_window_and_host_evidence() -> None:
    rng = np.random.default_rng(8)
    p50 = _series(rng)
    p50[11:] *= 1.25
    hosts = [WindowHost(cpu_share=0.99, steal=0.0, canary={"python": 1.01}) for _ in p50]
    soak = SoakMeasurement(
        duration_s=30.0,
        window_s=1.0,
        elapsed_s=30.0,
        batch_size=1,
        windows=_soak(p50, hosts).windows,
        canary_floors={"python": 1.2},
    )
    finding = assess_soak(soak, margin=MARGIN).finding
    assert finding is not None and finding.kind == "drift"
    assert finding.window == 11 and finding.offset_s == 11.0
    assert finding.canary_slow is None
    assert "latency drift at window 11 (+11.0 s of 30 s)" in finding.reason
    assert "CPU share 0.99" in finding.reason and "CPU clock unreadable" in finding.reason


def test_injected_gpu_throttling_reports_the_onset() -> None:
    rng = np.random.default_rng(9)
    p50 = _series(rng)
    p50[14:] *= 1.15
    hosts = [_gpu(0x001)] * 14 + [_gpu(0x040, sm=1410.0)] * 16  # hw thermal slowdown
    assessment = assess_soak(_soak(p50, hosts), margin=MARGIN)
    assert assessment.onset is not None and assessment.onset.window == 14
    finding = assessment.finding
    assert finding is not None and finding.kind == "throttling" and finding.window == 14
    assert "hw_thermal_slowdown" in (finding.throttle or "")
    assert "throttling onset at window 14" in finding.reason
    assert "GPU SM 1410 MHz" in finding.reason


def test_a_cpu_clock_drop_aligned_with_a_rise_is_throttling() -> None:
    rng = np.random.default_rng(10)
    p50 = _series(rng)
    p50[20:] *= 1.3
    hosts = [WindowHost(cpu_mhz=3000.0)] * 20 + [WindowHost(cpu_mhz=2200.0)] * 10
    finding = assess_soak(_soak(p50, hosts), margin=MARGIN).finding
    assert finding is not None and finding.kind == "throttling" and finding.window == 20
    assert "mean CPU clock dropped to 2200 MHz from 3000 MHz" in (finding.throttle or "")


def test_throttling_without_a_latency_rise_is_a_note_not_a_finding() -> None:
    rng = np.random.default_rng(11)
    hosts = [_gpu()] * 10 + [_gpu(0x004)] * 20  # power capped, and just as fast
    assessment = assess_soak(_soak(_series(rng), hosts), margin=MARGIN)
    assert assessment.finding is None
    assert assessment.onset is not None and assessment.onset.window == 10
    assert any(
        "sw_power_cap" in note and "no sustained latency rise" in note for note in assessment.notes
    )


def test_a_slowdown_that_recovers_before_the_end_is_a_transient_note() -> None:
    rng = np.random.default_rng(12)
    p50 = _series(rng, sd=0.01)
    p50[10:17] *= 1.4  # seven slow windows, then back to the first level
    assert scan_windows(p50, margin=MARGIN).shift is not None  # the scan alone sees it
    assessment = assess_soak(_soak(p50), margin=MARGIN)
    assert assessment.finding is None
    assert any("transient, not escalated" in note for note in assessment.notes)
    assert assessment.transient is not None and assessment.transient.onset == 10
    assert "no sustained rise (a transient x1.39 from window 10 did not last)" in assessment.summary


def test_a_rise_in_the_last_two_windows_is_too_short_to_escalate() -> None:
    p50 = np.full(30, 1e-3) * np.random.default_rng(14).lognormal(0.0, 0.005, 30)
    p50[28:] *= 1.5
    assessment = assess_soak(_soak(p50), margin=MARGIN)
    assert assessment.finding is None
    assert any("fewer than 3 windows remained" in note for note in assessment.notes)


def test_a_step_that_lasts_to_the_end_is_sustained_and_found() -> None:
    rng = np.random.default_rng(13)
    p50 = _series(rng, sd=0.01)
    p50[20:] *= 1.4
    finding = assess_soak(_soak(p50), margin=MARGIN).finding
    assert finding is not None and finding.window == 20 and finding.kind == "drift"


def test_reasons_that_are_not_slowdowns_are_no_onset() -> None:
    hosts = [_gpu(0x001)] * 5 + [_gpu(0x001 | 0x002 | 0x010 | 0x100)] * 5
    assert throttle_onset(_soak(np.full(10, 1e-3), hosts).windows, 3) is None
    assert SLOWDOWN_REASONS & 0x001 == 0


def test_a_slow_canary_in_the_failing_window_is_named() -> None:
    p50 = np.full(30, 1e-3)
    p50[15:] *= 1.4
    hosts = [WindowHost(canary={"python": 1.0})] * 15 + [WindowHost(canary={"python": 1.6})] * 15
    soak = _soak(p50, hosts)
    soak = SoakMeasurement(
        duration_s=30.0,
        window_s=1.0,
        elapsed_s=30.0,
        batch_size=1,
        windows=soak.windows,
        canary_floors={"python": 1.25},
    )
    finding = assess_soak(soak, margin=MARGIN).finding
    assert finding is not None and finding.canary_slow == "python x1.60 (floor x1.25)"
    assert "the host, not the code, may account for it" in finding.reason
