"""The label's history in the gate: steps kept out of the noise floor, cumulative drift escalates."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pytest_roofline import stats
from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.gate.evidence import BaselineEntry, EvidenceContext, evaluate, margins
from pytest_roofline.gate.history import (
    DIRTY_SUFFIX,
    cumulative_drift_check,
    label_drift,
    latest_run_level,
    level_segments,
    since_last_step,
)
from pytest_roofline.gate.policy import decide_test
from pytest_roofline.gate.run import judge_test
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.results import TestResult

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def run_samples(rng: np.random.Generator, level: float, n: int = 1000) -> np.ndarray:
    return level * 1e-3 * rng.lognormal(0.0, 0.05, size=n)


def result(data: np.ndarray) -> TestResult:
    sample_set = SampleSet(data, 1, 1, 0.0, "budget", float(data.sum()), False)
    return TestResult(
        "t.py::k",
        None,
        ("team",),
        "revert",
        SlaSpec(),
        None,
        Measurement(sample_set, None, (), None),
    )


def stepped(rng: np.random.Generator, n: int = 12, at: int = 6, step: float = 1.3) -> list[float]:
    z = rng.normal(0.0, 0.02, n)
    z[at:] += np.log(step)
    return list(1e-3 * np.exp(z))


def test_the_runs_since_the_last_step_are_those_after_it() -> None:
    values = stepped(np.random.default_rng(1))
    assert since_last_step(values) == values[6:]
    flat = list(1e-3 * np.exp(np.random.default_rng(2).normal(0.0, 0.02, 12)))
    assert since_last_step(flat) == flat
    assert since_last_step(values[:5]) == values[:5]  # too few runs to find a step


def test_levelling_moves_earlier_segments_to_the_current_level_and_keeps_their_noise() -> None:
    values = stepped(np.random.default_rng(3))
    levelled = np.log(level_segments(values))
    logs = np.log(values)
    assert levelled[:6].mean() == pytest.approx(logs[6:].mean())
    np.testing.assert_allclose(np.diff(levelled[:6]), np.diff(logs[:6]))  # noise kept
    np.testing.assert_allclose(levelled[6:], logs[6:])


def test_a_floor_over_levelled_runs_is_below_one_over_the_step_or_over_the_segment() -> None:
    rng = np.random.default_rng(4)
    default = stats.default_noise_floor(0.5)
    across, segment, levelled = [], [], []
    for _ in range(50):
        values = stepped(rng, n=11, at=6)
        across.append(stats.noise_floor(values, default=default))  # the mean estimator
        segment.append(stats.noise_floor(since_last_step(values), default=default))
        levelled.append(stats.noise_floor(level_segments(values), default=default))
    assert np.median(levelled) < np.median(across)
    assert np.median(levelled) < np.median(segment)


def test_the_gate_margin_no_longer_counts_a_step_in_the_baseline_history() -> None:
    rng = np.random.default_rng(5)
    levels = [1.0] * 6 + [1.5] * 5
    history = tuple(run_samples(rng, lv) for lv in levels[:-1])
    entry = BaselineEntry(run_samples(rng, levels[-1]), None, {}, history_samples=history)
    context = EvidenceContext(min_effect={"p50": 0.0, "p95": 0.0, "p99": 0.0}, max_margin=5.0)
    got = margins(entry, context)["p50"].margin
    runs = [*history, entry.samples_s]
    per_run = [float(stats.hd_quantiles(s, [0.5])[0]) for s in runs]
    across = stats.noise_floor(per_run, default=stats.default_noise_floor(0.5), robust=True)
    levelled = stats.noise_floor(
        level_segments(per_run), default=stats.default_noise_floor(0.5), robust=True
    )
    assert got == pytest.approx(levelled)
    # The robust estimator already discounts one step's successive difference: never above.
    assert got <= across + 1e-12


def test_a_slow_drift_within_the_margin_run_by_run_escalates_once_it_accumulates() -> None:
    """Runs each +2% over the last (per-run noise 1%): every candidate compared with the latest
    run is within the 5% min_effect, but the label drifts. The first candidate that takes the
    drift since the last step beyond 5% escalates, naming the commit it started at; later ones
    see a drift already there and note it."""
    rng = np.random.default_rng(6)
    levels = [1.02**k * float(np.exp(rng.normal(0.0, 0.01))) for k in range(16)]
    runs = [run_samples(rng, lv) for lv in levels]
    commits = tuple(f"{k:02d}" + "a" * 38 for k in range(16))
    context = EvidenceContext(min_effect={"p50": 0.05, "p95": 0.05, "p99": 0.1})
    seen = []
    for k in range(3, 15):  # baseline: runs 0..k (k the latest), candidate: run k + 1
        entry = BaselineEntry(
            runs[k], None, {}, history_samples=tuple(runs[:k]), commits=commits[: k + 1]
        )
        evidence = evaluate(result(runs[k + 1]), entry, context, target=None)
        assert evidence.comparisons["p50"].ratio < 1.05  # each PR alone is within min_effect
        if evidence.history_drift is not None:
            seen.append((k, evidence, decide_test(evidence)))
    assert seen, "the drift was never reported"
    k, evidence, decision = seen[0]
    assert evidence.history_drift is not None and evidence.history_drift.new
    assert k <= 10  # within ten runs of +2%
    assert decision.decision == "escalate"
    (reason,) = [r for r in decision.reasons if "cumulative drift" in r]
    assert reason.startswith("cumulative drift since ") and reason.endswith("escalate")
    assert any(e.history_drift is not None and not e.history_drift.new for _, e, _ in seen[1:])


def test_a_flat_history_shows_no_drift() -> None:
    rng = np.random.default_rng(7)
    runs = [run_samples(rng, 1.0) for _ in range(11)]
    assert label_drift(runs, run_samples(rng, 1.0), QUANTILES, {"p50": 0.05}) is None


def test_a_drift_already_beyond_the_margin_before_this_run_is_a_note_not_news() -> None:
    logs = [0.02 * k for k in range(14)]
    history = {"p50": list(np.exp(logs))}
    drift = cumulative_drift_check(history, {"p50": float(np.exp(0.02 * 14))}, {"p50": 0.05})
    assert drift is not None and not drift.new
    assert drift.reason.endswith("the label's runs were already beyond it")


def test_a_speed_up_drift_does_not_escalate() -> None:
    history = {"p50": list(np.exp([-0.02 * k for k in range(12)]))}
    assert cumulative_drift_check(history, {"p50": float(np.exp(-0.24))}, {"p50": 0.05}) is None


def test_a_drift_over_runs_of_one_clean_commit_is_noted_not_escalated() -> None:
    # A host that slows 1% a run while the label measures one commit: no code was merged; the
    # candidate's run takes the drift past +5%.
    history = {"p50": list(np.exp([0.01 * k for k in range(5)]))}
    candidate = {"p50": float(np.exp(0.12))}
    one = ("c" * 40,) * 5
    drift = cumulative_drift_check(history, candidate, {"p50": 0.05}, one)
    assert drift is not None and drift.new and not drift.escalates
    assert drift.one_commit == "c" * 40
    assert "every run of the label since then is commit cccccccccccc" in drift.reason
    assert "noted, not escalated" in drift.reason
    # Merged code along the drift, or uncommitted changes in a run: it escalates as before.
    merged = tuple(f"{k}" * 40 for k in range(5))
    assert cumulative_drift_check(history, candidate, {"p50": 0.05}, merged).escalates  # type: ignore[union-attr]
    dirty = (*one[:4], "c" * 40 + DIRTY_SUFFIX)
    drift = cumulative_drift_check(history, candidate, {"p50": 0.05}, dirty)
    assert drift is not None and drift.escalates and drift.reason.endswith("escalate")
    # Without commits (runs that recorded none) nothing is known: it escalates.
    assert cumulative_drift_check(history, candidate, {"p50": 0.05}).escalates  # type: ignore[union-attr]
    # The policy: a note, the test ships.
    rng = np.random.default_rng(8)
    runs = [run_samples(rng, 1.0) for _ in range(4)]
    entry = BaselineEntry(runs[-1], None, {}, history_samples=tuple(runs[:-1]))
    flat = evaluate(result(run_samples(rng, 1.0)), entry, EvidenceContext(), target=None)
    drift = cumulative_drift_check(history, candidate, {"p50": 0.05}, one)
    evidence = replace(flat, history_drift=drift)
    decision = decide_test(evidence)
    assert decision.decision == "ship"
    assert any("noted, not escalated" in r for r in decision.reasons)


def test_the_latest_run_is_measured_against_the_median_of_the_label_since_its_last_step() -> None:
    # Stop 45: an attention decode's label read p50 354, 375 and 286 µs; the 286 µs run, the
    # one every candidate was compared with, is x0.808 of the label's level.
    assert latest_run_level([354e-6, 375e-6, 286e-6]) == pytest.approx(286 / 354)
    assert np.isnan(latest_run_level([1.0, 1.1]))
    assert np.isnan(latest_run_level([1.0, 1.1, float("nan")]))
    # Only the last five runs count, and a step moves the level to the runs since it.
    assert latest_run_level([9.0, 9.0, 1.0, 1.0, 1.0, 1.0, 1.2]) == pytest.approx(1.2)
    after_step = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 2.0, 2.1, 1.9]
    assert latest_run_level(after_step) == pytest.approx(1.9 / 2.0)  # not 1.9 / 1.02


def test_the_evidence_carries_how_far_the_latest_baseline_run_sat_below_its_label() -> None:
    rng = np.random.default_rng(45)
    entry = BaselineEntry(
        run_samples(rng, 0.8),
        None,
        {},
        history_samples=(run_samples(rng, 1.0), run_samples(rng, 1.05)),
    )
    found = evaluate(result(run_samples(rng, 1.0)), entry, EvidenceContext(), target=None)
    assert found.baseline_level["p50"] == pytest.approx(0.8, rel=0.03)
    # The JSON shows it beside the baseline's quantiles, since reasons quote it.
    record = judge_test(result(run_samples(rng, 1.0)), entry, EvidenceContext(), target=None)
    shown = record.to_json()["baseline"]["level"]
    assert shown["p50"] == pytest.approx(found.baseline_level["p50"])
    young = evaluate(
        result(run_samples(rng, 1.0)),
        BaselineEntry(run_samples(rng, 0.8), None, {}, history_samples=(run_samples(rng, 1.0),)),
        EvidenceContext(),
        target=None,
    )
    assert young.baseline_level == {}
