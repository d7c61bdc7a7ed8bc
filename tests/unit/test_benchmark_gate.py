"""The gate's side of pytest-benchmark adoption: explicit thresholds, summary-only history, imported tags."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_roofline.config.settings import DEFAULT_LAYERS, GateSettings
from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.gate.confirm import replicated
from pytest_roofline.gate.evidence import (
    BaselineEntry,
    Confirmation,
    EvidenceContext,
    HostCheck,
    ReplayOutcome,
    evaluate,
    margins,
    should_replay,
)
from pytest_roofline.gate.imported import comparable_tags
from pytest_roofline.gate.policy import decide_test
from pytest_roofline.gate.run import BaselineFacts, baseline_entries, evidence_context
from pytest_roofline.gate.thresholds import exceeds_threshold
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.results import TestResult
from pytest_roofline.store import Baseline, RunRecord, StoredResult, StoredRun
from pytest_roofline.store.summary_only import summary_only_quantiles
from tests.unit.test_policy import comparison, evidence


def result(nodeid: str, data: np.ndarray) -> TestResult:
    sample_set = SampleSet(data, 1, 1, 0.0, "budget", float(data.sum()), False)
    return TestResult(
        nodeid, None, ("team",), "revert", SlaSpec(), None, Measurement(sample_set, None, (), None)
    )


def quiet(rng: np.random.Generator, scale: float, n: int = 2000) -> np.ndarray:
    return scale * rng.lognormal(0.0, 0.02, size=n)


# --------------------------------------------------------------------------- the policy rule
# +15% on p50, real (interval above 1, significant across the session), and SAME for the gate:
# the interval lies below its +35% margin.
REAL_15 = comparison("ok", 1.15, 1.12, 1.18, p_adjusted=1e-6, quantile=0.5, delta=0.35)
AB_COMMAND = "pytest-roofline ab --baseline=abc123 -- t.py::k"


def paired(state: str, *, outcome: str, ratio: float, low: float, high: float) -> Confirmation:
    """Paired rounds against the baseline's commit that judged p50 against +10%."""
    verdict = {"different": "regression", "same": "ok", "unknown": "suspect"}[outcome]
    found = comparison(verdict, ratio, low, high, p_adjusted=1e-6, quantile=0.5, delta=0.10)
    return Confirmation(state, f"paired rounds: p50 {outcome.upper()}", {"p50": found})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "decision", "reason"),
    [
        # The gate alone ships it ...
        ({"comparisons": {"p50": REAL_15}}, "ship", "p50"),
        # ... and an explicit +10% threshold does not roll it back on two runs alone: between two
        # runs an unchanged test's p50 moved past +10% and stayed there in a fresh process (8 of
        # 240 A/A test-runs, stop 47). It escalates, naming the command that settles it ...
        (
            {
                "comparisons": {"p50": REAL_15},
                "fail_thresholds": {"p50": 0.10},
                "confirmation": Confirmation(
                    "unavailable", "paired confirmation is off (--roofline-confirm=never)",
                    command=AB_COMMAND,
                ),
            },
            "escalate",
            "p50 x1.150 [1.120, 1.180] is above the explicit threshold +10% (--roofline-fail), but "
            "no paired rounds compared it with the baseline's commit (paired confirmation is off "
            "(--roofline-confirm=never)): between two runs a shift of the host or the process is "
            f"as likely as a change of the code at that size; settle it with {AB_COMMAND}",
        ),
        # ... as it does when a replay reproduced it in the same process.
        (
            {
                "comparisons": {"p50": REAL_15},
                "fail_thresholds": {"p50": 0.10},
                "replay": ReplayOutcome(True, 1, True, {"p50": (1.16,)}),
            },
            "escalate",
            "no paired rounds compared it with the baseline's commit",
        ),
        # Paired rounds judged against the threshold decide: past it, a rollback ...
        (
            {
                "comparisons": {"p50": REAL_15},
                "fail_thresholds": {"p50": 0.10},
                "confirmation": paired("confirmed", outcome="different", ratio=1.16, low=1.12, high=1.2),
            },
            "rollback",
            "p50 x1.150 [1.120, 1.180] is above the explicit threshold +10% (--roofline-fail), "
            "confirmed by paired rounds against the baseline (paired x1.160 [1.120, 1.200])",
        ),
        # ... ruled out, a ship with the figures ...
        (
            {
                "comparisons": {"p50": REAL_15},
                "fail_thresholds": {"p50": 0.10},
                "confirmation": paired("overturned", outcome="same", ratio=1.01, low=0.98, high=1.04),
            },
            "ship",
            "p50: a first look of x1.150 past the explicit threshold +10% was not confirmed: "
            "paired rounds against the baseline's commit rule it out (paired x1.010 [0.980, 1.040])",
        ),
        # ... also where the rounds judged it against min_effect (a shifted SAME) and could not
        # rule +5% out (the example suite, stop 48: the same figures) ...
        (
            {
                "comparisons": {"p50": REAL_15},
                "fail_thresholds": {"p50": 0.10},
                "confirmation": paired("inconclusive", outcome="unknown", ratio=1.015, low=0.928, high=1.051),
            },
            "ship",
            "rule it out (paired x1.015 [0.928, 1.051])",
        ),
        # ... neither, an escalation.
        (
            {
                "comparisons": {"p50": REAL_15},
                "fail_thresholds": {"p50": 0.10},
                "confirmation": paired("inconclusive", outcome="unknown", ratio=1.08, low=0.99, high=1.18),
            },
            "escalate",
            "neither confirm nor rule it out (paired x1.080 [0.990, 1.180]",
        ),
        # The same clean commit: nothing in the code to attribute it to.
        (
            {"comparisons": {"p50": REAL_15}, "fail_thresholds": {"p50": 0.10}, "same_code": True},
            "escalate",
            "the baseline and this run are the same commit with no uncommitted changes",
        ),
        # ab's own comparisons are paired: past the threshold rolls back there.
        (
            {"comparisons": {"p50": REAL_15}, "fail_thresholds": {"p50": 0.10}, "design": "paired"},
            "rollback",
            "p50 x1.150 [1.120, 1.180] is above the explicit threshold +10% (--roofline-fail)",
        ),
        # Not a +20% threshold, nor a threshold on another quantile.
        ({"comparisons": {"p50": REAL_15}, "fail_thresholds": {"p50": 0.20}}, "ship", "p50"),
        ({"comparisons": {"p50": REAL_15}, "fail_thresholds": {"p95": 0.10}}, "ship", "p50"),
        # Seen on a disturbed host: not established, whatever the rounds would say.
        (
            {
                "comparisons": {"p50": REAL_15},
                "fail_thresholds": {"p50": 0.10},
                "design": "paired",
                "host": HostCheck("disturbed", "python canary x1.5"),
            },
            "escalate",
            "the host was disturbed during the test (python canary x1.5)",
        ),
    ],
    ids=[
        "gate-alone",
        "two-runs-alone",
        "replayed",
        "paired-past",
        "paired-ruled-out",
        "paired-ruled-out-at-the-threshold",
        "paired-unknown",
        "same-commit",
        "ab",
        "threshold-20",
        "other-quantile",
        "disturbed-host",
    ],
)  # fmt: skip
def test_an_explicit_threshold_rolls_back_only_a_real_change_above_it_that_paired_rounds_attribute(
    overrides: dict[str, object], decision: str, reason: str
) -> None:
    decided = decide_test(evidence(**overrides))
    assert decided.decision == decision, decided.reasons
    assert any(reason in r for r in decided.reasons), decided.reasons


