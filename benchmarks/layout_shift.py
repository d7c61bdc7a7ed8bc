"""Does a worker process keep one memory layout for life, and does ``ab``'s heap shift undo it?

Two fresh worker processes alternate windows in ABBA order, as ``pytest-roofline ab``'s workers
do. In each window a worker allocates three arrays of 200 000 float64 (as a test function
would), times ``np.add(a, b, out=out)`` for ``--window`` seconds and keeps the median. Per run
the script prints the second worker's / the first's ratio of window medians (geometric mean
over ``--pairs`` pairs) and its standard error. Runs alternate between no shift and the heap
shift ``ab`` holds through every window (:func:`pytest_roofline.plugin.ab_worker.layout_shift`,
up to ``--shift`` bytes). Both workers run the same code, so any ratio away from 1 beyond its
standard error is a difference between the two processes; the summary gives, per condition,
the spread of the run ratios (sd of the log ratio), how many fell outside x0.92-x1.08, and how
many a per-run interval would call different (|log ratio| / se > 2.5).

Usage: python benchmarks/layout_shift.py [--runs 20] [--pairs 30] [--window 0.1]
[--shift 4194304]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

from pytest_roofline.ab.workers import LAYOUT_SHIFT_BYTES

WORKER = r"""
import json, random, sys
import numpy as np
from pytest_roofline.plugin.ab_worker import layout_shift
sys.path.insert(0, sys.argv[2])
from vcpu_bias import median_add_s

max_shift = int(sys.argv[1])
rng = random.Random()
n = 200_000
for line in sys.stdin:
    seconds = json.loads(line)
    shift = layout_shift(rng, max_shift)
    a, b, out = np.ones(n), np.ones(n), np.empty(n)
    for _ in range(3):
        np.add(a, b, out=out)
    print(json.dumps(median_add_s(a, b, out, seconds)), flush=True)
    del a, b, out, shift
"""


def one_run(shift: int, pairs: int, window_s: float) -> tuple[float, float]:
    """(mean log ratio second/first, its standard error) over ``pairs`` ABBA window pairs."""
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(shift), str(Path(__file__).resolve().parent)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]

    def window(index: int) -> float:
        worker = workers[index]
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(json.dumps(window_s) + "\n")
        worker.stdin.flush()
        return float(json.loads(worker.stdout.readline()))

    logs = []
    for pair in range(pairs):
        order = (0, 1) if pair % 2 == 0 else (1, 0)
        medians = {index: window(index) for index in order}
        logs.append(math.log(medians[1] / medians[0]))
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    return statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20, help="runs per condition (2 or more)")
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--window", type=float, default=0.1)
    parser.add_argument("--shift", type=int, default=LAYOUT_SHIFT_BYTES)
    options = parser.parse_args()
    if options.runs < 2 or options.pairs < 2:
        parser.error("--runs and --pairs need 2 or more (the summary is a spread)")
    results: dict[int, list[tuple[float, float]]] = {0: [], options.shift: []}
    for run in range(options.runs):
        for shift in results:  # interleaved, so both conditions see the same hours
            mean, se = one_run(shift, options.pairs, options.window)
            results[shift].append((mean, se))
            print(
                f"run {run + 1:2d} shift {shift:8d}: x{math.exp(mean):.3f} se {se:.3f}", flush=True
            )
    bound = math.log(1.08)
    for shift, rows in results.items():
        logs = [mean for mean, _ in rows]
        print(
            f"shift {shift:8d}: {len(rows)} runs, sd of the run log ratio "
            f"{statistics.stdev(logs):.3f}, outside x0.92-x1.08: "
            f"{sum(abs(x) > bound for x in logs)}, |log ratio|/se > 2.5: "
            f"{sum(abs(m) / s > 2.5 for m, s in rows)}, median se "
            f"{statistics.median(s for _, s in rows):.3f}"
        )


if __name__ == "__main__":
    main()
