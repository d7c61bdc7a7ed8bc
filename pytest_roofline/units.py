"""Units: durations parsed from what users write ("4ms", 0.004), and numbers formatted with units.

The one place a duration is parsed or a quantity is printed with a unit, for the messages of
every layer and for the renderers.
"""

from __future__ import annotations

import math
import re

from pytest_roofline.errors import ConfigError

__all__ = ["VALID_FORM", "format_seconds", "parse_duration", "si"]

_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|min)?\s*$")
_SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
VALID_FORM = 'a duration such as "4ms", "250us", "1.5s" or a number of seconds'


def parse_duration(value: object, *, where: str) -> float:
    """Return ``value`` in seconds; a bare number is seconds.

    :param value: the user's value (``str``, ``int`` or ``float``).
    :param where: where the value came from, for the error message.
    :raises ConfigError: the value is not a positive, finite duration.
    """
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected {VALID_FORM}, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ConfigError(f"{where}: expected {VALID_FORM}, got {value!r}")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]
    else:
        raise ConfigError(f"{where}: expected {VALID_FORM}, got {type(value).__name__} {value!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{where}: expected a positive finite duration, got {value!r}")
    return seconds


def format_seconds(seconds: float | None) -> str:
    """Format a duration with a unit a human reads at a glance (``"1.23 ms"``)."""
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    magnitude = abs(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if magnitude >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def si(value: float | None, unit: str, *, digits: int = 3) -> str:
    """``value`` with an SI prefix and ``unit`` (``"67 TFLOP/s"``); ``"n/a"`` for no value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    for factor, prefix in _SI_PREFIXES:
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.{digits}g} {unit}"
    for factor, prefix in ((1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if magnitude >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"
