"""Does one CPU of this machine run slower than another? A paired check of per-CPU speed.

One process moves itself between two CPUs (``os.sched_setaffinity``) in 0.2 s windows, in ABBA
order, timing ``np.add`` over 200 000 float64 in each, and reports the CPU-b / CPU-a ratio of
the window medians (geometric mean over the window pairs, its spread and standard error). On a
VM each vCPU is a thread on some physical core that other tenants may share, so the answer can
change from minute to minute; run it a few times. Linux only.

Usage: python benchmarks/vcpu_bias.py [--cpus 0,1] [--pairs 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np


def median_add_s(a: np.ndarray, b: np.ndarray, out: np.ndarray, seconds: float) -> float:
    """Median seconds of ``np.add(a, b, out=out)`` timed back to back for ``seconds``."""
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        np.add(a, b, out=out)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def window(cpu: int, a: np.ndarray, b: np.ndarray, out: np.ndarray, seconds: float) -> float:
    os.sched_setaffinity(0, {cpu})
    time.sleep(0.002)  # let the migration happen before timing
    return median_add_s(a, b, out, seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpus", default="0,1")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    first, second = (int(c) for c in options.cpus.split(","))
    n = 200_000
    a, b, out = np.ones(n), np.ones(n), np.empty(n)
    for _ in range(options.repeat):
        logs = []
        for i in range(options.pairs):
            order = (first, second) if i % 2 == 0 else (second, first)
            medians = {cpu: window(cpu, a, b, out, 0.2) for cpu in order}
            logs.append(math.log(medians[second] / medians[first]))
        r = np.array(logs)
        sd = float(r.std(ddof=1))
        print(
            f"cpu{second}/cpu{first} p50: x{math.exp(r.mean()):.3f}  sd {sd:.3f}  "
            f"se {sd / math.sqrt(r.size):.3f}  range x{math.exp(r.min()):.2f}-x{math.exp(r.max()):.2f}"
        )


if __name__ == "__main__":
    main()
