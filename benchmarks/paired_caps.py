"""Paired mode's pair cap, side by side on the same windows: A/A escalation and pairs used.

Runs ``pytest-roofline ab`` A/A on ``paired_validation.py``'s fixture project (10 tests; the
candidate commit changes a comment) ``--runs`` times with every test measured to the largest
cap (``--caps``' last, 62.5 ms windows: ``--budget`` = cap x ``--window``), and keeps each run's
store. Then, for every cap, it replays ``ab``'s own stop rule and final decision
(``ab.analysis.AssessedStop``, ``ab_plan``, ``paired_look_detail``, worker agreement) on the
first pairs of the same kept windows: the looks at 4, 6, 8, ... pairs stop a test at its first
decided look, and one still UNKNOWN at the cap escalates. A run to a cap of ``K`` would have
measured exactly those windows (the same order, the same workers), so the caps compare side
by side, free of the hour-to-hour noise that separate runs carry (``docs/paired.md``).

What it cannot replay: the wall time (it prints the mean pairs a test used, which the wall
time of a run follows), and which worker pair ran a window once pairs were dropped for a
disturbed host (the kept pairs' worker is taken as ``index % worker_pairs``; it matters only
for a DIFFERENT's agreement).

With ``--trims 0.2,0.3`` it replays each cap once per share of window pairs trimmed from each
end of the per-pair log ratios (``ab``'s trimmed mean, ``stats.paired.DEFAULT_TRIM``), again on
the same windows.

Usage: python benchmarks/paired_caps.py [--caps 24,32,48] [--runs 10] [--window 0.0625]
[--stores DIR] [--replay-only] [--trims 0.2,0.3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_validation import QUIET, git, make_project, wilson

from pytest_roofline.ab.analysis import AssessedStop, ab_plan, agreement, load_paired, paired_margin
from pytest_roofline.ab.command import ab_windows
from pytest_roofline.config.settings import AbSettings, GateSettings
from pytest_roofline.gate.evidence import GATED_QUANTILES
from pytest_roofline.gate.paired_looks import look_sizes, paired_look_detail
from pytest_roofline.stats import paired
from pytest_roofline.store import Store

# ``ab`` with its fewest pairs raised to the largest cap: every test runs to it.
_DRIVER = (
    "import sys, pytest_roofline.ab.command as c; c.MIN_PAIRS = int(sys.argv.pop(1)); "
    "from pytest_roofline.cli import main; sys.exit(main())"
)


def measure(stores: Path, runs: int, cap: int, window: float) -> None:
    """``runs`` A/A ``ab`` runs of the fixture, every test to ``cap`` pairs, one store each."""
    root = Path(tempfile.mkdtemp(prefix="paired-caps-"))
    repo, _ = make_project(root, ["none"])
    git(repo, "checkout", "-q", "cand-none")
    for run in range(runs):
        command = [
            sys.executable, "-c", _DRIVER, str(cap), "ab", "--baseline=base",
            f"--rounds={cap}", f"--budget={cap * window:g}", "--gate=never",
            f"--store={stores / f'ab{run}.sqlite'}", f"--json={stores / f'ab{run}.json'}",
            "--", "-p", "no:benchmark", *QUIET,
        ]  # fmt: skip
        began = time.perf_counter()
        done = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)
        print(f"run {run + 1}: exit {done.returncode}, {time.perf_counter() - began:.0f} s")
        if done.returncode not in (0, 1):
            print(done.stdout[-2000:], done.stderr[-2000:])


def decide(
    base: list[np.ndarray], cand: list[np.ndarray], cap: int, tests: int, gate: GateSettings
) -> tuple[str, int, str]:
    """``ab``'s decision of one test at ``cap`` pairs: (decision, pairs used, open quantiles).

    The stored pairs are the kept ones and their drops are not replayed: the stop rule looks as
    on a host the canary left quiet (``dropped`` 0), so it never holds a regression to the
    process floor here."""
    margins = {name: paired_margin(gate, name) for name in GATED_QUANTILES}
    worker_pairs = AbSettings().worker_pairs
    plan = ab_plan(gate, ab_windows(cap, cap * 0.0625, worker_pairs), tests)
    stop = AssessedStop(margins, plan, alpha=gate.alpha, worker_pairs=worker_pairs)
    used, decided = cap, False
    for pairs in look_sizes(4, cap, 2)[:-1]:
        if not stop("", base[:pairs], cand[:pairs], [i % worker_pairs for i in range(pairs)]):
            used, decided = pairs, True
            break
    b, c = base[:used], cand[:used]
    asked = stop.assessed(b, c)
    look = paired_look_detail(b, c, asked, plan, alpha=gate.alpha, final=not decided)
    outcomes = {name: found.comparison.outcome for name, found in look.items()}
    open_ = ",".join(f"{name} {o}" for name, o in outcomes.items() if o != "same")
    if "different" in outcomes.values():
        groups = [i % worker_pairs for i in range(used)]
        confirmed = agreement(
            look,
            groups,
            worker_pairs,
            asked,
            plan=plan,
            final=not decided,
        ).confirmed
        return ("rollback" if confirmed else "escalate"), used, open_
    return ("ship" if not open_ else "escalate"), used, open_


def use_trim(trim: float) -> None:
    """Make ``trim`` the share every paired comparison trims: the keyword defaults of the two
    functions ``ab``'s looks call (a replay harness; ``ab`` itself has no such setting)."""
    for function in (paired.compare_paired, paired.cluster_design_effect):
        assert function.__kwdefaults__ is not None
        function.__kwdefaults__["trim"] = trim


