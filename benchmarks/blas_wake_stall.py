"""How often the first 2-thread GEMM after an idle spell stalls, and whether the next call does.

``ab``'s workers take turns: each is idle while the others measure, and its OpenBLAS thread
sleeps (``ab`` sets ``OPENBLAS_THREAD_TIMEOUT=20``, as this script does unless the environment
sets it). The host canary's GEMM reading right after a window is then the first BLAS call in a
while. This script starts ``--processes`` processes that take turns as ``ab``'s workers do:
each in its turn times one 192x192 fp64 GEMM (the canary's), a second one, then a pure-Python
"window" of ``--window`` seconds, optionally held on one CPU as ``ab --pin-cpus`` holds it.
It prints, over ``--turns`` turns, the median of each call and how many took over 5 ms (the
canary's whole GEMM share of a reading is 6.7 ms), and the stalled first calls' times.

Usage: python benchmarks/blas_wake_stall.py [--processes 6] [--turns 300] [--window 0.0625] [--pin]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from multiprocessing.connection import Connection

import numpy as np

GEMM_N = 192  # pytest_roofline.measure.canary.GEMM_N
SLOW_S = 0.005


def worker(conn: Connection, pin: bool) -> None:
    x = np.full((GEMM_N, GEMM_N), 0.5)
    y = np.full((GEMM_N, GEMM_N), 0.25)
    z = np.empty((GEMM_N, GEMM_N))
    np.matmul(x, y, out=z)
    every = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    while (command := conn.recv()) is not None:
        window_s, cpu = command
        if pin and cpu in every:
            os.sched_setaffinity(0, {cpu})
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            np.matmul(x, y, out=z)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < window_s:
            sum(range(1000))
        if pin and cpu in every:
            os.sched_setaffinity(0, every)
        conn.send(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=6, help="ab's default: 3 worker pairs")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=float, default=0.0625)
    parser.add_argument("--pin", action="store_true", help="hold each turn on one CPU")
    options = parser.parse_args()
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")
    mp.set_start_method("spawn")
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    pipes, procs = [], []
    for _ in range(options.processes):
        ours, theirs = mp.Pipe()
        proc = mp.Process(target=worker, args=(theirs, options.pin))
        proc.start()
        pipes.append(ours)
        procs.append(proc)
    rows = []
    for turn in range(options.turns):
        conn = pipes[turn % options.processes]
        conn.send((options.window, cpus[(turn // (2 * options.processes)) % len(cpus)]))
        rows.append(conn.recv())
    for conn in pipes:
        conn.send(None)
    for proc in procs:
        proc.join()
    times = np.array(rows) * 1e3
    print(
        f"{options.processes} processes, {options.turns} turns of {options.window:g} s"
        f"{', held on one CPU' if options.pin else ''}, "
        f"OPENBLAS_THREAD_TIMEOUT={os.environ['OPENBLAS_THREAD_TIMEOUT']}"
    )
    for index, name in enumerate(("first GEMM after the idle spell", "the next GEMM")):
        column = times[:, index]
        print(
            f"  {name}: median {np.median(column):.2f} ms, "
            f"over {SLOW_S * 1e3:.0f} ms in {(column > SLOW_S * 1e3).sum()} of {len(column)}"
        )
    stalled = times[times[:, 0] > SLOW_S * 1e3]
    if len(stalled):
        print(
            "  stalled first calls (ms): "
            + ", ".join(f"{v:.1f}" for v in sorted(stalled[:, 0]))
            + f"; their next calls: median {np.median(stalled[:, 1]):.2f} ms"
        )


if __name__ == "__main__":
    main()
