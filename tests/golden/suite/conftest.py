"""A fake clock for the golden suite: each test's call times come from a seeded generator.

``GOLDEN_SIDE=candidate`` switches on the changes the candidate run carries (a slower kernel,
a tail regression, an improvement), so two runs of this suite make a stored comparison whose
every number is fixed by the seeds, not by the machine.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest


class Clock:
    now = 0

    def __call__(self) -> int:
        return self.now


CLOCK = Clock()
CANDIDATE = os.environ.get("GOLDEN_SIDE") == "candidate"


@pytest.hookimpl
def pytest_roofline_clock(config):
    return CLOCK


@pytest.fixture
def fake_call(request):
    """``fake_call(median_s, *, sigma=0.05, tail=0.0, tail_factor=3.0)``: a callable whose every
    call advances the fake clock by a lognormal time (a ``tail`` share of calls ``tail_factor``
    times slower)."""

    def make(median_s, *, sigma=0.05, tail=0.0, tail_factor=3.0):
        seed = zlib.crc32(f"{request.node.nodeid}:{CANDIDATE}".encode())
        rng = np.random.default_rng(seed)

        def call():
            dt = median_s * float(np.exp(sigma * rng.standard_normal()))
            if tail and rng.random() < tail:
                dt *= tail_factor
            CLOCK.now += int(dt * 1e9)
            return dt

        return call

    return make