def test_paired_rounds_judged_against_a_wider_floor_do_not_rule_out_the_threshold() -> None:
    # A label too noisy to gate is judged in paired rounds against the process floor (+18% at
    # p50, gate.confirm.first_look_margins): ruling that out leaves +10% open.
    wide = comparison("ok", 1.12, 1.05, 1.17, p_adjusted=1e-6, quantile=0.5, delta=0.18)
    decided = decide_test(
        evidence(
            comparisons={"p50": REAL_15},
            fail_thresholds={"p50": 0.10},
            confirmation=Confirmation("overturned", "paired rounds: p50 SAME", {"p50": wide}),
        )
    )
    assert decided.decision == "escalate"
    assert any(
        "rule out +18% (paired x1.120 [1.050, 1.170]), not the threshold" in r
        for r in decided.reasons
    )


def test_a_paired_change_below_the_threshold_is_the_gates_own_rule_or_allowed() -> None:
    # Paired rounds call DIFFERENT beyond min_effect (+5%). A shifted SAME first look (its
    # interval beyond min_effect, inside the label's wide margin) is asked of them without a
    # threshold too, and the gate's own rule rolls back what they establish: a paired +6% is
    # that rollback, never one "above the explicit threshold".
    small = comparison("regression", 1.06, 1.04, 1.08, p_adjusted=1e-6, quantile=0.5, delta=0.05)
    confirmed = Confirmation("confirmed", "paired rounds: p50 DIFFERENT", {"p50": small})
    shifted = comparison(
        "ok", 1.15, 1.12, 1.18, p_adjusted=1e-6, quantile=0.5, delta=0.35, margin_source="history"
    )
    gate_rule = decide_test(
        evidence(
            comparisons={"p50": shifted}, fail_thresholds={"p50": 0.10}, confirmation=confirmed
        )
    )
    assert gate_rule.decision == "rollback", gate_rule.reasons
    assert any("beyond min_effect, confirmed by paired rounds" in r for r in gate_rule.reasons)
    assert not any("explicit threshold" in r for r in gate_rule.reasons), gate_rule.reasons
    # One asked only for the threshold (its interval reaches down to +3%): what the rounds put
    # below the threshold is what the user allows.
    asked = comparison(
        "ok", 1.15, 1.03, 1.22, p_adjusted=1e-6, quantile=0.5, delta=0.35, margin_source="history"
    )
    allowed = decide_test(
        evidence(comparisons={"p50": asked}, fail_thresholds={"p50": 0.10}, confirmation=confirmed)
    )
    assert allowed.decision == "ship", allowed.reasons
    assert any(
        "past the explicit threshold +10%: paired rounds against the baseline's commit find "
        "paired x1.060 [1.040, 1.080], below it" in r
        for r in allowed.reasons
    ), allowed.reasons


