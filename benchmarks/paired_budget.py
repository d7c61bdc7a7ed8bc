"""What would reach paired mode's targets: A/A escalation and +10% rollbacks against the budget.

Paired mode's A/A tests escalate when their interval cannot show the change inside the margin
(5% for p50 and p95); more window pairs narrow it. This runs ``pytest-roofline ab`` on
``paired_validation.py``'s fixture project (10 tests) at several (budget per test and side,
most pairs) settings that keep the window length (``budget / rounds``) fixed, so that each
setting only adds pairs, and counts the decisions per scenario (``none`` = A/A, ``uniform10``
= +10% on every test), with Wilson intervals and the median wall time of an ``ab`` run.

Usage: python benchmarks/paired_budget.py [--settings 1:8,2:16,4:32] [--trials 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_validation import decision_cells, git, make_project, paired

SCENARIOS = ("none", "uniform10")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--settings", default="1:8,2:16,4:32", help="BUDGET:ROUNDS,...")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    settings = [(float(b), int(k)) for b, k in (s.split(":") for s in options.settings.split(","))]
    lines: list[str] = []

    def emit(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    cells: dict[tuple[str, str], Counter[str]] = {}
    reasons: dict[tuple[str, str], Counter[str]] = {}
    walls: dict[str, list[float]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paired-budget-") as tmp:
        root = Path(tmp)
        repo, _ = make_project(root, list(SCENARIOS))
        for trial in range(options.trials):
            for scenario in SCENARIOS:
                git(repo, "checkout", "-q", f"cand-{scenario}")
                # Rotate the settings' order each trial: none always meets the same load.
                order = settings[trial % len(settings) :] + settings[: trial % len(settings)]
                for budget, rounds in order:
                    design = f"{budget:g} s, {rounds} pairs"
                    wall, out = paired(repo, root / "ab.sqlite", budget, rounds)
                    walls.setdefault(design, []).append(wall)
                    cell = cells.setdefault((scenario, design), Counter())
                    why = reasons.setdefault((scenario, design), Counter())
                    for test in json.loads(out.read_text())["tests"]:
                        cell[test["decision"]] += 1
                        if test["decision"] != "ship":
                            outcomes = {
                                q: (c or {}).get("outcome") for q, c in test["change"].items()
                            }
                            unknown = sorted(q for q, o in outcomes.items() if o == "unknown")
                            why[",".join(unknown) or "other"] += 1
                    emit(f"  trial {trial + 1} {scenario} {design}: {dict(cell)} ({wall:.0f} s)")
        git(repo, "checkout", "-q", "base")
    emit("")
    emit(
        f"paired budget study: 10 tests, {options.trials} trial(s) per scenario and setting; "
        f"total {time.perf_counter() - started:.0f} s"
    )
    emit("")
    emit("| scenario | budget per test and side, most pairs | test-trials | rollback | escalate | ship | "
         "rollback 95% CI | escalate 95% CI | UNKNOWN quantiles of the escalated | median ab wall (s) |")  # fmt: skip
    emit("|---|---|---|---|---|---|---|---|---|---|")
    for (scenario, design), cell in cells.items():
        emit(
            f"| {scenario} | {design} | "
            f"{decision_cells({d: cell[d] for d in ('rollback', 'escalate', 'ship')})} | "
            f"{dict(reasons[(scenario, design)])} | {statistics.median(walls[design]):.0f} |"
        )
    if options.out:
        options.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
