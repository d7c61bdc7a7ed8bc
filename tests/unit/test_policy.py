"""The decision policy as a table: evidence in, decision and reasons out."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from pytest_roofline.gate.evidence import (
    Confirmation,
    FreshReplay,
    HostCheck,
    QualityOutcome,
    ReplayOutcome,
    SlaOutcome,
    TestEvidence,
)
from pytest_roofline.gate.policy import RunConcern, awaits_fresh_replay, decide_run, decide_test
from pytest_roofline.model.results import QuantileSummary
from pytest_roofline.roofline import BoundChange
from pytest_roofline.stats import (
    CommonMode,
    ConfidenceInterval,
    Drift,
    QuantileComparison,
    gate_margin,
)
from pytest_roofline.stats.threeway import outcome_of_verdict

SUMMARY = QuantileSummary(500, 1e-3, 1.2e-3, 1.3e-3, 1.05e-3, 0.9e-3, 1.5e-3)


def comparison(
    verdict: str = "ok", ratio: float = 1.0, low: float = 0.95, high: float = 1.04, **kw: Any
) -> QuantileComparison:
    fields: dict[str, Any] = dict(
        quantile=0.95, ratio=ratio, ci=ConfidenceInterval(low, high), p_value=0.5, p_adjusted=0.5,
        verdict=verdict, improvement=False, delta=0.37, mde=0.1, base_s=1e-3, cand_s=ratio * 1e-3,
        abs_change_s=(ratio - 1) * 1e-3, n_base=500, n_cand=500, n_eff_base=400.0, n_eff_cand=400.0,
        se_log=0.02, alpha=0.05, abs_floor_s=1e-7, common_mode=1.0, reason="why",
    )  # fmt: skip
    fields.update(kw)
    fields.setdefault("outcome", outcome_of_verdict(fields["verdict"]))
    return QuantileComparison(**fields)


MARGINS = {
    "p95": gate_margin(0.05, 0.37),
    "p99": gate_margin(0.1, 0.6),
    "p50": gate_margin(0.05, 0.35),
}
TOO_NOISY = gate_margin(0.05, 1.6)


def evidence(**overrides: Any) -> TestEvidence:
    fields: dict[str, Any] = dict(
        nodeid="t.py::k", owners=("kernels-team",), rollback="revert PR 7", summary=SUMMARY,
        baseline_summary=SUMMARY, comparisons={"p95": comparison(), "p99": comparison(quantile=0.99)},
        mde={"p95": 0.1}, margins=MARGINS, replay=None, sla=(), point=None,
        baseline_point=None, bound_change=None, efficiency_ratio=None, drift=None, quality=(),
        missing_quality=(), precision_change=None, counter_completeness=0.7, cpu_share=0.98,
        needs_counters=False, batched=False, layers_changed=(), hardware_differs=None, family_size=10,
        history_runs=10,
    )  # fmt: skip
    fields.update(overrides)
    return TestEvidence(**fields)


REGRESSION = comparison("regression", 1.8, 1.7, 1.9)
REGRESSION_X26 = comparison("regression", 2.6, 2.2, 3.0)
P50_X25 = comparison("regression", 2.5, 2.2, 2.8, quantile=0.5, cand_s=2.5e-3)
P50_X3_5MS = comparison("regression", 3.0, 2.8, 3.2, quantile=0.5, base_s=5e-3 / 3, cand_s=5e-3)
SUSPECT = comparison("suspect", 1.5, 0.98, 2.0)
SHIFTED = comparison("ok", 1.33, 1.28, 1.36, margin_source="history")
REPRODUCED = ReplayOutcome(True, 1, True, {"p95": (1.8,)})
NOT_REPRODUCED = ReplayOutcome(True, 1, False, {"p95": (1.01,)})


@pytest.mark.parametrize(
    ("overrides", "decision", "reason"),
    [
        ({}, "ship", "p95"),
        ({"comparisons": {"p95": REGRESSION_X26}, "replay": REPRODUCED}, "rollback", "p95 regressed x2.600 [2.200, 3.000]"),
        # Without paired rounds a process of this VM can run 1.3-1.8x slower than the next, and
        # its replay reproduces that: below gate.max_margin an unconfirmed two-run slowdown
        # escalates, whatever the label's floor (stop 45: an unchanged 17 µs GEMM read p50 x1.776
        # [1.585, 1.893] against a 3-run floor of +29%, reproduced on replay, confirmation off).
        ({"comparisons": {"p95": REGRESSION}, "replay": REPRODUCED}, "escalate", "p95 regressed x1.800 [1.700, 1.900] (margin +37%, 1 ms -> 1.8 ms), but no paired rounds compared it with the baseline's commit: below x2 (lower bound x1.700) a shift between the two processes is as likely as any change"),
        # The bar is cleared against the label's level: stop 45's second A/A block rolled back
        # an unchanged decode at p50 x4.59 [2.305, 6.781] against a latest run that read x0.808
        # of its label's median run. A latest run slower than its label changes nothing.
        ({"comparisons": {"p50": comparison("regression", 4.59, 2.305, 6.781, quantile=0.5, base_s=286e-6, cand_s=1.32e-3)}, "replay": REPRODUCED, "history_runs": 3, "baseline_level": {"p50": 0.808}}, "escalate", "but no paired rounds compared it with the baseline's commit: below x2 (lower bound x2.305 against the baseline run, which read x0.808 of its label's median of recent runs: x1.862 against that median) a shift between the two processes is as likely as any change"),
        ({"comparisons": {"p50": comparison("regression", 4.59, 2.305, 6.781, quantile=0.5, base_s=286e-6, cand_s=1.32e-3)}, "replay": REPRODUCED, "history_runs": 3, "baseline_level": {"p50": 1.2}}, "rollback", "p50 regressed x4.590"),
        # The bar raised by waits for a CPU is cleared against the label's level too: x2.6 x 0.8
        # = x2.08 clears x2 but not x2 x 1.25.
        ({"comparisons": {"p50": comparison("regression", 2.8, 2.6, 3.0, quantile=0.5, base_s=5e-3 / 2.8, cand_s=5e-3)}, "replay": REPRODUCED, "cpu_share": 0.8, "involuntary_switches": 80, "host_wall_s": 0.5, "other_cpu_share": 0.6, "baseline_level": {"p50": 0.8}}, "escalate", "so without paired rounds a rollback needs a lower bound of x2.500 or more against its label's median of recent runs (lower bound x2.080)"),
        ({"comparisons": {"p50": comparison("regression", 4.59, 2.305, 6.781, quantile=0.5, base_s=286e-6, cand_s=1.32e-3)}, "replay": REPRODUCED, "history_runs": 3, "baseline_level": {"p50": 0.808}, "confirmation": Confirmation("confirmed", "", {"p50": comparison("regression", 4.2, 3.9, 4.5, quantile=0.5)})}, "rollback", "confirmed by paired rounds"),
        ({"comparisons": {"p50": comparison("regression", 1.776, 1.585, 1.893, quantile=0.5, base_s=16.9e-6, cand_s=30e-6)}, "replay": REPRODUCED, "history_runs": 3, "confirmation": Confirmation("unavailable", "paired confirmation is off (--roofline-confirm=never)")}, "escalate", "but no paired rounds compared it with the baseline's commit (paired confirmation is off (--roofline-confirm=never)): below x2 (lower bound x1.585) a shift between the two processes is as likely as any change"),
        ({"comparisons": {"p95": REGRESSION_X26}}, "rollback", "p95 regressed"),  # replay off
        # A label of fewer than 3 runs: the floor is the default, so x2 is the bar.
        ({"comparisons": {"p95": REGRESSION}, "replay": REPRODUCED, "history_runs": 2}, "escalate", "the label has 2 run(s), fewer than 3: its noise floor for this test is the default, not measured: below x2 (lower bound x1.700)"),
        ({"comparisons": {"p95": REGRESSION}, "history_runs": 1, "confirmation": Confirmation("unavailable", "the baseline run had uncommitted changes", {}, command="pytest-roofline ab --baseline=abc -- 't.py::k'")}, "escalate", "settle it with pytest-roofline ab --baseline=abc"),
        ({"comparisons": {"p95": comparison("regression", 2.6, 2.2, 3.0)}, "replay": REPRODUCED, "history_runs": 1}, "rollback", "p95 regressed x2.600"),
        ({"comparisons": {"p95": REGRESSION_X26}, "replay": REPRODUCED, "history_runs": 3}, "rollback", "p95 regressed x2.600"),
        ({"comparisons": {"p95": REGRESSION}, "replay": NOT_REPRODUCED}, "escalate", "p95 regressed x1.800 [1.700, 1.900] (margin +37%, 1 ms -> 1.8 ms), but it did not reproduce on replay (replay p95 x1.010)"),
        ({"comparisons": {"p95": REGRESSION}, "replay": ReplayOutcome(True, 1, False, {})}, "escalate", "but it did not reproduce on replay"),
        # A replay as slow as the first look that still did not establish it (stop 44's demo: a
        # GEMM x4.08, its replay x4.097) says so, rather than "did not reproduce".
        ({"comparisons": {"p95": REGRESSION}, "replay": ReplayOutcome(True, 1, False, {"p95": (1.79,)})}, "escalate", "p95 regressed x1.800 [1.700, 1.900] (margin +37%, 1 ms -> 1.8 ms), but its replay, though as slow (replay p95 x1.790), did not establish it on its own samples"),
        ({"comparisons": {"p95": REGRESSION}, "replay": ReplayOutcome(True, 2, False, {"p95": (1.79, 1.2)})}, "escalate", "but it did not reproduce on replay (replay p95 x1.790, x1.200)"),
        ({"comparisons": {"p95": REGRESSION}, "replay": ReplayOutcome(False, 0, None)}, "escalate", "not yet confirmed"),
        ({"comparisons": {"p95": comparison("suspect", 1.5, 0.98, 2.0)}}, "escalate", "above the margin +37% but not established"),
        ({"comparisons": {"p99": comparison("not detected", 1.05, 0.9, 1.4, mde=0.4)}}, "escalate", "the smallest change detectable here is +40%"),
        ({"comparisons": {"p50": comparison("not detected", 1.05, 0.9, 1.4, quantile=0.5)}}, "escalate", "p50 x1.050 [0.900, 1.400]: UNKNOWN"),
        ({"comparisons": {"p95": comparison("not detected", 1.2, 0.9, 1.6)}, "margins": {**MARGINS, "p95": TOO_NOISY}}, "escalate", "too noisy to gate here: the label's history noise floor +160%"),
        ({"comparisons": {"p50": comparison("insufficient", math.nan, math.nan, math.nan, quantile=0.5, reason="n=3 < 5")}}, "escalate", "p50 could not be compared: n=3 < 5"),
        ({"comparisons": {"p95": REGRESSION}, "replay": REPRODUCED, "host": HostCheck("disturbed", "python canary x1.5")}, "escalate", "the host was disturbed during the test (python canary x1.5)"),
        ({"comparisons": {"p95": REGRESSION}, "replay": REPRODUCED, "confirmation": Confirmation("confirmed", "", {"p95": REGRESSION})}, "rollback", "confirmed by paired rounds against the baseline (paired x1.800 [1.700, 1.900])"),
        ({"comparisons": {"p95": REGRESSION}, "replay": REPRODUCED, "confirmation": Confirmation("overturned", "", {"p95": comparison()})}, "ship", "a first look of x1.800 was not confirmed"),
        ({"comparisons": {"p95": REGRESSION}, "replay": REPRODUCED, "confirmation": Confirmation("inconclusive", "6 of 40 pairs", {"p95": comparison("not detected", 1.2, 0.9, 1.6)})}, "escalate", "neither confirm nor rule it out"),
        ({"comparisons": {"p95": comparison("regression", 1.5, 1.2, 1.9)}, "replay": REPRODUCED, "confirmation": Confirmation("unavailable", "not a git repository", command="pytest-roofline ab --baseline=abc")}, "escalate", "but no paired rounds compared it with the baseline's commit (not a git repository): below x2 (lower bound x1.200) a shift between the two processes is as likely as any change; settle it with pytest-roofline ab --baseline=abc"),
        # A tail of a test that waited for a CPU (preempted) is the scheduler's as likely as the
        # code's: it escalates; p50 and confirmed tails still roll back.
        ({"comparisons": {"p99": comparison("regression", 26.0, 2.5, 93.0, quantile=0.99)}, "replay": REPRODUCED, "cpu_share": 0.51, "involuntary_switches": 63}, "escalate", "descheduled while it was measured (CPU share 0.51, 63 involuntary context switches)"),
        ({"comparisons": {"p99": comparison("regression", 26.0, 2.5, 93.0, quantile=0.99)}, "replay": REPRODUCED, "cpu_share": 0.51, "involuntary_switches": 0}, "rollback", "p99 regressed x26.000"),
        # Its p50: 63 preemptions in a 1 s window hit about one 2.5 ms call in six, so the
        # median call ran without a wait and the p50 regression stands.
        ({"comparisons": {"p50": P50_X25}, "replay": REPRODUCED, "cpu_share": 0.51, "involuntary_switches": 63, "host_wall_s": 1.0}, "rollback", "p50 regressed x2.500"),
        # Calls long enough that most include a wait: the p50 moves with the CPU share (an
        # unchanged 9 ms prefill read x2.24 [1.69, 2.59] at a share of 0.50 against 0.93 in the
        # baseline run, 111 preemptions, in the demo under the suite's load, 2026-12-03), so
        # without paired rounds the bar (x2) is raised by the share's ratio.
        ({"comparisons": {"p50": P50_X25}, "replay": REPRODUCED, "cpu_share": 0.5, "baseline_cpu_share": 0.93, "involuntary_switches": 111, "host_wall_s": 0.2, "history_runs": 1}, "escalate", "p50 regressed x2.500 [2.200, 2.800] (margin +37%, 1 ms -> 2.5 ms), but the test was descheduled while it was measured (CPU share 0.50 against 0.93 in the baseline run, 111 involuntary context switches, about 1.4 per call): waits for a CPU can account for about x1.86 of its calls' time, so without paired rounds a rollback needs a lower bound of x3.720 or more"),
        # A baseline without a recorded share counts as one that had its CPU (x2.00 here).
        ({"comparisons": {"p50": P50_X25}, "replay": REPRODUCED, "cpu_share": 0.5, "involuntary_switches": 111, "host_wall_s": 0.2, "history_runs": 1}, "escalate", "(CPU share 0.50 against an unrecorded one in the baseline run, 111 involuntary context switches, about 1.4 per call): waits for a CPU can account for about x2.00 of its calls' time, so without paired rounds a rollback needs a lower bound of x4.000 or more"),
        # The baseline run waited as much: the shares leave nothing to account for.
        ({"comparisons": {"p50": P50_X25}, "replay": REPRODUCED, "cpu_share": 0.5, "baseline_cpu_share": 0.5, "involuntary_switches": 111, "host_wall_s": 0.2, "history_runs": 1}, "rollback", "p50 regressed x2.500"),
        # The demo's x11 GEMM at a share of 0.42 clears x3 / 0.42 (its two sides are one clean
        # commit).
        ({"comparisons": {"p50": comparison("regression", 11.2, 10.6, 11.6, quantile=0.5, cand_s=11.2e-3)}, "replay": REPRODUCED, "same_code": True, "cpu_share": 0.42, "involuntary_switches": 41, "host_wall_s": 0.2, "history_runs": 1}, "rollback", "p50 regressed x11.200"),
        # The lower bound exactly at the raised bar rolls back.
        ({"comparisons": {"p50": comparison("regression", 4.2, 4.0, 4.4, quantile=0.5, cand_s=4.2e-3)}, "replay": REPRODUCED, "cpu_share": 0.5, "involuntary_switches": 111, "host_wall_s": 0.2, "history_runs": 1}, "rollback", "p50 regressed x4.200"),
        # A label with a measured floor: the bar is x2 without paired rounds all the same (the
        # floor, +35% here, is below it), raised the same way.
        ({"comparisons": {"p50": P50_X3_5MS}, "replay": REPRODUCED, "cpu_share": 0.6, "involuntary_switches": 80, "host_wall_s": 0.5}, "escalate", "about 0.8 per call): waits for a CPU can account for about x1.67 of its calls' time, so without paired rounds a rollback needs a lower bound of x3.333 or more"),
        # Exactly 0.5 preemptions per call counts; just below does not.
        ({"comparisons": {"p50": P50_X3_5MS}, "replay": REPRODUCED, "cpu_share": 0.6, "involuntary_switches": 50, "host_wall_s": 0.5}, "escalate", "about 0.5 per call): waits for a CPU"),
        ({"comparisons": {"p50": P50_X3_5MS}, "replay": REPRODUCED, "cpu_share": 0.6, "involuntary_switches": 49, "host_wall_s": 0.5}, "rollback", "p50 regressed x3.000"),
        # Without a count of preemptions or the window's length nothing tells whether the median
        # call waited (a fake clock has no host probe): the usual bar holds.
        ({"comparisons": {"p50": P50_X25}, "replay": REPRODUCED, "cpu_share": 0.6}, "rollback", "p50 regressed x2.500"),
        ({"comparisons": {"p50": P50_X3_5MS}, "replay": REPRODUCED, "cpu_share": 0.6, "involuntary_switches": 80}, "rollback", "p50 regressed x3.000"),
        # The same clean commit: the bar is x3 (SAME_COMMIT_ROLLBACK_RATIO) times the shares'
        # ratio, with no `ab` command to settle it (it would compare the code with itself).
        ({"comparisons": {"p50": comparison("regression", 4.0, 3.5, 4.5, quantile=0.5, cand_s=4e-3)}, "replay": REPRODUCED, "same_code": True, "cpu_share": 0.5, "involuntary_switches": 111, "host_wall_s": 0.2, "confirmation": Confirmation("unavailable", "the baseline is this commit", {}, command="pytest-roofline ab --baseline=abc")}, "escalate", "needs a lower bound of x6.000 or more (the baseline is this commit)"),
        # Paired rounds decide whatever the first look's CPU share was; paired mode's own
        # comparison timed both sides under the same conditions.
        ({"comparisons": {"p50": P50_X25}, "cpu_share": 0.5, "involuntary_switches": 111, "host_wall_s": 0.2, "confirmation": Confirmation("confirmed", "", {"p50": comparison("regression", 2.4, 2.2, 2.6, quantile=0.5)})}, "rollback", "confirmed by paired rounds"),
        ({"comparisons": {"p50": P50_X25}, "design": "paired", "cpu_share": 0.5, "involuntary_switches": 111, "host_wall_s": 0.2, "history_runs": 1}, "rollback", "p50 regressed x2.500"),
        # Other processes used half the machine (the demo under the suite's load): an unconfirmed
        # tail regression escalates; p50, and a confirmed tail, still roll back.
        ({"comparisons": {"p95": comparison("regression", 9.68, 2.32, 20.2)}, "replay": REPRODUCED, "other_cpu_share": 0.5, "involuntary_switches": 50}, "escalate", "but other processes used 50% of the machine's CPU time while the test was measured (50 involuntary context switches)"),
        ({"comparisons": {"p95": comparison("regression", 9.68, 2.32, 20.2)}, "replay": REPRODUCED, "other_cpu_share": 0.04, "involuntary_switches": 50}, "rollback", "p95 regressed x9.680"),
        ({"comparisons": {"p50": comparison("regression", 9.68, 2.32, 20.2, quantile=0.5)}, "replay": REPRODUCED, "other_cpu_share": 0.5, "involuntary_switches": 50, "host_wall_s": 1.0}, "rollback", "p50 regressed x9.680"),
        # Descheduled at a share of 0.7 with most calls preempted: x1.43 of waits, so a lower
        # bound of x3.00 against the x2 bar raised to x2.86 still rolls back.
        ({"comparisons": {"p50": comparison("regression", 9.68, 3.0, 20.2, quantile=0.5)}, "replay": REPRODUCED, "cpu_share": 0.7, "other_cpu_share": 0.5, "involuntary_switches": 500, "host_wall_s": 1.0}, "rollback", "p50 regressed x9.680"),
        # Contended (share 0.85, not descheduled): x1.18 of waits raise the bar to x2.353.
        ({"comparisons": {"p50": P50_X3_5MS}, "replay": REPRODUCED, "cpu_share": 0.85, "other_cpu_share": 0.6, "involuntary_switches": 500, "host_wall_s": 1.0}, "rollback", "p50 regressed x3.000"),
        ({"comparisons": {"p50": comparison("regression", 2.2, 2.1, 2.3, quantile=0.5, base_s=5e-3 / 2.2, cand_s=5e-3)}, "replay": REPRODUCED, "cpu_share": 0.85, "other_cpu_share": 0.6, "involuntary_switches": 500, "host_wall_s": 1.0}, "escalate", "p50 regressed x2.200 [2.100, 2.300] (margin +37%, 2.27 ms -> 5 ms), but other processes used 60% of the machine's CPU time while the test was measured (CPU share 0.85 against an unrecorded one in the baseline run, 500 involuntary context switches, about 2.5 per call): waits for a CPU can account for about x1.18 of its calls' time"),
        ({"comparisons": {"p95": REGRESSION}, "other_cpu_share": 0.5, "involuntary_switches": 50, "confirmation": Confirmation("confirmed", "", {"p95": REGRESSION})}, "rollback", "confirmed by paired rounds"),
        # UNKNOWN first looks are settled by paired rounds too (measure more, not decide).
        ({"comparisons": {"p95": SUSPECT}, "confirmation": Confirmation("overturned", "", {"p95": comparison()})}, "ship", "a first look of x1.500 (UNKNOWN) is settled: paired rounds against the baseline's commit rule out +37%"),
        ({"comparisons": {"p95": comparison("not detected", 1.2, 0.9, 1.6, margin_source="cap")}, "margins": {**MARGINS, "p95": TOO_NOISY}, "confirmation": Confirmation("overturned", "", {"p95": comparison(delta=0.22)})}, "ship", "(UNKNOWN) is settled: paired rounds against the baseline's commit rule out +22% (paired x1.000 [0.950, 1.040]) (a label too noisy to gate on two runs is judged there against the larger of gate.min_effect and what one pair of worker processes puts unchanged code off by)"),
        ({"comparisons": {"p95": comparison("not detected", 5.0, 0.9, 9.6)}, "margins": {**MARGINS, "p95": TOO_NOISY}, "confirmation": Confirmation("confirmed", "", {"p95": REGRESSION})}, "rollback", "too noisy to gate here: the label's history noise floor +160% exceeds gate.max_margin +100% (see the test's history; a paired A/B run can still gate it), confirmed by paired rounds against the baseline (paired x1.800"),
        ({"comparisons": {"p95": SUSPECT}, "confirmation": Confirmation("inconclusive", "16 pairs", {"p95": comparison("not detected", 1.2, 0.9, 1.6)})}, "escalate", "but not established: why, but paired rounds against the baseline neither confirm nor rule it out (paired x1.200 [0.900, 1.600]: 16 pairs)"),
        ({"comparisons": {"p95": SUSPECT}, "confirmation": Confirmation("unavailable", "the paired rounds had spent the session's 30 s")}, "escalate", "(not settled by paired rounds: the paired rounds had spent"),
        # The rounds stop once one quantile's regression is established: the other is noted.
        ({"comparisons": {"p50": comparison("regression", 1.8, 1.7, 1.9, quantile=0.5), "p95": REGRESSION}, "confirmation": Confirmation("confirmed", "", {"p50": comparison("not detected", 1.7, 0.9, 2.6, quantile=0.5), "p95": REGRESSION})}, "rollback", "p95 regressed x1.800 [1.700, 1.900] (margin +37%, 1 ms -> 1.8 ms), confirmed"),
        # Both worktrees of the same clean commit: a paired DIFFERENT of any size is the
        # workers' (or the host's), never the code's: rolling back would undo nothing.
        ({"comparisons": {"p95": REGRESSION}, "same_code": True, "confirmation": Confirmation("confirmed", "", {"p95": REGRESSION})}, "escalate", "both sides are the same commit with no uncommitted changes: that is a difference between the two worker processes (or the host), not a change of the code"),
        ({"comparisons": {"p95": comparison("regression", 4.0, 3.5, 4.5)}, "same_code": True, "confirmation": Confirmation("confirmed", "", {"p95": comparison("regression", 4.0, 3.5, 4.5)})}, "escalate", "paired rounds find paired x4.000 [3.500, 4.500], but both sides are the same commit"),
        ({"comparisons": {"p95": comparison("regression", 4.0, 3.5, 4.5)}, "confirmation": Confirmation("confirmed", "", {"p95": comparison("regression", 4.0, 3.5, 4.5)})}, "rollback", "confirmed by paired rounds against the baseline (paired x4.000"),

        ({"comparisons": {"p95": REGRESSION_X26}, "replay": REPRODUCED, "confirmation": Confirmation("unavailable", "not a git repository")}, "rollback", "no paired confirmation: not a git repository"),
        # A SAME first look beyond min_effect inside the label's wide margin (paired rounds were
        # asked): established by every worker pair, it rolls back; anything else keeps SAME.
        ({"comparisons": {"p95": SHIFTED}, "confirmation": Confirmation("confirmed", "", {"p95": REGRESSION})}, "rollback", "p95 x1.330 [1.280, 1.360] was inside the label's run-to-run margin +37% but beyond min_effect, confirmed by paired rounds against the baseline (paired x1.800"),
        ({"comparisons": {"p95": SHIFTED}, "confirmation": Confirmation("inconclusive", "16 pairs", {"p95": comparison("not detected", 1.2, 0.9, 1.6)})}, "ship", "p95 x1.330 [1.280, 1.360]: a regression of +37% is ruled out"),
        ({"comparisons": {"p95": SHIFTED}, "confirmation": Confirmation("confirmed", "found by 1 of 3 pairs", {"p95": REGRESSION}, disputed=True)}, "ship", "a regression of +37% is ruled out"),
        ({"comparisons": {"p95": SHIFTED}, "same_code": True, "confirmation": Confirmation("confirmed", "", {"p95": REGRESSION})}, "ship", "a regression of +37% is ruled out"),
        ({"comparisons": {"p95": SHIFTED}, "confirmation": Confirmation("unavailable", "the paired rounds had spent the session's 30 s")}, "ship", "a regression of +37% is ruled out"),
        # The same clean commit on both sides (README command 1 run twice): a reproduced x1.8 is
        # not rolled back, nor (stop 46, the demo) an unchanged decode's p50 x3.395 [2.066,
        # 4.497] reproduced in the same process; a change whose lower bound is past x3 is.
        ({"comparisons": {"p95": REGRESSION}, "replay": REPRODUCED, "same_code": True}, "escalate", "the same commit with no uncommitted changes: below x3"),
        ({"comparisons": {"p50": comparison("regression", 3.395, 2.066, 4.497, quantile=0.5)}, "replay": REPRODUCED, "same_code": True, "history_runs": 1}, "escalate", "the same commit with no uncommitted changes: below x3 (lower bound x2.066) a shift between the two processes is as likely as any change"),
        ({"comparisons": {"p50": comparison("regression", 3.395, 2.066, 4.497, quantile=0.5)}, "replay": REPRODUCED, "history_runs": 1}, "rollback", "p50 regressed x3.395"),
        ({"comparisons": {"p95": comparison("regression", 4.0, 3.5, 4.5)}, "replay": REPRODUCED, "same_code": True}, "rollback", "p95 regressed x4.000"),
        ({"comparisons": {"p95": comparison("ok", 0.7, 0.65, 0.75, improvement=True)}}, "ship", "p95 improved x0.700"),
        ({"comparisons": {"p99": comparison("insufficient", math.nan, math.nan, math.nan, reason="n=120 < 299")}}, "ship", "not assessed (n=120 < 299): counted as escape risk"),
        ({"sla": (SlaOutcome("p99", "breach", 4e-3, 5e-3, "p99 5 ms against SLA 4 ms: breach"),)}, "rollback", "SLA breach: p99 5 ms"),
        # Measured on a disturbed host: the breach may be the host's (an unchanged triad's max
        # at 2.7 s against a 2 s SLA, the stream canary x198 its level).
        ({"sla": (SlaOutcome("max", "breach", 2.0, 2.73, "max 2.73 s against SLA 2 s: breach"),), "host": HostCheck("disturbed", "stream canary x198")}, "escalate", "but the host was disturbed during the test (stream canary x198): not rolled back on timing"),
        ({"sla": (SlaOutcome("p99", "possible breach", 4e-3, 4.1e-3, "p99 4.1 ms"),)}, "escalate", "possible SLA breach"),
        ({"sla": (SlaOutcome("p99", "unassessable", 4e-3, 3e-3, "p99 n=100"),)}, "escalate", "SLA cannot be assessed"),
        ({"sla": (SlaOutcome("p95", "met", 4e-3, 1e-3, "p95 met"),)}, "ship", "p95"),
        ({"quality": (QualityOutcome("err", 0.1, 0.001, False, 0.01, False),)}, "rollback", "quality err worsened 0.001 -> 0.1 (tolerance 0.01)"),
        ({"quality": (QualityOutcome("acc", 0.9, 0.9, True, None, True),)}, "ship", "p95"),
        ({"missing_quality": ("acc",)}, "escalate", "quality acc was recorded in the baseline but not in this run"),
        ({"drift": Drift(0.5, 1e-9, 0.25, True)}, "escalate", "latency drifts within the run"),
        ({"drift": Drift(0.1, 0.3, 0.01, False)}, "ship", "p95"),
        # An improvement that drifts: at its slowest it is still inside every margin.
        ({"drift": Drift(0.25, 1e-9, 0.76, True), "comparisons": {"p50": comparison("ok", 0.25, 0.21, 0.27, quantile=0.5), "p95": comparison("ok", 0.3, 0.26, 0.32)}}, "ship", "even the slowest level it allows stays inside every margin"),
        ({"drift": Drift(0.25, 1e-9, 0.76, True), "comparisons": {"p50": comparison("ok", 0.9, 0.85, 0.95, quantile=0.5), "p95": comparison("ok", 0.3, 0.26, 0.32)}}, "escalate", "latency drifts within the run"),
        # Paired rounds, which the host's drift slows on both sides alike, settle it when every
        # assessed quantile is SAME there; anything less leaves the drift's escalation.
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "confirmation": Confirmation("overturned", "paired rounds against the baseline's commit: p95 SAME, p99 SAME", {"p95": comparison(), "p99": comparison(quantile=0.99)})}, "ship", "latency drifts within the run (Kendall tau 0.50, p=1e-09, +25.0% first to last window); settled by paired rounds against the baseline's commit: p95 SAME, p99 SAME, where the host's drift slows both sides alike"),
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "confirmation": Confirmation("overturned", "", {"p95": comparison()})}, "escalate", "latency drifts within the run"),
        # The first look assessed nothing (stop 45's fresh clones: a drifting 4 ms conv, 52 and
        # 100 samples, every quantile unassessed): the rounds' p50 SAME settles it; rounds that
        # did not assess p50, or left it open, do not.
        ({"drift": Drift(-0.53, 4e-15, -0.157, True), "comparisons": {"p50": comparison("insufficient", 0.92, 0.86, 1.03, quantile=0.5), "p95": comparison("insufficient", 0.9, 0.88, 0.93), "p99": comparison("insufficient", 0.91, 0.89, 0.93, quantile=0.99)}, "confirmation": Confirmation("overturned", "paired rounds against the baseline's commit: p50 SAME x0.997 [0.439, 1.172]", {"p50": comparison(ratio=0.997, low=0.439, high=1.172, quantile=0.5)})}, "ship", "settled by paired rounds against the baseline's commit: p50 SAME x0.997 [0.439, 1.172]"),
        ({"drift": Drift(-0.53, 4e-15, -0.157, True), "comparisons": {"p50": comparison("insufficient", 0.92, 0.86, 1.03, quantile=0.5), "p95": comparison("insufficient", 0.9, 0.88, 0.93)}, "confirmation": Confirmation("overturned", "", {"p95": comparison()})}, "escalate", "latency drifts within the run"),
        ({"drift": Drift(-0.53, 4e-15, -0.157, True), "comparisons": {"p50": comparison("insufficient", 0.92, 0.86, 1.03, quantile=0.5)}, "confirmation": Confirmation("overturned", "", {"p50": comparison("not detected", 1.0, 0.5, 1.6, quantile=0.5)})}, "escalate", "latency drifts within the run"),
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "confirmation": Confirmation("inconclusive", "", {"p95": comparison(), "p99": comparison("not detected", 1.1, 0.9, 1.7, quantile=0.99)})}, "escalate", "latency drifts within the run"),
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "confirmation": Confirmation("overturned", "", {"p95": comparison(), "p99": comparison(quantile=0.99)}, disputed=True)}, "escalate", "latency drifts within the run"),
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "design": "paired", "confirmation": Confirmation("overturned", "", {"p95": comparison(), "p99": comparison(quantile=0.99)})}, "escalate", "latency drifts within the run"),
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "confirmation": Confirmation("unavailable", "not a git repository")}, "escalate", "latency drifts within the run"),
        # Stop 45's demo: an improvement x0.46 drifted +109% while the canary saw the host
        # disturbed; the reason now says so, as an UNKNOWN's does.
        ({"drift": Drift(0.56, 1e-117, 1.09, True), "host": HostCheck("disturbed", "python canary x1.76")}, "escalate", "the quantiles are not stable; the host was disturbed during the test (python canary x1.76): run it again when the machine is quiet"),
        # The README's compare: drifting, but gate.confirm_time ran out before the rounds reached it.
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "confirmation": Confirmation("unavailable", "the paired rounds had spent the session's 10 s", out_of_time=True)}, "escalate", "the quantiles are not stable (not settled by paired rounds: the paired rounds had spent the session's 10 s)"),
        # A p50 too autocorrelated to compare (a drift makes it so) is settled by a paired SAME.
        ({"comparisons": {"p50": comparison("insufficient", 1.0, 0.9, 1.1, quantile=0.5, reason="p50: effective sample size 4 < 5"), "p95": comparison()}, "confirmation": Confirmation("overturned", "", {"p50": comparison(quantile=0.5, delta=0.35)})}, "ship", "p50 could not be assessed on two-run evidence (p50: effective sample size 4 < 5); paired rounds against the baseline's commit rule out +35% (paired x1.000 [0.950, 1.040])"),
        ({"comparisons": {"p50": comparison("insufficient", 1.0, 0.9, 1.1, quantile=0.5, reason="p50: effective sample size 4 < 5"), "p95": comparison()}, "confirmation": Confirmation("inconclusive", "", {"p50": comparison("not detected", 1.1, 0.9, 1.6, quantile=0.5)})}, "escalate", "p50 could not be compared: p50: effective sample size 4 < 5"),
        ({"comparisons": {"p50": comparison("insufficient", 1.0, 0.9, 1.1, quantile=0.5, reason="p50: effective sample size 4 < 5"), "p95": comparison()}}, "escalate", "p50 could not be compared: p50: effective sample size 4 < 5"),
        # A tail the first look could not assess (autocorrelated) is decided by its paired rounds
        # when they decide it; otherwise it stays not assessed (escape risk), never escalated.
        ({"comparisons": {"p50": comparison(quantile=0.5), "p99": comparison("insufficient", 2.0, 1.1, 3.0, quantile=0.99, reason="p99: effective sample size 200 < 299")}, "confirmation": Confirmation("confirmed", "reproduced by three pairs", {"p99": comparison("regression", 2.4, 1.8, 2.6, quantile=0.99)})}, "rollback", "p99 could not be assessed on two-run evidence (p99: effective sample size 200 < 299), but paired rounds against the baseline establish a regression (paired x2.400 [1.800, 2.600]): reproduced by three pairs"),
        ({"comparisons": {"p50": comparison(quantile=0.5), "p99": comparison("insufficient", 2.0, 1.1, 3.0, quantile=0.99, reason="r")}, "confirmation": Confirmation("confirmed", "", {"p99": comparison("regression", 2.4, 1.8, 2.6, quantile=0.99)}, disputed=True)}, "ship", "p99: not assessed (r): counted as escape risk"),
        ({"comparisons": {"p50": comparison(quantile=0.5), "p99": comparison("insufficient", 2.0, 1.1, 3.0, quantile=0.99, reason="r")}, "same_code": True, "confirmation": Confirmation("confirmed", "", {"p99": comparison("regression", 2.4, 1.8, 2.6, quantile=0.99)})}, "ship", "p99: not assessed (r): counted as escape risk"),
        ({"comparisons": {"p50": comparison(quantile=0.5), "p99": comparison("insufficient", 2.0, 1.1, 3.0, quantile=0.99, reason="r")}, "confirmation": Confirmation("inconclusive", "", {"p99": comparison("not detected", 1.2, 0.8, 1.9, quantile=0.99)})}, "ship", "p99: not assessed (r): counted as escape risk"),
        ({"comparisons": {"p50": comparison(quantile=0.5), "p99": comparison("insufficient", 1.0, 0.8, 1.2, quantile=0.99, reason="r")}, "confirmation": Confirmation("overturned", "", {"p99": comparison(quantile=0.99, delta=0.6)})}, "ship", "p99 could not be assessed on two-run evidence (r); paired rounds against the baseline's commit rule out +60%"),
        # A first run: nothing is compared, so a drift has nothing to distort; it is reported.
        ({"drift": Drift(0.5, 1e-9, 0.25, True), "baseline_summary": None, "comparisons": {}}, "ship", "latency drifts within the run"),
        ({"needs_counters": True, "counter_completeness": 0.2}, "escalate", "counter completeness 20% on a test whose SLA needs counters"),
        ({"needs_counters": True, "counter_completeness": 0.9}, "ship", "p95"),
        ({"precision_change": ("fp32", "bf16")}, "escalate", "precision changed fp32 -> bf16 without quality evidence"),
        ({"precision_change": ("fp32", "bf16"), "quality": (QualityOutcome("err", 1e-3, 1e-3, False, 1e-2, True),)}, "ship", "p95"),
        ({"hardware_differs": "target 'a100' in the baseline, 'h100' now"}, "escalate", "baseline measured on other hardware"),
        ({"comparisons": {"p95": REGRESSION_X26}, "replay": REPRODUCED, "layers_changed": ("data", "runtime")}, "escalate", "2 layers changed since the baseline (data, runtime)"),
        ({"comparisons": {"p95": REGRESSION_X26}, "replay": REPRODUCED, "layers_changed": ("runtime",)}, "rollback", "p95 regressed"),
        ({"bound_change": BoundChange(True, False, "memory", "compute", "r"), "efficiency_ratio": 0.5, "comparisons": {"p95": REGRESSION_X26}, "replay": REPRODUCED}, "rollback", "bound class changed memory -> compute with an efficiency collapse (x0.50)"),
        # A collapse is a slowdown: without an established one (here: no timing regression) it
        # escalates, and so it does on a disturbed host (issue 10: a descheduled 2-thread GEMM).
        ({"bound_change": BoundChange(True, False, "memory", "compute", "r"), "efficiency_ratio": 0.5}, "escalate", "the slowdown behind it is not established"),
        ({"bound_change": BoundChange(True, False, "compute", "overhead", "r"), "efficiency_ratio": 0.02, "comparisons": {"p95": REGRESSION}, "replay": REPRODUCED, "host": HostCheck("disturbed", "gemm canary x40")}, "escalate", "the slowdown behind it is not established"),
        ({"bound_change": BoundChange(True, False, "memory", "compute", "r"), "efficiency_ratio": 0.95}, "ship", "bound class changed"),
        # Stop 46, a fresh clone of the README's commands: an unchanged triad's first look read
        # p50 x2.131 [1.744, 2.379], so its efficiency fell x0.44 and its class memory ->
        # overhead; paired rounds against the baseline's commit read p50 x1.053 [0.196, 1.345],
        # SAME. The collapse was that first look's slow draw, which the rounds rule out.
        ({"bound_change": BoundChange(True, False, "memory", "overhead", "r"), "efficiency_ratio": 0.44, "comparisons": {"p50": comparison("regression", 2.131, 1.744, 2.379, quantile=0.5)}, "confirmation": Confirmation("overturned", "paired rounds: p50 SAME x1.053", {"p50": comparison("ok", 1.053, 0.196, 1.345, quantile=0.5, delta=0.35)})}, "ship", "bound class changed memory -> overhead with an efficiency collapse (x0.44) in the first look, but paired rounds against the baseline's commit find no slowdown behind it (paired p50 SAME x1.053 [0.196, 1.345]): the first look's slow draw moved the class"),
        # ab places the test on its paired p50 already: its collapse is its own evidence.
        ({"bound_change": BoundChange(True, False, "memory", "overhead", "r"), "efficiency_ratio": 0.44, "design": "paired", "confirmation": Confirmation("overturned", "", {"p50": comparison("ok", 1.0, 0.9, 1.1, quantile=0.5)})}, "escalate", "the slowdown behind it is not established"),
        # Rounds that leave p50 open, or that a second pair of processes disputed, do not.
        ({"bound_change": BoundChange(True, False, "memory", "overhead", "r"), "efficiency_ratio": 0.44, "confirmation": Confirmation("inconclusive", "", {"p50": comparison("not detected", 1.2, 0.9, 1.6, quantile=0.5)})}, "escalate", "the slowdown behind it is not established"),
        ({"bound_change": BoundChange(True, False, "memory", "overhead", "r"), "efficiency_ratio": 0.44, "confirmation": Confirmation("overturned", "", {"p50": comparison("ok", 1.0, 0.9, 1.1, quantile=0.5)}, disputed=True)}, "escalate", "the slowdown behind it is not established"),
        # Faster, with less declared work (fp64 -> fp32): efficiency fell, nothing collapsed.
        ({"bound_change": BoundChange(True, False, "memory", "overhead", "r"), "efficiency_ratio": 0.6, "comparisons": {"p50": comparison("ok", 0.6, 0.55, 0.65, quantile=0.5, improvement=True)}}, "ship", "bound class changed memory -> overhead"),
        # The same time on half the declared bytes (fp64 -> fp32): a precision change, not a collapse.
        ({"bound_change": BoundChange(True, False, "memory", "overhead", "r"), "efficiency_ratio": 0.5, "precision_change": ("fp64", "fp32"), "comparisons": {"p50": comparison("ok", 1.05, 0.95, 1.1, quantile=0.5)}}, "escalate", "declared precision changed fp64 -> fp32 without quality evidence"),
        ({"bound_change": BoundChange(False, True, "memory", "ambiguous", "inside the band")}, "escalate", "bound class may have changed memory -> ambiguous"),
        # The declared work changed (CI: a recalibration sized the DRAM arrays 600 MiB, not 128):
        # a reproduced x4.59 past the cap is the larger problem's, and escalates, never rolls back.
        ({"comparisons": {"p50": comparison("regression", 4.59, 4.4, 4.8, quantile=0.5)}, "replay": REPRODUCED, "history_runs": 1, "same_code": True, "work_change": {"bytes_moved": (2.147e9, 1.0066e10)}, "efficiency_ratio": 1.02}, "escalate", "the declared work of one call changed since the baseline (bytes moved 2.15 GB -> 10.1 GB (x4.69)): the baseline timed another workload, so its timings do not judge this code; p50 x4.590 [4.400, 4.800], x1.02 the baseline's efficiency per unit of work. If the new size is intended, save a new baseline"),
        # ... nor does an explicit threshold on its timing, and the same timing ships no silence.
        ({"comparisons": {"p95": comparison("ok", 1.3, 1.25, 1.35, p_adjusted=0.001)}, "fail_thresholds": {"p95": 0.05}, "design": "paired"}, "rollback", "above the explicit threshold +5%"),
        ({"comparisons": {"p95": comparison("ok", 1.3, 1.25, 1.35, p_adjusted=0.001)}, "fail_thresholds": {"p95": 0.05}, "design": "paired", "work_change": {"flops": (2e6, 4e6)}}, "escalate", "FLOPs 2 MFLOP -> 4 MFLOP (x2.00)"),
        ({"comparisons": {"p95": comparison("ok", 1.0)}, "work_change": {"flops": (2e6, 4e6)}}, "escalate", "FLOPs 2 MFLOP -> 4 MFLOP (x2.00)): the baseline timed another workload"),
        # Non-timing evidence still decides: a quality regression rolls back.
        ({"quality": (QualityOutcome("err", 0.1, 0.001, False, 0.01, False),), "work_change": {"bytes_moved": (1e6, 2e6)}}, "rollback", "quality err worsened"),
    ],
)  # fmt: skip
def test_evidence_maps_to_a_decision_with_a_reason(
    overrides: dict[str, Any], decision: str, reason: str
) -> None:
    result = decide_test(evidence(**overrides))
    assert result.decision == decision
    assert any(reason in r for r in result.reasons), result.reasons


def test_a_non_ship_decision_names_its_owner_boundary_symptom_and_layer() -> None:
    result = decide_test(
        evidence(comparisons={"p95": REGRESSION}, replay=REPRODUCED, layers_changed=("model",))
    )
    assert result.owners == ("kernels-team",)
    assert result.rollback_boundary == "revert PR 7"
    assert result.symptom is not None and result.symptom.startswith("p95 regressed")
    assert result.first_failing_layer == "model"
    assert result.competing_hypotheses


def test_a_non_ship_decision_without_an_owner_says_so() -> None:
    result = decide_test(
        evidence(owners=(), sla=(SlaOutcome("p95", "breach", 1e-3, 2e-3, "p95 breach"),))
    )
    assert result.decision == "rollback"
    assert any("no owner is defined" in r for r in result.reasons)


def test_a_ship_decision_has_no_symptom_or_layer() -> None:
    result = decide_test(evidence(layers_changed=("model",)))
    assert (result.decision, result.symptom, result.first_failing_layer) == ("ship", None, None)


@pytest.mark.parametrize(
    ("decisions", "common", "expected", "reason"),
    [
        ({"a": "ship", "b": "ship"}, None, "ship", "no regression seen"),
        ({"a": "rollback", "b": "escalate"}, None, "rollback", "1 test(s) rolled back: a"),
        ({"a": "ship", "b": "escalate"}, None, "escalate", "1 test(s) escalated: b"),
        (
            {"a": "ship"},
            CommonMode(1.5, math.log(1.5), 8, 0.02),
            "escalate",
            "the whole run moved together by x1.500",
        ),
        ({"a": "ship"}, CommonMode(1.1, math.log(1.1), 8, 0.02), "ship", "no regression seen"),
        ({"a": "rollback"}, CommonMode(1.5, math.log(1.5), 8, 0.02), "rollback", "moved together"),
    ],
)
def test_the_run_decision_follows_its_tests_and_the_common_mode(
    decisions: dict[str, Any], common: CommonMode | None, expected: str, reason: str
) -> None:
    result = decide_run(decisions, common_mode=common, common_mode_threshold=0.35)
    assert result.decision == expected
    assert any(reason in r for r in result.reasons), result.reasons


def test_run_level_reasons_escalate_an_otherwise_shipping_run() -> None:
    result = decide_run(
        {"a": "ship"}, common_mode=None, common_mode_threshold=0.35, run_reasons=("BH flagged a",)
    )
    assert result.decision == "escalate"


def test_replace_keeps_evidence_frozen() -> None:
    e = evidence()
    with pytest.raises(AttributeError):
        e.nodeid = "x"  # type: ignore[misc]
    assert replace(e, nodeid="y").nodeid == "y"


def test_a_paired_comparison_does_not_blame_the_speed_change_between_runs() -> None:
    two_run = decide_test(evidence(comparisons={"p95": REGRESSION}))
    paired = decide_test(evidence(comparisons={"p95": REGRESSION}, design="paired"))
    assert any("between the runs" in h for h in two_run.competing_hypotheses)
    assert not any("between the runs" in h for h in paired.competing_hypotheses)
    assert any("per-round ratios" in h for h in paired.competing_hypotheses)


def test_a_comparison_in_which_no_test_matched_the_baseline_escalates_and_says_so() -> None:
    result = decide_run(
        {"a": "ship", "b": "ship"},
        common_mode=None,
        common_mode_threshold=0.35,
        compared=0,
        baseline_label="main",
    )
    assert result.decision == "escalate"
    assert any("0 of 2 tests" in r and "'main'" in r for r in result.reasons), result.reasons
    assert not any("every SLA holds" in r for r in result.reasons)
    # The run says what to do next, with the commands that do it.
    assert any(
        "pytest-roofline runs" in s and "--roofline-save=main" in s for s in result.next_steps
    )


def test_a_run_without_a_baseline_is_not_escalated_for_comparing_nothing() -> None:
    result = decide_run({"a": "ship"}, common_mode=None, common_mode_threshold=0.35, compared=None)
    assert result.decision == "ship"
    assert result.next_steps == ()


def test_a_run_level_escalation_always_comes_with_a_next_step() -> None:
    shifted = decide_run(
        {"a": "ship"},
        common_mode=CommonMode(1.5, math.log(1.5), 8, 0.02),
        common_mode_threshold=0.35,
        compared=1,
        baseline_label="main",
    )
    assert shifted.decision == "escalate"
    assert any("pytest-roofline ab --baseline=" in s for s in shifted.next_steps)
    flagged = decide_run(
        {"a": "ship"},
        common_mode=None,
        common_mode_threshold=0.35,
        run_reasons=(RunConcern("a: p95 significant across the run", "replay a: pytest x"),),
    )
    assert flagged.decision == "escalate"
    assert flagged.next_steps == ("replay a: pytest x",)
    plain = decide_run(
        {"a": "ship"}, common_mode=None, common_mode_threshold=0.35, run_reasons=("round 2 failed",)
    )
    assert plain.decision == "escalate" and len(plain.next_steps) == 1


UNKNOWN_P95 = comparison("not detected", 1.01, 0.91, 1.07, mde=0.14)


def test_a_paired_unknown_on_a_busy_host_says_the_host_left_it_open() -> None:
    """Stop 42: under the bursty neighbour an unchanged test escalated at the cap with 21 of 48
    window pairs dropped, and its reason said only UNKNOWN: the reader could not tell the
    machine, not the code, kept it open."""
    found = decide_test(
        evidence(comparisons={"p95": UNKNOWN_P95}, design="paired", pairs_run=48, pairs_dropped=21)
    )
    assert found.decision == "escalate"
    assert any(
        "UNKNOWN" in r
        and "the host was busy: the host canary dropped 21 of 48 window pairs as disturbed" in r
        for r in found.reasons
    ), found.reasons


@pytest.mark.parametrize(("pairs", "dropped"), [(48, 15), (32, 0), (None, 0)])
def test_a_paired_unknown_on_a_host_not_busy_names_no_host(pairs: int | None, dropped: int) -> None:
    found = decide_test(
        evidence(
            comparisons={"p95": UNKNOWN_P95},
            design="paired",
            pairs_run=pairs,
            pairs_dropped=dropped,
        )
    )
    assert found.decision == "escalate"
    assert not any("host" in r for r in found.reasons), found.reasons


def test_a_two_run_unknown_on_a_disturbed_host_names_the_canary() -> None:
    found = decide_test(
        evidence(
            comparisons={"p95": UNKNOWN_P95}, host=HostCheck("disturbed", "python canary x1.5")
        )
    )
    assert found.decision == "escalate"
    assert any(
        "UNKNOWN" in r and "the host was disturbed during the test (python canary x1.5)" in r
        for r in found.reasons
    ), found.reasons


def paired_unknown_reasons(dropped: int, **overrides: Any) -> list[str]:
    """The reasons of a paired test whose p95 (and what ``overrides`` add) is UNKNOWN at the
    cap, with ``dropped`` of its 48 window pairs dropped by the canary."""
    fields: dict[str, Any] = {"comparisons": {"p95": UNKNOWN_P95}, **overrides}
    found = decide_test(evidence(design="paired", pairs_run=48, pairs_dropped=dropped, **fields))
    assert found.decision == "escalate"
    return list(found.reasons)


def test_the_busy_host_is_named_once_a_test_and_not_over_a_confirmation_that_names_it() -> None:
    both = paired_unknown_reasons(
        21, comparisons={"p50": replace(UNKNOWN_P95, quantile=0.5), "p95": UNKNOWN_P95}
    )
    assert sum("the host was busy" in r for r in both) == 1, both
    disputed = Confirmation(
        "inconclusive", "on a busy host (the canary dropped 21 of 48)", {}, disputed=True,
        dispute="host",
    )  # fmt: skip
    found = paired_unknown_reasons(21, confirmation=disputed)
    assert not any("the host was busy" in r for r in found), found


def test_a_paired_unknown_names_no_single_windows_host_reading() -> None:
    found = paired_unknown_reasons(2, host=HostCheck("disturbed", "python canary x1.5"))
    assert not any("host was" in r for r in found), found


# An autocorrelated tail: enough samples, too few independent ones (stop 44's demo: every 80th
# decode step rebuilt its cache, p99 read x12 and the test shipped with the p99 "not assessed").
AUTOCORRELATED_P99 = "p99: effective sample size 150 < 299 (autocorrelated samples)"


@pytest.mark.parametrize(
    ("p99", "decision", "reason"),
    [
        (comparison("insufficient", 12.0, 1.2, 30.0, quantile=0.99, n_cand=2895, n_eff_cand=150.0, reason=AUTOCORRELATED_P99),
         "escalate", f"p99 reads x12.00 [1.200, 30.000], but it could not be assessed ({AUTOCORRELATED_P99}): a tail that reads x3 or more never ships unassessed"),
        (comparison("insufficient", 3.0, 0.9, 6.0, quantile=0.99, n_eff_cand=150.0, reason=AUTOCORRELATED_P99),
         "escalate", "a tail that reads x3 or more never ships unassessed"),
        # Below x3 an unassessed tail stays escape risk, as before.
        (comparison("insufficient", 2.9, 0.9, 6.0, quantile=0.99, n_eff_cand=150.0, reason=AUTOCORRELATED_P99),
         "ship", f"p99: not assessed ({AUTOCORRELATED_P99}): counted as escape risk"),
        # Too few samples to read the tail at all (a slow test's few calls): its top call is no
        # reading of p99, so it stays escape risk (an unchanged 16 ms parse read x3.6 that way).
        (comparison("insufficient", 12.0, math.nan, math.nan, quantile=0.99, n_base=50, n_cand=33, reason="p99: 33 samples, 299 needed"),
         "ship", "p99: not assessed (p99: 33 samples, 299 needed): counted as escape risk"),
    ],
)  # fmt: skip
def test_an_autocorrelated_tail_that_reads_x3_or_more_does_not_ship_unassessed(
    p99: QuantileComparison, decision: str, reason: str
) -> None:
    found = decide_test(evidence(comparisons={"p50": comparison(quantile=0.5), "p99": p99}))
    assert found.decision == decision
    assert any(reason in r for r in found.reasons), found.reasons


def test_an_unassessed_tail_s_reason_follows_the_quantile_that_decides_the_test() -> None:
    # Stop 44's demo: a GEMM x3.2 whose p50 could not be rolled back on a disturbed host led with
    # its p95's "never ships unassessed" line; the p50's reason is the one that decides.
    p95 = comparison(
        "insufficient",
        3.8,
        3.6,
        4.8,
        n_eff_cand=28.0,
        reason="p95: effective sample size 28 < 59 (autocorrelated samples)",
    )
    found = decide_test(evidence(comparisons={"p95": p95, "p99": comparison(quantile=0.99), "p50": comparison("suspect", 1.5, 0.98, 2.0, quantile=0.5)}))  # fmt: skip
    assert found.decision == "escalate"
    assert found.reasons[0].startswith("p50 "), found.reasons
    assert "never ships unassessed" in found.reasons[1]


# A replay in a fresh process (gate.policy._fresh_replay_problem): a two-run regression that one
# process established rolls back only if a fresh process finds it past the same bar.
P50_X4 = comparison("regression", 4.0, 3.5, 4.5, quantile=0.5, cand_s=4e-3)
DUE = {
    "comparisons": {"p50": P50_X4},
    "replay": REPRODUCED,
    "history_runs": 1,
    "fresh_replay_due": True,
}
THRESHOLD = {
    "comparisons": {"p95": comparison("ok", 1.3, 1.25, 1.35, p_adjusted=0.001)},
    "fail_thresholds": {"p95": 0.05},
    "replay": ReplayOutcome(True, 1, True, {"p95": (1.3,)}),
    "fresh_replay_due": True,
}


def fresh(*corroborated: str, **found: QuantileComparison) -> FreshReplay:
    return FreshReplay(np.full(50, 1e-3), comparisons=found, corroborated=corroborated)


AUTOCORRELATED_X6 = comparison(
    "insufficient",
    6.427,
    5.567,
    7.383,
    reason="p95: effective sample size 52 < 59 (autocorrelated samples)",
)


@pytest.mark.parametrize(
    ("overrides", "decision", "reason", "awaits"),
    [
        ({}, "escalate", "p50 regressed x4.000 [3.500, 4.500] (margin +37%, 1 ms -> 4 ms), reproduced on replay, but it is not yet measured again in a fresh process", True),
        ({"fresh_replay": fresh(p50=comparison("regression", 3.9, 3.6, 4.2, quantile=0.5))}, "rollback", "reproduced on replay, reproduced in a fresh process (p50 x3.900 [3.600, 4.200])", False),
        ({"fresh_replay": fresh(p50=comparison("ok", 1.02, 0.97, 1.08, quantile=0.5))}, "escalate", "but it did not reproduce at that size when a fresh process measured it again (p50 x1.020 [0.970, 1.080]; needed: DIFFERENT with an estimate of x2.000 or more): a shift between two processes is as likely as any change", False),
        # DIFFERENT in the fresh process, but its estimate below the bar the first look cleared.
        ({"fresh_replay": fresh(p50=comparison("regression", 1.9, 1.5, 2.3, quantile=0.5))}, "escalate", "(p50 x1.900 [1.500, 2.300]; needed: DIFFERENT with an estimate of x2.000 or more)", False),
        # The same clean commit: the bar is x3 for the fresh process too.
        ({"same_code": True, "fresh_replay": fresh(p50=comparison("regression", 2.6, 2.2, 3.0, quantile=0.5))}, "escalate", "x3.000 or more", False),
        # Ten demo runs (stop 47): a real x4 GEMM whose fresh process read p95 x4.039 [2.715,
        # 5.036] escalated on the lower bound; the estimate is what must reach the bar.
        ({"same_code": True, "comparisons": {"p95": comparison("regression", 5.026, 3.286, 6.412)}, "fresh_replay": fresh(p95=comparison("regression", 4.039, 2.715, 5.036))}, "rollback", "reproduced in a fresh process (p95 x4.039 [2.715, 5.036])", False),
        ({"fresh_replay": FreshReplay(reason="the fresh process failed: no execnet")}, "escalate", "it could not be measured again in a fresh process (the fresh process failed: no execnet)", False),
        ({"fresh_replay": FreshReplay(np.full(50, 1e-3), host="stream canary x3.10", comparisons={"p50": P50_X4})}, "escalate", "the host was disturbed while a fresh process measured it again (stream canary x3.10)", False),
        # A fresh tail too autocorrelated to decide alone corroborates the first look when it
        # reads DIFFERENT at the replay's level (stop 47's demo: p95 x6.427 [5.567, 7.383]).
        ({"comparisons": {"p95": comparison("regression", 6.9, 5.8, 7.6)}, "fresh_replay": fresh("p95", p95=AUTOCORRELATED_X6)}, "rollback", "reproduced in a fresh process (p95 x6.427 [5.567, 7.383])", False),
        ({"comparisons": {"p95": comparison("regression", 6.9, 5.8, 7.6)}, "fresh_replay": fresh(p95=AUTOCORRELATED_X6)}, "escalate", "a fresh process measured it again and could not decide p95 (p95 x6.427 [5.567, 7.383], UNKNOWN", False),
        # The missing evidence on the same commit is a change of the code, not paired rounds.
        ({"same_code": True, "fresh_replay": fresh(p50=comparison("ok", 1.02, 0.97, 1.08, quantile=0.5))}, "escalate", "needed: DIFFERENT with an estimate of x3.000 or more", False),
        # Against a baseline run faster than its label, the fresh estimate is shown at the label's level too.
        ({"comparisons": {"p50": comparison("regression", 4.59, 2.9, 6.781, quantile=0.5)}, "history_runs": 3, "baseline_level": {"p50": 0.8}, "fresh_replay": fresh(p50=comparison("regression", 2.3, 2.2, 2.4, quantile=0.5))}, "escalate", "(p50 x2.300 [2.200, 2.400], x1.840 against its label's median of recent runs; needed: DIFFERENT with an estimate of x2.000 or more against its label's median of recent runs)", False),
        ({"fresh_replay_due": False}, "rollback", "p50 regressed x4.000 [3.500, 4.500] (margin +37%, 1 ms -> 4 ms), reproduced on replay", False),
        # An explicit threshold (--roofline-fail) is no reason for a fresh process: two runs do not
        # attribute a change of its size, in one process or two (stop 47: 8 of 240 unchanged
        # test-runs reproduced p50 x1.19-x1.56 in a fresh process); paired rounds do.
        (THRESHOLD, "escalate", "above the explicit threshold +5% (--roofline-fail), but no paired rounds compared it with the baseline's commit", False),
        # A DIFFERENT below the x2 bar stays below it, whatever the threshold.
        ({"comparisons": {"p95": comparison("regression", 1.5, 1.4, 1.6, p_adjusted=0.001)}, "fail_thresholds": {"p95": 0.3}, "replay": REPRODUCED, "history_runs": 3, "fresh_replay_due": True}, "escalate", "below x2 (lower bound x1.400)", False),
    ],
)  # fmt: skip
def test_a_regression_without_paired_rounds_rolls_back_only_once_a_fresh_process_reproduces_it(
    overrides: dict[str, Any], decision: str, reason: str, awaits: bool
) -> None:
    base = {} if "fail_thresholds" in overrides else DUE
    found = decide_test(evidence(**{**base, **overrides}))
    assert found.decision == decision, found.reasons
    assert any(reason in r for r in found.reasons), found.reasons
    assert awaits_fresh_replay(found.missing_evidence) is awaits


SLA_BREACH = SlaOutcome(
    "p95", "breach", 1e-3, 1.5e-3, "p95 1.5 ms against SLA 1 ms: breach (n=500)"
)


@pytest.mark.parametrize(
    ("fresh_sla", "decision", "reason", "awaits"),
    [
        (None, "escalate", "SLA breach: p95 1.5 ms against SLA 1 ms: breach (n=500), but it is not yet measured again in a fresh process", True),
        ((replace(SLA_BREACH, detail="p95 1.4 ms against SLA 1 ms: breach (n=480)"),), "rollback", "SLA breach: p95 1.5 ms against SLA 1 ms: breach (n=500), reproduced in a fresh process (p95 1.4 ms against SLA 1 ms: breach (n=480))", False),
        ((replace(SLA_BREACH, status="ok", detail="p95 900 µs against SLA 1 ms: ok (n=480)"),), "escalate", "but a fresh process that measured it again did not establish the breach (p95 900 µs against SLA 1 ms: ok (n=480)): a slower process is as likely as slower code", False),
    ],
)  # fmt: skip
def test_an_sla_breach_rolls_back_only_once_a_fresh_process_finds_it_too(
    fresh_sla: tuple[SlaOutcome, ...] | None, decision: str, reason: str, awaits: bool
) -> None:
    replayed = None if fresh_sla is None else FreshReplay(np.full(50, 1e-3), sla=fresh_sla)
    found = decide_test(evidence(sla=(SLA_BREACH,), fresh_replay_due=True, fresh_replay=replayed))
    assert found.decision == decision, found.reasons
    assert any(reason in r for r in found.reasons), found.reasons
    assert awaits_fresh_replay(found.missing_evidence) is awaits
