"""The decision policy: evidence → ship / rollback / escalate, with reasons. The only place a verdict is made.

Pure (no pytest, no I/O). Per test (DESIGN 7):

* **rollback** — a confirmed p95/p99 regression (reproduced on replay when replay is on), a
  confident SLA breach, a quality drift beyond tolerance, or an efficiency collapse with a
  bound-class change; attributable to at most one changed layer.
* **escalate** — evidence that points at a regression without establishing it or without
  attributing it: a ``suspect`` quantile, drift within the run, a regression that did not
  reproduce, several changed layers, a baseline from other hardware, a precision change without
  quality evidence, an SLA that is possibly breached or cannot be assessed (p99 with too few
  samples), missing counters on a test whose SLA needs them, an ambiguous bound-class change.
* **ship** — nothing points at a regression and SLAs hold; improvements ship and are noted.

Per run: any rollback → rollback; else any escalate (or a large common-mode shift) → escalate;
else ship.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_roofline.gate.evidence import MIN_COUNTER_COMPLETENESS, TestEvidence
from pytest_roofline.stats import CommonMode, QuantileComparison
from pytest_roofline.units import format_seconds
from pytest_roofline.vocabulary import DECISIONS, Decision

__all__ = [
    "DECISIONS",
    "Decision",
    "RunDecision",
    "TestDecision",
    "decide_run",
    "decide_test",
    "first_failing_layer",
]


@dataclass(frozen=True, slots=True)
class TestDecision:
    """A test's decision with the reasons a reviewer reads first."""

    __test__ = False

    decision: Decision
    reasons: tuple[str, ...]
    symptom: str | None
    mechanism: str | None
    competing_hypotheses: tuple[str, ...]
    missing_evidence: tuple[str, ...]
    first_failing_layer: str | None
    owners: tuple[str, ...]
    rollback_boundary: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "decision": self.decision,
            "reasons": list(self.reasons),
            "symptom": self.symptom,
            "mechanism": self.mechanism,
            "competing_hypotheses": list(self.competing_hypotheses),
            "missing_evidence": list(self.missing_evidence),
            "first_failing_layer": self.first_failing_layer,
            "owner": ", ".join(self.owners) if self.owners else None,
            "owners": list(self.owners),
            "rollback_boundary": self.rollback_boundary,
        }


@dataclass(frozen=True, slots=True)
class RunDecision:
    """The run's decision and why."""

    decision: Decision
    reasons: tuple[str, ...]


def _ci(c: QuantileComparison) -> str:
    low, high = c.ci.low, c.ci.high
    interval = f"[{low:.3f}, {high:.3f}]" if math.isfinite(low) and math.isfinite(high) else "[n/a]"
    return f"x{c.ratio:.3f} {interval}"


def first_failing_layer(layers_changed: Sequence[str]) -> str | None:
    """The first changed layer in the configured order (data before model before runtime before hardware)."""
    return layers_changed[0] if layers_changed else None


def _mechanism(e: TestEvidence) -> tuple[str | None, tuple[str, ...]]:
    parts, competing = [], []
    point, base = e.point, e.baseline_point
    if point is not None:
        bound = point.bound if base is None else f"{base.bound} -> {point.bound}"
        text = f"bound {bound}"
        if point.efficiency is not None:
            eff = (
                f"{point.efficiency:.0%}"
                if base is None or base.efficiency is None
                else f"{base.efficiency:.0%} -> {point.efficiency:.0%}"
            )
            text += f", efficiency {eff} of the attainable roof"
        parts.append(text)
        if point.data_error:
            parts.append(f"data error: {point.data_error}")
    else:
        parts.append("no roofline placement (no declared work or target)")
    if e.cpu_share is not None:
        parts.append(f"CPU share {e.cpu_share:.2f}")
        if e.cpu_share < 0.8:
            competing.append(
                f"a disturbed measurement (CPU share {e.cpu_share:.2f} < 0.8: the test waited or was descheduled)"
            )
    if e.drift is not None and e.drift.drifting:
        competing.append(
            f"machine speed drifting within the run ({e.drift.window_change:+.1%} first to last window)"
        )
    if e.common_mode != 1.0:
        parts.append(f"compared after dividing out the run's shift so far (x{e.common_mode:.3f})")
    if e.layers_changed:
        competing.append(f"changed layers: {', '.join(e.layers_changed)}")
    if e.batched:
        competing.append("samples are batched: their tails are not per-call tails")
    if e.design == "paired":
        competing.append(
            "a disturbance that hit one side's rounds more than the other's (see the per-round ratios)"
        )
    else:
        competing.append(
            "shared-machine speed change between the runs (see the run's common-mode factor)"
        )
    return "; ".join(parts), tuple(competing)


