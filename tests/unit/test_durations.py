from __future__ import annotations

import pytest

from pytest_roofline.errors import ConfigError
from pytest_roofline.units import format_seconds, parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("4ms", 4e-3), ("250us", 250e-6), ("250µs", 250e-6), ("1.5s", 1.5), ("100ns", 1e-7), ("2min", 120.0),
     (0.004, 0.004), (3, 3.0), ("0.25", 0.25), ("1e-3s", 1e-3)],
)  # fmt: skip
def test_durations_parse_to_seconds(value: object, seconds: float) -> None:
    assert parse_duration(value, where="here") == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value", ["4 parsecs", "", "-1ms", 0, -2.0, float("nan"), float("inf"), True, None, [1]]
)
def test_bad_durations_name_the_source_and_the_valid_form(value: object) -> None:
    with pytest.raises(ConfigError, match=r"^sla\.p99: expected .*(duration|4ms)"):
        parse_duration(value, where="sla.p99")


def test_seconds_format_with_a_readable_unit() -> None:
    assert format_seconds(1.5e-3) == "1.5 ms"
    assert format_seconds(2.5e-7) == "250 ns"
    assert format_seconds(None) == "n/a"
