"""Paired rounds in a two-run session judge a first look against the margin it was gated with."""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.config.settings import GateSettings
from pytest_roofline.gate.confirm import (
    PAIRED_PROCESS_FLOOR,
    confirmation_from,
    first_look_margins,
    needs_confirmation,
    settling_order,
)
from pytest_roofline.gate.policy import DriftBound, drift_inside_margins
from pytest_roofline.plugin.confirm import RoundsBudget, confirmation_margin
from pytest_roofline.stats.paired import compare_paired

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class FirstLook:
    outcome: str | None
    verdict: str | None
    delta: float | None
    margin_source: str | None
    ci_low: float | None = None
    quantile: float | None = None
    n_base: int | None = None
    n_cand: int | None = None


def test_asked_first_looks_keep_their_margin_and_the_rest_do_not_get_one() -> None:
    min_effect = GateSettings().min_effect
    looks = {
        "p50": FirstLook("different", "regression", 0.35, "history"),
        "p95": FirstLook("unknown", "not detected", 0.37, "history"),
        "p99": FirstLook("unknown", "suspect", 0.10, "min_effect"),
    }
    assert first_look_margins(looks, min_effect) == {"p50": 0.35, "p95": 0.37, "p99": 0.10}
    # A SAME first look shifted beyond min_effect (asked, below) is judged against min_effect:
    # the session's margin is already ruled out.
    shifted = FirstLook("same", "ok", 0.35, "history", ci_low=1.2)
    assert first_look_margins({"p50": shifted}, min_effect) == {}
    # One asked because the run drifted keeps the session's margin.
    steady = FirstLook("same", "ok", 0.35, "history", ci_low=0.95)
    assert first_look_margins({"p50": steady}, min_effect) == {"p50": 0.35}
    # Too few samples, or no margin recorded: no first-look margin.
    assert (
        first_look_margins(
            {"p95": FirstLook("unknown", "insufficient", 0.37, "history")}, min_effect
        )
        == {}
    )
    assert (
        first_look_margins({"p95": FirstLook("unknown", "not detected", None, None)}, min_effect)
        == {}
    )
    nan = FirstLook("unknown", "not detected", math.nan, "history")
    assert first_look_margins({"p95": nan}, min_effect) == {}


