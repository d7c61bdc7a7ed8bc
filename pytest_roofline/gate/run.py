"""Compare → decide for a whole run: per-test evidence and decisions, then the run-level checks.

No pytest here: the plugin's session object and the ``pytest-roofline compare`` command both
call these functions, so a stored comparison decides exactly as the live gate did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from pytest_roofline import stats
from pytest_roofline.config.settings import DEFAULT_LAYERS, GateSettings
from pytest_roofline.gate.evidence import (
    MIN_COUNTER_COMPLETENESS,
    BaselineEntry,
    GateContext,
    TestEvidence,
    baseline_entry,
    evaluate,
)
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.gate.policy import TestDecision, decide_run, decide_test
from pytest_roofline.report.json_report import evidence_document
from pytest_roofline.report.model import RunView, TestView
from pytest_roofline.model.results import TestResult, summarize
from pytest_roofline.store.sqlite import Baseline, Store, StoredRun
from pytest_roofline.config.tags import layer_of, tag_diff

__all__ = [
    "TestOutcome",
    "baseline_entries",
    "build_run_view",
    "compare_stored_runs",
    "gate_context",
    "hardware_difference",
    "layers_changed",
    "outcome_for",
    "replay_command",
]

# A run-wide shift larger than the p50 run-to-run noise of separate runs (research/noise-here.md)
# is more likely the machine or a shared layer than the code of every test.
COMMON_MODE_THRESHOLD = stats.DEFAULT_NOISE_FLOOR[0.5]
# The median of fewer log ratios than this is too close to the individual tests to stand for
# "the run" (with one test it *is* that test).
MIN_TESTS_FOR_COMMON_MODE = 5


@dataclass(frozen=True, slots=True, eq=False)
class TestOutcome:
    """A test's evidence and decision, and its JSON fragment."""

    __test__ = False

    evidence: TestEvidence
    decision: TestDecision
    document: Mapping[str, Any]


def layers_changed(
    baseline_tags: Mapping[str, str], tags: Mapping[str, str], layers: Mapping[str, Sequence[str]]
) -> tuple[str, ...]:
    """Layers (in configured order) with at least one changed tag."""
    changed = {layer_of(tag, layers) for tag in tag_diff(baseline_tags, tags)}
    return tuple(layer for layer in layers if layer in changed)


def hardware_difference(
    baseline: StoredRun, target: HardwareTarget | None, machine: str
) -> str | None:
    """Why the baseline's hardware differs from this run's, or ``None``."""
    base_target = str(baseline.record.target.get("name", "")) or None
    if target is not None and base_target is not None and base_target != target.name:
        return f"target {base_target!r} in the baseline, {target.name!r} now"
    if baseline.record.machine and machine and baseline.record.machine != machine:
        return f"machine {baseline.record.machine!r} in the baseline, {machine!r} now"
    return None


def gate_context(
    gate: GateSettings,
    *,
    family_size: int,
    baseline: Baseline | None,
    tags: Mapping[str, str],
    layers: Mapping[str, Sequence[str]],
    target: HardwareTarget | None,
    machine: str,
) -> GateContext:
    """The run-level facts each test's evaluation uses."""
    if baseline is None:
        return GateContext(
            alpha=gate.alpha,
            min_effect=gate.min_effect,
            replay=gate.replay,
            family_size=family_size,
        )
    return GateContext(
        alpha=gate.alpha,
        min_effect=gate.min_effect,
        replay=gate.replay,
        family_size=family_size,
        layers_changed=layers_changed(baseline.latest.record.tags, tags, layers),
        hardware_differs=hardware_difference(baseline.latest, target, machine),
        baseline_label=baseline.label,
    )


def baseline_entries(baseline: Baseline | None) -> dict[str, BaselineEntry]:
    """Each test's baseline entry: the latest run's samples, history from earlier runs (oldest first)."""
    if baseline is None:
        return {}
    older = list(reversed(baseline.history))
    entries = {}
    for nodeid, stored in baseline.latest.results.items():
        history = [run.results[nodeid].samples_s for run in older if nodeid in run.results]
        entries[nodeid] = baseline_entry(stored.payload, stored.samples_s, history)
    return entries


