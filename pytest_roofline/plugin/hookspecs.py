"""Hooks other plugins (or a ``conftest.py``) implement to extend pytest-roofline."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_roofline.hardware.target import HardwareTarget
    from pytest_roofline.measure.canary import Canary
    from pytest_roofline.measure.counters import CounterBackend
    from pytest_roofline.measure.sampling import Clock
    from pytest_roofline.model.document import RunDocument


@pytest.hookspec(firstresult=True)
def pytest_roofline_hardware_target(config: pytest.Config, name: str) -> HardwareTarget | None:
    """Return the hardware target for ``name``, or ``None`` to let pytest-roofline resolve it.

    :param config: the pytest config.
    :param name: the requested target (``--roofline-target``, ini, ``roofline.yaml``, or ``auto``).
    """


@pytest.hookspec(firstresult=True)
def pytest_roofline_clock(config: pytest.Config) -> Clock | None:
    """Return a monotonic integer-nanosecond clock for timing samples, or ``None`` for ``perf_counter_ns``.

    :param config: the pytest config.
    """


@pytest.hookspec
def pytest_roofline_counter_backends(config: pytest.Config) -> list[CounterBackend]:  # type: ignore[empty-body]
    """Return extra counter backends to probe and read around every measured test.

    :param config: the pytest config.
    """


@pytest.hookspec
def pytest_roofline_run_finished(config: pytest.Config, document: RunDocument) -> None:
    """Observe the finished run's document (on the controller, after files are written; not
    in ``pytest-roofline ab``'s workers, whose windows ``ab`` reports as one run).

    :param config: the pytest config.
    :param document: the run as every report renders it (what ``--roofline-json`` writes).
    """


@pytest.hookspec(firstresult=True)
def pytest_roofline_canary(config: pytest.Config) -> Canary | None:
    """Return the host canary of this measuring process, or ``None`` for the default.

    The default times real reference kernels on the real clock; it is off when
    :func:`pytest_roofline_clock` supplies a clock, since a canary on another clock would judge
    windows the samples do not see. A plugin that fakes the clock and wants the canary supplies
    one here, with kernels that advance its clock. Called once per measuring process (each
    xdist worker), on first use.

    :param config: the pytest config.
    """
