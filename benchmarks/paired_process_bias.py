"""A/A of one memory-bound test under ``pytest-roofline ab``: how often a worker pair is biased.

Builds ``paired_validation.py``'s fixture project with an A/A candidate (a comment changed),
runs ``pytest-roofline ab -k elementwise`` (the two copies of an ``np.add`` over 200 000
float64) ``--runs`` times, and prints per run and test the decision, the paired p50 ratio and
interval, and for a regression the pooled window pairs found, its state and what each pair of
worker processes found on its own window pairs (``confirmed (p50 x1.104, x1.098, x1.113)``). Environment variables given
to this script reach the workers (e.g. ``MALLOC_MMAP_THRESHOLD_=131072``, ``PYTHONHASHSEED``).

With ``--scenario uniform10 -k ''`` it shows how each pair of worker processes saw each test of
an injected change. ``--neighbour`` runs ``neighbour.py`` (bursts of
numpy streams, 2-thread GEMMs and Python loops with idle gaps) throughout, as
``gate_validation.py --neighbour`` does. At the end it prints the tally of decisions and of
dropped window pairs over all runs, and the host canary's readings as a share of ``ab``'s
wall time (per run, too).

Usage: python benchmarks/paired_process_bias.py [--rounds 24] [--budget 1.5] [--runs 8]
[-k elementwise] [--scenario none] [--neighbour [--seed 1]]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_validation import QUIET, git, make_project

from pytest_roofline.config.settings import AbSettings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=AbSettings().rounds)
    parser.add_argument("--budget", type=float, default=AbSettings().budget_s)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("-k", dest="keyword", default="elementwise", help="'' for every test")
    parser.add_argument(
        "--scenario",
        default="none",
        help="the candidate commit: none (A/A) or an injected change, e.g. uniform10",
    )
    parser.add_argument("--neighbour", action="store_true", help="run neighbour.py throughout")
    parser.add_argument("--seed", type=int, default=1, help="the neighbour's seed")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="process-bias-"))
    repo, _ = make_project(root, [options.scenario])
    git(repo, "checkout", "-q", f"cand-{options.scenario}")
    neighbour = (
        subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("neighbour.py")),
                "--seed",
                str(options.seed),
            ],
            stdout=subprocess.DEVNULL,
        )
        if options.neighbour
        else None
    )
    try:
        tally = _runs(options, root, repo)
    finally:
        if neighbour is not None:
            neighbour.terminate()
            neighbour.wait(timeout=30)
    print(
        "decisions over all test-runs: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
    )
    print(
        f"host canary readings: {tally['canary ms'] / max(1, tally['ab ms']):.1%} of ab's wall time"
    )


def _runs(options: argparse.Namespace, root: Path, repo: Path) -> Counter[str]:
    """Run ``ab`` ``options.runs`` times, printing a line per run; the decisions' tally."""
    tally: Counter[str] = Counter()
    for run in range(options.runs):
        out = root / "ab.json"
        command = [
            sys.executable, "-m", "pytest_roofline.cli", "ab", "--baseline=base",
            f"--rounds={options.rounds}", f"--budget={options.budget}",
            f"--store={root / 'ab.sqlite'}", f"--json={out}", "--gate=never",
            "--", "-p", "no:benchmark", *QUIET, *(["-k", options.keyword] if options.keyword else []),
        ]  # fmt: skip
        started = time.perf_counter()
        subprocess.run(command, cwd=repo, capture_output=True, check=False)
        row = []
        document = json.loads(out.read_text())
        paired = document["run"]["paired"]
        # The host canary's readings as a share of the run (issue 10: under 5%).
        tally["canary ms"] += round(1000 * (paired.get("canary_s") or 0))
        tally["ab ms"] += round(1000 * paired["wall_s"])
        for test in document["tests"]:
            tally[test["decision"]] += 1
            tally["window pairs dropped"] += (test.get("paired") or {}).get("pairs_dropped") or 0
            p50 = test["change"]["p50"]
            confirmation = test.get("confirmation") or {}
            state = confirmation.get("state", "")
            if state in ("confirmed", "inconclusive"):
                # What each pair of worker processes found on its own window pairs.
                found = re.findall(r"(p\d\d) by worker pair: ([^()]*)\(", confirmation["reason"])
                state += " (" + "; ".join(f"{q} {v.strip()}" for q, v in found) + ")"
            # An escalation's first reason says which quantile stayed UNKNOWN, or what else.
            why = f" ({test['reasons'][0][:160]})" if test["decision"] == "escalate" else ""
            row.append(
                f"{test['nodeid']} {test['decision']} p50 x{p50['ratio']:.3f} "
                f"[{p50['ci_low']:.3f}, {p50['ci_high']:.3f}] {state}".rstrip()
                + why
            )
        canary = (paired.get("canary_s") or 0) / paired["wall_s"]
        print(
            f"run {run + 1} ({time.perf_counter() - started:.0f} s, canary {canary:.1%}): "
            + " | ".join(row),
            flush=True,
        )
    return tally


if __name__ == "__main__":
    main()
