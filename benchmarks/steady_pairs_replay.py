"""Replay the stored runs of ``pytest-roofline ab``: which regressions stand on the steady pairs.

For every test of every paired run in a store (``paired_process_bias.py`` keeps its store and
each run's JSON in its scratch directory), compares the kept window pairs at the look the run
stopped at, as ``ab`` did, and again on the steady pairs only
(:func:`pytest_roofline.gate.paired_looks.steady_look`), and prints every test-run where some quantile
was DIFFERENT, with what the steady pairs show, then the tally and how many pairs the fence
left out.

Usage: python benchmarks/steady_pairs_replay.py SCRATCH_DIR [--worker-pairs 3]
(``SCRATCH_DIR`` holds ``ab.sqlite`` and ``ab-1.json``, ``ab-2.json``, ... in run order.)
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from pytest_roofline.ab.analysis import ab_plan, load_paired, paired_margin
from pytest_roofline.ab.command import ab_windows
from pytest_roofline.config.settings import GateSettings
from pytest_roofline.gate.paired_looks import paired_look_detail, steady_look
from pytest_roofline.store import Store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--worker-pairs", type=int, default=3)
    options = parser.parse_args()
    store = Store.open(options.scratch / "ab.sqlite", create=False)
    gate = GateSettings()
    margins = {name: paired_margin(gate, name) for name in ("p50", "p95", "p99")}
    tally: Counter[str] = Counter()
    runs = sorted(store.list_runs(), key=lambda row: row[0])
    for number, (run_id, _, _) in enumerate(runs, start=1):
        document = json.loads((options.scratch / f"ab-{number}.json").read_text())
        paired_run = document["run"]["paired"]
        windows = ab_windows(paired_run["rounds"], paired_run["budget_s"], options.worker_pairs)
        plan = ab_plan(gate, windows, len(document["tests"]))
        stops = {test["nodeid"]: test["paired"]["stop"] for test in document["tests"]}
        for nodeid, samples in load_paired(store, run_id).items():
            base, cand = list(samples.baseline), list(samples.candidate)
            final = stops[nodeid] != "decided"
            look = paired_look_detail(base, cand, margins, plan, alpha=gate.alpha, final=final)
            steady = steady_look(base, cand, look, margins, plan, alpha=gate.alpha, final=final)
            tally["test-runs"] += 1
            tally["pairs"] += len(base)
            tally["pairs fenced"] += steady.fenced if steady is not None else 0
            different = [n for n, c in look.items() if c.comparison.outcome == "different"]
            if not different:
                continue
            stands = steady is None or steady.stands(different)
            tally["DIFFERENT on all kept pairs"] += 1
            tally["still DIFFERENT on the steady pairs"] += stands
            seen = "every pair steady" if steady is None else steady.describe(different)
            print(
                f"run {number} (K={paired_run['rounds']}) {nodeid}: {', '.join(different)} "
                f"DIFFERENT; {'stands' if stands else 'does not stand'} ({seen})"
            )
    print(", ".join(f"{key} {value}" for key, value in tally.items()))


if __name__ == "__main__":
    main()
