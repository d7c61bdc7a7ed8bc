"""Why paired workers get ``OPENBLAS_THREAD_TIMEOUT=20``: an idle worker's BLAS threads spin.

Two processes alternate 0.2 s windows of a 160x160 float64 ``np.matmul`` (OpenBLAS's own
threads, as ``pytest-roofline ab``'s two workers do) for 30 window pairs; per window the p50 and
p99 of the calls. Then one process alone times back-to-back calls for 1 s (what a window of one
test does), to show the setting does not slow calls that follow each other. Each setting runs
``--repeats`` times, the settings interleaved. Run it with nothing else on the machine.

Usage: python benchmarks/blas_idle_spin.py [--repeats 3] [--settings default,20]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from multiprocessing.connection import Connection

import numpy as np

N = 160
WINDOW_S = 0.2
PAIRS = 30


def _worker(conn: Connection) -> None:
    a = np.ones((N, N))
    for _ in range(20):
        np.matmul(a, a)
    while (seconds := conn.recv()) is not None:
        end = time.perf_counter() + seconds
        times = []
        while time.perf_counter() < end:
            start = time.perf_counter()
            np.matmul(a, a)
            times.append(time.perf_counter() - start)
        conn.send((float(np.median(times)), float(np.quantile(times, 0.99))))


def alternate() -> None:
    """Two workers, ABBA windows; prints the median window p50 and p99 and the slow windows."""
    multiprocessing.set_start_method("spawn")
    pipes, procs = [], []
    for _ in range(2):
        here, there = multiprocessing.Pipe()
        proc = multiprocessing.Process(target=_worker, args=(there,))
        proc.start()
        pipes.append(here)
        procs.append(proc)
    windows = []
    for pair in range(PAIRS):
        for side in (0, 1) if pair % 2 == 0 else (1, 0):
            pipes[side].send(WINDOW_S)
            windows.append(pipes[side].recv())
    for here, proc in zip(pipes, procs, strict=True):
        here.send(None)
        proc.join()
    p50 = statistics.median(w[0] for w in windows)
    p99 = [w[1] for w in windows]
    slow = sum(q > 3 * p50 for q in p99)
    print(
        f"alternating: window p50 {p50 * 1e6:.0f} us, window p99 median "
        f"{statistics.median(p99) * 1e6:.0f} us (range {min(p99) * 1e6:.0f}-"
        f"{max(p99) * 1e6:.0f}), windows with p99 > 3x p50: {slow}/{len(windows)}"
    )


def alone() -> None:
    """One process, back-to-back calls for 1 s: p50 and p99."""
    a = np.ones((N, N))
    for _ in range(50):
        np.matmul(a, a)
    times = []
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:
        start = time.perf_counter()
        np.matmul(a, a)
        times.append(time.perf_counter() - start)
    print(
        f"alone: p50 {np.median(times) * 1e6:.0f} us, p99 {np.quantile(times, 0.99) * 1e6:.0f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--settings", default="default,20")
    parser.add_argument("--mode", choices=("alternate", "alone"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.mode:
        alternate() if options.mode == "alternate" else alone()
        return
    for repeat in range(options.repeats):
        for setting in options.settings.split(","):
            env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
            if setting != "default":
                env["OPENBLAS_THREAD_TIMEOUT"] = setting
            for mode in ("alternate", "alone"):
                done = subprocess.run(
                    [sys.executable, __file__, "--mode", mode],
                    env=env, capture_output=True, text=True, check=True,
                )  # fmt: skip
                print(f"[{repeat + 1}] OPENBLAS_THREAD_TIMEOUT={setting}: {done.stdout.strip()}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