def test_a_label_too_noisy_to_gate_is_judged_against_the_paired_process_floor() -> None:
    min_effect = GateSettings().min_effect
    looks = {
        name: FirstLook("unknown", "not detected", 1.0, "cap") for name in ("p50", "p95", "p99")
    }
    assert first_look_margins(looks, min_effect) == dict(PAIRED_PROCESS_FLOOR)
    # ... SAME below it, DIFFERENT still beyond min_effect (a rollback needs three pairs).
    margin = confirmation_margin(
        GateSettings(), "p95", first_look_margins(looks, min_effect)["p95"]
    )
    assert (margin.margin, margin.different_at) == (PAIRED_PROCESS_FLOOR["p95"], 0.05)
    # The floor is what the A/A outputs say, not a round number picked here.
    spec = importlib.util.spec_from_file_location(
        "paired_process_floor", REPO / "benchmarks" / "paired_process_floor.py"
    )
    assert spec is not None and spec.loader is not None
    floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(floor)
    lines = [
        line
        for path in sorted(REPO.glob(floor.DEFAULT_GLOB))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    found = floor.first_pair_ratios(lines)
    assert sorted(found) == ["p50", "p95", "p99"]
    for name, ratios in found.items():
        assert PAIRED_PROCESS_FLOOR[name] == pytest.approx(np.quantile(ratios, 0.99) - 1, abs=0.005)


def test_a_run_that_drifted_asks_every_quantile_with_an_interval() -> None:
    looks = {
        "p50": FirstLook("same", "ok", 0.35, "history", ci_low=0.97),
        "p95": FirstLook("same", "improved", 0.40, "history", ci_low=0.80),
        "p99": FirstLook("unknown", "insufficient", 0.60, "history"),
    }
    assert needs_confirmation(looks, GateSettings().min_effect) == ()
    assert needs_confirmation(looks, GateSettings().min_effect, drifting=True) == ("p50", "p95")


def test_a_first_look_against_a_baseline_measured_on_a_disturbed_host_asks_every_quantile() -> None:
    # CI, stop 45: a x4.5 GEMM read p50 x0.875, SAME, against a baseline the host slowed x14.
    # Against such a baseline SAME and "improved" say nothing; paired rounds measure that side anew.
    looks = {
        "p50": FirstLook("same", "ok", 0.05, "min_effect", ci_low=0.42),
        "p95": FirstLook("same", "improved", 0.05, "min_effect", ci_low=0.20),
        "p99": FirstLook("unknown", "insufficient", 0.05, "min_effect"),
    }
    assert needs_confirmation(looks, GateSettings().min_effect) == ()
    assert needs_confirmation(looks, GateSettings().min_effect, baseline_disturbed=True) == (
        "p50",
        "p95",
    )


def test_a_quantile_too_autocorrelated_to_assess_is_asked_and_one_short_of_samples_is_not() -> None:
    min_effect = GateSettings().min_effect
    looks = {
        # Enough samples on both sides (5 for p50, 299 for p99) but an effective sample size
        # below the floor: the windows can assess it.
        "p50": FirstLook("unknown", "insufficient", 0.35, "history", 0.9, 0.5, 400, 400),
        "p99": FirstLook("unknown", "insufficient", 0.60, "history", 0.8, 0.99, 600, 650),
        # 40 candidate samples of the 59 p95 needs: its windows would be short too.
        "p95": FirstLook("unknown", "insufficient", 0.40, "history", 0.8, 0.95, 600, 40),
    }
    assert needs_confirmation(looks) == ("p50", "p99")
    assert first_look_margins(looks, min_effect) == {"p50": 0.35, "p99": 0.60}
    no_interval = FirstLook("unknown", "insufficient", 0.35, "history", None, 0.5, 400, 400)
    assert needs_confirmation({"p50": no_interval}) == ()


def test_a_same_first_look_is_asked_only_when_its_interval_lies_beyond_min_effect() -> None:
    min_effect = GateSettings().min_effect
    looks = {
        # x1.33 [1.28, ...] SAME against the label's +38% floor: asked.
        "p95": FirstLook("same", "ok", 0.38, "history", ci_low=1.28),
        # SAME and inside +5% at its lower bound: not asked.
        "p50": FirstLook("same", "ok", 0.35, "history", ci_low=1.03),
        # Beyond +10% at the lower bound but gated with min_effect alone: it would be DIFFERENT
        # there, so a SAME of this kind cannot occur; it is not asked either.
        "p99": FirstLook("same", "ok", 0.10, "min_effect", ci_low=1.12),
    }
    assert needs_confirmation(looks, min_effect) == ("p95",)
    assert needs_confirmation(looks) == ()  # without min_effect: DIFFERENT and UNKNOWN only
    assert needs_confirmation({"p95": FirstLook("unknown", "suspect", 0.38, "history")}) == ("p95",)


def test_a_same_first_look_past_an_explicit_threshold_is_asked_and_judged_against_it() -> None:
    # --roofline-fail=p50:10%: x1.15 [1.03, 1.22] is SAME against the label's +35% floor and
    # not shifted beyond min_effect, but past the threshold; two runs do not attribute it to
    # the code (gate.thresholds), so paired rounds are asked, against the threshold.
    min_effect = GateSettings().min_effect
    looks = {
        "p50": FirstLook("same", "ok", 0.35, "history", ci_low=1.03),
        "p95": FirstLook("same", "ok", 0.37, "history", ci_low=1.01),
    }
    assert needs_confirmation(looks, min_effect) == ()
    assert needs_confirmation(looks, min_effect, past_threshold={"p50": 0.10}) == ("p50",)
    margins = first_look_margins(looks, min_effect, {"p50": 0.10})
    assert margins == {"p50": 0.10, "p95": 0.37}
    # An UNKNOWN first look past it is judged against the smaller of its margin and the threshold.
    unknown = {"p50": FirstLook("unknown", "suspect", 0.35, "history", ci_low=1.02)}
    assert first_look_margins(unknown, min_effect, {"p50": 0.10}) == {"p50": 0.10}
    assert first_look_margins(unknown, min_effect, {"p50": 0.50}) == {"p50": 0.35}
    # A shifted SAME past it is judged against the threshold too (without it: min_effect).
    shifted = {"p50": FirstLook("same", "ok", 0.35, "history", ci_low=1.11)}
    assert first_look_margins(shifted, min_effect) == {}
    assert first_look_margins(shifted, min_effect, {"p50": 0.10}) == {"p50": 0.10}
    # A label too noisy to gate keeps the process floor: one pair of worker processes cannot
    # tell +10% from its own draw (the policy escalates if the floor is all they rule out).
    noisy = {"p50": FirstLook("unknown", "not detected", 1.0, "cap", ci_low=1.02)}
    assert first_look_margins(noisy, min_effect, {"p50": 0.10}) == {
        "p50": PAIRED_PROCESS_FLOOR["p50"]
    }


def paired_windows(
    *, seed: int, pairs: int, effect: float, spread: float
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Seeded window pairs of 200 samples a side, sharing a per-pair host speed; the candidate
    ``effect`` times slower."""
    rng = np.random.default_rng(seed)
    speed = rng.lognormal(0, 0.05, pairs)
    base = [s * rng.lognormal(-9, spread, 200) for s in speed]
    cand = [s * effect * rng.lognormal(-9, spread, 200) for s in speed]
    return base, cand


def test_the_paired_margin_is_the_first_looks_else_min_effect() -> None:
    gate = GateSettings()
    settled = confirmation_margin(gate, "p95", 0.37)
    assert (settled.margin, settled.source) == (0.37, "history")
    without = confirmation_margin(gate, "p95")
    assert (without.margin, without.source) == (gate.min_effect["p95"], "min_effect")
    below = confirmation_margin(gate, "p95", 0.01)  # never below min_effect
    assert below.margin == gate.min_effect["p95"]


def test_a_paired_interval_inside_the_sessions_margin_settles_what_min_effect_could_not() -> None:
    # The example suite's case: a paired p95 near x1.02 whose interval reaches past +5%.
    base, cand = paired_windows(seed=1, pairs=16, effect=1.03, spread=0.3)
    gate = GateSettings()
    strict = compare_paired(base, cand, 0.95, delta=confirmation_margin(gate, "p95"))
    session = compare_paired(base, cand, 0.95, delta=confirmation_margin(gate, "p95", 0.37))
    assert strict.comparison.ci.high > 1.05  # +5% is not ruled out ...
    assert confirmation_from(["p95"], {"p95": strict.comparison}, command="ab").state == (
        "inconclusive"
    )
    assert session.comparison.ci.high < 1.37  # ... +37% is
    overturned = confirmation_from(["p95"], {"p95": session.comparison}, command="ab")
    assert overturned.state == "overturned"


def test_a_first_look_regression_the_rounds_put_inside_the_sessions_margin_is_overturned() -> None:
    # The example suite's case: first look p95 x1.44, paired rounds near x1.03: with min_effect
    # alone the rounds cannot rule out +5% (inconclusive: escalate); against the session's +37%
    # they rule the first look out (overturned: ship).
    base, cand = paired_windows(seed=1, pairs=16, effect=1.03, spread=0.3)
    gate = GateSettings()
    for margin, state in ((None, "inconclusive"), (0.37, "overturned")):
        paired = compare_paired(base, cand, 0.95, delta=confirmation_margin(gate, "p95", margin))
        assert confirmation_from(["p95"], {"p95": paired.comparison}, command="ab").state == state


def test_a_large_paired_regression_is_still_confirmed_against_the_sessions_margin() -> None:
    base, cand = paired_windows(seed=2, pairs=8, effect=3.0, spread=0.2)
    paired = compare_paired(
        base, cand, 0.95, delta=confirmation_margin(GateSettings(), "p95", 0.37)
    )
    assert confirmation_from(["p95"], {"p95": paired.comparison}, command="ab").state == "confirmed"


def test_a_paired_regression_inside_the_sessions_margin_is_confirmed_beyond_min_effect() -> None:
    # Run 11's case: a p95 made x1.5 slower, against a label whose history margin is +60%.
    # Held to +60% for DIFFERENT too, the rounds called it SAME and the test shipped; the
    # alternation cancels the between-run noise that margin allows for, so DIFFERENT needs
    # min_effect (+5%) there, while SAME still has to rule out +60%.
    base, cand = paired_windows(seed=3, pairs=12, effect=1.5, spread=0.2)
    gate = GateSettings()
    margin = confirmation_margin(gate, "p95", 0.6)
    assert (margin.margin, margin.different_at) == (0.6, gate.min_effect["p95"])
    paired = compare_paired(base, cand, 0.95, delta=margin)
    assert 1.3 < paired.comparison.ratio < 1.6 and paired.comparison.ci.low > 1.05
    assert paired.comparison.delta == 0.6  # the margin reported is still the session's
    assert confirmation_from(["p95"], {"p95": paired.comparison}, command="ab").state == "confirmed"
    # The rule before: DIFFERENT only beyond the session's +60%.
    old = compare_paired(base, cand, 0.95, delta=replace(margin, detect=None))
    assert confirmation_from(["p95"], {"p95": old.comparison}, command="ab").state != "confirmed"


def test_first_looks_that_escalate_unless_settled_are_settled_first_in_run_order() -> None:
    looks = {"a": "ship", "b": "escalate", "c": None, "d": "escalate", "e": "ship"}
    assert settling_order(looks) == ["b", "d", "a", "c", "e"]
    assert settling_order({}) == []


def test_a_drift_stays_inside_the_margins_only_if_every_assessed_upper_bound_times_it_does() -> (
    None
):
    improved = DriftBound("same", "improved", 0.30, 0.05)
    steady = DriftBound("same", "ok", 1.10, 0.37)
    assert drift_inside_margins(0.76, [improved])  # x0.30 * 1.76 = 0.53 < 1.05
    assert drift_inside_margins(0.20, [steady])  # 1.10 * 1.20 = 1.32 < 1.37
    assert not drift_inside_margins(0.40, [steady])  # 1.54 > 1.37
    assert not drift_inside_margins(0.0, [DriftBound("unknown", "not detected", 1.1, 0.37)])
    # A quantile not assessed does not count; nothing assessed cannot stay inside anything.
    short = DriftBound("unknown", "insufficient", None, 0.6)
    assert drift_inside_margins(0.20, [steady, short])
    assert not drift_inside_margins(0.20, [short])


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def budget_on_a_fake_clock(confirm_s: float, settle_s: float) -> tuple[FakeClock, RoundsBudget]:
    clock = FakeClock()
    return clock, RoundsBudget(clock(), confirm_s=confirm_s, settle_s=settle_s, clock=clock)


def test_settling_has_its_own_time_after_the_regressions_rounds() -> None:
    # The README's compare: worker start-up and one regression's rounds took most of the 10 s,
    # and the log's "settling 5 ... for up to 10 s" then reached 3 of the 5.
    clock, budget = budget_on_a_fake_clock(confirm_s=10.0, settle_s=10.0)
    clock.now += 2.0  # worker start-up
    assert budget.late(regression=True) == ""
    clock.now += 7.5  # the regression's rounds
    assert budget.late(regression=False) == ""  # settling's clock starts here
    clock.now += 9.9
    assert budget.late(regression=False) == ""
    clock.now += 0.2
    assert "for settling UNKNOWN first looks" in budget.late(regression=False)


def test_a_regression_past_its_own_time_is_not_reached() -> None:
    clock, budget = budget_on_a_fake_clock(confirm_s=10.0, settle_s=30.0)
    assert budget.late(regression=True) == ""
    clock.now += 10.0
    assert "for confirming first-look regressions" in budget.late(regression=True)
    # Settling starts its clock now, whatever the regressions spent.
    assert budget.late(regression=False) == ""


def test_without_regressions_settling_counts_from_the_start_of_the_rounds() -> None:
    # Worker start-up is inside the time of whichever kind comes first.
    clock, budget = budget_on_a_fake_clock(confirm_s=10.0, settle_s=10.0)
    clock.now += 10.5
    assert "for settling UNKNOWN first looks" in budget.late(regression=False)


def test_settle_time_zero_reaches_no_unknown_first_look() -> None:
    _clock, budget = budget_on_a_fake_clock(confirm_s=10.0, settle_s=0.0)
    assert budget.late(regression=True) == ""
    assert budget.late(regression=False) != ""


def test_a_regression_after_settling_began_is_refused() -> None:
    # Its rounds would spend settling's time again: the caller must order regressions first.
    _clock, budget = budget_on_a_fake_clock(confirm_s=10.0, settle_s=10.0)
    assert budget.late(regression=False) == ""
    with pytest.raises(ValueError, match="before settling"):
        budget.late(regression=True)
