"""A/A on persistent paired workers: how far apart two workers running the same tree land.

Both workers run the same directory (a two-test file: ``np.sin`` on 20k elements and a
pure-Python loop). For each repetition a fresh pair of workers alternates ``--pairs`` window
pairs of ``--window`` seconds per test in ABBA order (no stopping rule). Per window pair the
log ratio is ``log median(candidate window) - log median(baseline window)``; the script prints

* the per-window log-ratio sd (the spread of those ratios within a repetition) and its robust
  counterpart (1.4826 x MAD: the host here switches between speeds for seconds at a time, and
  a switch inside a window pair makes that pair's ratio an outlier),
* the mean log ratio of each repetition and its sd across repetitions, next to what the
  window sd alone predicts for it (``sd / sqrt(pairs)``), and the same for the 20%-trimmed
  mean (the estimator ``paired.compare_paired`` applies to rounds),
* the wall time per test (controller clock, both sides' windows) and the workers' start-up.

With ``--compare-ab`` it then runs today's ``pytest-roofline ab`` (a fresh pytest process per
half round) on the same file in a throw-away git repository (``--baseline=HEAD``, so A/A too)
with its defaults (8 rounds, 1 s per test and side), and prints its wall time per test and its
per-round p50 log ratios' sd beside the workers'. With ``--neighbour`` the bursty neighbour
(``benchmarks/neighbour.py``) runs in the background for the whole measurement.

Figures are only comparable within one run of this script (the machine's load changes); it
prints the load average and the busiest other processes at the start and the end.

``--out FILE`` keeps every window (side, pair, monotonic start and end, median, p10, sample
count, batch, CPU share) as JSON for a closer look.

Usage: python benchmarks/paired_workers_aa.py [--reps 4] [--pairs 20] [--window 0.2]
       [--neighbour] [--seed 1] [--compare-ab] [--out windows.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from pytest_roofline.ab.workers import PairedWorkers, SideSpec, WindowSettings

TESTS = """
import numpy as np

X = np.linspace(0.0, 1.0, 20_000)


def test_sin(roofline):
    roofline(np.sin, X)


def loop():
    total = 0
    for i in range(2_000):
        total += i * i
    return total


def test_python_loop(roofline):
    roofline(loop)
"""
YAML = """
target: ci-runner
targets:
  ci-runner: {peak_flops_per_s: {fp64: 4.0e10, fp32: 8.0e10}, peak_bytes_per_s: {dram: 2.0e10}}
"""
QUIET = ("-p", "no:hypothesispytest", "-p", "no:xdist")
HERE = Path(__file__).resolve().parent


def host_note() -> str:
    """Load average and the three busiest processes that are not this script's."""
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    done = subprocess.run(
        ["ps", "-eo", "pcpu,pid,args", "--sort=-pcpu"], capture_output=True, text=True
    )
    mine = {os.getpid()}
    rows = [r.split(None, 2) for r in done.stdout.splitlines()[1:]]
    top = [f"{args[:60]} ({pcpu}%)" for pcpu, pid, args in rows if int(pid) not in mine][:4]
    return f"load average {load}; busiest: {', '.join(top)}"


def make_tree(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "test_aa.py").write_text(TESTS)
    (root / "roofline.yaml").write_text(YAML)
    return root


def window_log_ratios(base: list[np.ndarray], cand: list[np.ndarray]) -> np.ndarray:
    return np.log([np.median(c) for c in cand]) - np.log([np.median(b) for b in base])


def robust_sd(values: np.ndarray) -> float:
    return float(1.4826 * np.median(np.abs(values - np.median(values))))


def workers_aa(
    tree: Path, reps: int, pairs: int, window_s: float, windows: list[dict[str, object]]
) -> dict[str, object]:
    settings = WindowSettings(window_s=window_s, min_pairs=pairs, max_pairs=pairs)
    spec = {
        side: SideSpec(side=side, python=sys.executable, workdir=tree, pytest_args=QUIET)
        for side in ("baseline", "candidate")
    }
    per_test: dict[str, dict[str, list[float]]] = {}
    startups = []
    for rep in range(reps):
        with PairedWorkers(spec["baseline"], spec["candidate"], settings) as workers:
            startups.append(workers.startup_s)
            run = workers.run()
        for nodeid, test in run.tests.items():
            ratios = window_log_ratios(test.base_windows, test.cand_windows)
            row = per_test.setdefault(
                nodeid, {"window_sd": [], "robust_sd": [], "mean": [], "trimmed": [], "wall": []}
            )
            row["window_sd"].append(float(np.std(ratios, ddof=1)))
            row["robust_sd"].append(robust_sd(ratios))
            row["mean"].append(float(np.mean(ratios)))
            row["trimmed"].append(float(stats.trim_mean(ratios, 0.2)))
            row["wall"].append(test.wall_s)
            for w in test.windows:
                windows.append(
                    {
                        "rep": rep,
                        "nodeid": nodeid,
                        "side": w.side,
                        "pair": w.pair,
                        "started_ns": w.started_ns,
                        "finished_ns": w.finished_ns,
                        "median_s": float(np.median(w.samples_s)),
                        "p10_s": float(np.quantile(w.samples_s, 0.1)),
                        "n": int(w.samples_s.size),
                        "batch": w.batch_size,
                        "cpu_share": w.cpu_share,
                    }
                )
            print(
                f"  rep {rep + 1} {nodeid}: mean log ratio {np.mean(ratios):+.4f}, window sd "
                f"{np.std(ratios, ddof=1):.4f}, {len(ratios)} pairs, {test.wall_s:.1f} s",
                flush=True,
            )
    return {"tests": per_test, "startup_s": startups}


