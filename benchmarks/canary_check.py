"""Host canary on this machine: what a reading costs, its floor, and how often it says "disturbed".

Two phases of ``--seconds`` each, one after the other in one process: *quiet* (nothing of ours
running beside it) and *neighbour* (a bursty neighbour process on the other core: 0.2-1.5 s
bursts of a numpy stream, a 2-thread GEMM or a Python loop, with 0.1-1 s idle gaps, seeded).
Each phase is a simulated session: :meth:`Canary.start`, then back-to-back "tests" in canary
windows, each test timing its workload for ``--test-s`` (alternating an ``np.sin`` test, a
pure-Python test and a 2-thread 128² GEMM test), then :meth:`Canary.finish`. Printed per phase:

- the canary's reading cost (ms) and its share of the session (the budget is 5%);
- its start floor per kind and the spread it saw over the session;
- how many windows were quiet / disturbed / unread, and per test workload the median slowdown
  (window median / the workload's median in the quiet phase) in quiet and in disturbed windows:
  the canary is useful when disturbed windows are the slow ones.

Host evidence (CPU share, steal, other processes' CPU share) is read around each test too.
Not run by CI.

    python benchmarks/canary_check.py [--seconds 30] [--test-s 0.15] [--blas-threads N]
                                      [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_roofline.measure.blas import (
    apply_blas_threads,
    blas_pools,
    check_blas_oversubscription,
)
from pytest_roofline.measure.canary import KINDS, Canary, default_kernels
from pytest_roofline.measure.host import HostProbe

NEIGHBOUR = r"""
import sys, time
import numpy as np
rng = np.random.default_rng(int(sys.argv[1]))
a = np.ones(4 * 2**20); b = np.ones(4 * 2**20)       # 32 MiB each: a DRAM stream
x = np.ones((256, 256)); y = np.ones((256, 256))      # 2-thread GEMM (OpenBLAS default)
def stream(): np.copyto(a, b); np.add(a, b, out=a)
def gemm(): x @ y
def loop():
    s = 0
    for i in range(20000): s += i
bursts = (stream, gemm, loop)
while True:
    work = bursts[rng.integers(3)]
    end = time.perf_counter() + rng.uniform(0.2, 1.5)
    while time.perf_counter() < end:
        work()
    time.sleep(rng.uniform(0.1, 1.0))
