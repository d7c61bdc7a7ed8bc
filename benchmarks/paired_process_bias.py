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

``--pin-cpus alternate`` runs ``ab --pin-cpus`` and ``ab --no-pin-cpus`` in turn (run 1 held,
run 2 not, ...), so both arms share the hour, and prints each arm's tally and, per quantile,
the median width of the paired interval (log of high/low) and the median distance of the
paired ratio from 1 (``|log ratio|``) over its test-runs, with a Wilcoxon signed-rank test of
the differences between matched test-runs (the same test in runs 2i+1 and 2i+2). ``--arms
32:2,40:2.5`` alternates ``ab``'s pair cap and budget the same way (run 1 with 32 window pairs
of 2 s, run 2 with 40 of 2.5 s, ...) and prints the same per-arm tallies and comparison, so a
difference between settings is not the host's hour. Every run's JSON is kept in the scratch
directory named at the start.

Usage: python benchmarks/paired_process_bias.py [--rounds 24] [--budget 1.5] [--runs 8]
[-k elementwise] [--scenario none] [--neighbour [--seed 1]] [--pin-cpus off|on|alternate]
[--arms 32:2,40:2.5]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scipy.stats
from paired_validation import QUIET, git, make_project

from pytest_roofline.config.settings import AbSettings

QUANTILES = ("p50", "p95", "p99")


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
    parser.add_argument(
        "--arms",
        default="",
        help="alternate ab settings run by run, ROUNDS:BUDGET[,ROUNDS:BUDGET...] (e.g. 32:2,40:2.5)",
    )
    parser.add_argument(
        "--pin-cpus",
        choices=("off", "on", "alternate"),
        default="default",
        help="ab --pin-cpus / --no-pin-cpus, or both in turn (default: ab's default)",
    )
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="process-bias-"))
    print(f"scratch: {root}", flush=True)
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
        tallies = _runs(options, root, repo)
    finally:
        if neighbour is not None:
            neighbour.terminate()
            neighbour.wait(timeout=30)
    for arm, tally in tallies.items():
        name = f" ({arm})" if arm else ""
        print(
            f"decisions over all test-runs{name}: "
            + ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
        )
        print(
            f"host canary readings{name}: "
            f"{tally['canary ms'] / max(1, tally['ab ms']):.1%} of ab's wall time"
        )
    arms = _arms(options)
    if len(arms) == 2:
        _compare_arms(root, options.runs, [label for label, _ in arms])


def _arms(options: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """The settings runs take in turn, as (label, ``ab`` flags); one unlabelled arm when not
    alternating. Alternating run by run puts every arm in the same hour of the host, so a
    difference between arms is not the host getting quieter."""
    sizes = [f"--rounds={options.rounds}", f"--budget={options.budget}"]
    if options.arms:
        pairs = [arm.split(":") for arm in options.arms.split(",")]
        return [(f"K={k} B={b}", [f"--rounds={k}", f"--budget={b}"]) for k, b in pairs]
    if options.pin_cpus == "alternate":
        return [(flag, [*sizes, flag]) for flag in ("--pin-cpus", "--no-pin-cpus")]
    pin = {"on": ["--pin-cpus"], "off": ["--no-pin-cpus"]}.get(options.pin_cpus, [])
    return [("", [*sizes, *pin])]


def _spread(path: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (test, quantile) of one run's JSON: (log interval width, |log ratio|), where set."""
    spread = {}
    for test in json.loads(path.read_text())["tests"]:
        for name in QUANTILES:
            change = test["change"].get(name) or {}
            low, high, ratio = change.get("ci_low"), change.get("ci_high"), change.get("ratio")
            if low and high and ratio and low > 0:
                spread[test["nodeid"], name] = (math.log(high / low), abs(math.log(ratio)))
    return spread


def _compare_arms(root: Path, runs: int, labels: list[str]) -> None:
    """Matched test-runs of the first arm's (odd) and the second arm's (even) runs: medians
    and Wilcoxon."""
    first_arm, second_arm = labels
    held: dict[str, list[tuple[float, float]]] = {name: [] for name in QUANTILES}
    free: dict[str, list[tuple[float, float]]] = {name: [] for name in QUANTILES}
    for first in range(0, runs - 1, 2):
        a, b = _spread(root / f"ab-{first + 1}.json"), _spread(root / f"ab-{first + 2}.json")
        for key in sorted(set(a) & set(b)):
            held[key[1]].append(a[key])
            free[key[1]].append(b[key])
    for name in QUANTILES:
        pins, frees = held[name], free[name]
        if len(pins) < 2:
            continue
        for what, index in (("interval width (log)", 0), ("|log ratio|", 1)):
            x = [p[index] for p in pins]
            y = [f[index] for f in frees]
            test = (
                scipy.stats.wilcoxon(x, y)
                if any(u != v for u, v in zip(x, y, strict=True))
                else None
            )
            print(
                f"{name} {what}, {len(x)} matched test-runs: {first_arm} {statistics.median(x):.4f}, "
                f"{second_arm} {statistics.median(y):.4f}"
                + (f", Wilcoxon p {test.pvalue:.3g}" if test is not None else "")
            )


def _runs(options: argparse.Namespace, root: Path, repo: Path) -> dict[str, Counter[str]]:
    """Run ``ab`` ``options.runs`` times, printing a line per run; the decisions' tally per
    arm ("" when not alternating)."""
    tallies: dict[str, Counter[str]] = {}
    arms = _arms(options)
    for run in range(options.runs):
        out = root / f"ab-{run + 1}.json"
        label, flags = arms[run % len(arms)]
        tally = tallies.setdefault(label, Counter())
        command = [
            sys.executable, "-m", "pytest_roofline.cli", "ab", "--baseline=base",
            f"--store={root / 'ab.sqlite'}", f"--json={out}", "--gate=never", *flags,
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
            f"run {run + 1}{' ' + label if label else ''} ({time.perf_counter() - started:.0f} s, "
            f"canary {canary:.1%}): " + " | ".join(row),
            flush=True,
        )
    return tallies


if __name__ == "__main__":
    main()