def test_a_threshold_hit_the_pairs_of_worker_processes_disagree_on_escalates() -> None:
    # The first pair found p50 x1.15 past +10%, the second ruled it out: the comparisons kept
    # are the second's, which must not ship the test as "ruled out".
    first = Confirmation(
        "confirmed", "paired rounds: p50 DIFFERENT",
        {"p50": comparison("regression", 1.15, 1.08, 1.2, p_adjusted=1e-6, quantile=0.5, delta=0.1)},
    )  # fmt: skip
    second = Confirmation(
        "overturned", "paired rounds: p50 SAME",
        {"p50": comparison("ok", 1.01, 0.97, 1.04, p_adjusted=0.5, quantile=0.5, delta=0.1)},
    )  # fmt: skip
    disputed = replicated(first, second)
    assert disputed.disputed
    decided = decide_test(
        evidence(comparisons={"p50": REAL_15}, fail_thresholds={"p50": 0.10}, confirmation=disputed)
    )
    assert decided.decision == "escalate", decided.reasons
    assert any("a second pair of worker processes did not find it" in r for r in decided.reasons)


def test_a_threshold_hit_the_rounds_did_not_reach_says_so() -> None:
    # Paired rounds ran, but not on this quantile (the time ran out, a window too short).
    other = Confirmation("overturned", "paired rounds: p95 SAME", {"p95": comparison("ok", 1.0)})
    decided = decide_test(
        evidence(comparisons={"p50": REAL_15}, fail_thresholds={"p50": 0.10}, confirmation=other)
    )
    assert decided.decision == "escalate"
    assert any(
        "paired rounds against the baseline's commit did not compare it (paired rounds: p95 SAME)"
        in r
        for r in decided.reasons
    ), decided.reasons


