"""Make a real per-run history: a small suite saved many times, with a known step and a drift.

Real-series part of the history validation (issue 14). A throwaway git repository holds a suite
of three tiny numpy kernels (a triad over ``n`` float64 elements, a few hundred microseconds a
call); every run commits a new ``params.json`` (so each run has its own ``git_commit`` tag, as
runs landing on a branch do) and saves the run under the label ``main`` with
``pytest --roofline``:

* ``test_steady``: the same work every run (false steps are counted on it);
* ``test_step``: its work grows by ``--step`` (default +5%) from run ``--step-at`` on;
* ``test_drift``: its work grows by ``--drift`` (default +1%) per run from run ``--drift-from`` on.

The injected change is in the *work* (elements per call); the time it makes is close to
proportional on this memory-bound kernel but not exactly, so the analysis also reports the
ratio seen. The runs are measured for real on this machine, with its noise.

Then ``pytest-roofline history --label=main --store=WORKDIR/store.sqlite --json=...``
analyses it (``docs/history.md`` has the commands and the tables).

Usage: python benchmarks/history_real_series.py WORKDIR [--runs 40] [--step-at 20]
       [--drift-from 10] [--step 0.05] [--drift 0.01] [--budget 0.25]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SUITE = """
import json
from pathlib import Path

import numpy as np
import pytest

PARAMS = json.loads((Path(__file__).parent / "params.json").read_text())
BASE_ELEMENTS = 200_000


def triad(a, b, c):
    np.multiply(c, 3.0, out=a)
    np.add(a, b, out=a)
    return a


def _run(roofline, factor):
    n = int(BASE_ELEMENTS * factor)
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    roofline.declare(flops=2 * n, bytes_moved=24 * n, precision="fp64")
    roofline(triad, a, b, c)


@pytest.mark.roofline
def test_steady(roofline):
    _run(roofline, 1.0)


@pytest.mark.roofline
def test_step(roofline):
    _run(roofline, PARAMS["step"])


@pytest.mark.roofline
def test_drift(roofline):
    _run(roofline, PARAMS["drift"])
"""

ROOFLINE_YAML = """
target: bench-box
targets:
  bench-box: {peak_flops_per_s: {fp64: 4.0e10}, peak_bytes_per_s: {dram: 2.0e11}}
"""


def _git(workdir: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=workdir, check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--step-at", type=int, default=20)
    parser.add_argument("--drift-from", type=int, default=10)
    parser.add_argument("--step", type=float, default=0.05)
    parser.add_argument("--drift", type=float, default=0.01)
    parser.add_argument("--budget", type=float, default=0.25)
    parser.add_argument(
        "--start", type=int, default=0, help="continue an interrupted series at this run"
    )
    args = parser.parse_args()

    work: Path = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    if not (work / ".git").exists():
        _git(work, "init", "-q")
        _git(work, "config", "user.email", "bench@example.invalid")
        _git(work, "config", "user.name", "bench")
    (work / "test_series.py").write_text(SUITE)
    (work / "roofline.yaml").write_text(ROOFLINE_YAML)
    (work / "pytest.ini").write_text(f"[pytest]\nroofline_budget = {args.budget}\n")
    (work / ".gitignore").write_text("store.sqlite*\n.roofline/\n__pycache__/\n")
    plan_path = work / "plan.json"
    plan = json.loads(plan_path.read_text())[: args.start] if args.start else []
    started = time.perf_counter()
    for k in range(args.start, args.runs):
        step = 1.0 + args.step if k >= args.step_at else 1.0
        drift = (
            (1.0 + args.drift) ** max(0, k - args.drift_from + 1) if k >= args.drift_from else 1.0
        )
        params = {"run": k, "step": step, "drift": drift}
        (work / "params.json").write_text(json.dumps(params) + "\n")
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", f"run {k}: step x{step:.3f}, drift x{drift:.3f}")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--roofline",
                "--roofline-save=main",
                f"--roofline-store={work / 'store.sqlite'}",
                "--roofline-no-summary",
            ],
            cwd=work,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            check=False,
        )
        plan.append(params)
        plan_path.write_text(json.dumps(plan, indent=1) + "\n")
        print(
            f"run {k}: exit {done.returncode} ({time.perf_counter() - started:.0f} s)", flush=True
        )
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
            return 1
    print(
        f"{args.runs} runs in {time.perf_counter() - started:.0f} s; store {work / 'store.sqlite'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
