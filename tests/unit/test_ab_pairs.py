"""Window pairs of ``pytest-roofline ab``: disturbed pairs dropped, the stop rule, the analysis.

Windows are built here (seeded samples, scripted canary judgements); no worker runs.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from pytest_roofline.ab import ab_windows, analyse_windows, load_paired
from pytest_roofline.ab.analysis import AssessedStop, ab_plan, agreed_regression, paired_margin
from pytest_roofline.ab.pairs import DROP_FLOORS, pair_severity, paired_windows, pairs_to_drop
from pytest_roofline.ab.workers import CollectInfo, Side, TestWindows, Window, pair_order
from pytest_roofline.config.settings import GateSettings
from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.measure.canary import WindowJudgement
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.results import TestResult
from pytest_roofline.stats import paired
from pytest_roofline.stats.sequential import SequentialPlan
from pytest_roofline.store import RunRecord, Store

NODEID = "t.py::test_kernel"
FLOORS = {"python": 1.2, "stream": 1.2}


def judgement(state: str, worst: float = 1.0) -> WindowJudgement:
    ratios = {"python": worst, "stream": 1.0}
    return WindowJudgement(
        test_id=NODEID,
        state=state,  # type: ignore[arg-type]
        ratios_before=ratios,
        ratios_after=ratios,
        floors=FLOORS,
        disturbed_kinds=("python",) if state == "disturbed" else (),
        opened_at_s=0.0,
        closed_at_s=0.1,
    )


QUIET = judgement("quiet")


# ------------------------------------------------------------------------------ dropping pairs
def test_a_pair_is_disturbed_when_either_sides_window_is() -> None:
    assert pair_severity(QUIET, QUIET) is None
    assert pair_severity(None, None) is None  # canary off: nothing says the host moved
    assert pair_severity(judgement("unread"), QUIET) is None
    # Severity counts floors in log units: x2.4 against a floor of x1.2 is log 2.4 / log 1.2.
    assert pair_severity(QUIET, judgement("disturbed", 2.4)) == pytest.approx(4.8017, abs=1e-4)
    assert pair_severity(judgement("disturbed", 1.8), judgement("disturbed", 3.6)) == (
        pytest.approx(math.log(3.6) / math.log(1.2))
    )


def test_a_window_just_past_its_floor_does_not_cost_its_pair() -> None:
    # Twelve looks a pair (two sides, before and after, three kinds): one floor flagged 36% of
    # quiet A/A pairs. Only a reading past two floors (x1.44 for a floor of x1.2) drops one.
    just_past = judgement("disturbed", 1.3)
    assert just_past.disturbed  # still reported as disturbed
    assert pair_severity(QUIET, just_past) is None
    assert pair_severity(just_past, judgement("disturbed", 1.43)) is None
    assert pair_severity(QUIET, judgement("disturbed", 1.45)) == pytest.approx(
        math.log(1.45) / math.log(1.2)
    )
    assert DROP_FLOORS == 2.0


def test_a_disturbed_window_without_figures_counts_as_the_worst() -> None:
    bare = WindowJudgement(
        test_id=NODEID,
        state="disturbed",
        ratios_before={},
        ratios_after={},
        floors={},
        disturbed_kinds=("gemm",),
        opened_at_s=0.0,
        closed_at_s=0.1,
    )
    assert pair_severity(QUIET, bare) == math.inf


def test_every_disturbed_pair_is_dropped_while_enough_pairs_remain() -> None:
    assert pairs_to_drop([None, 1.5, None, None, None, 2.0, None, None], 4) == (1, 5)


def test_the_most_disturbed_pairs_go_first_and_min_pairs_always_remain() -> None:
    severity = [1.5, 3.0, None, 2.0, None, 1.2]
    assert pairs_to_drop(severity, 4) == (1, 3)
    assert pairs_to_drop(severity, 5) == (1,)
    assert pairs_to_drop(severity, 6) == ()
    assert pairs_to_drop(severity, 0) == (0, 1, 3, 5)
    # Equal severity: the earlier pair goes, the later stays.
    assert pairs_to_drop([2.0, None, 2.0, None, None], 4) == (0,)


def test_min_pairs_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="min_pairs"):
        pairs_to_drop([None], -1)


def test_paired_windows_name_the_disturbed_side() -> None:
    pairs = paired_windows(
        [QUIET, judgement("disturbed", 2.0), None], [judgement("disturbed", 2.0), QUIET, None]
    )
    assert [p.state for p in pairs] == ["disturbed_b", "disturbed_a", "unread"]


# ------------------------------------------------------------------------------- the stop rule
def test_rounds_and_budget_map_to_pairs_and_windows() -> None:
    w = ab_windows(8, 1.0)
    assert (w.min_pairs, w.max_pairs, w.look_every, w.window_s) == (4, 8, 2, 0.125)
    small = ab_windows(3, 0.3)
    assert (small.min_pairs, small.max_pairs) == (3, 3)


def test_the_stop_rule_waits_only_for_quantiles_the_windows_can_assess() -> None:
    gate = GateSettings()
    margins = {name: paired_margin(gate, name) for name in ("p50", "p95", "p99")}
    rule = AssessedStop(margins, ab_plan(gate, ab_windows(8, 1.0), 1), alpha=gate.alpha)
    rng = np.random.default_rng(3)
    # 60 samples a window: p95 (20 a window) is assessed, p99 (100) is not.
    base = [1e-3 * rng.lognormal(0, 0.02, 60) for _ in range(4)]
    cand = [1e-3 * rng.lognormal(0, 0.02, 60) for _ in range(4)]
    assert set(rule.assessed(base, cand)) == {"p50", "p95"}
    # Unchanged and quiet: p50 and p95 are SAME at the first look, so the test stops.
    assert rule(NODEID, base, cand) is False
    # A 3x slower candidate is DIFFERENT at once.
    assert rule(NODEID, base, [3 * c for c in cand]) is False
    # Noisy pairs leave it UNKNOWN: more pairs.
    noisy = [1e-3 * rng.lognormal(rng.normal(0, 0.3), 0.02, 60) for _ in range(4)]
    assert rule(NODEID, base, noisy) is True


# -------------------------------------------------------------------------------- the analysis
def payload(samples: np.ndarray) -> dict[str, object]:
    sample_set = SampleSet(samples, 1, 1, 0.0, "budget", float(samples.sum()), False)
    result = TestResult(
        NODEID, None, ("team",), "revert", SlaSpec(), None, Measurement(sample_set, None, (), None)
    )
    return json.loads(json.dumps(result.to_dict(include_samples=False)))  # type: ignore[no-any-return]


def windows(
    effect: float,
    pairs: int,
    disturbed: dict[int, Side],
    seed: int = 0,
    *,
    worker_pairs: int = 1,
    process_effect: dict[int, float] | None = None,
) -> tuple[Window, ...]:
    """``pairs`` ABBA pairs sharing a per-pair machine speed; ``disturbed`` pair -> the side whose
    window ran 4x slower and whose canary said so. Pair ``p`` runs on worker pair
    ``p % worker_pairs``, whose candidate process runs ``process_effect[k]`` slower (a
    process's lifelong draw) instead of ``effect`` when given."""
    rng = np.random.default_rng(seed)
    out = []
    for pair in range(pairs):
        speed = rng.lognormal(0, 0.1)
        worker_pair = pair % worker_pairs
        change = (process_effect or {}).get(worker_pair, effect)
        for side in pair_order(pair):
            slow = disturbed.get(pair) == side
            samples = speed * (change if side == "candidate" else 1.0) * 1e-3
            samples = samples * (4.0 if slow else 1.0) * rng.lognormal(0, 0.02, 60)
            out.append(
                Window(
                    side=side, nodeid=NODEID, pair=pair, index=pair, samples_s=samples,
                    batch_size=1, stop_reason="budget", sampling_s=0.06, warmup_s=0.01,
                    wall_s=0.08, started_ns=0, finished_ns=0, cpu_share=None,
                    result=payload(samples),
                    canary=judgement("disturbed", 4.0) if slow else QUIET, canary_s=0.001,
                    worker_pair=worker_pair,
                )
            )  # fmt: skip
    return tuple(out)


def collect(side: Side, commit: str) -> CollectInfo:
    return CollectInfo(
        side=side, pid=1, python="python", rootdir="/r", ids=(NODEID,), measured=(NODEID,),
        budgets_s={}, probe={}, startup_s=1.0, tags={"git_commit": commit, "python": "3.11"},
        target={}, machine="m",
    )  # fmt: skip


def pair_windows(
    pair: int, base: np.ndarray, cand: np.ndarray, worker_pair: int = 0
) -> list[Window]:
    """Window pair ``pair`` of :data:`NODEID` as ``ab`` runs it (ABBA order), on ``worker_pair``."""
    return [
        Window(
            side=side, nodeid=NODEID, pair=pair, index=pair, samples_s=samples,
            batch_size=1, stop_reason="budget", sampling_s=0.06, warmup_s=0.01,
            wall_s=0.08, started_ns=0, finished_ns=0, cpu_share=None,
            result=payload(samples), canary=None, canary_s=0.0, worker_pair=worker_pair,
        )
        for side in pair_order(pair)
        for samples in (base if side == "baseline" else cand,)
    ]  # fmt: skip


def decide_one(
    test: TestWindows, plan: SequentialPlan, *, max_pairs: int, worker_pairs: int = 1
) -> tuple[str, str]:
    """``ab``'s decision on one test's windows, and its reasons joined."""
    document, _ = analyse_windows(
        {NODEID: test},
        baseline=collect("baseline", "aaa"),
        candidate=collect("candidate", "bbb"),
        plan=plan,
        gate=GateSettings(),
        started=1.0,
        finished=2.0,
        max_pairs=max_pairs,
        worker_pairs=worker_pairs,
    )
    (record,) = document.to_json()["tests"]  # type: ignore[misc]
    return str(record["decision"]), " ".join(record["reasons"])


def analyse(test: TestWindows, worker_pairs: int = 1) -> tuple[dict[str, object], list[object]]:
    gate = GateSettings()
    document, stored = analyse_windows(
        {NODEID: test},
        baseline=collect("baseline", "aaa"),
        candidate=collect("candidate", "bbb"),
        plan=ab_plan(gate, ab_windows(8, 1.0), 1),
        gate=gate,
        baseline_label="main",
        started=1.0,
        finished=2.0,
        max_pairs=8,
        worker_pairs=worker_pairs,
    )
    return document.to_json(), list(stored)


def test_a_pair_disturbed_on_one_side_is_left_out_of_the_comparison_and_counted(
    tmp_path: object,
) -> None:
    # Unchanged code; pair 2's candidate window ran 4x slower while its canary read disturbed.
    all_windows = windows(1.0, 8, {2: "candidate"})
    kept = TestWindows(NODEID, all_windows, pairs=8, stop="max_pairs", wall_s=1.0, dropped=(2,))
    document, _ = analyse(kept)
    (test,) = document["tests"]  # type: ignore[misc]
    assert test["paired"]["rounds"] == 7 and test["paired"]["pairs"] == 8
    assert test["paired"]["pairs_dropped"] == 1
    assert test["paired"]["canary"]["disturbed_b"] == 1
    assert test["paired"]["canary"]["quiet"] == 7
    # The kept pairs' orders: pair 2 (baseline first) is gone, so one fewer AB than BA.
    assert test["paired"]["order"] == ["AB", "BA", "BA", "AB", "BA", "AB", "BA"]
    assert test["paired"]["worker_pair"] == [0] * 7
    assert all(r < 1.2 for r in test["paired"]["ratios"]["p50"])
    assert test["change"]["p50"]["ratio"] == pytest.approx(1.0, abs=0.03)
    assert document["run"]["rounds"] == 8  # type: ignore[index]
    # Without dropping, the disturbed pair's x4 is one of the per-pair ratios.
    everything = TestWindows(NODEID, all_windows, pairs=8, stop="max_pairs", wall_s=1.0)
    document, _ = analyse(everything)
    (test,) = document["tests"]  # type: ignore[misc]
    assert max(test["paired"]["ratios"]["p50"]) > 3


def test_the_stored_run_splits_back_into_the_kept_pairs(tmp_path: object) -> None:
    from pathlib import Path

    test = TestWindows(
        NODEID, windows(1.5, 6, {1: "baseline"}), pairs=6, stop="decided", wall_s=1.0, dropped=(1,)
    )
    document, stored = analyse(test)
    assert document["decision"] == "rollback"
    record = RunRecord("ab", 1.0, 2.0, {}, {}, "m", design="paired")
    with Store.open(Path(str(tmp_path)) / "s.sqlite", create=True) as store:
        run_id = store.save_run(record, stored)  # type: ignore[arg-type]
        samples = load_paired(store, run_id)[NODEID]
    assert len(samples.baseline) == len(samples.candidate) == 5
    base, cand = test.kept
    assert all(np.array_equal(a, b) for a, b in zip(samples.baseline, base, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(samples.candidate, cand, strict=True))


def test_dropped_pairs_are_replaced_up_to_half_of_max_pairs_by_default() -> None:
    from pytest_roofline.ab.workers import WindowSettings

    assert WindowSettings(max_pairs=8).replacement_limit == 4
    assert WindowSettings(max_pairs=16, max_replacements=2).replacement_limit == 2
    assert WindowSettings(max_pairs=8, drop_disturbed=False).replacement_limit == 0
    with pytest.raises(ValueError, match="max_replacements"):
        WindowSettings(max_replacements=-1)


# ------------------------------------------------------------------ pairs of worker processes
def measured(
    effect: float, pairs: int, seed: int, *, stop: str = "decided", **processes: Any
) -> TestWindows:
    return TestWindows(
        NODEID,
        windows(effect, pairs, {}, seed=seed, worker_pairs=3, **processes),
        pairs=pairs,
        stop=stop,  # type: ignore[arg-type]
        wall_s=1.0,
    )


def decided(test: TestWindows) -> tuple[dict[str, Any], str]:
    """The test's record measured on three pairs of workers in turn, and its reasons joined."""
    document, _ = analyse(test, worker_pairs=3)
    (record,) = document["tests"]  # type: ignore[misc]
    return record, " ".join(record["reasons"])


def test_a_regression_every_pair_of_workers_finds_rolls_back() -> None:
    test, reasons = decided(measured(1.5, 6, 0))
    confirmation = test["confirmation"]
    assert (test["decision"], confirmation["state"], confirmation["pairs"]) == (
        "rollback", "confirmed", 6,
    )  # fmt: skip
    assert "found by each of the 3 pairs of worker processes" in reasons
    assert "p50 by worker pair: x1.499, x1.502, x1.501 (each needs x1.025)" in reasons
    assert test["paired"]["worker_pair"] == [0, 1, 2, 0, 1, 2]


def test_a_regression_one_process_carries_escalates_for_the_spread_between_pairs() -> None:
    # One candidate process ran the test 1.3x slower for its whole life and the others 1.08x
    # (each pair past its x1.025): the pooled p50 is DIFFERENT, but the worker pairs read apart
    # far beyond what their window pairs spread, so it does not stand.
    test, reasons = decided(
        measured(1.0, 12, 5, stop="max_pairs", process_effect={0: 1.3, 1: 1.08, 2: 1.08})
    )
    assert test["change"]["p50"]["outcome"] == "different"
    assert (test["decision"], test["confirmation"]["state"]) == ("escalate", "inconclusive")
    assert "but not beyond the spread between the 3 pairs of worker processes" in reasons
    assert "p50 with the worker pairs' spread (variance x" in reasons


def test_a_regression_one_pair_of_workers_does_not_find_escalates() -> None:
    # Two pairs' candidate processes ran the unchanged test 1.5x slower for their whole life; the
    # third pair's did not. The pooled pairs establish a regression; the third pair disagrees.
    test, reasons = decided(measured(1.0, 8, 2, stop="max_pairs", process_effect={0: 1.5, 1: 1.5}))
    assert test["change"]["p50"]["outcome"] == "different"  # what the pooled pairs say
    confirmation = test["confirmation"]
    assert (test["decision"], confirmation["state"]) == ("escalate", "inconclusive")
    assert "but not by every one of the 3 pairs of worker processes" in reasons
    assert "the processes differ, not necessarily the code" in reasons


def test_a_pair_of_workers_that_kept_no_window_pair_cannot_agree() -> None:
    # Four pairs on three worker pairs (1, 2, 3, 1); pair 3's only window pair was dropped.
    test = TestWindows(
        NODEID,
        windows(1.5, 4, {2: "candidate"}, worker_pairs=3),
        pairs=4,
        stop="max_pairs",
        wall_s=1.0,
        dropped=(2,),
    )
    assert test.kept_worker_pairs == (0, 1, 0)
    record, reasons = decided(test)
    assert record["decision"] == "escalate"
    assert "x1.5" in reasons and "none kept" in reasons


def test_with_one_pair_of_workers_the_pooled_comparison_decides() -> None:
    test = TestWindows(NODEID, windows(1.5, 6, {}), pairs=6, stop="decided", wall_s=1.0)
    document, _ = analyse(test, worker_pairs=1)
    (record,) = document["tests"]  # type: ignore[misc]
    assert record["decision"] == "rollback"
    assert record.get("confirmation") is None


def test_an_unchanged_test_needs_no_agreement() -> None:
    gate = GateSettings()
    margins = {name: paired_margin(gate, name) for name in ("p50", "p95", "p99")}
    same = measured(1.0, 8, 4)
    look = {"p50": paired.compare_paired(*same.kept, 0.5, delta=margins["p50"], alpha=0.05)}
    assert look["p50"].comparison.outcome != "different"
    plan = ab_plan(gate, ab_windows(8, 1.0), 1)
    assert agreed_regression(same, look, 3, margins, "ab", plan=plan, alpha=gate.alpha) is None


def test_the_stop_rule_goes_on_while_a_pair_of_workers_does_not_find_the_regression() -> None:
    gate = GateSettings()
    margins = {name: paired_margin(gate, name) for name in ("p50",)}
    rule = AssessedStop(margins, ab_plan(gate, ab_windows(16, 1.0), 1), alpha=gate.alpha,
                        worker_pairs=3)  # fmt: skip
    everywhere = measured(1.5, 8, 5)
    base, cand = everywhere.kept
    assert rule(NODEID, base, cand, everywhere.kept_worker_pairs) is False  # decided
    biased = measured(1.0, 8, 6, process_effect={0: 1.6, 1: 1.6})
    base, cand = biased.kept
    groups = biased.kept_worker_pairs
    found = paired.compare_paired(base, cand, 0.5, delta=margins["p50"], alpha=gate.alpha)
    assert found.comparison.ratio > 1.2  # the pooled pairs see a regression...
    assert rule(NODEID, base, cand, groups) is True  # ...that pair 3 does not: more pairs


@pytest.mark.parametrize(("dropped", "busy"), [((0, 3, 6, 9), True), ((0,), False)])
def test_an_unknown_test_on_a_busy_host_says_so(dropped: tuple[int, ...], busy: bool) -> None:
    """Unchanged code whose window pairs spread too widely to be called SAME escalates at the
    cap; with a third or more of its pairs dropped by the canary, its reason says the host was
    busy (stop 42: under the bursty neighbour such reasons said only UNKNOWN)."""
    rng = np.random.default_rng(42)
    all_windows = [
        window
        for pair in range(12)
        for window in pair_windows(
            pair,
            1e-3 * rng.lognormal(0, 0.02, 60),
            1e-3 * rng.lognormal(rng.normal(0, 0.15), 0.02, 60),
        )
    ]
    test = TestWindows(
        NODEID, tuple(all_windows), pairs=12, stop="max_pairs", wall_s=1.0, dropped=dropped
    )
    gate = GateSettings()
    decision, reasons = decide_one(test, ab_plan(gate, ab_windows(12, 1.0), 1), max_pairs=12)
    assert decision == "escalate", reasons
    assert "UNKNOWN" in reasons
    host = f"the host was busy: the host canary dropped {len(dropped)} of 12 window pairs"
    assert (host in reasons) is busy, reasons