@pytest.mark.parametrize(
    "seen",
    [
        # Above the threshold but not real (the interval includes 1): noise.
        comparison("not detected", 1.15, 0.97, 1.4, p_adjusted=0.2, quantile=0.5),
        # Real within the test but not across the session (Bonferroni).
        comparison("not detected", 1.15, 1.02, 1.3, p_adjusted=0.3, quantile=0.5),
    ],
    ids=["not-real", "not-significant"],
)
def test_an_explicit_threshold_adds_nothing_for_a_change_that_is_not_real(seen: Any) -> None:
    plain = decide_test(evidence(comparisons={"p50": seen}))
    strict = decide_test(evidence(comparisons={"p50": seen}, fail_thresholds={"p50": 0.10}))
    assert strict.decision == plain.decision
    assert strict.reasons == plain.reasons
    assert not any("explicit threshold" in r for r in strict.reasons)


def test_an_explicit_threshold_does_not_double_count_a_regression_the_gate_found() -> None:
    regression = comparison("regression", 1.8, 1.7, 1.9, p_adjusted=1e-9, quantile=0.5)
    confirmed = Confirmation(
        "confirmed", "paired rounds: p50 DIFFERENT",
        {"p50": comparison("regression", 1.8, 1.7, 1.9, p_adjusted=1e-9, quantile=0.5)},
    )  # fmt: skip
    decided = decide_test(
        evidence(
            comparisons={"p50": regression}, fail_thresholds={"p50": 0.1}, confirmation=confirmed
        )
    )
    assert decided.decision == "rollback"
    assert len(decided.reasons) == 1 and "regressed" in decided.reasons[0]


def test_an_explicit_threshold_does_not_lower_the_x2_bar_without_paired_rounds() -> None:
    # Without paired rounds a two-run regression rolls back only past gate.max_margin (x2): a
    # threshold it exceeds changes nothing (it did until stop 47, and 8 of 240 unchanged
    # test-runs rolled back at p50 x1.19-x1.56 with --roofline-fail=p50:10%).
    regression = comparison("regression", 1.8, 1.7, 1.9, p_adjusted=1e-9, quantile=0.5)
    for thresholds in ({}, {"p95": 0.1}, {"p50": 0.1}, {"p50": 1.5}):
        decided = decide_test(evidence(comparisons={"p50": regression}, fail_thresholds=thresholds))
        assert decided.decision == "escalate", (thresholds, decided.reasons)
        assert any("below x2 (lower bound x1.700)" in r for r in decided.reasons), decided.reasons


def test_exceeds_threshold_needs_the_absolute_floor_too() -> None:
    tiny = comparison("not detected", 1.5, 1.3, 1.7, p_adjusted=1e-6, abs_change_s=5e-8)
    assert not exceeds_threshold(tiny, 0.1)
    assert exceeds_threshold(REAL_15, 0.1)


def test_a_real_change_above_the_threshold_is_not_replayed_and_escalates_end_to_end() -> None:
    rng = np.random.default_rng(11)
    entry = BaselineEntry(quiet(rng, 1e-3), None, {})
    slower = quiet(rng, 1.15e-3)  # +15%: under the no-history margin (+35% on p50)
    plain = EvidenceContext(replay=1, family_size=1)
    strict = EvidenceContext(replay=1, family_size=1, fail_thresholds={"p50": 0.10})
    # A same-process replay cannot attribute it: it is not spent on it.
    assert not should_replay(slower, entry, plain, "t::a")
    assert not should_replay(slower, entry, strict, "t::a")
    first = evaluate(result("t::a", slower), entry, strict, target=None)
    decided = decide_test(first)
    assert decided.decision == "escalate"
    assert any("above the explicit threshold +10%" in r for r in decided.reasons), decided.reasons
    assert "a paired confirmation against the baseline's commit" in decided.missing_evidence
    unchanged = evaluate(result("t::a", quiet(rng, 1e-3)), entry, strict, target=None)
    assert decide_test(unchanged).decision == "ship"


