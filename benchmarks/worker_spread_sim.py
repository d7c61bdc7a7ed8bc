"""Simulation: what the spread between worker pairs does to ``ab``'s rollbacks (stop 41).

``ab`` gives a test's window pairs to three pairs of worker processes in turn. A regression the
pooled window pairs find (a quantile DIFFERENT) rolls back only if every worker pair reaches half
the margin (``gate.worker_agreement``) and, since stop 41, only if it stays DIFFERENT with the
spread between the worker pairs in its interval (``gate.paired_looks.with_worker_spread``). Per
scenario this counts, over seeded runs of 32 window pairs decided at the final look of the
default plan (the interim looks' early stops are not simulated), how many the pooled look
finds DIFFERENT, how many the per-pair rule alone would roll back, and how many would roll
back with the spread.

A window holds 300 calls (log-normal body, sd 0.1, plus an exponential tail); each window's level
is drawn apart so that a pair's log ratio spreads by SPREAD; worker pair k's candidate process
runs EFFECTS[k] slower for its whole life, times a per-run offset N(0, TAU) of its own when TAU is
given (every process pair drawing its own layout).

Usage: python benchmarks/worker_spread_sim.py [SEED]
"""

from __future__ import annotations

import math
import sys

import numpy as np

from pytest_roofline.ab import ab_windows
from pytest_roofline.ab.analysis import ab_plan, agreement, paired_margin
from pytest_roofline.config.settings import GateSettings
from pytest_roofline.gate.paired_looks import paired_look_detail
from pytest_roofline.gate.worker_agreement import worker_agreement

PAIRS = 32
GATE = GateSettings()
MARGINS = {name: paired_margin(GATE, name) for name in ("p50", "p95", "p99")}
PLAN = ab_plan(GATE, ab_windows(PAIRS, 2.0, 3), 10)
GROUPS = [pair % 3 for pair in range(PAIRS)]
# (label, per worker pair effect, window-pair spread, per-run process offset sd, runs)
SCENARIOS = [
    ("unchanged, one candidate process x1.3", (1.3, 1.0, 1.0), 0.15, 0.0, 300),
    ("unchanged, one candidate process x1.3", (1.3, 1.0, 1.0), 0.05, 0.0, 300),
    ("unchanged, processes x1.25, x1.1, x1.0", (1.25, 1.1, 1.0), 0.15, 0.0, 300),
    ("unchanged, each process pair N(0, 0.1)", (1.0, 1.0, 1.0), 0.15, 0.1, 300),
    ("unchanged, each process pair N(0, 0.05)", (1.0, 1.0, 1.0), 0.05, 0.05, 300),
    ("+10%", (1.1, 1.1, 1.1), 0.05, 0.0, 200),
    ("+10%", (1.1, 1.1, 1.1), 0.15, 0.0, 200),
    ("+5%", (1.05, 1.05, 1.05), 0.05, 0.0, 200),
    ("+20%", (1.2, 1.2, 1.2), 0.15, 0.0, 200),
]


def run_windows(
    rng: np.random.Generator, effects: tuple[float, ...], spread: float, tau: float
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One run's baseline and candidate windows (module docstring); with ``tau`` 0 no process
    offset is drawn, so such runs draw as ``tests/unit/test_worker_agreement.py`` expects."""
    offsets = [math.exp(rng.normal(0.0, tau)) if tau else 1.0 for _ in effects]
    base: list[np.ndarray] = []
    cand: list[np.ndarray] = []
    for pair in range(PAIRS):
        k = pair % 3
        for side, effect in ((base, 1.0), (cand, effects[k] * offsets[k])):
            level = math.log(effect) + rng.normal(0.0, spread / math.sqrt(2))
            calls = rng.normal(0.0, 0.1, 300) + rng.exponential(0.05, 300)
            side.append(np.exp(-10.0 + level + calls))
    return base, cand


def counts(
    rng: np.random.Generator, effects: tuple[float, ...], spread: float, tau: float, runs: int
) -> list[int]:
    """Of ``runs`` runs at the final look: [pooled DIFFERENT, rolled back by the per-pair rule
    alone, rolled back with the spread] (the unit tests assert two scenarios' counts)."""
    found = [0, 0, 0]
    for _ in range(runs):
        base, cand = run_windows(rng, effects, spread, tau)
        look = paired_look_detail(base, cand, MARGINS, PLAN, alpha=GATE.alpha, final=True)
        different = [n for n, c in look.items() if c.comparison.outcome == "different"]
        if not different:
            continue
        ratios = {n: look[n].round_ratios for n in different}
        found[0] += 1
        found[1] += worker_agreement(ratios, different, GROUPS, 3, MARGINS).confirmed
        found[2] += agreement(look, GROUPS, 3, MARGINS, plan=PLAN, final=True).confirmed
    return found


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    print(f"# worker_spread_sim.py, seed {seed}, {PAIRS} window pairs, three worker pairs in turn")
    print(
        "| truth | window-pair spread | process offset sd | runs | pooled DIFFERENT "
        "| would roll back, per-pair rule alone | would roll back, with the spread |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, effects, spread, tau, runs in SCENARIOS:
        rng = np.random.default_rng(seed)
        pooled, per_pair, with_spread = counts(rng, effects, spread, tau, runs)
        row = (label, spread, tau, runs, pooled, per_pair, with_spread)
        print("| " + " | ".join(map(str, row)) + " |", flush=True)


if __name__ == "__main__":
    main()
