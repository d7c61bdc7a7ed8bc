"""The soak runner, its host monitor, its settings and its record in the run document.

A fake clock advances by what each call "costs", so windows are exact; the CPU clock comes from
fixture ``cpufreq`` files, the GPU from a fake backend, the canary from kernels on the fake clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.config.markers import bind_marker, parse_soak
from pytest_roofline.config.settings import build_config, resolve_test
from pytest_roofline.errors import ConfigError
from pytest_roofline.gate.record import soak_record
from pytest_roofline.gate.soak import assess_soak
from pytest_roofline.measure.canary import Canary, CanaryKernels, CanarySettings
from pytest_roofline.measure.counters.base import CounterStatus
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.measure.soak import (
    CpuFreqReader,
    SoakMeasurement,
    SoakMonitor,
    run_soak,
    window_length_s,
)
from pytest_roofline.model.document import RunDocument, TestRecord


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


class FakeGpu:
    """A GPU backend whose reasons turn on once the clock passes ``hot_at_s``."""

    def __init__(self, clock: FakeClock, hot_at_s: float) -> None:
        self.clock, self.hot_at_s = clock, hot_at_s
        self.started = 0

    def probe(self) -> Mapping[str, CounterStatus]:
        return {
            "nvml.sm_clock_mhz": "ok",
            "nvml.temperature_c": "ok",
            "nvml.throttle_reasons": "ok",
        }

    def start(self) -> None:
        self.started += 1

    def stop(self) -> Mapping[str, float]:
        hot = self.clock.now >= self.hot_at_s * 1e9
        return {
            "nvml.sm_clock_mhz": 1410.0 if hot else 1980.0,
            "nvml.temperature_c": 83.0 if hot else 61.0,
            "nvml.power_w": 700.0,
            "nvml.energy_j": 1.0,  # not kept by the soak
            "nvml.throttle_reasons": float(0x040 if hot else 0),
        }


def test_windows_follow_a_fixed_grid_and_keep_each_window_median() -> None:
    clock = FakeClock()
    calls = []

    def work() -> int:
        calls.append(clock.now)
        clock.advance(0.010 if clock.now < 5e9 else 0.013)
        return len(calls)

    result, soak = run_soak(work, duration_s=10.0, clock=clock, window_s=1.0)
    assert result == len(calls)
    assert len(soak.windows) == 10
    # A window starts with the first call after its boundary (a 13 ms call may straddle it).
    assert [w.offset_s for w in soak.windows] == pytest.approx(
        [float(i) for i in range(10)], abs=0.02
    )
    assert [w.n for w in soak.windows[:5]] == [100] * 5
    assert soak.windows[0].p50_s == pytest.approx(0.010)
    assert soak.windows[-1].p50_s == pytest.approx(0.013)
    assert soak.elapsed_s == pytest.approx(10.0, abs=0.02)
    assert soak.status["cpu_mhz"] == "unsupported" and soak.status["gpu"] == "unsupported"


def test_a_batched_call_is_timed_per_call() -> None:
    clock = FakeClock()

    def work() -> None:
        clock.advance(1e-6)

    _, soak = run_soak(work, duration_s=0.6, batch_size=20, clock=clock)
    assert soak.window_s == pytest.approx(0.1)  # a soak under 6 s still gets 6 windows
    assert soak.batch_size == 20 and len(soak.windows) == 6
    assert soak.windows[2].p50_s == pytest.approx(1e-6)


def test_the_window_length_is_a_second_or_a_thirtieth_and_never_fewer_than_six() -> None:
    assert window_length_s(20.0) == 1.0
    assert window_length_s(120.0) == 4.0
    assert window_length_s(3.0) == 0.5


def test_the_monitor_reads_cpu_clock_gpu_and_host_counters_per_window(tmp_path: Path) -> None:
    for cpu, khz in enumerate((2_400_000, 2_600_000)):
        folder = tmp_path / f"cpu{cpu}" / "cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_cur_freq").write_text(f"{khz}\n")
    clock = FakeClock()
    gpu = FakeGpu(clock, hot_at_s=4.0)
    monitor = SoakMonitor(
        cpufreq=CpuFreqReader(str(tmp_path / "cpu[0-9]*" / "cpufreq" / "scaling_cur_freq")),
        gpu=gpu,
        clock=clock,
    )

    def work() -> None:
        clock.advance(0.05)

    _, soak = run_soak(work, duration_s=6.0, clock=clock, monitor=monitor)
    assert [w.host.cpu_mhz for w in soak.windows] == [2500.0] * 6
    assert soak.windows[0].host.gpu == {
        "sm_clock_mhz": 1980.0,
        "temperature_c": 61.0,
        "power_w": 700.0,
        "throttle_reasons": 0.0,
    }
    assert soak.windows[4].host.gpu["throttle_reasons"] == float(0x040)
    assert gpu.started == 7  # once before the first window, then after each window
    assert soak.status == {
        "cpu_mhz": "ok",
        "cpu_share": "unsupported",
        "steal": "unsupported",
        "canary": "unsupported",
        "gpu": "ok",
    }


def test_unreadable_cpu_frequency_is_recorded_as_a_status(tmp_path: Path) -> None:
    reader = CpuFreqReader(str(tmp_path / "nothing" / "scaling_cur_freq"))
    assert reader.read() is None and reader.status == "unsupported"
    assert reader.note is not None and "no cpufreq" in reader.note
    (tmp_path / "bad").write_text("fast\n")
    broken = CpuFreqReader(str(tmp_path / "bad"))
    assert broken.read() is None and broken.status == "invalid"


def test_the_canary_is_read_per_window_within_its_share_of_the_soak() -> None:
    clock = FakeClock()

    def kernel() -> None:
        clock.advance(0.02)

    canary = Canary(
        CanaryKernels(calls={"python": kernel}, spec={"python": "fake"}),
        settings=CanarySettings(start_readings=3, max_reading_s=1.0),
        clock=clock,
        sleep=clock.advance,
    )
    canary.start()
    monitor = SoakMonitor(canary=canary, canary_share=0.03, clock=clock)

    def work() -> None:
        clock.advance(0.01)

    _, soak = run_soak(work, duration_s=10.0, clock=clock, monitor=monitor)
    read = [w for w in soak.windows if w.host.canary]
    assert read and all(w.host.canary["python"] == pytest.approx(1.0) for w in read)
    # A reading is 4 calls of 20 ms: 80 ms, so at a 3% share one window in three or four.
    assert soak.canary_s <= 0.03 * soak.elapsed_s + 0.08
    assert 2 <= len(read) <= 4
    assert soak.probe_s >= soak.canary_s
    assert soak.canary_floors == {"python": pytest.approx(1.2)}


def test_a_soak_round_trips_through_the_measurement_and_the_document() -> None:
    clock = FakeClock()
    gpu = FakeGpu(clock, hot_at_s=12.0)
    step = {"at": 12e9}

    def work() -> None:
        clock.advance(0.010 * (1.3 if clock.now >= step["at"] else 1.0))

    _, soak = run_soak(
        work, duration_s=20.0, clock=clock, monitor=SoakMonitor(gpu=gpu, clock=clock)
    )
    again = SoakMeasurement.from_dict(json.loads(json.dumps(soak.to_dict())))
    assert again == soak

    measurement = Measurement(
        samples=SampleSet(np.full(10, 0.01), 1, 1, 0.0, "budget", 0.1, False),
        declared=None,
        quality=(),
        counters=None,
        soak=soak,
    )
    assert Measurement.from_dict(measurement.to_dict()).soak == soak
    assert (
        "soak"
        not in Measurement.from_dict(
            {k: v for k, v in measurement.to_dict().items() if k != "soak"}
        ).to_dict()
    )

    record = soak_record(assess_soak(soak, margin=0.05))
    assert record.finding is not None and record.finding.kind == "throttling"
    assert record.finding.window == 12
    document = RunDocument(tests=(TestRecord(nodeid="t.py::x", soak=record),))
    text = json.dumps(document.to_json())
    back = RunDocument.from_json(json.loads(text))
    assert back == document
    assert back.tests[0].soak is not None
    assert back.tests[0].soak.windows[12].gpu_throttle == ("hw_thermal_slowdown",)
    # A test without a soak writes no key; an older document without it reads as unsoaked.
    plain = TestRecord(nodeid="t.py::y").to_json()
    assert "soak" not in plain and TestRecord.from_json(plain).soak is None


def test_soak_settings_come_from_the_option_the_ini_and_the_marker(tmp_path: Path) -> None:
    def config(**values: object):  # type: ignore[no-untyped-def]
        return build_config(
            rootdir=tmp_path, cli=values.get("cli") or {}, ini=values.get("ini") or {}
        )  # type: ignore[arg-type]

    assert config().soak_s == 0.0  # off by default
    assert config(ini={"soak": "30s"}).soak_s == 30.0
    assert config(ini={"soak": "30s"}, cli={"soak": "1min"}).soak_s == 60.0
    session = config(cli={"soak": "20"})
    assert resolve_test(session, None, "t.py::a").soak_s == 20.0
    marked = bind_marker("t.py::b", (), {"soak": "5s"})
    assert resolve_test(session, marked, "t.py::b").soak_s == 5.0
    off = bind_marker("t.py::c", (), {"soak": 0})
    assert resolve_test(session, off, "t.py::c").soak_s == 0.0
    assert parse_soak("off", where="x") == 0.0


def test_a_bad_soak_value_names_its_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--roofline-soak: .*'soon'"):
        build_config(rootdir=tmp_path, cli={"soak": "soon"}, ini={})
    with pytest.raises(ConfigError, match=r"ini roofline_soak: .*-3"):
        build_config(rootdir=tmp_path, cli={}, ini={"soak": "-3"})
    with pytest.raises(ConfigError, match=r"t.py::x: @pytest.mark.roofline\(soak=...\)"):
        bind_marker("t.py::x", (), {"soak": "forever"})


def test_a_failing_window_without_samples_is_not_a_finding() -> None:
    clock = FakeClock()
    _, soak = run_soak(lambda: clock.advance(0.5), duration_s=6.0, clock=clock)
    assert all(w.n == 2 for w in soak.windows)
    assert not np.isnan(soak.p50_s).any()
    assert assess_soak(soak, margin=0.05).finding is None
