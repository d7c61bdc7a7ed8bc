"""Judge each test, then the run: evidence → decision → record per test, and the run's document.

Pure (no pytest). The plugin's session judges each test as it finishes
(:func:`judge_test`), so a rollback fails its own test; once every test is judged,
:func:`analyse_run` adds what only the whole run shows (the common-mode shift, Benjamini-Hochberg
across the run, the observability figures, the first failing slice and layer) and decides the
run. ``pytest-roofline compare`` (:mod:`pytest_roofline.gate.compare`) and ``pytest-roofline
ab`` (:mod:`pytest_roofline.ab.analysis`) use the same two steps, so a stored comparison decides
exactly as the live gate did.
"""

from __future__ import annotations

import math
import platform
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

import numpy as np

from pytest_roofline import stats
from pytest_roofline.config.settings import GateSettings
from pytest_roofline.gate.evidence import (
    MIN_COUNTER_COMPLETENESS,
    BaselineEntry,
    Confirmation,
    EvidenceContext,
    FreshReplay,
    evaluate,
)
from pytest_roofline.gate.history import DIRTY_SUFFIX
from pytest_roofline.gate.imported import comparable_tags, history_of, is_imported
from pytest_roofline.gate.layers import hardware_difference, layer_of, layers_changed, tag_diff
from pytest_roofline.gate.policy import RunConcern, decide_run, decide_test
from pytest_roofline.gate.record import platform_targets, relevant_presets, test_record
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.model.document import (
    CanaryRunRecord,
    CommonModeRecord,
    GateRecord,
    MethodRecord,
    ObservabilityRecord,
    RunDocument,
    RunInfo,
    SampleAdequacy,
    SliceCoverage,
    TagChange,
    TargetRecord,
    TestRecord,
)
from pytest_roofline.model.results import TestResult
from pytest_roofline.roofline import DEFAULT_OVERHEAD_EFFICIENCY, DEFAULT_RIDGE_MARGIN
from pytest_roofline.store import Baseline, StoredResult, StoredRun
from pytest_roofline.store.summary_only import is_summary_only
from pytest_roofline.vocabulary import QUANTILES, Decision, FailOn

__all__ = [
    "COMMON_MODE_THRESHOLD",
    "MIN_TESTS_FOR_COMMON_MODE",
    "BaselineFacts",
    "ab_command",
    "analyse_run",
    "baseline_entries",
    "evidence_context",
    "first_failing_slices",
    "judge_test",
    "low_counter_note",
    "method_record",
    "replay_command",
    "stored_result",
]

# A run-wide shift larger than the p50 run-to-run noise of separate runs (docs/noise.md)
# is more likely the machine or a shared layer than the code of every test.
COMMON_MODE_THRESHOLD = stats.DEFAULT_NOISE_FLOOR[0.5]
# The median of fewer log ratios than this is too close to the individual tests to stand for
# "the run" (with one test it *is* that test).
MIN_TESTS_FOR_COMMON_MODE = 5


@dataclass(frozen=True, slots=True, eq=False)
class BaselineFacts:
    """What the run-level analysis needs of the baseline: its label, run, tags and samples."""

    label: str
    run_id: int | None
    tags: Mapping[str, str]
    target: str | None
    machine: str
    samples: Mapping[str, np.ndarray]
    canary: CanaryRunRecord | None = None
    # Imported from pytest-benchmark: tags it never recorded are unknown, not changed.
    imported: bool = False

    @classmethod
    def of(cls, baseline: Baseline) -> BaselineFacts:
        latest = baseline.latest
        return cls(
            label=baseline.label,
            run_id=latest.id,
            tags=latest.record.tags,
            target=str(latest.record.target.get("name", "")) or None,
            machine=latest.record.machine,
            samples={n: r.samples_s for n, r in latest.results.items()},
            canary=_stored_canary(latest.record.summary),
            imported=is_imported(latest.record),
        )


def _stored_canary(summary: Mapping[str, Any]) -> CanaryRunRecord | None:
    """The host canary a stored run recorded (``run.canary`` of its document), if any."""
    document = summary.get("document")
    run = document.get("run") if isinstance(document, Mapping) else None
    canary = run.get("canary") if isinstance(run, Mapping) else None
    return CanaryRunRecord.from_json(canary) if isinstance(canary, Mapping) else None