def decide_test(e: TestEvidence) -> TestDecision:
    """Decide one test from its evidence."""
    rollback: list[str] = []
    escalate: list[str] = []
    notes: list[str] = []
    missing: list[str] = []

    for name, c in e.comparisons.items():
        if c.verdict == "regression":
            change = f"{format_seconds(c.base_s)} -> {format_seconds(c.cand_s)}"
            text = f"{name} regressed {_ci(c)} (margin +{c.delta:.0%}, {change})"
            if e.replay is not None and e.replay.attempted and not e.replay.reproduced:
                escalate.append(f"{text}, but it did not reproduce on replay")
            elif e.replay is not None and not e.replay.attempted:
                escalate.append(f"{text}, not yet confirmed by a replay")
                missing.append("replay")
            else:
                rollback.append(
                    text + (", reproduced on replay" if e.replay and e.replay.reproduced else "")
                )
        elif c.verdict == "suspect":
            escalate.append(
                f"{name} {_ci(c)} is above the margin +{c.delta:.0%} but not established: {c.reason}"
            )
        elif c.verdict == "insufficient":
            notes.append(f"{name}: not compared: {c.reason}")
        elif c.improvement:
            notes.append(f"{name} improved {_ci(c)}")
        elif c.verdict == "ok":
            notes.append(f"{name} {_ci(c)}: a regression of +{c.delta:.0%} is ruled out")
        elif c.verdict == "not detected":
            notes.append(
                f"{name}: no regression seen; smallest detectable change here is +{c.mde:.0%}"
            )

    for check in e.sla:
        if check.status == "breach":
            rollback.append(f"SLA breach: {check.detail}")
        elif check.status == "possible breach":
            escalate.append(f"possible SLA breach: {check.detail}")
        elif check.status == "unassessable":
            escalate.append(f"SLA cannot be assessed: {check.detail}")
            missing.append(f"samples for the {check.key} SLA")

    for q in e.quality:
        if q.ok is False:
            tolerance = (
                f"tolerance {q.tolerance:g}" if q.tolerance is not None else "no tolerance set"
            )
            rollback.append(
                f"quality {q.name} worsened {q.baseline:g} -> {q.value:g} ({tolerance})"
            )
    for name in e.missing_quality:
        escalate.append(f"quality {name} was recorded in the baseline but not in this run")
        missing.append(f"quality {name}")

    if e.bound_change is not None:
        margin = e.margins.get("p95", 0.05)
        if e.bound_change.changed:
            # Efficiencies compare only for the same declared work: a precision change (fp64 ->
            # fp32 halves the bytes and moves the roof) changes the efficiency with no change in
            # the code's speed, and is judged as a precision change below. And a test that got
            # faster has not collapsed, whatever its efficiency says.
            p50 = e.comparisons.get("p50")
            faster = p50 is not None and math.isfinite(p50.ratio) and p50.ratio <= 1.0
            collapsed = (
                e.efficiency_ratio is not None
                and e.efficiency_ratio < 1 / (1 + margin)
                and not faster
                and e.precision_change is None
            )
            text = f"bound class changed {e.bound_change.base} -> {e.bound_change.cand}"
            if collapsed:
                rollback.append(f"{text} with an efficiency collapse (x{e.efficiency_ratio:.2f})")
            else:
                notes.append(text)
        elif e.bound_change.ambiguous and e.bound_change.base != e.bound_change.cand:
            escalate.append(
                f"bound class may have changed {e.bound_change.base} -> {e.bound_change.cand}: {e.bound_change.reason}"
            )

    if e.drift is not None and e.drift.drifting:
        text = (
            f"latency drifts within the run (Kendall tau {e.drift.tau:.2f}, p={e.drift.p_value:.2g}, "
            f"{e.drift.window_change:+.1%} first to last window)"
        )
        # Drift makes a comparison with the baseline unreliable; with no baseline nothing is
        # compared, so a first run reports it and ships (a first run with no SLA problem is quiet).
        if e.comparisons:
            escalate.append(f"{text}: the quantiles are not stable")
        else:
            notes.append(f"{text}; no baseline to compare, so it gates nothing")
    if e.needs_counters and (
        e.counter_completeness is None or e.counter_completeness < MIN_COUNTER_COMPLETENESS
    ):
        completeness = "none" if e.counter_completeness is None else f"{e.counter_completeness:.0%}"
        escalate.append(f"counter completeness {completeness} on a test whose SLA needs counters")
        missing.append("counters")
    if e.precision_change is not None and not e.quality:
        base, cand = e.precision_change
        escalate.append(
            f"declared precision changed {base} -> {cand} without quality evidence (record_quality)"
        )
        missing.append("quality evidence for the precision change")
    if e.hardware_differs and (rollback or escalate or e.comparisons):
        escalate.append(f"baseline measured on other hardware: {e.hardware_differs}")

    if rollback and len(e.layers_changed) > 1:
        escalate.extend(rollback)
        escalate.append(
            f"{len(e.layers_changed)} layers changed since the baseline ({', '.join(e.layers_changed)}): "
            "the root cause cannot be attributed to one"
        )
        rollback = []

    decision: str = "rollback" if rollback else "escalate" if escalate else "ship"
    reasons = (
        tuple(rollback + escalate)
        if decision != "ship"
        else tuple(notes) or ("no regression seen",)
    )
    mechanism, competing = _mechanism(e)
    if decision != "ship" and not e.owners:
        reasons = (
            *reasons,
            "no owner is defined for this test (set owner= on the marker or owners: in roofline.yaml)",
        )
    if e.point is None:
        missing.append("roofline placement (declare the work and a target)")
    return TestDecision(
        decision=decision,  # type: ignore[arg-type]
        reasons=reasons,
        symptom=(rollback + escalate)[0] if decision != "ship" else None,
        mechanism=mechanism,
        competing_hypotheses=competing if decision != "ship" else (),
        missing_evidence=tuple(dict.fromkeys(missing)),
        first_failing_layer=first_failing_layer(e.layers_changed) if decision != "ship" else None,
        owners=e.owners,
        rollback_boundary=e.rollback,
    )


