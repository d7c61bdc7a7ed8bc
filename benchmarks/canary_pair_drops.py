"""Which window pairs the host canary should drop: each pair's readings and ratios, in A/A ``ab`` runs.

Records, in A/A runs of ``pytest-roofline ab`` on ``paired_validation.py``'s fixture (10
tests, ``--rounds=8 --budget=1``), every window's canary judgement (state, the kinds past their
floor, the readings before and after as ratios to the level, the floors) and its sample
quantiles, one JSON line per window. The ``ab`` JSON keeps only counts, so the windows are read
from :meth:`PairedWorkers.measure_test` as the controller receives them.

Then, for each drop rule (nothing dropped; a reading past one floor, two or three floors in log
units), it prints how many pairs the rule drops, how tight the kept pairs' A/A log ratios are
(robust sd and 95th percentile of their distance from the test's median ratio in that run: the
median takes out the worker pair's own bias) and, replaying each test's pairs in order (8 kept
of at most 12 run, at least 4), how often the final 90% interval of p50 and p95 lies inside
±5% (SAME), reaches past 1 (a regression signal on unchanged code), or neither, and how many
pairs the test ran. The rule in force is ``pytest_roofline.ab.pairs.DROP_FLOORS``; the runs
record judgements whatever the rule, so one recording serves every rule.

Usage::

    python benchmarks/canary_pair_drops.py --runs 5 --raw quiet.jsonl
    python benchmarks/canary_pair_drops.py --runs 5 --neighbour --raw busy.jsonl
    python benchmarks/canary_pair_drops.py --summarise quiet.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_validation import QUIET, git, make_project

import pytest_roofline.ab.workers as workers
from pytest_roofline.cli import main as cli_main
from pytest_roofline.stats.paired import trimmed_mean_interval

KINDS = ("python", "stream", "gemm")
Pair = dict[str, dict[str, Any]]


def record(runs: int, raw: Path, neighbour: bool) -> None:
    rows: list[dict[str, Any]] = []
    run_index = {"n": 0}
    measure = workers.PairedWorkers.measure_test

    def measured(self: workers.PairedWorkers, nodeid: str, *args: Any, **kwargs: Any) -> Any:
        test = measure(self, nodeid, *args, **kwargs)
        for w in test.windows:
            c = w.canary
            rows.append({
                "run": run_index["n"], "nodeid": nodeid, "side": w.side, "pair": w.pair,
                "n": int(w.samples_s.size),
                "q": [float(np.quantile(w.samples_s, q)) for q in (0.5, 0.95, 0.99)]
                if w.samples_s.size else None,
                "state": c.state if c else None, "kinds": list(c.disturbed_kinds) if c else [],
                "before": dict(c.ratios_before) if c else {},
                "after": dict(c.ratios_after) if c else {}, "floors": dict(c.floors) if c else {},
                "cpu_share": w.cpu_share,
            })  # fmt: skip
        return test

    workers.PairedWorkers.measure_test = measured  # type: ignore[method-assign]
    root = Path(tempfile.mkdtemp(prefix="canary-drops-"))
    repo, _ = make_project(root, ["none"])
    git(repo, "checkout", "-q", "cand-none")
    os.chdir(repo)
    busy = None
    if neighbour:
        script = Path(__file__).resolve().parent / "neighbour.py"
        busy = subprocess.Popen([sys.executable, str(script), "--seed", "5"])
    try:
        for run in range(runs):
            run_index["n"] = run
            started = time.perf_counter()
            with contextlib.suppress(SystemExit):  # the exit status is the decision's
                cli_main([
                    "ab", "--baseline=base", "--rounds=8", "--budget=1",
                    f"--store={root / 'ab.sqlite'}", f"--json={root / 'ab.json'}", "--gate=never",
                    "--", "-p", "no:benchmark", *QUIET,
                ])  # fmt: skip
            print(f"run {run + 1}: {time.perf_counter() - started:.1f} s", flush=True)
            raw.write_text("".join(json.dumps(r) + "\n" for r in rows))
    finally:
        if busy is not None:
            busy.terminate()
            busy.wait()


def severity(window: dict[str, Any], floors: float) -> float | None:
    """The worst kind's reading, in floors (log units), when past ``floors`` of them."""
    worst = None
    for kind in KINDS:
        floor = window["floors"].get(kind)
        if not floor or floor <= 1.0:
            continue
        reading = max(window["before"].get(kind, 0.0), window["after"].get(kind, 0.0))
        if reading > 0 and math.log(reading) / math.log(floor) > floors:
            worst = max(worst or 0.0, math.log(reading) / math.log(floor))
    return worst