def ab_aa(tree: Path) -> dict[str, object]:
    """Today's ``pytest-roofline ab`` on the same file, A/A against HEAD (default settings)."""
    git = [
        "git",
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@example.com",
        "-c",
        "commit.gpgsign=false",
    ]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "aa"]):
        subprocess.run([*git, *args], cwd=tree, check=True, capture_output=True)
    out = tree / "ab.json"
    command = [
        sys.executable, "-m", "pytest_roofline.cli", "ab", "--baseline=HEAD",
        f"--store={tree / 'store.sqlite'}", f"--json={out}", "--gate=never", "--", *QUIET,
        "test_aa.py",
    ]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if not out.exists():
        raise SystemExit(f"pytest-roofline ab failed ({done.returncode}):\n{done.stderr[-3000:]}")
    document = json.loads(out.read_text())
    rounds = document["run"]["paired"]["round_seconds"]
    per_test = {}
    for test in document["tests"]:
        ratios = [r for r in test["paired"]["ratios"]["p50"] if r is not None]
        logs = np.log(ratios)
        per_test[test["nodeid"]] = {
            "round_sd": float(np.std(logs, ddof=1)),
            "mean": float(np.mean(logs)),
            "rounds": len(logs),
        }
    return {"wall_s": wall, "process_s": [r["seconds"] for r in rounds], "tests": per_test}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--window", type=float, default=0.2)
    parser.add_argument("--neighbour", action="store_true")
    parser.add_argument("--seed", type=int, default=1, help="the neighbour's seed")
    parser.add_argument("--compare-ab", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="write every window as JSON")
    args = parser.parse_args(argv)
    neighbour = None
    print(f"start: {host_note()}", flush=True)
    if args.neighbour:
        neighbour = subprocess.Popen(
            [sys.executable, str(HERE / "neighbour.py"), f"--seed={args.seed}"]
        )
        print(f"neighbour running (pid {neighbour.pid}, seed {args.seed})", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="paired-aa-") as scratch:
            tree = make_tree(Path(scratch) / "tree")
            began = time.perf_counter()
            windows: list[dict[str, object]] = []
            found = workers_aa(tree, args.reps, args.pairs, args.window, windows)
            if args.out is not None:
                args.out.write_text(json.dumps(windows))
            workers_wall = time.perf_counter() - began
            ab = ab_aa(tree) if args.compare_ab else None
    finally:
        end_note = host_note()
        if neighbour is not None:
            neighbour.terminate()
            neighbour.wait(timeout=30)
    print(f"end: {end_note}")
    print(
        f"\npersistent workers, A/A, {args.reps} repetitions x {args.pairs} ABBA pairs of "
        f"{args.window:g} s windows{' under the neighbour' if args.neighbour else ''}"
    )
    print(
        "| test | window log-ratio sd (robust sd) | predicted sd of the mean | sd of the mean across reps | means | sd of the 20%-trimmed mean across reps | wall per test (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    tests = found["tests"]
    assert isinstance(tests, dict)
    for nodeid, row in tests.items():
        window_sd = float(np.median(row["window_sd"]))
        means, trimmed = row["mean"], row["trimmed"]
        across = float(np.std(means, ddof=1)) if len(means) > 1 else math.nan
        across_trimmed = float(np.std(trimmed, ddof=1)) if len(trimmed) > 1 else math.nan
        print(
            f"| {nodeid} | {window_sd:.4f} ({float(np.median(row['robust_sd'])):.4f}) | "
            f"{window_sd / math.sqrt(args.pairs):.4f} | {across:.4f} | "
            f"{', '.join(f'{m:+.3f}' for m in means)} | {across_trimmed:.4f} | "
            f"{float(np.median(row['wall'])):.1f} |"
        )
    startups = found["startup_s"]
    assert isinstance(startups, list)
    print(
        f"worker start-up (both, in parallel): median {float(np.median(startups)):.1f} s; "
        f"all repetitions {workers_wall:.0f} s"
    )
    if ab is not None:
        process_s = ab["process_s"]
        assert isinstance(process_s, list)
        ab_tests = ab["tests"]
        assert isinstance(ab_tests, dict)
        print(
            f"\npytest-roofline ab (8 rounds, 1 s per test and side), same tests, A/A: "
            f"{ab['wall_s']:.1f} s for {len(ab_tests)} tests "
            f"({float(ab['wall_s']) / max(1, len(ab_tests)):.1f} s per test); "
            f"{len(process_s)} pytest processes, median {float(np.median(process_s)):.1f} s each"
        )
        for nodeid, row in ab_tests.items():
            print(
                f"  {nodeid}: per-round p50 log-ratio sd {row['round_sd']:.4f} over "
                f"{row['rounds']} rounds, mean {row['mean']:+.4f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