def decide_run(
    decisions: Mapping[str, Decision],
    *,
    common_mode: CommonMode | None,
    common_mode_threshold: float,
    run_reasons: Sequence[str] = (),
) -> RunDecision:
    """Any rollback → rollback; else any escalate or a large common-mode shift → escalate; else ship."""
    reasons = []
    rolled = sorted(n for n, d in decisions.items() if d == "rollback")
    escalated = sorted(n for n, d in decisions.items() if d == "escalate")
    if rolled:
        reasons.append(
            f"{len(rolled)} test(s) rolled back: {', '.join(rolled[:5])}{' ...' if len(rolled) > 5 else ''}"
        )
    if escalated:
        reasons.append(
            f"{len(escalated)} test(s) escalated: {', '.join(escalated[:5])}{' ...' if len(escalated) > 5 else ''}"
        )
    large_shift = (
        common_mode is not None
        and math.isfinite(common_mode.log_factor)
        and abs(common_mode.factor - 1) > common_mode_threshold
    )
    if large_shift and common_mode is not None:
        reasons.append(
            f"the whole run moved together by x{common_mode.factor:.3f} over {common_mode.n_tests} tests "
            f"(more than +/-{common_mode_threshold:.0%}): machine speed or a shared layer changed; "
            "confirm with a paired A/B run before acting on individual tests"
        )
    reasons.extend(run_reasons)
    if rolled:
        decision: Decision = "rollback"
    elif escalated or large_shift or run_reasons:
        decision = "escalate"
    else:
        decision = "ship"
        if not reasons:
            reasons.append("no regression seen and every SLA holds")
    return RunDecision(decision, tuple(reasons))
