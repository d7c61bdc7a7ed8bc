"""Which CPU runs each of ``ab``'s worker processes while it measures (Linux).

``ab`` compares a baseline and a candidate worker process window by window; the three pairs of
workers are meant to break any bias one process carries for its whole life. Where a process
runs is such a bias when the CPUs differ in speed (on a VM, when another tenant takes one vCPU's
physical core): the scheduler tends to wake a sleeping process on the CPU it last ran on, so a
worker can stay on one CPU for a whole run. This script runs A/A windows of the validation
fixture (``paired_validation.py``'s ten tests, three worker pairs, ``--pairs`` window pairs of
62.5 ms per test) and samples every worker's main thread from ``/proc/PID/stat`` every 2 ms,
counting, per worker, the samples it was running on each CPU. Window pairs are held on one CPU
in turn as ``ab`` holds them by default (``--pin-cpus``); ``--no-pin-cpus`` leaves them to the
scheduler, as before stop 33.

Usage: python benchmarks/worker_cpus.py [--pairs 8] [--runs 1] [--no-pin-cpus]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_validation import fixture_workers, make_project

from pytest_roofline.ab.workers import PairedWorkers, WindowSettings

# /proc/PID/stat after the command's closing parenthesis: field 3 (state) is index 0, field 39
# (the CPU it last ran on) index 36.
STATE, PROCESSOR = 0, 36


def running_cpu(pid: int) -> int | None:
    """The CPU ``pid``'s main thread is running on now, or ``None`` when it is not running."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[PROCESSOR]) if fields[STATE] == "R" else None


def one_run(
    trees: tuple[Path, Path], root: Path, pairs: int, pin_cpus: bool
) -> Counter[tuple[str, int, int]]:
    specs = fixture_workers(root, *trees)
    settings = WindowSettings(
        window_s=0.0625, min_pairs=pairs, max_pairs=pairs, worker_pairs=3, pin_cpus=pin_cpus
    )
    seen: Counter[tuple[str, int, int]] = Counter()
    done = threading.Event()
    with PairedWorkers(*specs, settings) as workers:
        pids = {(side, n): w.pid for n in range(3) for side, w in workers._pairs[n].items()}

        def sample() -> None:
            while not done.is_set():
                for (side, n), pid in pids.items():
                    cpu = running_cpu(pid) if pid is not None else None
                    if cpu is not None:
                        seen[(side, n, cpu)] += 1
                time.sleep(0.002)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        workers.run()
        done.set()
        sampler.join()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--pin-cpus", action=argparse.BooleanOptionalAction, default=True)
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="worker-cpus-"))
    repo, base = make_project(root, [])
    for run in range(options.runs):
        seen = one_run((base, repo), root, options.pairs, options.pin_cpus)
        cpus = sorted({cpu for _, _, cpu in seen})
        print(f"run {run + 1}: samples of each worker running, per CPU")
        for side in ("baseline", "candidate"):
            for n in range(3):
                counts = [seen[(side, n, cpu)] for cpu in cpus]
                shares = ", ".join(
                    f"cpu{cpu} {count} ({count / max(1, sum(counts)):.0%})"
                    for cpu, count in zip(cpus, counts, strict=True)
                )
                print(f"  {side} worker {n + 1}: {shares}")


if __name__ == "__main__":
    main()
