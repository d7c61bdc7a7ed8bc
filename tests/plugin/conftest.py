from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# A config target so no plugin test pays for host calibration, and small budgets so each inner
# run takes well under a second. Nothing here asserts on real speed.
ROOFLINE_YAML = """
target: ci-runner
targets:
  ci-runner: {peak_flops_per_s: {fp64: 4.0e10, fp32: 8.0e10}, peak_bytes_per_s: {dram: 2.0e10}}
slices:
  sizes:
    - {name: small, params: {n: 8}}
    - {name: large, params: {n: 64}, source: production}
"""
INI = """
[pytest]
roofline_budget = 0.02
roofline_warmup = 1ms
roofline_min_samples = 5
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project with a config target, a slice group and fast measurement settings."""
    pytester.makefile(".yaml", roofline=ROOFLINE_YAML)
    pytester.makeini(INI)
    return pytester


# A conftest that makes pytest-roofline time samples with a fake clock: ``advance(seconds)``
# moves it, so per-call times are exact and no assertion depends on the machine's speed.
FAKE_CLOCK_CONFTEST = """
import pytest

class Clock:
    now = 0
    def __call__(self):
        return self.now

CLOCK = Clock()

@pytest.hookimpl
def pytest_roofline_clock(config):
    return CLOCK

def advance(seconds):
    CLOCK.now += int(seconds * 1e9)

@pytest.fixture(name="advance")
def advance_fixture():
    return advance
"""

RunAndParse = Callable[..., tuple[pytest.RunResult, dict[str, Any]]]


@pytest.fixture
def run_and_parse(project: pytest.Pytester) -> RunAndParse:
    """Run pytest with ``--roofline`` and return the result and the parsed JSON document."""

    def run(
        *args: str, name: str = "out.json", subprocess: bool = False
    ) -> tuple[pytest.RunResult, dict[str, Any]]:
        runner = project.runpytest_subprocess if subprocess else project.runpytest
        result = runner("--roofline", f"--roofline-json={name}", *args)
        path = Path(project.path, name)
        document = json.loads(path.read_text()) if path.exists() else {}
        return result, document

    return run
