"""The ``roofline``, ``workload`` and ``hardware`` fixtures (thin: the session object does the work)."""

from __future__ import annotations

import pytest

from pytest_roofline.config.workload import WorkloadSlice
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.plugin.probe import RooflineProbe
from pytest_roofline.plugin.session import SESSION_KEY, RooflineSession

__all__ = ["hardware", "roofline", "workload"]


def _session(request: pytest.FixtureRequest) -> RooflineSession:
    return request.config.stash[SESSION_KEY]


@pytest.fixture
def roofline(request: pytest.FixtureRequest) -> RooflineProbe:
    """Measure one callable: ``roofline(fn, *args, **kwargs)`` returns ``fn``'s result."""
    return _session(request).make_probe(request.node)


@pytest.fixture
def workload(request: pytest.FixtureRequest) -> WorkloadSlice:
    """The workload slice this test instance runs on (tests are parametrized over their slices)."""
    slice_ = getattr(request, "param", None)
    if not isinstance(slice_, WorkloadSlice):
        raise pytest.UsageError(
            f"{request.node.nodeid}: the 'workload' fixture needs slices from @pytest.mark.roofline(slices=...)"
        )
    return slice_


@pytest.fixture
def hardware(request: pytest.FixtureRequest) -> HardwareTarget:
    """The hardware target in force (``--roofline-target``, default ``auto``)."""
    target = _session(request).target
    if target is None:
        pytest.skip("no hardware target could be resolved on this machine")
    return target