def evidence_context(
    gate: GateSettings,
    *,
    family_size: int,
    baseline: BaselineFacts | None,
    tags: Mapping[str, str],
    layers: Mapping[str, Sequence[str]],
    target: HardwareTarget | None,
    machine: str,
    fresh_replay: bool = False,
) -> EvidenceContext:
    """The run-level facts each test's evaluation uses (``fresh_replay``: a live session that can
    measure a test again in a fresh process, which a rollback without paired rounds then needs
    when replays are on)."""
    common = {
        "alpha": gate.alpha,
        "min_effect": gate.min_effect,
        "max_margin": gate.max_margin,
        "replay": gate.replay,
        "family_size": family_size,
        "fresh_replay": fresh_replay and gate.replay > 0,
    }
    if baseline is None:
        return EvidenceContext(**common)  # type: ignore[arg-type]
    return EvidenceContext(
        **common,  # type: ignore[arg-type]
        layers_changed=layers_changed(
            baseline.tags, comparable_tags(baseline.tags, tags, imported=baseline.imported), layers
        ),
        hardware_differs=hardware_difference(
            baseline.target, baseline.machine, target.name if target else None, machine
        ),
        baseline_label=baseline.label,
        same_code=same_code(baseline.tags, tags),
    )


def same_code(baseline_tags: Mapping[str, str], tags: Mapping[str, str]) -> bool:
    """Both runs were measured on the same git commit with no uncommitted changes."""
    commit = tags.get("git_commit", "")
    return (
        bool(commit)
        and not commit.startswith("(")
        and baseline_tags.get("git_commit") == commit
        and baseline_tags.get("git_dirty") == "no"
        and tags.get("git_dirty") == "no"
    )


def stored_result(stored: StoredResult) -> TestResult:
    """A stored test result read back (its payload is :meth:`TestResult.to_dict`'s)."""
    return TestResult.from_dict(stored.payload, samples_s=stored.samples_s)


def baseline_entries(baseline: Baseline | None) -> dict[str, BaselineEntry]:
    """Each test's baseline entry: the latest run's samples, history from earlier runs (oldest first).

    A summary-only result (a pytest-benchmark run imported without raw data) is no sample
    baseline: such a test gets no entry. In the history it counts with its recorded median.
    """
    if baseline is None:
        return {}
    older: list[StoredRun] = list(reversed(baseline.history))
    entries = {}
    for nodeid, stored in baseline.latest.results.items():
        if is_summary_only(stored.payload):
            continue
        samples, known = history_of(nodeid, older)
        entries[nodeid] = BaselineEntry.of(
            stored_result(stored),
            samples,
            history_quantiles_s=known,
            commits=[
                _commit_of(run.record.tags)
                for run in (*older, baseline.latest)
                if nodeid in run.results
            ],
        )
    return entries


def _commit_of(tags: Mapping[str, str]) -> str | None:
    """A run's commit for the label's history, marked when it had uncommitted changes."""
    commit = tags.get("git_commit")
    if commit is None or tags.get("git_dirty") != "yes":
        return commit
    return commit + DIRTY_SUFFIX


def replay_command(nodeid: str, baseline_label: str | None, target: str | None) -> str:
    """The command that measures this test again against the same baseline.

    Every word is quoted for a POSIX shell (``shlex.join``): a label or target from CI (a branch
    name such as ``main;touch${IFS}x``) is pasted back as one argument, never as a command.
    """
    parts = ["pytest", "--roofline"]
    if baseline_label:
        parts.append(f"--roofline-baseline={baseline_label}")
    if target:
        parts.append(f"--roofline-target={target}")
    return shlex.join([*parts, nodeid])


def ab_command(nodeid: str, commit: str) -> str:
    """The ``pytest-roofline ab`` command that compares this test with ``commit`` in paired rounds."""
    return shlex.join(["pytest-roofline", "ab", f"--baseline={commit}", "--", nodeid])