def replay(stores: Path, caps: list[int], label: str = "") -> list[str]:
    """Every cap's decisions over the stored runs' tests, with Wilson intervals; returns the
    decisions at the largest cap, test-run by test-run."""
    gate = GateSettings()
    tally = {cap: Counter[str]() for cap in caps}
    used: dict[int, list[int]] = {cap: [] for cap in caps}
    last: list[str] = []
    why = {cap: Counter[str]() for cap in caps}
    for path in sorted(stores.glob("ab*.sqlite")):
        with Store.open(path, create=False) as store:
            runs = [load_paired(store, run_id) for run_id in store.run_ids()]
        for tests in runs:
            for nodeid, found in tests.items():
                base, cand = list(found.baseline), list(found.candidate)
                for cap in caps:
                    if min(len(base), len(cand)) < cap:
                        continue
                    decision, pairs, open_ = decide(base, cand, cap, len(tests), gate)
                    tally[cap][decision] += 1
                    used[cap].append(pairs)
                    if cap == caps[-1]:
                        last.append(decision)
                    if decision != "ship":
                        why[cap][f"{nodeid.rpartition('::')[2]}: {open_}"] += 1
    if label:
        print(f"\n{label}")
    print("| cap (pairs) | A/A test-trials | escalated (95% CI) | rolled back | mean pairs used |")
    print("|---|---|---|---|---|")
    for cap in caps:
        n = sum(tally[cap].values())
        if not n:
            continue
        escalated = tally[cap]["escalate"]
        print(
            f"| {cap} | {n} | {escalated} ({escalated / n:.1%}, {wilson(escalated, n)}) | "
            f"{tally[cap]['rollback']} | "
            f"{statistics.fmean(used[cap]):.1f} |"
        )
    for cap in caps:
        print(f"cap {cap} non-ship: " + "; ".join(f"{k} x{v}" for k, v in why[cap].most_common()))
    return last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--caps", default="24,32,48", help="pair caps to compare, ascending")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--window", type=float, default=0.0625, help="seconds per window")
    parser.add_argument("--stores", type=Path, help="where the runs' stores go (or are)")
    parser.add_argument("--replay-only", action="store_true", help="replay --stores as they are")
    parser.add_argument("--trims", default="", help="replay at each trimmed share, e.g. 0.2,0.3")
    options = parser.parse_args()
    caps = sorted(int(c) for c in options.caps.split(","))
    stores = options.stores or Path(tempfile.mkdtemp(prefix="paired-caps-stores-"))
    stores.mkdir(parents=True, exist_ok=True)
    if not options.replay_only:
        measure(stores, options.runs, caps[-1], options.window)
    if not options.trims:
        replay(stores, caps)
    first: tuple[float, list[str]] | None = None
    for trim in (float(t) for t in options.trims.split(",") if t.strip()):
        use_trim(trim)
        decisions = replay(stores, caps, f"trim {trim:g}")
        if first is None:
            first = trim, decisions
            continue
        # Same windows, so the trims pair up test-run by test-run (McNemar's discordant pairs).
        moved = Counter(zip(first[1], decisions, strict=True))
        print(
            f"cap {caps[-1]}, trim {first[0]:g} -> {trim:g}: "
            + ", ".join(f"{a} -> {b} x{n}" for (a, b), n in sorted(moved.items()))
        )


if __name__ == "__main__":
    main()
