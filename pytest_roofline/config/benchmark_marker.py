"""pytest-benchmark's settings as pytest-roofline reads them: the marker, thresholds, ownership.

Pure (no pytest). ``@pytest.mark.benchmark(...)`` is validated and mapped onto
:class:`BenchmarkSettings` (:func:`bind_benchmark_marker`), refusing with the test, the key and
the reason what cannot keep its meaning (a custom timer, ``precision=``, ``cprofile=``);
``--roofline-fail=p50:10%`` and pytest-benchmark's ``--benchmark-compare-fail=median:10%`` are
parsed into :class:`FailThreshold` (:func:`parse_fail_threshold`); :func:`benchmark_owner`
says which plugin provides the ``benchmark`` fixture. The pytest side is
:mod:`pytest_roofline.plugin.benchmark_options`; the samplers that honour these settings are in
:mod:`pytest_roofline.measure.benchmark_samplers`. The semantics copied are those of
pytest-benchmark 5.x (``pytest_benchmark/fixture.py``, ``plugin.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_roofline.errors import ConfigError

__all__ = [
    "AUTOSAVE_LABEL",
    "MARKER_KEYS",
    "OWNER_CHOICES",
    "PYTEST_BENCHMARK_MEASUREMENT_OPTIONS",
    "BenchmarkSettings",
    "FailThreshold",
    "Owner",
    "benchmark_owner",
    "bind_benchmark_marker",
    "parse_fail_threshold",
    "session_marker_kwargs",
]

Owner = Literal["roofline", "pytest-benchmark"]
OWNER_CHOICES = ("auto", "roofline", "pytest-benchmark")
#: The label ``--roofline-autosave`` saves under (and ``pytest-roofline import`` of a
#: ``.benchmarks/`` folder imports into), so an imported history and new runs form one series.
AUTOSAVE_LABEL = "autosave"
_QUANTILE_ALIASES = {"p50": "p50", "median": "p50", "p95": "p95", "p99": "p99"}
_THRESHOLD = re.compile(
    r"^\s*(?P<stat>[a-z0-9_]+)\s*:\s*(?P<value>[0-9]*\.?[0-9]+)\s*(?P<pct>%?)\s*$"
)


#: ``@pytest.mark.benchmark`` keywords that keep their meaning here.
MARKER_KEYS = (
    "group",
    "min_rounds",
    "max_time",
    "min_time",
    "warmup",
    "warmup_iterations",
    "disable_gc",
    "timer",
    "calibration_precision",
)
# Keywords pytest-benchmark accepts whose meaning cannot be kept, and why.
_REFUSED_KEYS = {
    "precision": "pytest-roofline stops sampling when the p95/p99 comparison is decisive or the "
    "budget (max_time) is spent; a stop rule on the mean's margin of error cannot be honoured. "
    "Remove it (max_time and min_rounds still bound the measurement)",
    "confidence": "it only qualifies precision=, which cannot be honoured (see precision)",
    "cprofile": "pytest-roofline does not profile; run this test under pytest-benchmark "
    "(--roofline-benchmark=pytest-benchmark) to get a cProfile table",
}
# Timers that measure elapsed wall time: pytest-roofline reads time.perf_counter_ns, which
# measures the same quantity (at the best resolution), so a test that names one keeps its
# meaning. Any other timer (process_time, thread_time, a custom function) measures something else.
_WALL_CLOCK_TIMERS = {
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.time",
    "time.time_ns",
    "timeit.default_timer",
}
_PYTEST_BENCHMARK_DEFAULT_WARMUP_ITERATIONS = 100_000


@dataclass(frozen=True, slots=True)
class BenchmarkSettings:
    """``@pytest.mark.benchmark(...)`` of one test, validated; ``None`` means "not given"."""

    group: str | None = None
    min_rounds: int | None = None
    max_time_s: float | None = None
    min_time_s: float | None = None
    warmup: bool = False
    warmup_iterations: int = _PYTEST_BENCHMARK_DEFAULT_WARMUP_ITERATIONS
    disable_gc: bool = False
    calibration_precision: int | None = None


def _timer_name(timer: object) -> str:
    if isinstance(timer, str):
        return timer.strip()
    module = getattr(timer, "__module__", None)
    name = getattr(timer, "__qualname__", None) or getattr(timer, "__name__", None)
    if name is None:
        return repr(timer)
    return f"{module}.{name}" if module else str(name)


def _number(value: object, *, integer: bool) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float) if not integer else int):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def bind_benchmark_marker(
    nodeid: str, args: Sequence[object], kwargs: Mapping[str, object], *, where: str | None = None
) -> BenchmarkSettings:
    """Validate ``@pytest.mark.benchmark(...)`` of ``nodeid`` and map it onto our settings.

    :param where: how messages name the source (default ``"NODEID: @pytest.mark.benchmark"``).
    :raises ConfigError: a positional argument, an unknown keyword, a bad value, or a keyword
        whose meaning cannot be kept (the message names the test, the key and why).
    """
    where = where or f"{nodeid}: @pytest.mark.benchmark"
    if args:
        raise ConfigError(f"{where}: takes keyword arguments only, got {list(args)!r}")
    values: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _REFUSED_KEYS:
            raise ConfigError(
                f"{where}({key}=...) cannot be kept by pytest-roofline: {_REFUSED_KEYS[key]}"
            )
        if key not in MARKER_KEYS:
            raise ConfigError(
                f"{where}({key}=...): unknown keyword; valid: {', '.join(MARKER_KEYS)}"
            )
        values[key] = value
    out: dict[str, Any] = {}
    if "group" in values:
        group = values["group"]
        if group is not None and not isinstance(group, str):
            raise ConfigError(f"{where}(group=...): must be a string or None, got {group!r}")
        out["group"] = group
    if "min_rounds" in values:
        rounds = _number(values["min_rounds"], integer=True)
        if rounds is None or rounds < 1:
            raise ConfigError(
                f"{where}(min_rounds=...): must be an integer >= 1, got {values['min_rounds']!r}"
            )
        out["min_rounds"] = int(rounds)
    for key, field_name, positive in (
        ("max_time", "max_time_s", True),
        ("min_time", "min_time_s", False),
    ):
        if key in values:
            seconds = _number(values[key], integer=False)
            if seconds is None or seconds < 0 or (positive and seconds == 0):
                bound = "> 0" if positive else ">= 0"
                raise ConfigError(
                    f"{where}({key}=...): must be a number of seconds {bound}, got {values[key]!r}"
                )
            out[field_name] = seconds
    for key in ("warmup", "disable_gc"):
        if key in values:
            if not isinstance(values[key], bool):
                raise ConfigError(f"{where}({key}=...): must be True or False, got {values[key]!r}")
            out[key] = values[key]
    if "warmup_iterations" in values:
        count = _number(values["warmup_iterations"], integer=True)
        if count is None or count < 0:
            raise ConfigError(
                f"{where}(warmup_iterations=...): must be an integer >= 0, "
                f"got {values['warmup_iterations']!r}"
            )
        out["warmup_iterations"] = int(count)
    if "calibration_precision" in values:
        precision = _number(values["calibration_precision"], integer=True)
        if precision is None or precision < 1:
            raise ConfigError(
                f"{where}(calibration_precision=...): must be an integer >= 1, "
                f"got {values['calibration_precision']!r}"
            )
        out["calibration_precision"] = int(precision)
    if "timer" in values:
        name = _timer_name(values["timer"])
        if name not in _WALL_CLOCK_TIMERS:
            raise ConfigError(
                f"{where}(timer={name}) cannot be kept by pytest-roofline: it times with "
                "time.perf_counter_ns (elapsed wall time), and this timer measures something "
                f"else. Wall-clock timers are accepted: {', '.join(sorted(_WALL_CLOCK_TIMERS))}; "
                "or run this test under pytest-benchmark (--roofline-benchmark=pytest-benchmark)"
            )
    return BenchmarkSettings(**out)


@dataclass(frozen=True, slots=True)
class FailThreshold:
    """``--roofline-fail=p50:10%``: fail a quantile's real change above ``fraction``."""

    quantile: str
    fraction: float


