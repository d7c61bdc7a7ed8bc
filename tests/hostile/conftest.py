"""Helpers of the hostile-input tests: a fast project, real subprocesses, the exit statuses.

Each test here runs pytest or ``pytest-roofline`` as a real subprocess where the behaviour is
about exit statuses, terminals or files, and reads what it printed as bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_roofline.store import RunRecord, Store

# The exit statuses the README documents (written out here so a changed constant fails a test).
OK = 0
ROLLBACK = 1
CLI_USAGE = 2
INTERNAL = 3
USAGE = 4
WRITE_FAILED = 7

ROOFLINE_YAML = """\
target: ci-runner
targets:
  ci-runner: {peak_flops_per_s: {fp64: 4.0e10, fp32: 8.0e10}, peak_bytes_per_s: {dram: 2.0e10}}
"""
INI = """\
[pytest]
roofline_budget = 0.02
roofline_warmup = 1ms
roofline_min_samples = 5
"""
# One measured test that leaves a file behind when it runs: a refused run measures nothing.
SIMPLE = """\
import pathlib

def test_a(roofline):
    pathlib.Path(__file__).with_name("measured.flag").write_text("yes")
    roofline(sorted, [3, 1, 2])
"""
# Samples timed with a fake clock that each call advances by COST_S: exact and machine-free.
FAKE_CLOCK_CONFTEST = """\
import os
import pytest

COST_S = float(os.environ.get("COST_S", "0.001"))

class Clock:
    now = 0
    def __call__(self):
        return self.now

CLOCK = Clock()

@pytest.hookimpl
def pytest_roofline_clock(config):
    return CLOCK

@pytest.fixture
def work():
    def call():
        CLOCK.now += int(COST_S * 1e9)
    return call
"""

Arg = str | bytes


@dataclass(frozen=True)
class Ran:
    """A finished subprocess: its exit status and what it wrote (raw and decoded)."""

    status: int
    raw_out: bytes
    raw_err: bytes

    @property
    def out(self) -> str:
        return self.raw_out.decode("utf-8", "backslashreplace")

    @property
    def err(self) -> str:
        return self.raw_err.decode("utf-8", "backslashreplace")

    @property
    def text(self) -> str:
        return self.out + self.err

    def explain(self) -> str:
        return f"exit {self.status}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


def _run(command: Sequence[Arg], cwd: Path, env: Mapping[str, str] | None, timeout: float) -> Ran:
    merged = {**os.environ, **(env or {})}
    merged.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        list(command), cwd=cwd, env=merged, capture_output=True, timeout=timeout, check=False
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def run_pytest(
    cwd: Path, *args: Arg, env: Mapping[str, str] | None = None, timeout: float = 300
) -> Ran:
    """``python -m pytest -p no:cacheprovider ARGS`` in ``cwd`` (bytes arguments pass as bytes)."""
    command: list[Arg] = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return _run(command, cwd, env, timeout)


def run_cli(
    cwd: Path, *args: Arg, env: Mapping[str, str] | None = None, timeout: float = 300
) -> Ran:
    """``python -m pytest_roofline.cli ARGS`` in ``cwd``."""
    return _run([sys.executable, "-m", "pytest_roofline.cli", *args], cwd, env, timeout)


_CLI_MANY = r"""
import contextlib, io, json, sys
from pytest_roofline.cli import main
done = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    done.append([status, out.getvalue(), err.getvalue()])
sys.stdout.write(json.dumps(done))
"""


def run_cli_many(cwd: Path, *argvs: Sequence[str], timeout: float = 300) -> list[Ran]:
    """Several ``pytest-roofline`` commands in one subprocess, one after the other.

    Each command is ``pytest_roofline.cli.main(argv)`` with its own status and captured output:
    the same code path as ``python -m pytest_roofline.cli`` bar the interpreter start, which is
    most of a command's time. For tests that check many commands against one store.
    """
    ran = _run(
        [sys.executable, "-c", _CLI_MANY, json.dumps([list(a) for a in argvs])], cwd, None, timeout
    )
    assert ran.status == 0, ran.explain()
    return [
        Ran(status, out.encode("utf-8", "surrogateescape"), err.encode("utf-8", "surrogateescape"))
        for status, out, err in json.loads(ran.out)
    ]


def no_traceback(ran: Ran) -> None:
    assert "Traceback" not in ran.text, ran.explain()
    assert "INTERNALERROR" not in ran.text, ran.explain()


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def seed_store(path: Path, *labels: str) -> list[int]:
    """A store holding one empty run per label (made through the store's own API)."""
    with Store.open(path, create=True) as store:
        return [
            store.save_run(RunRecord(label, 1.7e9, 1.7e9 + 1, {"seed": "yes"}, {}, "m"), [])
            for label in labels
        ]


def stored_labels(path: Path) -> list[str | None]:
    with Store.open(path, create=False) as store:
        return [record.label for _, record, _ in store.list_runs()]


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A project with a config target and fast measurement settings; returns its directory."""
    pytester.makefile(".yaml", roofline=ROOFLINE_YAML)
    pytester.makeini(INI)
    pytester.makepyfile(test_s=SIMPLE)
    return Path(pytester.path)