# --------------------------------------------------------------------------- summary-only history
def stored(nodeid: str, data: np.ndarray, *, median_s: float | None = None) -> StoredResult:
    payload = result(nodeid, data).to_dict(include_samples=False)
    if median_s is not None:
        payload["summary_only"] = {"p50_s": median_s, "mean_s": median_s, "rounds": 10}
    return StoredResult(nodeid, payload, data)


def run(run_id: int, *results: StoredResult, summary: dict[str, object] | None = None) -> StoredRun:
    record = RunRecord("autosave", float(run_id), float(run_id), {}, {}, "m", summary=summary or {})
    return StoredRun(run_id, record, {r.nodeid: r for r in results})


EMPTY = np.empty(0)


def test_a_summary_only_history_run_counts_with_its_median_in_the_p50_floor() -> None:
    rng = np.random.default_rng(5)
    latest = quiet(rng, 1e-3)
    # Medians that jump by x2 between runs: a noisy history raises the p50 margin only.
    medians = [1e-3, 2e-3, 1e-3, 2e-3, 1e-3, 2e-3]
    history = tuple(EMPTY for _ in medians)
    entry = BaselineEntry(
        latest, None, {}, history, history_quantiles_s=tuple({"p50": m} for m in medians)
    )
    context = EvidenceContext()
    without = margins(BaselineEntry(latest, None, {}), context)
    with_history = margins(entry, context)
    assert with_history["p50"].margin > without["p50"].margin + 0.2
    assert with_history["p95"].margin == pytest.approx(without["p95"].margin)


def test_a_summary_only_latest_run_is_no_sample_baseline_but_its_medians_are_history() -> None:
    rng = np.random.default_rng(6)
    older = run(1, stored("t::a", EMPTY, median_s=1e-3), stored("t::b", quiet(rng, 1e-3)))
    latest = run(2, stored("t::a", quiet(rng, 1e-3)), stored("t::b", EMPTY, median_s=1e-3))
    entries = baseline_entries(Baseline("autosave", latest, (older,)))
    assert set(entries) == {"t::a"}  # t::b's latest result has no samples
    assert entries["t::a"].history_quantiles_s == ({"p50": 1e-3},)
    assert summary_only_quantiles(older.results["t::a"].payload) == {"p50": 1e-3}
    assert summary_only_quantiles(older.results["t::b"].payload) == {}


def test_tags_an_imported_baseline_never_recorded_are_unknown_not_changed() -> None:
    recorded = {"python": "3.11.7", "git_commit": "abc", "cpu": "EPYC"}
    imported = RunRecord(
        "autosave", 0.0, 0.0, recorded, {}, "m",
        summary={"imported_from": {"tool": "pytest-benchmark"}},
    )  # fmt: skip
    ours = RunRecord("autosave", 0.0, 0.0, dict(recorded), {}, "m")
    now = {"python": "3.11.7", "git_commit": "abc", "cpu": "EPYC", "numpy": "2.0", "target": "host"}
    assert comparable_tags(recorded, now, imported=True) == recorded
    assert comparable_tags(recorded, now, imported=False) == now

    def context(record: RunRecord) -> EvidenceContext:
        baseline = Baseline("autosave", StoredRun(1, record, {}), ())
        return evidence_context(
            GateSettings(), family_size=1, baseline=BaselineFacts.of(baseline), tags=now,
            layers=DEFAULT_LAYERS, target=None, machine="m",
        )  # fmt: skip

    assert BaselineFacts.of(Baseline("autosave", StoredRun(1, imported, {}), ())).imported
    assert context(imported).layers_changed == ()
    assert context(ours).layers_changed == ("runtime", "hardware")