def replay_command(nodeid: str, baseline_label: str | None, target: str | None) -> str:
    """The command that measures this test again against the same baseline."""
    parts = ["pytest", "--roofline"]
    if baseline_label:
        parts.append(f"--roofline-baseline={baseline_label}")
    if target:
        parts.append(f"--roofline-target={target}")
    quoted = "'" + nodeid.replace("'", "'\"'\"'") + "'"
    return " ".join([*parts, quoted])


def outcome_for(
    result: TestResult,
    entry: BaselineEntry | None,
    context: GateContext,
    *,
    target: HardwareTarget | None,
    replays: Sequence[np.ndarray] = (),
    common_mode: float = 1.0,
) -> TestOutcome:
    """Evaluate and decide one test (``common_mode``: the run-wide shift to divide out)."""
    evidence = evaluate(
        result, entry, context, target=target, replays=replays, common_mode=common_mode
    )
    decision = decide_test(evidence)
    command = replay_command(result.nodeid, context.baseline_label, target.name if target else None)
    document = evidence_document(
        evidence,
        decision,
        replay_command=command,
        candidate_samples=result.measurement.samples_s,
        baseline_samples=entry.samples_s if entry is not None else None,
    )
    return TestOutcome(evidence, decision, document)


def _bh(documents: Mapping[str, dict[str, Any]], alpha: float) -> list[str]:
    """Benjamini-Hochberg over every comparison of the run; adds ``p_bh`` to each change.

    Returns run-level reasons for tests the procedure flags beyond the per-test decisions.
    """
    keys, p_values = [], []
    for nodeid, doc in documents.items():
        for name, change in (doc.get("change") or {}).items():
            p = change.get("p_value")
            if p is not None and math.isfinite(p):
                keys.append((nodeid, name))
                p_values.append(p)
    if not p_values:
        return []
    adjusted = scipy_stats.false_discovery_control(np.asarray(p_values), method="bh")
    reasons = []
    for (nodeid, name), p_bh in zip(keys, adjusted, strict=True):
        change = documents[nodeid]["change"][name]
        change["p_bh"] = float(p_bh)
        ratio, delta = change.get("ratio"), change.get("delta")
        flagged = p_bh < alpha and ratio is not None and delta is not None and ratio >= 1 + delta
        if flagged and documents[nodeid].get("decision") == "ship":
            reasons.append(
                f"{nodeid}: {name} x{ratio:.3f} is significant across the run (BH p = {p_bh:.3g}) "
                "though not by the per-test bound"
            )
    return reasons


def _observability(
    results: Mapping[str, TestResult],
    documents: Mapping[str, Mapping[str, Any]],
    gate: GateSettings,
) -> dict[str, Any]:
    n = len(results)
    if n == 0:
        return {
            k: None
            for k in (
                "counter_completeness",
                "trigger_coverage",
                "replay_success_rate",
                "sample_adequacy",
                "escape_risk",
                "slice_coverage",
            )
        }
    completeness = [
        r.measurement.counters.completeness
        for r in results.values()
        if r.measurement.counters is not None
    ]
    non_ship = [d for d in documents.values() if d.get("decision") in ("rollback", "escalate")]
    replayed = [d["replay"] for d in documents.values() if (d.get("replay") or {}).get("attempted")]
    sizes = [r.measurement.samples_s.size for r in results.values()]
    mde95 = [(d.get("mde") or {}).get("p95") for d in documents.values()]
    groups: dict[str, set[tuple[str, str]]] = {}
    for r in results.values():
        if r.slice is not None and r.slice.group is not None:
            groups.setdefault(r.slice.group, set()).add((r.slice.name, r.slice.source))
    return {
        "counter_completeness": float(np.mean(completeness)) if completeness else None,
        "trigger_coverage": (
            sum(not d.get("missing_evidence") for d in non_ship) / len(non_ship)
            if non_ship
            else None
        ),
        "replay_success_rate": sum(bool(r.get("reproduced")) for r in replayed) / len(replayed)
        if replayed
        else None,
        "sample_adequacy": {
            "p95": sum(s >= stats.n_floor(0.95, gate.alpha) for s in sizes) / n,
            "p99": sum(s >= stats.n_floor(0.99, gate.alpha) for s in sizes) / n,
        },
        # A test that cannot see a change of the gate's margin lets such a regression escape.
        "escape_risk": sum(m is None or m > gate.min_effect.get("p95", 0.05) for m in mde95) / n,
        "slice_coverage": {
            "groups": len(groups),
            "multi_shape": sum(len({name for name, _ in s}) > 1 for s in groups.values())
            / len(groups)
            if groups
            else None,
            "production": sum(any(src == "production" for _, src in s) for s in groups.values())
            / len(groups)
            if groups
            else None,
        },
    }


