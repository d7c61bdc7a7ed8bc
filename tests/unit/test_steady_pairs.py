"""A paired regression rolls back only when it stands on the window pairs the host left steady.

The recorded case is a real false rollback (stop 38, an A/A ``ab`` run at 40 window pairs on
the validation fixture): an unchanged ``np.sum`` of about 0.1 ms read p99 x1.110 [1.003, 1.176]
DIFFERENT with 6 of its 38 kept pairs at p50 ratios of x1.38 to x1.46 and one at x0.80. Its
kept windows are stored in ``tests/data/aa_false_rollback_stop38.npz`` (nanoseconds, as
measured). The rest are seeded synthetic windows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.ab import ab_windows
from pytest_roofline.ab.analysis import AssessedStop, ab_plan, paired_margin, windows_confirmation
from pytest_roofline.ab.workers import TestWindows
from pytest_roofline.config.settings import GateSettings
from pytest_roofline.gate.paired_looks import PairedStop, paired_look_detail, steady_look
from pytest_roofline.gate.steady_pairs import STEADY_FLOOR, steady_pairs

from .test_ab_pairs import NODEID, decide_one, pair_windows

RECORDED = Path(__file__).resolve().parents[1] / "data" / "aa_false_rollback_stop38.npz"
GATE = GateSettings()
MARGINS = {name: paired_margin(GATE, name) for name in ("p50", "p95", "p99")}
# The recorded run: 40 window pairs of 2.5 s, three worker pairs, ten tests.
PLAN = ab_plan(GATE, ab_windows(40, 2.5, 3), 10)


# ---------------------------------------------------------------------------------- the mask
def test_a_pair_whose_p50_left_the_tests_level_is_unsteady() -> None:
    assert steady_pairs([1.0, 1.02, 0.99, 1.01, 1.40, 0.98]) == (
        True,
        True,
        True,
        True,
        False,
        True,
    )
    # Either side's disturbance: the fence is symmetric.
    assert steady_pairs([1.0, 1.02, 0.99, 1.01, 1 / 1.40, 0.98])[4] is False


def test_the_fence_is_centred_on_the_tests_own_level_not_on_one() -> None:
    # A real x1.5 moves every pair: none is fenced, even the ones furthest from 1.
    assert all(steady_pairs([1.48, 1.52, 1.50, 1.49, 1.55, 1.45]))
    # ... and a disturbed pair is still found around that level.
    assert steady_pairs([1.48, 1.52, 1.50, 1.49, 2.2, 1.51])[4] is False


def test_pairs_that_barely_spread_are_not_fenced_for_a_small_wobble() -> None:
    # A 2-thread GEMM's p50 ratios spread by about 0.5%: the floor keeps a +4% pair.
    steady = [1.0 + 0.001 * k for k in range(-5, 6)]
    assert all(steady_pairs([*steady, np.exp(STEADY_FLOOR * 0.8)]))
    assert steady_pairs([*steady, np.exp(STEADY_FLOOR * 1.5)])[-1] is False


def test_a_pair_without_a_usable_ratio_says_nothing() -> None:
    assert steady_pairs([1.0, float("nan"), 1.01, 0.0]) == (True, True, True, True)
    assert steady_pairs([]) == ()


# --------------------------------------------------------------------- the recorded false rollback
def recorded() -> tuple[list[np.ndarray], list[np.ndarray]]:
    with np.load(RECORDED) as data:
        pairs = len(data.files) // 2
        base = [data[f"b{i:02d}"].astype(np.float64) * 1e-9 for i in range(pairs)]
        cand = [data[f"c{i:02d}"].astype(np.float64) * 1e-9 for i in range(pairs)]
    return base, cand


def test_the_recorded_a_a_rollback_does_not_stand_on_the_steady_pairs() -> None:
    base, cand = recorded()
    assert len(base) == 38
    look = paired_look_detail(base, cand, MARGINS, PLAN, alpha=GATE.alpha, final=False)
    assert look["p99"].comparison.outcome == "different"  # what rolled the unchanged test back
    assert look["p99"].comparison.ratio == pytest.approx(1.110, abs=0.001)
    steady = steady_look(base, cand, look, MARGINS, PLAN, alpha=GATE.alpha, final=False)
    assert steady is not None
    assert (steady.fenced, steady.pairs) == (7, 38)
    assert not steady.stands(["p99"])
    assert steady.comparisons["p50"].comparison.outcome == "same"


def test_the_stop_rule_goes_on_while_the_regression_rests_on_unsteady_pairs() -> None:
    base, cand = recorded()
    rule = AssessedStop(MARGINS, PLAN, alpha=GATE.alpha, worker_pairs=1)
    assert rule(NODEID, base, cand, [0] * len(base)) is True


# ------------------------------------------------------------------------ through the analysis
def as_windows(
    base: list[np.ndarray], cand: list[np.ndarray], worker_pairs: int = 1
) -> TestWindows:
    """The windows of ``ab``'s pairs, pair ``p`` measured by worker pair ``p % worker_pairs``."""
    out = [
        window
        for pair, (b, c) in enumerate(zip(base, cand, strict=True))
        for window in pair_windows(pair, b, c, pair % worker_pairs)
    ]
    return TestWindows(NODEID, tuple(out), pairs=len(base), stop="decided", wall_s=1.0)


