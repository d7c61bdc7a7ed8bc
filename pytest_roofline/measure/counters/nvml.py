"""NVIDIA GPU counters through NVML (``nvidia-ml-py``, imported as ``pynvml``).

Install with ``pip install pytest-roofline[gpu]``. Without the package, the NVML library or a
GPU, every counter is ``unsupported``; an NVML permission error makes it ``denied``.

The backend samples the device once at ``start()`` and once at ``stop()``; it runs no polling
thread. A poller would take the GIL in the middle of the timed loop every few milliseconds and
put its own latency into the p99 it is meant to explain. What two samples give:

* ``nvml.energy_j`` — the exact integral: ``nvmlDeviceGetTotalEnergyConsumption`` at stop minus
  at start (Volta and newer). Mean power over the region is ``energy_j / wall_s``.
* ``nvml.sm_clock_mhz``, ``nvml.mem_clock_mhz``, ``nvml.power_w``, ``nvml.gpu_util_pct`` — the
  reading at the end of the region, when the GPU has just run the measured loop (at the start
  it is often still idle at its lowest clock). NVML's utilisation and, on recent GPUs, power
  are themselves averaged over the last fraction of a second to a second.
* ``nvml.temperature_c`` — the higher of the two readings.
* ``nvml.throttle_reasons`` — the bitmask OR of both readings (clock-event reasons), leaving out
  the start reading's ``gpu_idle`` bit: a GPU idle before the region is no disturbance. The
  decoded names go into the notes.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from pytest_roofline.measure.counters.base import BackendDetails, CounterStatus

__all__ = ["NVML_COUNTERS", "THROTTLE_REASONS", "NvmlBackend", "decode_throttle_reasons"]

NVML_COUNTERS: tuple[str, ...] = (
    "nvml.sm_clock_mhz",
    "nvml.mem_clock_mhz",
    "nvml.power_w",
    "nvml.energy_j",
    "nvml.temperature_c",
    "nvml.throttle_reasons",
    "nvml.gpu_util_pct",
)

THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x001, "gpu_idle"),
    (0x002, "applications_clocks_setting"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal_slowdown"),
    (0x040, "hw_thermal_slowdown"),
    (0x080, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)
"""``nvmlClocksEventReason*`` bits (formerly ``nvmlClocksThrottleReason*``) and our names."""

_GPU_IDLE = 0x001

# NVML return codes (nvml.h); used when the module under test does not define them.
_NVML_ERROR_NOT_SUPPORTED = 3
_NVML_ERROR_NO_PERMISSION = 4
_NVML_ERROR_NOT_FOUND = 6
_NVML_ERROR_DRIVER_NOT_LOADED = 9
_NVML_ERROR_LIBRARY_NOT_FOUND = 12
_NVML_ERROR_FUNCTION_NOT_FOUND = 13
_NVML_ERROR_DEPRECATED = 26
_NVML_ERROR_GPU_NOT_FOUND = 28
_UNSUPPORTED_CODES = frozenset(
    {
        _NVML_ERROR_NOT_SUPPORTED,
        _NVML_ERROR_NOT_FOUND,
        _NVML_ERROR_DRIVER_NOT_LOADED,
        _NVML_ERROR_LIBRARY_NOT_FOUND,
        _NVML_ERROR_FUNCTION_NOT_FOUND,
        _NVML_ERROR_DEPRECATED,
        _NVML_ERROR_GPU_NOT_FOUND,
    }
)


def decode_throttle_reasons(mask: int) -> tuple[str, ...]:
    """Names of the clock-event reason bits set in ``mask`` (unknown bits as ``bit_0x...``)."""
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    known = 0
    for bit, _ in THROTTLE_REASONS:
        known |= bit
    rest = mask & ~known
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"bit_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return tuple(names)


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _classify(exc: BaseException, *, default: CounterStatus = "invalid") -> CounterStatus:
    code = _error_code(exc)
    if code == _NVML_ERROR_NO_PERMISSION:
        return "denied"
    if code in _UNSUPPORTED_CODES or isinstance(exc, AttributeError):
        return "unsupported"  # AttributeError: a pynvml too old to have the function
    return default


def _describe(exc: BaseException) -> str:
    code = _error_code(exc)
    text = str(exc) or type(exc).__name__
    return f"{text} (NVML error {code})" if code is not None else f"{type(exc).__name__}: {text}"


class NvmlBackend:
    """GPU clocks, power, energy, temperature, throttle reasons and utilisation of one device.

    Parameters
    ----------
    device_index
        NVML's index (PCI order; not necessarily CUDA's, see ``CUDA_DEVICE_ORDER``).
    module
        The module to import; ``pynvml`` is what ``nvidia-ml-py`` installs.
    """

    name = "nvml"
    counters: tuple[str, ...] = NVML_COUNTERS

    def __init__(self, device_index: int = 0, *, module: str = "pynvml") -> None:
        self._device_index = device_index
        self._module_name = module
        self._nvml: ModuleType | None = None
        self._handle: Any = None
        self._initialised = False
        self._status: dict[str, CounterStatus] | None = None
        self._start: dict[str, float] = {}
        self._details = BackendDetails()

    def probe(self) -> Mapping[str, CounterStatus]:
        if self._status is not None:
            return dict(self._status)
        status, notes = self._probe()
        self._status = status
        self._details = BackendDetails(notes=tuple(notes))
        if not any(s == "ok" for s in status.values()):
            self._shutdown()
        return dict(status)

    def _probe(self) -> tuple[dict[str, CounterStatus], list[str]]:
        def everything(
            state: CounterStatus, note: str
        ) -> tuple[dict[str, CounterStatus], list[str]]:
            return dict.fromkeys(NVML_COUNTERS, state), [note]

        try:
            nvml = importlib.import_module(self._module_name)
        except ImportError as exc:
            return everything(
                "unsupported",
                f"nvml: {self._module_name} not importable ({exc}); "
                "install it with `pip install pytest-roofline[gpu]`",
            )
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:
            # Without an initialised NVML nothing can be read, whatever the cause; only a
            # permission refusal says the counters exist.
            state: CounterStatus = "denied" if _classify(exc) == "denied" else "unsupported"
            return everything(state, f"nvml: nvmlInit failed: {_describe(exc)}")
        self._initialised = True
        try:
            count = int(nvml.nvmlDeviceGetCount())
            if not 0 <= self._device_index < count:
                return everything(
                    "unsupported",
                    f"nvml: no GPU at index {self._device_index} ({count} device(s) found)",
                )
            self._handle = nvml.nvmlDeviceGetHandleByIndex(self._device_index)
        except Exception as exc:
            return everything(_classify(exc), f"nvml: cannot open the GPU: {_describe(exc)}")

        notes = [f"nvml: device {self._device_index} ({self._device_name()})"]
        status: dict[str, CounterStatus] = {}
        readers = self._readers()
        for counter, reader in readers.items():
            try:
                reader()
            except Exception as exc:
                status[counter] = _classify(exc)
                notes.append(f"{counter}: {status[counter]} ({_describe(exc)})")
            else:
                status[counter] = "ok"
        return status, notes

    def _device_name(self) -> str:
        assert self._nvml is not None
        try:
            name = self._nvml.nvmlDeviceGetName(self._handle)
        except Exception:
            return "name unknown"
        return name.decode(errors="replace") if isinstance(name, bytes) else str(name)

    def _readers(self) -> dict[str, Callable[[], float]]:
        nvml = self._nvml
        assert nvml is not None
        h = self._handle
        sm = getattr(nvml, "NVML_CLOCK_SM", 1)
        mem = getattr(nvml, "NVML_CLOCK_MEM", 2)
        gpu_sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        return {
            "nvml.sm_clock_mhz": lambda: float(nvml.nvmlDeviceGetClockInfo(h, sm)),
            "nvml.mem_clock_mhz": lambda: float(nvml.nvmlDeviceGetClockInfo(h, mem)),
            "nvml.power_w": lambda: nvml.nvmlDeviceGetPowerUsage(h) / 1000.0,  # mW
            "nvml.energy_j": lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0,  # mJ
            "nvml.temperature_c": lambda: float(nvml.nvmlDeviceGetTemperature(h, gpu_sensor)),
            "nvml.throttle_reasons": lambda: float(self._reasons()),
            "nvml.gpu_util_pct": lambda: float(nvml.nvmlDeviceGetUtilizationRates(h).gpu),
        }

    def _reasons(self) -> int:
        nvml = self._nvml
        assert nvml is not None
        getter = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if getter is not None:
            try:
                return int(getter(self._handle))
            except Exception as exc:
                if _error_code(exc) != _NVML_ERROR_FUNCTION_NOT_FOUND:
                    raise
        # Drivers older than 535 only have the former name.
        return int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(self._handle))

    def _sample(self, notes: list[str] | None) -> dict[str, float]:
        sample: dict[str, float] = {}
        if self._status is None:
            return sample
        for counter, reader in self._readers().items():
            if self._status.get(counter) != "ok":
                continue
            try:
                sample[counter] = reader()
            except Exception as exc:
                if notes is not None:
                    notes.append(f"{counter}: read failed: {_describe(exc)}")
        return sample

    def start(self) -> None:
        self.probe()
        self._start = self._sample(None)

    def stop(self) -> Mapping[str, float]:
        notes: list[str] = []
        end = self._sample(notes)
        start, self._start = self._start, {}
        values: dict[str, float] = {}
        for counter in ("nvml.sm_clock_mhz", "nvml.mem_clock_mhz", "nvml.power_w"):
            if counter in end:
                values[counter] = end[counter]
        if "nvml.gpu_util_pct" in end:
            values["nvml.gpu_util_pct"] = end["nvml.gpu_util_pct"]
        if "nvml.temperature_c" in end:
            values["nvml.temperature_c"] = max(
                end["nvml.temperature_c"], start.get("nvml.temperature_c", -1e9)
            )
        if "nvml.energy_j" in end and "nvml.energy_j" in start:
            energy = end["nvml.energy_j"] - start["nvml.energy_j"]
            if energy >= 0:
                values["nvml.energy_j"] = energy
            else:
                notes.append("nvml.energy_j: the energy counter went backwards (driver reload?)")
        elif "nvml.energy_j" in end:
            notes.append("nvml.energy_j: no reading at the start of the region")
        if "nvml.throttle_reasons" in end:
            mask = int(end["nvml.throttle_reasons"])
            mask |= int(start.get("nvml.throttle_reasons", 0)) & ~_GPU_IDLE
            values["nvml.throttle_reasons"] = float(mask)
            if mask:
                names = ", ".join(decode_throttle_reasons(mask))
                notes.append(f"nvml.throttle_reasons: {names} ({mask:#x})")
        self._details = BackendDetails(notes=tuple(notes))
        return values

    def details(self) -> BackendDetails:
        return self._details

    def close(self) -> None:
        self._shutdown()
        self._status = None

    def _shutdown(self) -> None:
        if self._initialised and self._nvml is not None:
            self._initialised = False
            # NVML refcounts init/shutdown; a failed shutdown leaves nothing of ours behind.
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()


def gpu_present(module: str = "pynvml") -> bool:
    """Whether ``module`` imports, NVML initialises and reports at least one GPU."""
    try:
        nvml = importlib.import_module(module)
        nvml.nvmlInit()
    except Exception:
        return False
    try:
        return int(nvml.nvmlDeviceGetCount()) > 0
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
