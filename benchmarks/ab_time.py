"""Where the wall time of ``pytest-roofline ab`` goes, on ``paired_validation.py``'s fixture.

Two modes, both on the fixture project (ten tests in two modules, an A/A candidate):

``phases``: full ``ab`` runs at the defaults (``--baseline=base --gate=never``), one per
``--python`` given in turn for ``--runs`` rounds (so that every interpreter sees the same
stretch of the machine's load; each is an interpreter with its own pytest-roofline installed,
e.g. a venv of an older commit). From the times its progress lines arrive: before the first
line (imports, the plan, the worktree), the workers' start (until the last "collected"), the
windows (until the last ``[i/N]`` line, with the window pairs and the milliseconds per window),
and the end (stopping the workers, removing the worktree, the analysis, saving, writing the
JSON). Then the median of each per interpreter.

``windows``: drives ``ab``'s workers directly (``PairedWorkers``, three worker pairs, every
test exactly ``--pairs`` window pairs of ``--budget / 32`` seconds) and splits a window's time,
for a test's first window on each worker and for the later ones: the controller's round trip,
the test's protocol (set-up, warm-up, sampling, teardown), the sampling and warm-up inside it,
and the host canary's readings around it.

Usage: python benchmarks/ab_time.py phases --python OLD/bin/python --python NEW/bin/python
       [--runs 6]
       python benchmarks/ab_time.py windows [--pairs 16] [--budget 2.0]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paired_validation import QUIET, fixture_workers, make_project

PAIRS = re.compile(r": (\d+) window pairs")


def phases(repo: Path, store: Path, python: str) -> dict[str, float]:
    """One ``ab`` run's phases, from the arrival times of its progress lines."""
    command = [
        python, "-m", "pytest_roofline.cli", "ab", "--baseline=base", f"--store={store}",
        f"--json={store.with_suffix('.json')}", "--gate=never", "--", "-p", "no:benchmark", *QUIET,
    ]  # fmt: skip
    began = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    marks = [(time.perf_counter() - began, line) for line in process.stderr]
    if process.wait() != 0:
        raise SystemExit(f"{python}: ab exited {process.returncode}: {marks[-5:]}")
    total = time.perf_counter() - began
    started = max(t for t, line in marks if "worker" in line and "collected" in line)
    tests = [(t, line) for t, line in marks if line.startswith("[")]
    windows_end = tests[-1][0]
    pairs = sum(int(m.group(1)) for _, line in tests if (m := PAIRS.search(line)))
    return {
        "before": marks[0][0],
        "workers": started - marks[0][0],
        "windows": windows_end - started,
        "pairs": float(pairs),
        "ms_per_window": 1e3 * (windows_end - started) / (2 * pairs),
        "end": total - windows_end,
        "total": total,
    }


def run_phases(pythons: list[str], runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="ab-time-") as scratch:
        repo, _ = make_project(Path(scratch), ["none"])
        subprocess.run(["git", "checkout", "-q", "cand-none"], cwd=repo, check=True)
        found: dict[str, list[dict[str, float]]] = {p: [] for p in pythons}
        for run in range(1, runs + 1):
            for python in pythons:
                store = Path(scratch) / f"store-{len(found[python])}-{pythons.index(python)}.sqlite"
                row = phases(repo, store, python)
                found[python].append(row)
                print(
                    f"{python} run {run}: "
                    + " ".join(f"{k} {v:.2f}" for k, v in row.items() if k != "pairs")
                    + f" ({row['pairs']:.0f} pairs)",
                    flush=True,
                )
        print("\nmedians (seconds; pairs: window pairs of the run):")
        for python, rows in found.items():
            medians = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
            print(f"{python}: " + " ".join(f"{k} {v:.2f}" for k, v in medians.items()))


def run_windows(pairs: int, budget: float) -> None:
    from pytest_roofline.ab.command import ab_windows
    from pytest_roofline.ab.workers import PairedWorkers

    settings = replace(ab_windows(32, budget, 3), min_pairs=pairs, max_pairs=pairs)
    with tempfile.TemporaryDirectory(prefix="ab-time-") as scratch:
        root = Path(scratch)
        repo, base = make_project(root, ["none"])
        subprocess.run(["git", "checkout", "-q", "cand-none"], cwd=repo, check=True)
        with PairedWorkers(*fixture_workers(root, base, repo), settings) as workers:
            nodeids = workers.common_tests()[0]
            began = time.perf_counter()
            tests = workers.measure_tests(
                nodeids,
                lambda *args, **kwargs: True,
                window_s={n: settings.window_s for n in nodeids},
            )
            measuring = time.perf_counter() - began
    windows = sorted((w for t in tests.values() for w in t.windows), key=lambda w: w.started_ns)
    seen: set[tuple[str, str, int]] = set()
    groups: dict[str, list[dict[str, float]]] = {"first": [], "later": []}
    for w in windows:
        key = (w.nodeid, w.side, w.worker_pair)
        protocol = (w.finished_ns - w.started_ns) / 1e9
        groups["later" if key in seen else "first"].append(
            {
                "window": w.wall_s,
                "protocol": protocol,
                "sampling": w.sampling_s,
                "warm-up": w.warmup_s,
                "protocol other": protocol - w.sampling_s - w.warmup_s,
                "canary": w.canary_s,
                "round trip and rest": w.wall_s - protocol - w.canary_s,
            }
        )
        seen.add(key)
    count = len(windows)
    print(
        f"{count} windows of {settings.window_s * 1e3:.1f} ms sampling, {len(tests)} tests, "
        f"three worker pairs: {1e3 * measuring / count:.1f} ms per window in all"
    )
    for name, rows in groups.items():
        parts = ", ".join(
            f"{k} {1e3 * statistics.mean(r[k] for r in rows):.2f}"
            f" (median {1e3 * statistics.median(r[k] for r in rows):.2f})"
            for k in rows[0]
        )
        print(f"{name} windows ({len(rows)}), ms: {parts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("phases")
    p.add_argument("--python", action="append", default=None)
    p.add_argument("--runs", type=int, default=6)
    w = sub.add_parser("windows")
    w.add_argument("--pairs", type=int, default=16)
    w.add_argument("--budget", type=float, default=2.0)
    args = parser.parse_args()
    if args.mode == "phases":
        run_phases(args.python or [sys.executable], args.runs)
    else:
        run_windows(args.pairs, args.budget)


if __name__ == "__main__":
    main()