def _size(result: TestResult) -> tuple[float, float]:
    """How big a slice is: its declared work, else its median time."""
    declared = result.measurement.declared
    work = 0.0
    if declared is not None:
        work = float(declared.flops or 0.0) + float(declared.bytes_moved or 0.0)
    return (
        work,
        float(np.median(result.measurement.samples_s))
        if result.measurement.samples_s.size
        else 0.0,
    )


def first_failing_slices(
    results: Mapping[str, TestResult], documents: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """For each slice group with a non-ship test, its smallest failing slice (the cheapest repro)."""
    failing: dict[str, list[tuple[tuple[float, float], str]]] = {}
    for nodeid, result in results.items():
        if result.slice is None or result.slice.group is None:
            continue
        if documents.get(nodeid, {}).get("decision") in ("rollback", "escalate"):
            failing.setdefault(result.slice.group, []).append((_size(result), nodeid))
    return {group: min(entries)[1] for group, entries in sorted(failing.items())}


def build_run_view(
    *,
    results: Mapping[str, TestResult],
    outcomes: Mapping[str, Mapping[str, Any]],
    baseline: Baseline | None,
    gate: GateSettings,
    gate_on: str,
    label: str | None,
    tags: Mapping[str, str],
    layers: Mapping[str, Sequence[str]],
    target: HardwareTarget | None,
    machine: str,
    started: float,
    finished: float,
) -> RunView:
    """Run-level analysis (common mode, BH, observability, the run decision) and the view model."""
    documents = {nodeid: dict(outcomes.get(nodeid, {})) for nodeid in results}
    for doc in documents.values():
        if doc.get("change"):
            doc["change"] = {name: dict(change) for name, change in doc["change"].items()}
    baseline_results = baseline.latest.results if baseline is not None else {}
    # Raw p50 ratios (the per-test comparisons may already have the running shift divided out).
    log_ratios = [
        math.log(
            float(np.median(result.measurement.samples_s))
            / float(np.median(baseline_results[nodeid].samples_s))
        )
        for nodeid, result in results.items()
        if nodeid in baseline_results
        and result.measurement.samples_s.size
        and baseline_results[nodeid].samples_s.size
    ]
    common = stats.common_mode(log_ratios) if len(log_ratios) >= MIN_TESTS_FOR_COMMON_MODE else None
    run_reasons = _bh(documents, gate.alpha)
    counters_low = [
        n
        for n, r in results.items()
        if r.measurement.counters is not None
        and r.measurement.counters.completeness < MIN_COUNTER_COMPLETENESS
    ]
    # Shown with the run's reasons (it explains gaps in the evidence), but decides nothing.
    counter_notes = (
        (
            f"{len(counters_low)} test(s) with counter completeness below {MIN_COUNTER_COMPLETENESS:.0%}",
        )
        if counters_low
        else ()
    )
    decision = decide_run(
        {nodeid: doc.get("decision", "ship") for nodeid, doc in documents.items()},
        common_mode=common,
        common_mode_threshold=COMMON_MODE_THRESHOLD,
        run_reasons=run_reasons,
    )
    baseline_run = baseline.latest if baseline is not None else None
    diff = tag_diff(baseline_run.record.tags, tags) if baseline_run else {}
    changed_layers = layers_changed(baseline_run.record.tags, tags, layers) if baseline_run else ()
    tests = [
        TestView(
            nodeid=nodeid,
            slice_name=result.slice.name if result.slice else None,
            slice_group=result.slice.group if result.slice else None,
            source=result.slice.source if result.slice else None,
            owners=result.owners,
            rollback_boundary=result.rollback,
            summary=summarize(result.measurement.samples_s),
            batch_size=result.measurement.samples.batch_size,
            stop_reason=result.measurement.samples.stop_reason,
            elapsed_s=result.measurement.samples.elapsed_s,
            baseline=summarize(baseline_results[nodeid].samples_s)
            if nodeid in baseline_results
            else None,
            declared=result.measurement.declared.to_dict() if result.measurement.declared else None,
            counters=result.measurement.counters.to_dict() if result.measurement.counters else None,
            decision=documents[nodeid].get("decision"),
            reasons=tuple(documents[nodeid].get("reasons", ())),
            outcome=documents[nodeid],
        )
        for nodeid, result in sorted(results.items())
    ]
    return RunView(
        label=label,
        baseline_label=baseline.label if baseline else None,
        baseline_run_id=baseline_run.id if baseline_run else None,
        tags=dict(tags),
        tag_diff={k: (b, c, layer_of(k, layers)) for k, (b, c) in diff.items()},
        first_failing_layer=changed_layers[0]
        if changed_layers and decision.decision != "ship"
        else None,
        target=target.to_dict() if target is not None else None,
        machine=machine,
        started=started,
        finished=finished,
        tests=tests,
        missing_from_baseline=tuple(
            n for n in sorted(results) if baseline_run and n not in baseline_results
        ),
        missing_from_candidate=tuple(n for n in sorted(baseline_results) if n not in results),
        decision=decision.decision,
        reasons=decision.reasons + counter_notes,
        observability=_observability(results, documents, gate),
        first_failing_slices=first_failing_slices(results, documents),
        common_mode=(
            {**common.to_dict(), "threshold": COMMON_MODE_THRESHOLD, "applied": False}
            if common is not None
            else None
        ),
        gate={
            "alpha": gate.alpha,
            "min_effect": dict(gate.min_effect),
            "replay": gate.replay,
            "gate_on": gate_on,
        },
    )


def compare_stored_runs(
    store: Store,
    base_run_id: int,
    cand_run_id: int,
    *,
    gate: GateSettings | None = None,
    layers: Mapping[str, Sequence[str]] = DEFAULT_LAYERS,
    gate_on: str = "rollback",
) -> dict[str, Any]:
    """Compare two stored runs offline; return the JSON document (as ``--roofline-json`` writes it).

    The candidate's stored samples are its first measurement (replays are not stored), so a
    regression found here is decided as if replay were off.
    """
    from pytest_roofline.report.json_report import run_document

    gate = gate or GateSettings()
    base_run = store.load_run(base_run_id)
    cand_run = store.load_run(cand_run_id)
    label = base_run.record.label or f"run {base_run_id}"
    baseline = Baseline(label=label, latest=base_run, history=())
    target = HardwareTarget.from_dict(cand_run.record.target) if cand_run.record.target else None
    results = {
        nodeid: TestResult.from_dict(stored.payload, samples_s=stored.samples_s)
        for nodeid, stored in cand_run.results.items()
    }
    offline_gate = GateSettings(
        alpha=gate.alpha, min_effect=gate.min_effect, replay=0, history=gate.history
    )
    context = gate_context(
        offline_gate,
        family_size=len(results),
        baseline=baseline,
        tags=cand_run.record.tags,
        layers=layers,
        target=target,
        machine=cand_run.record.machine,
    )
    entries = baseline_entries(baseline)
    outcomes = {
        nodeid: dict(outcome_for(result, entries.get(nodeid), context, target=target).document)
        for nodeid, result in results.items()
    }
    view = build_run_view(
        results=results,
        outcomes=outcomes,
        baseline=baseline,
        gate=offline_gate,
        gate_on=gate_on,
        label=cand_run.record.label,
        tags=cand_run.record.tags,
        layers=layers,
        target=target,
        machine=cand_run.record.machine,
        started=cand_run.record.started,
        finished=cand_run.record.finished,
    )
    return run_document(view)