"""


def _workloads() -> dict[str, Callable[[], object]]:
    v = np.linspace(0.0, 1.0, 20_000)
    g1, g2 = np.full((128, 128), 0.5), np.full((128, 128), 0.25)

    def sin() -> object:
        return np.sin(v)

    def pyloop() -> object:
        total = 0
        for i in range(2000):
            total += i * i
        return total

    def gemm2() -> object:
        return g1 @ g2

    return {"np.sin": sin, "pyloop": pyloop, "gemm128": gemm2}


def _time_test(fn: Callable[[], object], seconds: float) -> float:
    """Median seconds per call over ``seconds`` of calls (the "test")."""
    fn()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e9


def _phase(seconds: float, test_s: float) -> dict[str, Any]:
    canary = Canary(default_kernels(blas_threads=_blas_threads()))
    probe = HostProbe()
    level = canary.start()
    workloads = _workloads()
    names = list(workloads)
    windows: list[dict[str, Any]] = []
    end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < end:
        name = names[i % len(names)]
        window = canary.open_window(f"{name}#{i}")
        with probe.around() as host:
            median_s = _time_test(workloads[name], test_s)
        judgement = canary.close_window(window)
        assert host.evidence is not None
        windows.append(
            {
                "test": name,
                "median_s": median_s,
                "state": judgement.state,
                "ratios": judgement.ratios,
                "ratios_after": dict(judgement.ratios_after),
                "disturbed_kinds": list(judgement.disturbed_kinds),
                "host": host.evidence.to_dict(),
            }
        )
        i += 1
    summary = canary.finish()
    # Reading costs: every between-test reading's cost is not kept in the summary; re-read a
    # few times now for the cost figure (same kernels, same host state as the phase's end).
    costs = [canary.read().cost_s for _ in range(20)]
    return {
        "start": level.to_dict(),
        "summary": summary.to_dict(),
        "windows": windows,
        "reading_cost_s": costs,
    }


def _busiest() -> str:
    """The busiest processes now (what else was running), from ps."""
    try:
        done = subprocess.run(
            ["ps", "-eo", "pcpu,etime,args", "--sort=-pcpu"],
            capture_output=True,
            text=True,
            check=False,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return "ps not available"
    lines = [line[:110] for line in done.stdout.splitlines()[:5]]
    return "busiest processes:\n  " + "\n  ".join(lines)


def _blas_threads() -> int | None:
    pools = blas_pools()
    return pools[0].threads if pools else None


def _q(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) if values else math.nan


def _print_phase(name: str, result: dict[str, Any], reference: dict[str, float]) -> None:
    summary = result["summary"]
    cost = summary["cost"]
    counts = summary["state_counts"]
    n = sum(counts.values())
    costs_ms = [c * 1e3 for c in result["reading_cost_s"]]
    print(f"\n## {name}: {n} test windows")
    print(
        f"reading cost: median {statistics.median(costs_ms):.2f} ms, p90 {_q(costs_ms, 0.9):.2f} ms "
        f"(20 readings at the end); between-test readings {cost['readings']}, skipped "
        f"{cost['skipped']}, canary share of the run {cost['share']:.2%}; start+end "
        f"{cost['fixed_s'] * 1e3:.0f} ms"
    )
    print(
        "| kind | start level (ms) | session level (ms) | start floor | session floor | session spread (log sd) |"
    )
    print("|---|---|---|---|---|---|")
    start, session = summary["start"], summary["session"]
    for kind in KINDS:
        print(
            f"| {kind} | {start['levels_s'][kind] * 1e3:.3f} | {session['levels_s'][kind] * 1e3:.3f} "
            f"| x{start['floors'][kind]:.2f} | x{session['floors'][kind]:.2f} | {session['spread'][kind]:.3f} |"
        )
    end = summary.get("end")
    if end:
        ratios = ", ".join(f"{k} x{end['levels_s'][k] / session['levels_s'][k]:.2f}" for k in KINDS)
        print(f"end level / session level: {ratios}")
    single = sum(1 for w in result["windows"] if set(w["disturbed_kinds"]) & {"python", "stream"})
    print(
        f"windows: quiet {counts['quiet']} ({counts['quiet'] / n:.0%}), disturbed "
        f"{counts['disturbed']} ({counts['disturbed'] / n:.0%}), unread {counts['unread']}; "
        f"disturbed on python/stream (what a single-threaded test would count): {single} "
        f"({single / n:.0%})"
    )
    kinds_hit: dict[str, int] = {}
    for w in result["windows"]:
        for k in w["disturbed_kinds"]:
            kinds_hit[k] = kinds_hit.get(k, 0) + 1
    print(f"disturbed windows by kind: {kinds_hit or 'none'}")
    print(
        "| test | windows | slowdown, quiet windows (median, p90) | slowdown, disturbed windows (median, p90) | share of >1.3x windows flagged |"
    )
    print("|---|---|---|---|---|")
    for test in reference:
        rows = [w for w in result["windows"] if w["test"] == test]
        quiet = [w["median_s"] / reference[test] for w in rows if w["state"] == "quiet"]
        dist = [w["median_s"] / reference[test] for w in rows if w["state"] == "disturbed"]
        slow = [w for w in rows if w["median_s"] / reference[test] > 1.3]
        flagged = sum(1 for w in slow if w["state"] == "disturbed")
        hit = f"{flagged}/{len(slow)}" if slow else "no slow windows"
        print(
            f"| {test} | {len(rows)} | {statistics.median(quiet) if quiet else math.nan:.2f}, "
            f"{_q(quiet, 0.9):.2f} | {statistics.median(dist) if dist else math.nan:.2f}, "
            f"{_q(dist, 0.9):.2f} | {hit} |"
        )
    # How well the canary tracks each test: correlation of the test's log window median with
    # the log ratio of the matching canary kind in the reading just after the test (the
    # prototype's figure: +0.72 quiet, +0.81 neighbour for np.sin against the Python loop).
    matches = {"np.sin": "python", "pyloop": "python", "gemm128": "gemm"}
    cells = []
    for test, kind in matches.items():
        pairs = [
            (math.log(w["median_s"]), math.log(w["ratios_after"][kind]))
            for w in result["windows"]
            if w["test"] == test and kind in w["ratios_after"]
        ]
        if len(pairs) >= 5:
            x, y = np.array(pairs).T
            r = float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else math.nan
            cells.append(f"{test} vs {kind} canary r = {r:+.2f} (n = {len(pairs)})")
    print("tracking: " + ("; ".join(cells) or "too few windows with an after-reading"))
    # Host evidence against the test's own slowdown: does preemption explain slow windows?
    cells = []
    for test in reference:
        rows = [w for w in result["windows"] if w["test"] == test]
        slow = np.log([w["median_s"] / reference[test] for w in rows])
        for key in ("cpu_share", "involuntary_switches"):
            values = np.array([w["host"][key] for w in rows], dtype=float)
            if len(rows) >= 5 and slow.std() > 0 and np.nanstd(values) > 0:
                r = float(np.corrcoef(slow, values)[0, 1])
                cells.append(f"{test} vs {key} r = {r:+.2f}")
    print("host evidence vs slowdown: " + "; ".join(cells))
    hosts = [w["host"] for w in result["windows"]]

    def med(key: str) -> str:
        values = [h[key] for h in hosts if h[key] is not None]
        return f"{statistics.median(values):.2f}" if values else "n/a"

    print(
        f"host evidence (median per window): cpu_share {med('cpu_share')}, involuntary "
        f"switches {med('involuntary_switches')}, steal {med('steal_share')}, other processes' "
        f"CPU share {med('other_cpu_share')}, load {med('load_1m')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="per phase")
    parser.add_argument("--test-s", type=float, default=0.15, help="per simulated test")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, help="write every window here")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="limit BLAS threads (as --roofline-blas-threads)",
    )
    args = parser.parse_args(argv)
    if args.blas_threads is not None:
        applied = apply_blas_threads(args.blas_threads)
        print(f"BLAS threads limited to {args.blas_threads}: revision tag {applied.tag}")

    print(f"# canary check, pid {os.getpid()}, load average {os.getloadavg()}")
    print(_busiest())
    print(f"BLAS: {[p.to_dict() for p in blas_pools()]}")
    print(f"oversubscription check: {check_blas_oversubscription()}")
    quiet = _phase(args.seconds, args.test_s)
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(args.seed)])
    try:
        time.sleep(0.5)
        print(f"neighbour started (pid {neighbour.pid}), load average {os.getloadavg()}")
        print(f"oversubscription check: {check_blas_oversubscription()}")
        noisy = _phase(args.seconds, args.test_s)
    finally:
        neighbour.kill()
        neighbour.wait()
    # Each workload's reference time: its median window in the quiet phase.
    reference = {
        test: statistics.median(w["median_s"] for w in quiet["windows"] if w["test"] == test)
        for test in _workloads()
    }
    _print_phase("quiet (no neighbour of ours)", quiet, reference)
    _print_phase("bursty neighbour on the other core", noisy, reference)
    print(f"\nload average at the end {os.getloadavg()}")
    print(_busiest())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"quiet": quiet, "neighbour": noisy}, handle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