def parse_fail_threshold(text: str, *, where: str) -> FailThreshold:
    """Parse ``QUANTILE:PERCENT%`` (``p50``/``median``, ``p95``, ``p99``).

    pytest-benchmark's other statistics and absolute thresholds are refused with the reason.

    :raises ConfigError: the value cannot be kept; the message names ``where`` and the valid form.
    """
    match = _THRESHOLD.match(text.lower())
    valid = "valid: p50:10% (or median:10%), p95:15%, p99:20%"
    if match is None:
        raise ConfigError(f"{where}={text!r}: not QUANTILE:PERCENT%; {valid}")
    stat, value, pct = match["stat"], float(match["value"]), match["pct"]
    if stat not in _QUANTILE_ALIASES:
        raise ConfigError(
            f"{where}={text!r}: pytest-roofline gates the quantiles p50 (median), p95 and p99; "
            f"{stat!r} is not gated (min and max are single extreme samples, mean and stddev are "
            f"dominated by outliers). {valid}"
        )
    if not pct:
        raise ConfigError(
            f"{where}={text!r}: an absolute threshold in seconds cannot be kept (it does not "
            f"scale with the test); give a relative one. {valid}"
        )
    if not 0 < value < 1000:
        raise ConfigError(f"{where}={text!r}: the percentage must be above 0 and below 1000")
    return FailThreshold(_QUANTILE_ALIASES[stat], value / 100)


def benchmark_owner(choice: str, *, pytest_benchmark_active: bool) -> Owner | None:
    """Which plugin provides ``benchmark`` (``None``: neither, as asked)."""
    if choice == "roofline":
        return "roofline"
    if choice == "pytest-benchmark":
        return "pytest-benchmark" if pytest_benchmark_active else None
    return "pytest-benchmark" if pytest_benchmark_active else "roofline"


# pytest-benchmark's measurement options: (dest, marker keyword, its default, conversion).
PYTEST_BENCHMARK_MEASUREMENT_OPTIONS: tuple[tuple[str, str, object, Any], ...] = (
    ("benchmark_min_time", "min_time", 0.000005, float),
    ("benchmark_max_time", "max_time", 1.0, float),
    ("benchmark_min_rounds", "min_rounds", 5, int),
    ("benchmark_timer", "timer", "time.perf_counter", str),
    ("benchmark_calibration_precision", "calibration_precision", 10, int),
    ("benchmark_disable_gc", "disable_gc", False, bool),
    ("benchmark_warmup", "warmup", False, bool),
    ("benchmark_warmup_iterations", "warmup_iterations", 100_000, int),
    ("benchmark_precision", "precision", None, float),
)


def session_marker_kwargs(values: Mapping[str, object]) -> dict[str, object]:
    """pytest-benchmark's measurement options that differ from its defaults, as marker keywords.

    :param values: option dest -> parsed value (pytest-benchmark's own parsing).
    """
    out: dict[str, object] = {}
    for dest, key, default, convert in PYTEST_BENCHMARK_MEASUREMENT_OPTIONS:
        value = values.get(dest)
        if value is None:
            continue
        converted = convert(value)
        if converted != default:
            out[key] = converted
    return out