def judge_test(
    result: TestResult,
    entry: BaselineEntry | None,
    context: EvidenceContext,
    *,
    target: HardwareTarget | None,
    replays: Sequence[np.ndarray] = (),
    common_mode: float = 1.0,
    confirmation: Confirmation | None = None,
    fresh_replay: FreshReplay | None = None,
) -> TestRecord:
    """Evaluate and decide one test (``common_mode``: the run-wide shift to divide out;
    ``confirmation``: the paired confirmation of a first-look regression, once made;
    ``fresh_replay``: the test measured again in a fresh process, once made)."""
    evidence = evaluate(
        result,
        entry,
        context,
        target=target,
        replays=replays,
        common_mode=common_mode,
        confirmation=confirmation,
        fresh_replay=fresh_replay,
    )
    return test_record(
        result,
        evidence,
        decide_test(evidence),
        replay_command=replay_command(
            result.nodeid, context.baseline_label, target.name if target else None
        ),
        baseline_samples=entry.samples_s if entry is not None else None,
        presets=relevant_presets(target),
    )


# --------------------------------------------------------------------------- run-level
def _with_bh(
    records: Mapping[str, TestRecord], alpha: float
) -> tuple[dict[str, TestRecord], list[RunConcern]]:
    """Benjamini-Hochberg over every assessed comparison of the run (``p_bh`` on each change).

    Returns the records with ``p_bh`` set and run-level concerns for tests the procedure flags
    although their own decision ships (the per-test bound decides; BH is reported), each with
    the command that measures the test again.
    """
    # A quantile the test could not assess (too few samples, autocorrelated, degenerate) is
    # reported "not assessed"; its p-value is no evidence, so it is not in the family (a README
    # run escalated on a p99 of 18 baseline samples, 299 needed).
    keys = [
        (nodeid, name)
        for nodeid, record in records.items()
        for name, change in (record.change or {}).items()
        if change.p_value is not None and change.verdict != "insufficient"
    ]
    adjusted = stats.bh_adjust([records[n].change[q].p_value for n, q in keys])  # type: ignore[index,arg-type]
    out = dict(records)
    reasons = []
    for (nodeid, name), p_bh in zip(keys, adjusted, strict=True):
        record = out[nodeid]
        change = replace(record.change[name], p_bh=float(p_bh))  # type: ignore[index]
        out[nodeid] = replace(record, change={**(record.change or {}), name: change})
        ratio, delta = change.ratio, change.delta
        flagged = p_bh < alpha and ratio is not None and delta is not None and ratio >= 1 + delta
        # Paired rounds measured after the first look rule the two-run change out: they, not
        # the two-run p-values, are the evidence; so do they for this quantile when they found
        # it SAME while another stayed UNKNOWN (run 15b: a p95 x1.302 first look, BH p 2.5e-14,
        # paired SAME x1.035 [0.893, 1.102], escalated an A/A run whose tests all shipped).
        confirmation = record.confirmation
        ruled_out = confirmation is not None and (
            confirmation.state == "overturned"
            or (name in confirmation.change and confirmation.change[name].outcome == "same")
        )
        if flagged and record.decision == "ship" and not ruled_out:
            reasons.append(
                RunConcern(
                    f"{nodeid}: {name} x{ratio:.3f} is significant across the run "
                    f"(BH p = {p_bh:.3g}) though not by the per-test bound",
                    f"Measure {nodeid} again: `{record.replay_command or replay_command(nodeid, None, None)}`; "
                    "if its own bound still finds no regression, the run ships.",
                )
            )
    return out, reasons


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _observability(
    results: Mapping[str, TestResult], records: Mapping[str, TestRecord], gate: GateSettings
) -> ObservabilityRecord:
    if not results:
        return ObservabilityRecord()
    completeness = [
        r.measurement.counters.completeness
        for r in results.values()
        if r.measurement.counters is not None
    ]
    non_ship = [r for r in records.values() if r.decision in ("rollback", "escalate")]
    replayed = [r.replay for r in records.values() if r.replay is not None and r.replay.attempted]
    sizes = [r.measurement.samples_s.size for r in results.values()]
    groups: dict[str, set[tuple[str, str]]] = {}
    for r in results.values():
        if r.slice is not None and r.slice.group is not None:
            groups.setdefault(r.slice.group, set()).add((r.slice.name, r.slice.source))
    margin = gate.min_effect.get("p95", 0.05)
    return ObservabilityRecord(
        counter_completeness=float(np.mean(completeness)) if completeness else None,
        trigger_coverage=_share([not r.missing_evidence for r in non_ship]),
        replay_success_rate=_share([bool(r.reproduced) for r in replayed]),
        sample_adequacy=SampleAdequacy(
            p95=_share([s >= stats.n_floor(0.95, gate.alpha) for s in sizes]),
            p99=_share([s >= stats.n_floor(0.99, gate.alpha) for s in sizes]),
        ),
        # A test that cannot see a change of the gate's margin lets such a regression escape.
        escape_risk=_share(
            [(m := r.mde.get("p95")) is None or m > margin for r in records.values()]
        ),
        slice_coverage=SliceCoverage(
            groups=len(groups),
            multi_shape=_share([len({name for name, _ in s}) > 1 for s in groups.values()]),
            production=_share([any(src == "production" for _, src in s) for s in groups.values()]),
        ),
    )


