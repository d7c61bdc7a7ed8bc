"""NVML backend against a fake ``pynvml`` injected at the import boundary (``sys.modules``).

The fake mirrors the parts of ``nvidia-ml-py`` the backend uses: ``NVMLError`` carrying the
NVML return code in ``.value``, the ``NVML_*`` constants, and the device queries.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace

import pytest

from pytest_roofline.measure.counters import (
    NVML_COUNTERS,
    CounterSession,
    NvmlBackend,
    decode_throttle_reasons,
    default_backends,
    gpu_present,
)

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_UNKNOWN = 999


class FakeNVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return f"fake NVML error {self.value}"


@dataclass
class FakeGpu:
    """Device state the test changes between start() and stop()."""

    count: int = 1
    sm_clock_mhz: int = 1980
    mem_clock_mhz: int = 3201
    power_mw: int = 412_000
    energy_mj: int = 1_000_000
    temperature_c: int = 41
    reasons: int = 0
    util_pct: int = 97
    init_error: int | None = None
    errors: dict[str, int] = field(default_factory=dict)  # function name -> NVML error code
    calls: list[str] = field(default_factory=list)

    def module(self) -> ModuleType:
        mod = ModuleType("pynvml")
        mod.NVMLError = FakeNVMLError  # type: ignore[attr-defined]
        mod.NVML_CLOCK_SM = 1  # type: ignore[attr-defined]
        mod.NVML_CLOCK_MEM = 2  # type: ignore[attr-defined]
        mod.NVML_TEMPERATURE_GPU = 0  # type: ignore[attr-defined]

        def api(name: str, result: object = None) -> None:
            def call(*args: object) -> object:
                self.calls.append(name)
                if name in self.errors:
                    raise FakeNVMLError(self.errors[name])
                return result() if callable(result) else result

            setattr(mod, name, call)

        def init() -> None:
            self.calls.append("nvmlInit")
            if self.init_error is not None:
                raise FakeNVMLError(self.init_error)

        mod.nvmlInit = init  # type: ignore[attr-defined]
        api("nvmlShutdown")
        api("nvmlDeviceGetCount", lambda: self.count)
        api("nvmlDeviceGetHandleByIndex", lambda: "handle-0")
        api("nvmlDeviceGetName", lambda: "Fake H200")
        mod.nvmlDeviceGetClockInfo = self._clock  # type: ignore[attr-defined]
        api("nvmlDeviceGetPowerUsage", lambda: self.power_mw)
        api("nvmlDeviceGetTotalEnergyConsumption", lambda: self.energy_mj)
        api("nvmlDeviceGetTemperature", lambda: self.temperature_c)
        api("nvmlDeviceGetCurrentClocksEventReasons", lambda: self.reasons)
        api("nvmlDeviceGetCurrentClocksThrottleReasons", lambda: self.reasons)
        api("nvmlDeviceGetUtilizationRates", lambda: SimpleNamespace(gpu=self.util_pct, memory=5))
        return mod

    def _clock(self, handle: object, kind: int) -> int:
        self.calls.append("nvmlDeviceGetClockInfo")
        if "nvmlDeviceGetClockInfo" in self.errors:
            raise FakeNVMLError(self.errors["nvmlDeviceGetClockInfo"])
        return self.sm_clock_mhz if kind == 1 else self.mem_clock_mhz


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGpu]:
    fake = FakeGpu()
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())
    yield fake


def _install(monkeypatch: pytest.MonkeyPatch, fake: FakeGpu) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())


def test_a_present_gpu_reports_every_counter_ok(gpu: FakeGpu) -> None:
    backend = NvmlBackend()
    assert backend.probe() == dict.fromkeys(NVML_COUNTERS, "ok")
    assert "nvml: device 0 (Fake H200)" in backend.details().notes


def test_values_come_from_the_device_over_the_region(gpu: FakeGpu) -> None:
    backend = NvmlBackend()
    backend.probe()
    gpu.reasons = 0x001 | 0x004  # idle and power-capped before the region
    gpu.temperature_c = 45
    backend.start()
    gpu.energy_mj += 12_500  # 12.5 J during the region
    gpu.reasons = 0x020  # software thermal slowdown at the end
    gpu.temperature_c = 43
    gpu.sm_clock_mhz = 1755
    values = backend.stop()
    assert values == {
        "nvml.sm_clock_mhz": 1755.0,
        "nvml.mem_clock_mhz": 3201.0,
        "nvml.power_w": 412.0,
        "nvml.energy_j": 12.5,
        "nvml.temperature_c": 45.0,  # the higher of the two readings
        "nvml.throttle_reasons": float(0x004 | 0x020),  # the start's gpu_idle bit left out
        "nvml.gpu_util_pct": 97.0,
    }
    assert "nvml.throttle_reasons: sw_power_cap, sw_thermal_slowdown (0x24)" in (
        backend.details().notes
    )


def test_no_throttle_note_when_nothing_throttled(gpu: FakeGpu) -> None:
    backend = NvmlBackend()
    backend.probe()
    gpu.reasons = 0x001  # idle at the start only
    backend.start()
    gpu.reasons = 0
    assert backend.stop()["nvml.throttle_reasons"] == 0.0
    assert backend.details().notes == ()


def test_throttle_reasons_decode_known_and_unknown_bits() -> None:
    assert decode_throttle_reasons(0) == ()
    assert decode_throttle_reasons(0x48) == ("hw_slowdown", "hw_thermal_slowdown")
    assert decode_throttle_reasons(0x80 | 0x2000) == ("hw_power_brake_slowdown", "bit_0x2000")


@pytest.mark.parametrize(
    "code", [NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_UNKNOWN]
)
def test_an_nvml_init_failure_makes_everything_unsupported(
    monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    fake = FakeGpu(init_error=code)
    _install(monkeypatch, fake)
    backend = NvmlBackend()
    assert backend.probe() == dict.fromkeys(NVML_COUNTERS, "unsupported")
    assert f"nvmlInit failed: fake NVML error {code}" in backend.details().notes[0]
    assert "nvmlShutdown" not in fake.calls  # never initialised, so never shut down


def test_an_nvml_permission_error_at_init_is_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, FakeGpu(init_error=NVML_ERROR_NO_PERMISSION))
    assert NvmlBackend().probe() == dict.fromkeys(NVML_COUNTERS, "denied")


def test_per_counter_errors_give_per_counter_statuses(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGpu(
        errors={
            "nvmlDeviceGetPowerUsage": NVML_ERROR_NO_PERMISSION,
            "nvmlDeviceGetTotalEnergyConsumption": NVML_ERROR_NOT_SUPPORTED,
            "nvmlDeviceGetTemperature": NVML_ERROR_UNKNOWN,
        }
    )
    _install(monkeypatch, fake)
    backend = NvmlBackend()
    status = backend.probe()
    assert status["nvml.power_w"] == "denied"
    assert status["nvml.energy_j"] == "unsupported"
    assert status["nvml.temperature_c"] == "invalid"
    assert status["nvml.sm_clock_mhz"] == "ok"
    backend.start()
    assert set(backend.stop()) == {
        "nvml.sm_clock_mhz",
        "nvml.mem_clock_mhz",
        "nvml.throttle_reasons",
        "nvml.gpu_util_pct",
    }


def test_a_driver_without_clock_event_reasons_falls_back_to_throttle_reasons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeGpu(
        reasons=0x008,
        errors={"nvmlDeviceGetCurrentClocksEventReasons": NVML_ERROR_FUNCTION_NOT_FOUND},
    )
    _install(monkeypatch, fake)
    backend = NvmlBackend()
    assert backend.probe()["nvml.throttle_reasons"] == "ok"
    backend.start()
    assert backend.stop()["nvml.throttle_reasons"] == 8.0
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in fake.calls


def test_without_pynvml_everything_is_unsupported_and_the_extra_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    backend = NvmlBackend()
    assert backend.probe() == dict.fromkeys(NVML_COUNTERS, "unsupported")
    assert "pip install pytest-roofline[gpu]" in backend.details().notes[0]


def test_no_gpu_is_unsupported_and_nvml_is_shut_down(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGpu(count=0)
    _install(monkeypatch, fake)
    backend = NvmlBackend()
    assert backend.probe() == dict.fromkeys(NVML_COUNTERS, "unsupported")
    assert "no GPU at index 0" in backend.details().notes[0]
    assert fake.calls.count("nvmlShutdown") == 1


def test_close_shuts_nvml_down_once(gpu: FakeGpu) -> None:
    backend = NvmlBackend()
    backend.probe()
    backend.close()
    backend.close()
    assert gpu.calls.count("nvmlShutdown") == 1


def test_a_read_failing_during_a_region_makes_that_counter_invalid_in_the_reading(
    gpu: FakeGpu,
) -> None:
    session = CounterSession([NvmlBackend()])
    session.probe()
    session.start()
    gpu.errors["nvmlDeviceGetPowerUsage"] = NVML_ERROR_UNKNOWN
    reading = session.stop()
    assert reading.status["nvml.power_w"] == "invalid"
    assert reading.status["nvml.energy_j"] == "ok"
    assert any("nvml.power_w: read failed" in n for n in reading.notes)
    session.close()


def test_an_energy_counter_going_backwards_is_not_reported(gpu: FakeGpu) -> None:
    session = CounterSession([NvmlBackend()])
    session.start()
    gpu.energy_mj = 10  # driver reloaded: the counter restarted
    reading = session.stop()
    assert reading.status["nvml.energy_j"] == "invalid"
    assert any("went backwards" in n for n in reading.notes)


def test_default_backends_add_nvml_only_where_a_gpu_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _install(monkeypatch, FakeGpu())
    assert gpu_present()
    assert isinstance(default_backends()[0], NvmlBackend)

    _install(monkeypatch, FakeGpu(count=0))
    assert not gpu_present()
    assert not any(isinstance(b, NvmlBackend) for b in default_backends())
    assert isinstance(default_backends(gpu=True)[0], NvmlBackend)

    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert not gpu_present()
    assert not any(isinstance(b, NvmlBackend) for b in default_backends())
    assert not any(isinstance(b, NvmlBackend) for b in default_backends(gpu=False))
