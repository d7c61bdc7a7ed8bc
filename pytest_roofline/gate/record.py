"""Evidence and decision → the run document's record of one test.

The one place typed evidence (:mod:`pytest_roofline.gate.evidence`) and a decision
(:mod:`pytest_roofline.gate.policy`) become a :class:`~pytest_roofline.model.document.TestRecord`:
the renderers read that record and nothing else. Pure (no pytest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal, Protocol

import numpy as np

from pytest_roofline.errors import ConfigError
from pytest_roofline.gate.evidence import TestEvidence
from pytest_roofline.gate.policy import TestDecision
from pytest_roofline.gate.soak import SoakAssessment
from pytest_roofline.hardware.presets import load_presets
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.measure.canary import CanaryLevel, CanarySummary
from pytest_roofline.measure.counters.nvml import decode_throttle_reasons
from pytest_roofline.measure.hostwatch import HostRecord
from pytest_roofline.model.document import (
    BaselineSummary,
    CanaryRunRecord,
    ConfirmationRecord,
    CounterFidelity,
    CountersRecord,
    DeclaredRecord,
    DriftRecord,
    FreshReplayRecord,
    HostRecordDoc,
    PlatformCell,
    PlatformTarget,
    QualityCheck,
    QuantileChange,
    ReplayRecord,
    RooflineRecord,
    RunDocument,
    Series,
    SlaCheckRecord,
    SlaRecord,
    SoakFindingRecord,
    SoakRecord,
    SoakWindowRecord,
    TestRecord,
)
from pytest_roofline.model.results import TestResult
from pytest_roofline.roofline import DEFAULT_PRECISION, DeclaredWork, declared_work
from pytest_roofline.stats import QuantileComparison
from pytest_roofline.vocabulary import LATENCY_SLA_KEYS

__all__ = [
    "SERIES_POINTS",
    "PlatformKind",
    "change_record",
    "platform_cells",
    "platform_kind",
    "platform_targets",
    "relevant_presets",
    "soak_record",
    "test_record",
    "with_platforms",
]

SERIES_POINTS = 400
"""Samples kept per side for the charts: enough for an ECDF and a timeline, small enough for
1000 tests in one report."""


def _series(samples: np.ndarray | None) -> tuple[float, ...] | None:
    """Samples thinned to at most :data:`SERIES_POINTS`, keeping their order (for the timeline)."""
    if samples is None:
        return None
    if samples.size > SERIES_POINTS:
        samples = samples[np.linspace(0, samples.size - 1, SERIES_POINTS).round().astype(int)]
    return tuple(float(x) for x in samples)


def change_record(comparison: QuantileComparison) -> QuantileChange:
    """One quantile comparison as the document records it."""
    return QuantileChange.from_json(comparison.to_dict())


def _roofline(e: TestEvidence) -> RooflineRecord | None:
    point, base, bound = e.point, e.baseline_point, e.bound_change
    if point is None:
        return None
    return RooflineRecord.from_json(
        {
            **point.to_dict(),
            "baseline_bound": base.bound if base else None,
            "baseline_intensity": base.intensity if base else None,
            "baseline_achieved_flops_per_s": base.achieved_flops_per_s if base else None,
            "baseline_efficiency": base.efficiency if base else None,
            "bound_changed": bound.changed if bound else None,
            "bound_change": bound.to_dict() if bound else None,
            "efficiency_ratio": e.efficiency_ratio,
        }
    )


def _fidelity(e: TestEvidence) -> dict[str, CounterFidelity]:
    return {f.quantity: CounterFidelity.from_json(f.to_dict()) for f in e.fidelity}


def _sla(e: TestEvidence) -> SlaRecord:
    violations = tuple(c.detail for c in e.sla if c.status in ("breach", "possible breach"))
    checks = []
    for c in e.sla:
        latency = c.key in LATENCY_SLA_KEYS
        checks.append(
            SlaCheckRecord(
                key=c.key,
                status=c.status,
                threshold_s=float(c.threshold) if latency else None,
                estimate_s=float(c.estimate) if latency and c.estimate is not None else None,
                threshold=None if latency else c.threshold,
                estimate=None if latency else c.estimate,
                detail=c.detail,
            )
        )
    return SlaRecord(
        ok=(not violations) if e.sla else None, violations=violations, checks=tuple(checks)
    )


def platform_cells(
    work: DeclaredWork | None, presets: Mapping[str, HardwareTarget]
) -> dict[str, PlatformCell]:
    """Project declared work onto each preset: the roofline's time per call and the class there.

    Time at the roof = ``max(flops / peak FLOP/s[precision], bytes / peak bytes/s[dram])``, the
    roofline model's lower bound on one call; the class comes from
    :meth:`HardwareTarget.place` at that time (efficiency 1, so never ``overhead``). A
    precision a preset has no roof for gives no time and no class.
    """
    if work is None or not (work.flops or work.bytes_moved):
        return {}
    cells = {}
    for name, target in presets.items():
        peak_flops = target.peak_flops_per_s.get(work.precision or DEFAULT_PRECISION)
        peak_bytes = target.peak_bytes_per_s.get("dram")
        times = []
        if work.flops and peak_flops:
            times.append(work.flops / peak_flops)
        if work.bytes_moved and peak_bytes:
            times.append(work.bytes_moved / peak_bytes)
        if not times or (work.flops and peak_flops is None):
            cells[name] = PlatformCell(None, None)
            continue
        seconds = max(times)
        cells[name] = PlatformCell(seconds, target.place(work, seconds).bound)
    return cells


PlatformKind = Literal["cpu", "accelerator"]

# Words of a target's name or description that say what it is. Presets name their vendor and
# product (hardware/presets.yaml), so the words are enough to tell a GPU or TPU from a CPU.
_ACCELERATOR_WORDS = ("gpu", "nvidia", "instinct", "tpu", "radeon", "gaudi")
_CPU_WORDS = ("cpu", "xeon", "epyc", "ryzen", "graviton", "neoverse", "core i")


class _Described(Protocol):
    """A target as the run or its document knows it (a HardwareTarget or a TargetRecord)."""

    @property
    def name(self) -> str | None: ...

    @property
    def source(self) -> str | None: ...

    @property
    def description(self) -> str | None: ...


def platform_kind(target: _Described) -> PlatformKind | None:
    """What kind of processor ``target`` is: ``cpu``, ``accelerator`` (GPU, TPU), or ``None``.

    A measured target is the host this run calibrated, a CPU. Otherwise the target's name and
    description decide; a config target that says neither is of unknown kind.
    """
    if target.source == "measured":
        return "cpu"
    text = f"{target.name or ''} {target.description or ''}".casefold()
    if any(word in text for word in _ACCELERATOR_WORDS):
        return "accelerator"
    if any(word in text for word in _CPU_WORDS):
        return "cpu"
    return None


def relevant_presets(target: _Described | None) -> Mapping[str, HardwareTarget]:
    """The presets a run on ``target`` projects its declared work onto.

    The platform matrix answers "how would this work run on comparable hardware": CPU presets
    for a CPU (or host) target, GPU and TPU presets for an accelerator; every preset when the
    target's kind is unknown or there is no target.
    """
    presets = load_presets()
    kind = platform_kind(target) if target is not None else None
    if kind is None:
        return presets
    return {name: preset for name, preset in presets.items() if platform_kind(preset) == kind}


def platform_targets(target: _Described | None = None) -> tuple[PlatformTarget, ...]:
    """The presets that declared work is projected onto (the report's platform matrix)."""
    return tuple(
        PlatformTarget(name, t.description, t.peak_bytes_per_s.get("dram"))
        for name, t in relevant_presets(target).items()
    )


def with_platforms(document: RunDocument) -> RunDocument:
    """``document`` with its platform projection, which a document of 0.1.0 did not record.

    pytest-roofline 0.1.0 projected declared work onto the presets whenever it rendered a
    report, so its documents are projected here onto this version's presets relevant to the
    run's target (:func:`relevant_presets`). Later documents carry the projection they were
    made with.
    """
    if document.run.platforms or document.run.method is not None:
        return document
    presets = relevant_presets(document.run.target)
    tests = []
    for test in document.tests:
        work = None
        if test.declared is not None:
            try:
                work = declared_work(
                    test.declared.flops,
                    test.declared.bytes_moved,
                    test.declared.precision,
                    where="stored declaration",
                )
            except ConfigError:
                work = None
        tests.append(replace(test, platforms=platform_cells(work, presets)))
    return replace(
        document,
        run=replace(document.run, platforms=platform_targets(document.run.target)),
        tests=tuple(tests),
    )


def _declared(work: DeclaredWork | None) -> DeclaredRecord | None:
    return DeclaredRecord(work.flops, work.bytes_moved, work.precision) if work else None


def test_record(
    result: TestResult,
    evidence: TestEvidence,
    decision: TestDecision,
    *,
    replay_command: str,
    baseline_samples: np.ndarray | None,
    presets: Mapping[str, HardwareTarget],
) -> TestRecord:
    """The document's record of one test."""
    e, measurement = evidence, result.measurement
    summary, base = e.summary, e.baseline_summary
    counters = measurement.counters
    fidelity = _fidelity(e)
    return TestRecord(
        nodeid=result.nodeid,
        slice=result.slice.name if result.slice else None,
        slice_group=result.slice.group if result.slice else None,
        source=result.slice.source if result.slice else None,
        owners=decision.owners,
        rollback_boundary=decision.rollback_boundary,
        decision=decision.decision,
        reasons=decision.reasons,
        symptom=decision.symptom,
        mechanism=decision.mechanism,
        competing_hypotheses=decision.competing_hypotheses,
        missing_evidence=decision.missing_evidence,
        first_failing_layer=decision.first_failing_layer,
        replay_command=replay_command,
        samples=summary.n,
        batch_size=measurement.samples.batch_size,
        stop_reason=measurement.samples.stop_reason,
        elapsed_s=measurement.samples.elapsed_s,
        p50_s=summary.p50_s,
        p95_s=summary.p95_s,
        p99_s=summary.p99_s,
        mean_s=summary.mean_s,
        min_s=summary.min_s,
        max_s=summary.max_s,
        baseline=(
            BaselineSummary(base.p50_s, base.p95_s, base.p99_s, base.n, dict(e.baseline_level))
            if base
            else None
        ),
        change={name: change_record(c) for name, c in e.comparisons.items()} or None,
        margins={name: m.margin for name, m in e.margins.items()},
        mde=dict(e.mde),
        declared=_declared(measurement.declared),
        roofline=_roofline(e),
        counters=(
            replace(CountersRecord.from_json(counters.to_dict()), fidelity=fidelity)
            if counters is not None
            else None
        ),
        sla=_sla(e),
        quality={
            q.name: QualityCheck(q.value, q.baseline, q.higher_is_better, q.tolerance, q.ok)
            for q in e.quality
        },
        missing_quality=e.missing_quality,
        precision_change=e.precision_change,
        replay=(
            ReplayRecord(
                e.replay.attempted,
                e.replay.count,
                e.replay.reproduced,
                {k: tuple(v) for k, v in e.replay.ratios.items()},
            )
            if e.replay
            else None
        ),
        drift=DriftRecord.from_json(e.drift.to_dict()) if e.drift else None,
        common_mode_applied=e.common_mode,
        counter_fidelity=fidelity,
        layers_changed=e.layers_changed,
        hardware_differs=e.hardware_differs,
        series=Series(_series(measurement.samples_s), _series(baseline_samples)),
        platforms=platform_cells(measurement.declared, presets),
        host=_host(measurement.host, e),
        confirmation=_confirmation(e),
        fresh_replay=_fresh_replay(e),
        soak=soak_record(e.soak) if e.soak is not None else None,
    )


def _host(watched: HostRecord | None, e: TestEvidence) -> HostRecordDoc | None:
    if watched is None:
        return None
    kept = watched.windows[-1] if watched.windows else None
    counters = watched.host
    return HostRecordDoc(
        state=watched.state,
        reason=watched.reason,
        remeasured=watched.remeasured,
        windows=len(watched.windows),
        ratios=kept.ratios if kept is not None else {},
        floors=dict(kept.floors) if kept is not None else {},
        baseline_ratios=dict(watched.baseline_ratios),
        host_shift=e.host.shift if e.host is not None else None,
        cpu_share=counters.cpu_share if counters else None,
        involuntary_switches=counters.involuntary_switches if counters else None,
        steal_share=counters.steal_share if counters else None,
        other_cpu_share=counters.other_cpu_share if counters else None,
        load_1m=counters.load_1m if counters else None,
        wall_s=counters.wall_s if counters else None,
    )


def soak_record(assessment: SoakAssessment) -> SoakRecord:
    """A soak's timeline, statuses and first failing window as the document records them."""
    soak, scan, finding = assessment.soak, assessment.scan, assessment.finding
    windows = []
    for window, ratio in zip(soak.windows, scan.ratios, strict=True):
        host, gpu = window.host, window.host.gpu
        reasons = int(gpu.get("throttle_reasons", 0))
        windows.append(
            SoakWindowRecord(
                offset_s=window.offset_s,
                duration_s=window.duration_s,
                p50_s=window.p50_s,
                n=window.n,
                ratio=ratio,
                cpu_mhz=host.cpu_mhz,
                cpu_share=host.cpu_share,
                steal=host.steal,
                canary=dict(host.canary),
                gpu_temperature_c=gpu.get("temperature_c"),
                gpu_sm_clock_mhz=gpu.get("sm_clock_mhz"),
                gpu_power_w=gpu.get("power_w"),
                gpu_throttle=decode_throttle_reasons(reasons) if reasons else (),
            )
        )
    return SoakRecord(
        duration_s=soak.duration_s,
        window_s=soak.window_s,
        elapsed_s=soak.elapsed_s,
        reference=scan.reference,
        margin=assessment.margin,
        sigma_log=scan.sigma_log,
        windows=tuple(windows),
        status=dict(soak.status),
        notes=(*soak.notes, *assessment.notes),
        probe_share=soak.probe_s / soak.elapsed_s if soak.elapsed_s > 0 else None,
        canary_share=soak.canary_s / soak.elapsed_s if soak.elapsed_s > 0 else None,
        canary_floors=dict(soak.canary_floors),
        summary=assessment.summary,
        transient_window=assessment.transient.onset if assessment.transient else None,
        transient_ratio=assessment.transient.ratio if assessment.transient else None,
        finding=SoakFindingRecord(
            kind=finding.kind,
            window=finding.window,
            offset_s=finding.offset_s,
            ratio=finding.ratio,
            ci_low=finding.ci_low,
            ci_high=finding.ci_high,
            p_value=finding.p_value,
            reference=finding.reference,
            margin=finding.margin,
            throttle=finding.throttle,
            canary_slow=finding.canary_slow,
            reason=finding.reason,
        )
        if finding is not None
        else None,
    )


def _confirmation(e: TestEvidence) -> ConfirmationRecord | None:
    found = e.confirmation
    if found is None:
        return None
    return ConfirmationRecord(
        state=found.state,
        reason=found.reason,
        command=found.command,
        change={name: change_record(c) for name, c in found.comparisons.items()},
        pairs=found.pairs,
        pairs_dropped=found.pairs_dropped,
        stop=found.stop,
    )


def _fresh_replay(e: TestEvidence) -> FreshReplayRecord | None:
    found = e.fresh_replay
    if found is None:
        return None
    return FreshReplayRecord(
        made=found.made,
        reason=found.reason or None,
        samples=int(found.samples_s.size) if found.samples_s is not None else None,
        host=found.host,
        change={name: change_record(c) for name, c in found.comparisons.items()},
        sla={check.key: check.status for check in found.sla},
    )


def canary_record(
    summaries: Sequence[CanarySummary],
    *,
    baseline: CanaryRunRecord | None = None,
    blas: str | None = None,
) -> CanaryRunRecord | None:
    """The run's ``run.canary`` from every measuring process's canary summary.

    The level and floors are the first process's (one process without xdist; under xdist each
    worker judged its own windows against its own level). ``baseline_ratios`` compares that
    level with the baseline run's where both used the same kernels.

    :param blas: the BLAS oversubscription warning given at session start, if any.
    """
    if not summaries:
        return None
    first = summaries[0]
    windows: dict[str, int] = {}
    remeasured: set[str] = set()
    between = run = wait = 0.0
    for summary in summaries:
        for state, count in summary.state_counts().items():
            windows[state] = windows.get(state, 0) + count
        remeasured.update(w.test_id for w in summary.windows if w.attempt > 0)
        between += summary.cost.between_s
        run += summary.cost.run_s
        wait += summary.cost.recovery_wait_s
    levels = dict(first.session.levels_s)
    same_kernels = baseline is not None and dict(baseline.spec) == dict(first.spec)
    return CanaryRunRecord(
        processes=len(summaries),
        spec=dict(first.spec),
        levels_s=levels,
        floors=dict(first.session.floors),
        end_ratios=first.end.ratio_to(first.session) if first.end is not None else {},
        baseline_ratios=(
            {
                k: v / baseline.levels_s[k]
                for k, v in levels.items()
                if baseline.levels_s.get(k, 0.0) > 0
            }
            if baseline is not None and same_kernels
            else {}
        ),
        windows=windows,
        remeasured=len(remeasured),
        recovery_wait_s=wait,
        cost_share=between / run if run > 0 else None,
        blas=blas,
    )


def canary_level(record: CanaryRunRecord | None) -> CanaryLevel | None:
    """A stored run's canary level, to compare a new run's with (``None``: it has none)."""
    if record is None or not record.levels_s:
        return None
    return CanaryLevel(
        at_s=0.0,
        levels_s=dict(record.levels_s),
        floors=dict(record.floors),
        spread={},
        readings=0,
    )