def _size(result: TestResult) -> tuple[float, float]:
    """How big a slice is: its declared work, else its median time."""
    declared = result.measurement.declared
    work = 0.0
    if declared is not None:
        work = float(declared.flops or 0.0) + float(declared.bytes_moved or 0.0)
    samples = result.measurement.samples_s
    return work, float(np.median(samples)) if samples.size else 0.0


def first_failing_slices(
    results: Mapping[str, TestResult], decisions: Mapping[str, Decision | None]
) -> dict[str, str]:
    """For each slice group with a non-ship test, its smallest failing slice (the cheapest repro)."""
    failing: dict[str, list[tuple[tuple[float, float], str]]] = {}
    for nodeid, result in results.items():
        if result.slice is None or result.slice.group is None:
            continue
        if decisions.get(nodeid) in ("rollback", "escalate"):
            failing.setdefault(result.slice.group, []).append((_size(result), nodeid))
    return {group: min(entries)[1] for group, entries in sorted(failing.items())}


def low_counter_note(results: Mapping[str, TestResult]) -> tuple[str, ...]:
    """The run's note on tests whose counters are mostly missing (it explains gaps; it decides
    nothing)."""
    low = [
        n
        for n, r in results.items()
        if r.measurement.counters is not None
        and r.measurement.counters.completeness < MIN_COUNTER_COMPLETENESS
    ]
    if not low:
        return ()
    return (f"{len(low)} test(s) with counter completeness below {MIN_COUNTER_COMPLETENESS:.0%}",)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def _versions() -> dict[str, str | None]:
    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "pytest_roofline": version("pytest-roofline"),
        "python": platform.python_version(),
        "pytest": version("pytest"),
        "numpy": version("numpy"),
        "scipy": version("scipy"),
    }


def method_record(gate: GateSettings) -> MethodRecord:
    """The method constants this version uses, for the document (shown in the report's notes)."""
    return MethodRecord(
        sample_floor={name: stats.n_floor(QUANTILES[name], gate.alpha) for name in ("p95", "p99")},
        abs_floor_s=stats.ABS_FLOOR_S,
        ridge_margin=DEFAULT_RIDGE_MARGIN,
        overhead_efficiency=DEFAULT_OVERHEAD_EFFICIENCY,
        default_noise_floor={name: stats.default_noise_floor(q) for name, q in QUANTILES.items()},
    )


def _common_mode(
    results: Mapping[str, TestResult], baseline: BaselineFacts | None
) -> stats.CommonMode | None:
    if baseline is None:
        return None
    # Raw p50 ratios (the per-test comparisons may already have the running shift divided out).
    log_ratios = [
        math.log(float(np.median(r.measurement.samples_s)) / float(np.median(base)))
        for nodeid, r in results.items()
        if (base := baseline.samples.get(nodeid)) is not None
        and r.measurement.samples_s.size
        and base.size
    ]
    return stats.common_mode(log_ratios) if len(log_ratios) >= MIN_TESTS_FOR_COMMON_MODE else None


