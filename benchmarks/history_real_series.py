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

With ``--analyse`` it makes no runs but reads the store back (:meth:`Store.series`) and reports,
per test and quantile, what :func:`~pytest_roofline.gate.steps.analyse_test` finds on the whole
series and, as CI sees it, on every prefix of the runs (one per run landing): the first prefix
that shows the injected change (a confirmed step upwards at or after it, or a drift beyond the
margin), and new confirmed steps elsewhere (false steps).

Usage: python benchmarks/history_real_series.py WORKDIR [--runs 40] [--step-at 20]
       [--drift-from 10] [--step 0.05] [--drift 0.01] [--budget 0.25] [--analyse]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

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
    parser.add_argument("--analyse", action="store_true", help="analyse WORKDIR's store only")
    args = parser.parse_args()
    if args.analyse:
        return analyse(args.workdir, args.step_at, args.drift_from)

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


def analyse(work: Path, step_at: int, drift_from: int) -> int:
    """Whole-series and per-prefix findings of the real series (see the module docstring)."""
    from dataclasses import replace

    from pytest_roofline.config.defaults import DEFAULTS
    from pytest_roofline.config.settings import DEFAULT_LAYERS
    from pytest_roofline.gate.steps import HistorySettings, analyse_test
    from pytest_roofline.store import Store
    from pytest_roofline.store.series import LabelSeries

    onsets = {"test_series.py::test_step": step_at, "test_series.py::test_drift": drift_from}
    print(
        "| test | quantile | per-run log sd (before onset) | whole series: confirmed steps (index, size) | drift beyond margin | first prefix showing the change (delay, runs) | new false steps /100 runs as CI sees it |"
    )
    print("|---|---|---|---|---|---|---|")
    with Store.open(work / "store.sqlite", create=False) as store:
        series = store.series("main")
        for nodeid, test in sorted(series.tests.items()):
            onset = onsets.get(nodeid)
            for quantile in ("p50", "p95", "p99"):
                settings = HistorySettings(quantile=quantile, margin=DEFAULTS.min_effect[quantile])
                values = np.log(test.quantile_s(quantile))
                sd = float(np.std(values[: onset if onset else len(values)], ddof=1))
                whole = analyse_test(
                    nodeid, test, series.runs, settings, store.samples_of, DEFAULT_LAYERS
                )
                steps = (
                    ", ".join(f"{s.index} ({(s.ratio or 0) - 1:+.0%})" for s in whole.confirmed)
                    or "none"
                )
                drift = (
                    "none"
                    if whole.drift is None
                    else f"{whole.drift.ratio - 1:+.0%} since index {whole.drift.since_index}"
                )
                first, false, known = None, 0, set()
                for n in range(6, len(series.runs) + 1):
                    prefix = LabelSeries(
                        series.label,
                        series.runs[:n],
                        {
                            nodeid: replace(
                                test,
                                values={k: v[:n] for k, v in test.values.items()},
                                bound_codes=test.bound_codes[:n],
                            )
                        },
                    )
                    found = analyse_test(
                        nodeid,
                        prefix.tests[nodeid],
                        prefix.runs,
                        settings,
                        store.samples_of,
                        DEFAULT_LAYERS,
                    )
                    for s in found.confirmed:
                        hit = onset is not None and s.index >= onset - 2 and (s.ratio or 0) > 1
                        if hit and first is None:
                            first = n - 1 - onset
                        if not hit and not any(abs(s.index - i) <= 1 for i in known):
                            false += 1
                        known.add(s.index)
                    drifting = found.drift is not None and found.drift.ratio > 1
                    if onset is not None and first is None and drifting and n - 1 >= onset:
                        first = n - 1 - onset
                shown = "-" if onset is None else ("not shown" if first is None else str(first))
                per100 = 100 * false / len(series.runs)
                print(
                    f"| {nodeid.split('::')[1]} | {quantile} | {sd:.3f} | {steps} | {drift} | {shown} | {per100:.1f} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