def decide(test: TestWindows, worker_pairs: int = 1) -> tuple[str, str]:
    return decide_one(test, PLAN, max_pairs=40, worker_pairs=worker_pairs)


def test_the_recorded_a_a_run_escalates_naming_the_host() -> None:
    decision, reasons = decide(as_windows(*recorded()))
    assert decision == "escalate"
    assert "but not on the steady window pairs alone" in reasons
    assert "without the 7 of 38 window pairs whose p50 ratio left the test's own level" in reasons
    assert "the host, not necessarily the code" in reasons


def synthetic(
    p50_change: float, tail_change: float, disturbed: set[int], seed: int, pairs: int = 38
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per pair a shared machine speed; the candidate's calls ``p50_change`` slower and its
    slowest 3% ``tail_change`` slower again; in ``disturbed`` pairs one side's window x1.4."""
    rng = np.random.default_rng(seed)
    base, cand = [], []
    for pair in range(pairs):
        speed = rng.lognormal(0, 0.02)
        b = speed * 1e-4 * rng.lognormal(0, 0.05, 600)
        c = speed * 1e-4 * p50_change * rng.lognormal(0, 0.05, 600)
        c[: len(c) * 3 // 100] *= tail_change
        if pair in disturbed:
            if pair % 2:
                b = b * 1.4
            else:
                c = c * 1.4
        base.append(b)
        cand.append(c)
    return base, cand


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_real_regression_with_disturbed_pairs_still_rolls_back(seed: int) -> None:
    disturbed = {3, 10, 17, 24, 31}
    # A uniform +10%: every pair moves, the fence follows it.
    assert decide(as_windows(*synthetic(1.10, 1.0, disturbed, seed)))[0] == "rollback"
    # A tail-only regression: p50 stays, the slowest calls x3 in every pair.
    decision, reasons = decide(as_windows(*synthetic(1.0, 3.0, disturbed, seed)))
    assert decision == "rollback", reasons


def test_a_confirmation_asked_about_a_tail_only_is_fenced_on_the_pairs_p50() -> None:
    # The two-run gate asks paired rounds about the quantiles its first look left open: here
    # p99 alone, so the look holds no p50; the fence reads the windows' p50 all the same.
    test = as_windows(*recorded())
    margins = {"p99": MARGINS["p99"]}
    found = windows_confirmation(("p99",), test, margins, PLAN, alpha=GATE.alpha, command="ab")
    assert (found.state, found.disputed, found.dispute) == ("inconclusive", True, "host")
    assert "p99 x1.093 [0.966, 1.170] UNKNOWN" in found.reason


def test_the_two_run_confirmations_stop_rule_goes_on_too() -> None:
    base, cand = recorded()
    rule = PairedStop({"p99": MARGINS["p99"]}, PLAN, alpha=GATE.alpha)
    assert rule(NODEID, base, cand) is True


@pytest.mark.parametrize("seed", [1, 2])
def test_a_real_regression_stands_on_the_steady_pairs(seed: int) -> None:
    disturbed = {3, 10, 17, 24, 31}
    for p50_change, tail_change, regressed in ((1.10, 1.0, "p50"), (1.0, 3.0, "p99")):
        base, cand = synthetic(p50_change, tail_change, disturbed, seed)
        look = paired_look_detail(base, cand, MARGINS, PLAN, alpha=GATE.alpha, final=False)
        assert look[regressed].comparison.outcome == "different"
        steady = steady_look(base, cand, look, MARGINS, PLAN, alpha=GATE.alpha, final=False)
        assert steady is not None and steady.fenced == len(disturbed)  # the disturbed, no more
        assert steady.stands([regressed])
        # ... so the stop rule stops on it.
        rule = AssessedStop(MARGINS, PLAN, alpha=GATE.alpha, worker_pairs=1)
        assert rule(NODEID, base, cand, [0] * len(base)) is False


def test_with_three_worker_pairs_agreeing_the_regression_must_still_stand() -> None:
    # Every worker pair finds the recorded p99 (as they did in the run); the host still disputes it.
    decision, reasons = decide(as_windows(*recorded(), worker_pairs=3), worker_pairs=3)
    assert decision == "escalate"
    assert "but not on the steady window pairs alone" in reasons
    assert "by every one of the 3 pairs" not in reasons


def test_with_three_worker_pairs_a_standing_regression_rolls_back() -> None:
    test = as_windows(*synthetic(1.10, 1.0, {3, 10, 17}, seed=4), worker_pairs=3)
    decision, reasons = decide(test, worker_pairs=3)
    assert decision == "rollback", reasons
    assert "found by each of the 3 pairs of worker processes" in reasons


def test_the_two_run_confirmations_stop_rule_stops_on_a_standing_regression() -> None:
    base, cand = synthetic(1.0, 3.0, {3, 10, 17, 24, 31}, seed=5)
    rule = PairedStop({"p99": MARGINS["p99"]}, PLAN, alpha=GATE.alpha)
    assert rule(NODEID, base, cand) is False