def analyse_run(
    results: Mapping[str, TestResult],
    records: Mapping[str, TestRecord],
    *,
    baseline: BaselineFacts | None,
    gate: GateSettings,
    gate_on: FailOn,
    label: str | None,
    tags: Mapping[str, str],
    layers: Mapping[str, Sequence[str]],
    target: HardwareTarget | None,
    machine: str,
    started: float,
    finished: float,
    paired: bool = False,
    run_reasons: Sequence[str | RunConcern] = (),
    canary: CanaryRunRecord | None = None,
) -> RunDocument:
    """The run's document: run-level checks on the judged tests, then the run decision.

    :param paired: the tests were compared in alternating rounds of one job: a shift every test
        shares was measured under the same machine conditions on both sides, so the common-mode
        factor is reported but does not escalate the run.
    :param run_reasons: run-level problems found elsewhere (e.g. failing rounds); they escalate.
    :param canary: the host canary over the run (``run.canary``), where it ran.
    """
    tested = {nodeid: records[nodeid] for nodeid in sorted(results) if nodeid in records}
    tested, bh_reasons = _with_bh(tested, gate.alpha)
    common = _common_mode(results, baseline)
    run_decision = decide_run(
        {nodeid: record.decision or "ship" for nodeid, record in tested.items()},
        common_mode=None if paired else common,
        common_mode_threshold=COMMON_MODE_THRESHOLD,
        run_reasons=[*bh_reasons, *run_reasons],
        # A test counts as compared when its baseline had samples to compare with.
        compared=(
            sum(record.baseline is not None for record in tested.values())
            if baseline is not None
            else None
        ),
        baseline_label=baseline.label if baseline is not None else None,
        baseline_ref=baseline.tags.get("git_commit") if baseline is not None else None,
    )
    decision: Decision = run_decision.decision
    compared = (
        comparable_tags(baseline.tags, tags, imported=baseline.imported) if baseline else tags
    )
    diff = tag_diff(baseline.tags, compared) if baseline is not None else {}
    changed = layers_changed(baseline.tags, compared, layers) if baseline is not None else ()
    base_ids = set(baseline.samples) if baseline is not None else set()
    run = RunInfo(
        label=label,
        baseline_label=baseline.label if baseline else None,
        baseline_run_id=baseline.run_id if baseline else None,
        tags=dict(tags),
        tag_diff={k: TagChange(b, c, layer_of(k, layers)) for k, (b, c) in diff.items()},
        first_failing_layer=changed[0] if changed and decision != "ship" else None,
        first_failing_slices=first_failing_slices(
            results, {n: r.decision for n, r in tested.items()}
        ),
        target=TargetRecord.from_json(target.to_dict()) if target is not None else None,
        machine=machine,
        started=_iso(started),
        finished=_iso(finished),
        common_mode=(
            CommonModeRecord(
                factor=common.factor,
                log_factor=common.log_factor,
                n_tests=common.n_tests,
                spread=common.spread,
                threshold=None if paired else COMMON_MODE_THRESHOLD,
                applied=False,
            )
            if common is not None
            else None
        ),
        design="paired" if paired else "two-run",
        gate=GateRecord(
            alpha=gate.alpha,
            min_effect=dict(gate.min_effect),
            replay=gate.replay,
            gate_on=gate_on,
            max_margin=gate.max_margin,
            unknown_extension=gate.unknown_extension,
            confirm=gate.confirm,
            confirm_time_s=gate.confirm_time_s,
        ),
        missing_from_baseline=tuple(n for n in sorted(results) if baseline and n not in base_ids),
        missing_from_candidate=tuple(n for n in sorted(base_ids) if n not in results),
        method=method_record(gate),
        platforms=platform_targets(target),
        canary=canary,
    )
    return RunDocument(
        decision=decision,
        reasons=run_decision.reasons + low_counter_note(results),
        next_steps=run_decision.next_steps,
        run=run,
        observability=_observability(results, tested, gate),
        versions=_versions(),
        tests=tuple(tested.values()),
    )