def rule(floors: float | None) -> Callable[[Pair], bool]:
    def dropped(pair: Pair) -> bool:
        return floors is not None and any(severity(w, floors) for w in pair.values())

    return dropped


def log_ratio(pair: Pair, q: int) -> float | None:
    base, cand = pair["baseline"], pair["candidate"]
    if q > 0 and min(base["n"], cand["n"]) < 20:
        return None  # a window's p95 needs 20 samples
    return math.log(cand["q"][q] / base["q"][q])


def robust_sd(x: Sequence[float]) -> float:
    a = np.asarray(x)
    return float(1.4826 * np.median(np.abs(a - np.median(a))))


def replay(pairs: list[Pair], dropped: Callable[[Pair], bool]) -> tuple[str, int]:
    """One test of one run, its pairs in order as ``ab`` would take them: its outcome, pairs run."""
    run: list[tuple[Pair, bool]] = []
    for pair in pairs:
        run.append((pair, dropped(pair)))
        if sum(1 for _, d in run if not d) >= 8:
            break
    flagged = [i for i, (_, d) in enumerate(run) if d][: max(0, len(run) - 4)]
    kept = [p for i, (p, _) in enumerate(run) if i not in flagged]
    outcomes = []
    for q in (0, 1):
        ratios = [r for r in (log_ratio(p, q) for p in kept) if r is not None]
        if len(ratios) < 4:
            continue
        mean, se, df = trimmed_mean_interval(ratios)
        t = float(stats.t.ppf(0.95, df))
        low, high = mean - t * se, mean + t * se
        outcomes.append("past 1" if low > 0 else "same" if high < math.log(1.05) else "unknown")
    if "past 1" in outcomes:
        return "past 1", len(run)
    return ("same" if outcomes and all(o == "same" for o in outcomes) else "unknown"), len(run)


def summarise(files: Sequence[Path]) -> None:
    pairs: dict[tuple[str, int, str, int], Pair] = defaultdict(dict)
    for file in files:
        for line in file.read_text().splitlines():
            w = json.loads(line)
            if w["q"]:
                pairs[(str(file), w["run"], w["nodeid"], w["pair"])][w["side"]] = w
    complete = {k: p for k, p in pairs.items() if len(p) == 2}
    tests: dict[tuple[str, int, str], list[Pair]] = defaultdict(list)
    for (file, run, nodeid, _index), pair in sorted(complete.items()):
        tests[(file, run, nodeid)].append(pair)
    distance: dict[int, dict[int, float]] = defaultdict(dict)  # id(pair) -> q -> from median
    for group in tests.values():
        for q in (0, 1):
            ratios = {id(p): r for p in group if (r := log_ratio(p, q)) is not None}
            if ratios:
                centre = float(np.median(list(ratios.values())))
                for key, r in ratios.items():
                    distance[key][q] = r - centre
    print(
        f"{len(complete)} window pairs, {len(tests)} test-runs, from {', '.join(map(str, files))}"
    )
    for name, floors in (("nothing", None), ("1 floor", 1.0), ("2 floors", 2.0), ("3 floors", 3.0)):
        dropped = rule(floors)
        kept = [p for p in complete.values() if not dropped(p)]
        line = (
            f"{name:8s} drops {len(complete) - len(kept):4d} ({1 - len(kept) / len(complete):4.0%})"
        )
        for q, label in ((0, "p50"), (1, "p95")):
            d = [distance[id(p)][q] for p in kept if q in distance[id(p)]]
            line += (
                f" | {label} kept rsd {robust_sd(d):.3f} p95|d| {np.quantile(np.abs(d), 0.95):.3f}"
            )
        replays = [replay(group, dropped) for group in tests.values()]
        share = {
            o: sum(r[0] == o for r in replays) / len(replays) for o in ("same", "unknown", "past 1")
        }
        line += (
            f" | replayed: same {share['same']:.0%} unknown {share['unknown']:.0%} "
            f"past 1 {share['past 1']:.0%}, pairs run {np.mean([r[1] for r in replays]):.1f}"
        )
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--neighbour", action="store_true", help="run neighbour.py throughout")
    parser.add_argument("--raw", type=Path, help="write one JSON line per window here")
    parser.add_argument("--summarise", type=Path, nargs="+", help="only summarise these files")
    options = parser.parse_args()
    if options.summarise:
        summarise(options.summarise)
        return
    if options.raw is None:
        parser.error("--raw is needed to record")
    record(options.runs, options.raw, options.neighbour)
    summarise([options.raw])


if __name__ == "__main__":
    main()
