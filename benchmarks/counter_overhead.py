"""What the counters cost: per measured region and per sample, side by side in one run.

The sampler wraps a test's whole sampling loop in one counter region, so counters cost
something once per test (``start()`` + ``stop()``) and, by design, nothing per sample. This
measures both:

* per region: ``CounterSession.start()`` + ``stop()`` for each backend alone and for all of
  ``default_backends()`` together (median and p95 over many repetitions);
* per sample: a tight sampling loop (``perf_counter_ns(); fn(); perf_counter_ns()``) run with
  and without an active region, in alternating rounds so machine drift hits both alike; the
  cost is reported as the ratio of the two medians (1.00 = no cost) and the difference per
  call, next to the interquartile range of the per-round ratios (how far apart two runs of the
  same loop land on this machine: a ratio inside it is no measurable cost).

Run: ``python benchmarks/counter_overhead.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from pytest_roofline.measure.counters import (
    CounterBackend,
    CounterSession,
    NvmlBackend,
    PerfEventBackend,
    RusageBackend,
    default_backends,
    gpu_present,
)


def _quantile(xs: Sequence[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def region_cost(make: Callable[[], list[CounterBackend]], reps: int) -> tuple[float, float, str]:
    """Median and p95 of start()+stop() in microseconds, and the statuses seen."""
    session = CounterSession(make())
    status = session.probe()
    ok = sum(1 for s in status.values() if s == "ok")
    for _ in range(max(10, reps // 20)):  # warm up: imports, first-call paths
        session.start()
        session.stop()
    times: list[float] = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        session.start()
        session.stop()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    session.close()
    return statistics.median(times), _quantile(times, 0.95), f"{ok}/{len(status)} ok"


def sample_loop(fn: Callable[[], object], n: int) -> float:
    """Per-call nanoseconds of a sampler-like loop: one timed call per sample."""
    clock = time.perf_counter_ns
    samples = [0] * n
    t_start = clock()
    for i in range(n):
        t0 = clock()
        fn()
        samples[i] = clock() - t0
    return (clock() - t_start) / n


def sample_cost(
    makers: Sequence[Callable[[], list[CounterBackend]]],
    fn: Callable[[], object],
    rounds: int,
    n: int,
) -> list[tuple[float, float, float, float, float]]:
    """Per configuration: median per-call ns without and with an active region, the ratio of
    the medians, and the interquartile range of the per-round (paired) ratios as a noise gauge.

    Rounds interleave every configuration (off, then on), so load from other processes and
    frequency changes hit all of them alike instead of whichever happened to run last.
    """
    sessions = [CounterSession(make()) for make in makers]
    for session in sessions:
        session.probe()
    without: list[list[float]] = [[] for _ in sessions]
    within: list[list[float]] = [[] for _ in sessions]
    sample_loop(fn, n)  # warm up
    for _ in range(rounds):
        for i, session in enumerate(sessions):
            without[i].append(sample_loop(fn, n))
            session.start()
            within[i].append(sample_loop(fn, n))
            session.stop()
    results = []
    for session, off_times, on_times in zip(sessions, without, within, strict=True):
        session.close()
        off, on = statistics.median(off_times), statistics.median(on_times)
        paired = [b / a for a, b in zip(off_times, on_times, strict=True)]
        results.append((off, on, on / off, _quantile(paired, 0.25), _quantile(paired, 0.75)))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions (smoke run)")
    args = parser.parse_args(argv)
    reps, rounds, n = (200, 10, 2_000) if args.quick else (3_000, 200, 5_000)

    has_gpu = gpu_present()
    configs: list[tuple[str, Callable[[], list[CounterBackend]]]] = [
        ("wall only", lambda: []),
        ("rusage", lambda: [RusageBackend()]),
        ("perf", lambda: [PerfEventBackend()]),
    ]
    if has_gpu:
        configs.append(("nvml", lambda: [NvmlBackend()]))
    configs.append(("all (default_backends)", lambda: default_backends()))

    linux = sys.platform.startswith("linux")
    threads = len(os.listdir("/proc/self/task")) if linux else "?"
    print(
        f"# counter overhead — Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"threads in process: {threads}, "
        f"GPU via NVML: {'yes' if has_gpu else 'no (nvml row skipped)'}"
    )
    print(
        f"# per region: {reps} reps of start()+stop(); per sample: {rounds} alternating rounds of "
        f"{n} timed calls"
    )
    print()
    print(f"{'backends':<24} {'counters':>11} {'region median µs':>17} {'region p95 µs':>14}")
    for label, make in configs:
        median, p95, ok = region_cost(make, reps)
        print(f"{label:<24} {ok:>11} {median:>17.1f} {p95:>14.1f}")
    print()

    small = np.ones(8)
    workloads: list[tuple[str, Callable[[], object]]] = [
        ("no-op call", lambda: None),
        ("np.add on 8 floats", lambda: np.add(small, small)),
    ]
    print(
        f"{'backends':<24} {'sample fn':<20} {'ns/call off':>12} {'ns/call on':>11} "
        f"{'on/off':>7} {'Δ ns/call':>10} {'paired IQR':>13}"
    )
    measured = [(label, make) for label, make in configs if label != "wall only"]
    for name, fn in workloads:
        results = sample_cost([make for _, make in measured], fn, rounds, n)
        for (label, _), (off, on, ratio, q25, q75) in zip(measured, results, strict=True):
            print(
                f"{label:<24} {name:<20} {off:>12.1f} {on:>11.1f} {ratio:>7.3f} "
                f"{on - off:>10.1f} {q25:>6.3f}–{q75:.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
