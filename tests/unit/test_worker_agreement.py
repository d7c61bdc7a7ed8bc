"""Every pair of worker processes must find a paired regression (``gate.worker_agreement``).

Seeded simulations of window-pair log ratios: what one process's lifelong draw does to the
rule, and what a real regression does. The per-pair spread (0.03 in log units) is about what
the validation fixture's p50 windows show here (docs/paired.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_roofline.gate.worker_agreement import AGREEMENT_SHARE, worker_agreement
from pytest_roofline.stats.threeway import gate_margin

MARGINS = {"p50": gate_margin(0.05, 0.0), "p95": gate_margin(0.05, 0.0)}
PAIRS = 16
SPREAD = 0.03


def simulated(rng: np.random.Generator, effects: tuple[float, float, float]) -> list[float]:
    """16 window pairs' ratios on three worker pairs in turn; worker pair k shifts by effects[k]."""
    return [math.exp(math.log(effects[p % 3]) + rng.normal(0.0, SPREAD)) for p in range(PAIRS)]


def agreed_share(effects: tuple[float, float, float], trials: int = 2000, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    groups = [p % 3 for p in range(PAIRS)]
    agreed = sum(
        worker_agreement({"p50": simulated(rng, effects)}, ["p50"], groups, 3, MARGINS).confirmed
        for _ in range(trials)
    )
    return agreed / trials


def test_one_process_pairs_lifelong_draw_does_not_roll_a_test_back() -> None:
    # One worker pair's candidate process runs the unchanged test 30% slower for its whole life:
    # both other pairs must pass x1.025 by chance (3 of 2000 here).
    assert agreed_share((1.3, 1.0, 1.0)) < 0.005
    # Two of three such draws in the same direction: the third pair still stops 96% of them
    # (73 of 2000 here). The rule's weak spot, and why it is not the only guard: the pooled
    # pairs must also be DIFFERENT at the run's Bonferroni-split level.
    assert agreed_share((1.3, 1.3, 1.0)) < 0.06


def test_a_real_regression_is_found_by_every_pair() -> None:
    assert agreed_share((1.10, 1.10, 1.10)) > 0.99  # twice the margin
    assert agreed_share((1.05, 1.05, 1.05)) > 0.85  # at the margin (1813 of 2000 here)


def test_each_pair_needs_half_the_margin_in_log_units() -> None:
    assert AGREEMENT_SHARE == 0.5
    groups = [0, 1, 2]
    needed = math.sqrt(1.05)
    just = worker_agreement({"p50": [needed + 1e-9] * 3}, ["p50"], groups, 3, MARGINS)
    short = worker_agreement({"p50": [needed, needed, needed - 1e-6]}, ["p50"], groups, 3, MARGINS)
    assert just.confirmed and not short.confirmed
    assert short.needed["p50"] == pytest.approx(needed)


def test_any_different_quantile_every_pair_finds_confirms() -> None:
    groups = [0, 1, 2, 0, 1, 2]
    ratios = {"p50": [1.2, 1.0, 1.0, 1.2, 1.0, 1.0], "p95": [1.3] * 6}
    found = worker_agreement(ratios, ["p50", "p95"], groups, 3, MARGINS)
    assert found.agreed == ("p95",) and found.confirmed
    assert "p50 by worker pair: x1.200, x1.000, x1.000" in found.describe()


def test_pairs_without_a_usable_ratio_cannot_agree() -> None:
    # NaN: a window pair with too few samples for the quantile; pair 3 kept nothing else.
    found = worker_agreement({"p95": [1.5, 1.5, float("nan")]}, ["p95"], [0, 1, 2], 3, MARGINS)
    assert not found.confirmed
    assert found.estimates["p95"] == (1.5, 1.5, None)
    assert "none kept" in found.describe()
