"""Evidence for the gate: everything ``policy`` needs to decide one test, computed from samples.

Pure (no pytest): it takes a test's result, its baseline entry and the run's context, runs the
statistics (``stats``) and the roofline placement (``hardware`` / ``roofline``), and returns a
frozen :class:`TestEvidence`. It decides nothing; :mod:`pytest_roofline.gate.policy` does.

Each gated quantile's comparison ends DIFFERENT, SAME or UNKNOWN (docs/gate.md) against a
margin that is the largest of ``gate.min_effect`` and the label's history noise floor, capped at
``gate.max_margin``, and never the test's own detectable effect (:func:`margins`).

Multiplicity. Each test's decision is made as the test finishes (so a rollback fails its own
test), before the other tests' p-values exist. DIFFERENT therefore spends ``alpha`` divided over
the session's comparisons (a Bonferroni bound, never looser than the Benjamini-Hochberg
procedure applied at the end of the run), and the repeated looks of the sampler spend it over a
group-sequential boundary (:mod:`pytest_roofline.gate.looks`). BH-adjusted p-values are
reported at run level.

Why one long module: it gathers every piece of evidence about one test (comparisons, margins,
sequential looks, replay, SLA, roofline placement, host, confirmation, soak) into one TestEvidence;
each part is a small function over the same per-test context, which splitting would pass between
modules.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from pytest_roofline import roofline, stats
from pytest_roofline.config.defaults import DEFAULTS
from pytest_roofline.gate.fidelity import Fidelity, counter_fidelity
from pytest_roofline.gate.history import (
    HistoryDrift,
    label_drift,
    latest_run_level,
    level_segments,
)
from pytest_roofline.gate.looks import (
    corroborates_at_look,
    decided_at_look,
    final_boundary,
    session_plan,
)
from pytest_roofline.gate.soak import SoakAssessment, assess_soak
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.measure.hostwatch import HostRecord, HostState
from pytest_roofline.measure.measurement import QualityRecord
from pytest_roofline.model.results import QuantileSummary, TestResult, summarize
from pytest_roofline.roofline import BoundChange, DeclaredWork, RooflinePoint
from pytest_roofline.stats.sequential import (
    Estimate,
    LookBoundary,
    SequentialPlan,
)
from pytest_roofline.stats.threeway import NEVER_SAME_RATIO, GateMargin
from pytest_roofline.units import format_seconds
from pytest_roofline.vocabulary import QUANTILES, SlaStatus

__all__ = [
    "GATED_QUANTILES",
    "BaselineEntry",
    "Confirmation",
    "EvidenceContext",
    "FreshReplay",
    "HostCheck",
    "QualityOutcome",
    "ReplayOutcome",
    "SlaOutcome",
    "TestEvidence",
    "baseline_levels",
    "evaluate",
    "margins",
    "rng_for",
    "should_replay",
]

# Tails first (they are what the gate is for, and reasons list them first); the median too, so a
# slowdown of the typical call is not shipped because its tail happened to improve.
GATED_QUANTILES: tuple[str, ...] = ("p95", "p99", "p50")
# Counters are what explain a mechanism; below half of them the mechanism is guesswork.
MIN_COUNTER_COMPLETENESS = 0.5
# Without a baseline there is no margin to compare a drift with: a 10% trend is what the
# default p95 margin (+37%, halved) would otherwise tolerate, rounded down.
DRIFT_WITHOUT_BASELINE = 0.10
# Relative slack for quality values recorded without a tolerance (floating-point round-off).
_QUALITY_RTOL = 1e-9


FRESH_REPLAY_SALT = 1_000
"""The bootstrap stream of a fresh-process replay's comparisons (same-process replays use 1, 2...)."""


def rng_for(nodeid: str, salt: int = 0) -> np.random.Generator:
    """A generator seeded from the node id: the same evidence gives the same interval every time."""
    return np.random.default_rng([zlib.crc32(nodeid.encode("utf-8", "surrogatepass")), salt])


@dataclass(frozen=True, slots=True)
class EvidenceContext:
    """Run-level facts every per-test evaluation needs."""

    alpha: float = DEFAULTS.alpha
    min_effect: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULTS.min_effect))
    max_margin: float = DEFAULTS.max_margin
    replay: int = DEFAULTS.replay
    family_size: int = 1
    layers_changed: tuple[str, ...] = ()
    hardware_differs: str | None = None
    baseline_label: str | None = None
    n_boot: int = stats.DEFAULT_N_BOOT
    # Explicit thresholds per quantile (``--roofline-fail=p50:10%``, pytest-benchmark's
    # ``--benchmark-compare-fail``): an extra policy rule on top of the margins (gate.thresholds).
    fail_thresholds: Mapping[str, float] = field(default_factory=dict)
    # The baseline and this run are the same clean git commit: the code did not change.
    same_code: bool = False
    # A two-run regression that would roll back without paired rounds must also reproduce when
    # the test is measured again in a fresh pytest process (a live session with replays on;
    # ``plugin.fresh_replay``): a same-process replay reproduces the process's own draw.
    fresh_replay: bool = False

    @property
    def comparisons(self) -> int:
        """How many comparisons the session makes: every gated quantile of every test."""
        return max(1, self.family_size) * len(GATED_QUANTILES)

    @property
    def plan(self) -> SequentialPlan:
        """The group-sequential plan of one comparison of this session."""
        return session_plan(self.alpha, self.comparisons)


@dataclass(frozen=True, slots=True, eq=False)
class BaselineEntry:
    """A test's baseline: the latest run's samples and declarations, and its history (oldest first)."""

    samples_s: np.ndarray
    declared: DeclaredWork | None
    quality: Mapping[str, QualityRecord]
    history_samples: tuple[np.ndarray, ...] = ()
    # The git_commit of each baseline run, aligned with [*history_samples, samples_s].
    commits: tuple[str | None, ...] = ()
    # Per history run (aligned with ``history_samples``): quantiles known without samples, as a
    # pytest-benchmark run saved without ``--benchmark-save-data`` has them (``{"p50": s}``).
    history_quantiles_s: tuple[Mapping[str, float], ...] = ()
    # The baseline run's CPU share while sampling (task-clock per busy thread; None without it).
    cpu_share: float | None = None
    # The host canary's reason when the baseline run measured this test on a host slowed x3 or
    # more (:func:`_grossly_disturbed`).
    host_disturbed: str | None = None

    @classmethod
    def of(
        cls,
        result: TestResult,
        history: Sequence[np.ndarray] = (),
        commits: Sequence[str | None] = (),
        history_quantiles_s: Sequence[Mapping[str, float]] = (),
    ) -> BaselineEntry:
        """The entry of the baseline's result of a test, earlier runs' samples and commits."""
        measurement = result.measurement
        return cls(
            samples_s=measurement.samples_s,
            declared=measurement.declared,
            quality={q.name: q for q in measurement.quality},
            history_samples=tuple(history),
            commits=tuple(commits),
            history_quantiles_s=tuple(history_quantiles_s),
            cpu_share=measurement.counters.cpu_share if measurement.counters else None,
            host_disturbed=_grossly_disturbed(measurement.host),
        )


def _grossly_disturbed(host: HostRecord | None) -> str | None:
    """The canary's reason when a test was measured on a host slowed by ``NEVER_SAME_RATIO``
    (x3) or more: enough to hide a change that must never ship. A milder disturbance of the
    baseline (x1.2-x1.7 over floors of x1.2-x1.5, common on a shared VM) stays inside what the
    margins and the candidate's own host checks absorb; escalating on it cost a fresh clone of
    the README's commands 2 of 24 tests and the project's check 17 of 24 (stop 45)."""
    if host is None or host.state != "disturbed" or not host.windows:
        return None
    kept = host.windows[-1]
    worst = max([*kept.ratios_before.values(), *kept.ratios_after.values()], default=0.0)
    return host.reason if worst >= NEVER_SAME_RATIO else None


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    """Whether a first-look regression reproduced when the test was measured again.

    ``autocorrelated`` names the quantiles a replay corroborated although its samples were too
    autocorrelated to decide on their own (:func:`gate.looks.corroborates_at_look`).
    """

    attempted: bool
    count: int
    reproduced: bool | None
    ratios: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    autocorrelated: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class FreshReplay:
    """The test measured again in a fresh pytest process on this run's own tree and environment
    (:mod:`pytest_roofline.plugin.fresh_replay`), for a two-run regression that would otherwise
    roll back on one process's evidence.

    ``samples_s`` is ``None`` when no replay could be made (``reason`` says why); ``host`` is the
    canary's reason when the host was disturbed during the replay's window; ``comparisons`` are
    filled in by :func:`evaluate` (the replay against the baseline, as the first look was).
    """

    samples_s: np.ndarray | None = None
    reason: str = ""
    host: str | None = None
    comparisons: Mapping[str, stats.QuantileComparison] = field(default_factory=dict)
    # Quantiles whose comparison was too autocorrelated to decide on its own but reads
    # DIFFERENT at the replay's level (gate.looks.corroborates_at_look), as for a
    # same-process replay.
    corroborated: tuple[str, ...] = ()
    # The test's SLAs checked on the replay's samples (a breach must reproduce there too).
    sla: tuple[SlaOutcome, ...] = ()

    @property
    def made(self) -> bool:
        return self.samples_s is not None and self.samples_s.size > 0


@dataclass(frozen=True, slots=True)
class SlaOutcome:
    """One SLA key checked: ``status`` as in :data:`SlaStatus`."""

    key: str
    status: SlaStatus
    threshold: float | str
    estimate: float | str | None
    detail: str


@dataclass(frozen=True, slots=True)
class QualityOutcome:
    """A quality value against its baseline; ``ok`` is ``None`` without a baseline value."""

    name: str
    value: float
    baseline: float | None
    higher_is_better: bool
    tolerance: float | None
    ok: bool | None


ConfirmationState = Literal["confirmed", "overturned", "inconclusive", "unavailable"]


@dataclass(frozen=True, slots=True)
class HostCheck:
    """What the host canary saw around the test's measurement (``measure.canary``).

    ``remeasured`` is set when a first window was disturbed and the test was measured again
    after the canary recovered; ``state`` is the window the samples come from. ``shift`` names
    the canary kinds that run slower than when the baseline was recorded, beyond their floor
    (the host, not the code, may account for a slowdown between the two runs).
    """

    state: HostState
    reason: str
    remeasured: bool = False
    shift: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Confirmation:
    """A two-run session's first-look regression, confirmed (or not) by paired rounds.

    ``comparisons`` are the paired comparisons against a worktree of the baseline's commit;
    ``state`` says what they established: the regression (``confirmed``), that it is not there
    (``overturned``: SAME), neither (``inconclusive``), or that no paired confirmation could be
    made (``unavailable``, with ``reason``). ``command`` is the ``pytest-roofline ab``
    command that settles it by hand; ``pairs`` / ``pairs_dropped`` are the window pairs used
    and dropped (disturbed host), ``stop`` why the alternation stopped.
    """

    state: ConfirmationState
    reason: str
    comparisons: Mapping[str, stats.QuantileComparison] = field(default_factory=dict)
    command: str | None = None
    pairs: int | None = None
    pairs_dropped: int | None = None
    stop: str | None = None
    # A first pair of worker processes found the regression and a second did not
    # (``gate.confirm.replicated``): whatever either found, the processes differ, not the code.
    # Or (``dispute="host"``) it did not stand on the window pairs the host left steady
    # (``gate.steady_pairs``).
    disputed: bool = False
    dispute: Literal["processes", "host"] = "processes"
    # ``unavailable`` only because gate.confirm_time ran out before the rounds reached the test:
    # the commit was reachable, so a rollback would have needed them (docs/gate.md, "Decisions").
    out_of_time: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class TestEvidence:
    """Everything known about one test, for the policy and the reports."""

    __test__ = False

    nodeid: str
    owners: tuple[str, ...]
    rollback: str | None
    summary: QuantileSummary
    baseline_summary: QuantileSummary | None
    comparisons: Mapping[str, stats.QuantileComparison]
    mde: Mapping[str, float]
    margins: Mapping[str, GateMargin]
    replay: ReplayOutcome | None
    sla: tuple[SlaOutcome, ...]
    point: RooflinePoint | None
    baseline_point: RooflinePoint | None
    bound_change: BoundChange | None
    efficiency_ratio: float | None
    drift: stats.Drift | None
    quality: tuple[QualityOutcome, ...]
    missing_quality: tuple[str, ...]
    precision_change: tuple[str | None, str | None] | None
    counter_completeness: float | None
    cpu_share: float | None
    needs_counters: bool
    batched: bool
    layers_changed: tuple[str, ...]
    hardware_differs: str | None
    family_size: int
    common_mode: float = 1.0
    fidelity: tuple[Fidelity, ...] = ()
    # "two-run" (separate baseline and candidate runs) or "paired" (alternating rounds, one job)
    design: str = "two-run"
    host: HostCheck | None = None
    confirmation: Confirmation | None = None
    # The label's drift since its last step, with this run, beyond the margin (gate.history).
    history_drift: HistoryDrift | None = None
    # Explicit thresholds in force (``EvidenceContext.fail_thresholds``), for the policy's rule.
    fail_thresholds: Mapping[str, float] = field(default_factory=dict)
    # The baseline and this run are the same clean git commit (``EvidenceContext.same_code``).
    same_code: bool = False
    # The soak's timeline, first failing window and throttling onset (``--roofline-soak``).
    soak: SoakAssessment | None = None
    # Times the scheduler preempted this process while the test was measured (getrusage).
    involuntary_switches: int | None = None
    # Share of the machine's CPU time other processes used while the test was measured.
    other_cpu_share: float | None = None
    # Wall time of the window that ``involuntary_switches`` and ``other_cpu_share`` cover.
    host_wall_s: float | None = None
    # The baseline run's ``cpu_share`` for this test (None: no baseline, or no task-clock).
    baseline_cpu_share: float | None = None
    # The canary's reason when the baseline run measured this test on a disturbed host: a SAME
    # against that measurement shows nothing (``BaselineEntry.host_disturbed``).
    baseline_disturbed: str | None = None
    # Runs of the baseline label behind the margins' noise floor (0: no baseline): below
    # MEASURED_FLOOR_RUNS the floor is the documented default, not this test's own noise.
    history_runs: int = 0
    # Per gated quantile, the latest baseline run over the label's level (the median of its last
    # runs; :func:`baseline_levels`): below 1 the run compared with was a fast draw of its process.
    baseline_level: Mapping[str, float] = field(default_factory=dict)
    # Declared amounts of one call's work that differ from the baseline's at the same precision
    # ({"bytes_moved": (baseline, candidate)}): the two runs timed different workloads.
    work_change: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # A paired run's window pairs of this test: how many ran, and how many of them the host
    # canary dropped as disturbed (None: not a paired run).
    pairs_run: int | None = None
    pairs_dropped: int = 0
    # Whether a rollback without paired rounds needs a replay in a fresh process
    # (``EvidenceContext.fresh_replay``), and that replay once made (None: not yet).
    fresh_replay_due: bool = False
    fresh_replay: FreshReplay | None = None


def margins(entry: BaselineEntry, context: EvidenceContext) -> dict[str, GateMargin]:
    """The margin of each gated quantile: the largest of the user's ``min_effect`` and the
    run-to-run noise the baseline label's history shows for this test (with no history, the
    documented defaults of :data:`stats.DEFAULT_NOISE_FLOOR`), capped at ``gate.max_margin``;
    a test whose floor exceeds the cap is too noisy to gate here."""
    result = {}
    for name in GATED_QUANTILES:
        q = QUANTILES[name]
        # The label's steps are taken out (gate.history): a floor computed across a step is the
        # step.
        per_run = level_segments(_per_run_quantiles(entry, name))
        floor = stats.noise_floor(per_run, default=stats.default_noise_floor(q), robust=True)
        result[name] = stats.gate_margin(
            context.min_effect.get(name, 0.0), floor, max_margin=context.max_margin
        )
    return result


def _per_run_quantiles(entry: BaselineEntry, name: str) -> list[float]:
    """One gated quantile of each of the label's runs, oldest first, the latest run last; a
    summary-only run (no samples) counts with the quantiles it recorded."""
    runs = [*entry.history_samples, entry.samples_s]
    known = [*entry.history_quantiles_s, *([{}] * (len(runs) - len(entry.history_quantiles_s)))]
    q = QUANTILES[name]
    return [
        float(stats.hd_quantiles(s, [q])[0]) if s.size else known[i][name]
        for i, s in enumerate(runs)
        if s.size or name in known[i]
    ]


def baseline_levels(entry: BaselineEntry) -> dict[str, float]:
    """Each gated quantile's latest baseline run over the label's level (the median of its
    last runs, :func:`gate.history.latest_run_level`); only the quantiles with three or more
    runs to tell."""
    levels = {}
    for name in GATED_QUANTILES:
        per_run = _per_run_quantiles(entry, name)
        if len(per_run) >= 3 and entry.samples_s.size:
            level = latest_run_level(per_run)
            if math.isfinite(level):
                levels[name] = level
    return levels


def _at_look(
    comparison: stats.QuantileComparison,
    margin: GateMargin,
    boundary: LookBoundary,
    comparisons: int,
) -> stats.QuantileComparison:
    """The comparison decided at the look sampling stopped at (``gate.looks``)."""
    p = comparison.p_value
    adjusted = min(1.0, p * comparisons) if math.isfinite(p) else math.nan
    return decided_at_look(
        replace(comparison, p_adjusted=adjusted),
        Estimate.from_comparison(comparison),
        margin,
        boundary,
    )


def _compare(
    base: np.ndarray,
    cand: np.ndarray,
    gate_margins: Mapping[str, GateMargin],
    context: EvidenceContext,
    nodeid: str,
    salt: int,
    *,
    looks: Sequence[float] = (),
    final: bool = True,
) -> dict[str, stats.QuantileComparison]:
    boundary = final_boundary(context.plan, looks, final=final)
    out = {}
    for index, name in enumerate(GATED_QUANTILES):
        comparison = stats.compare_quantile(
            base,
            cand,
            QUANTILES[name],
            delta=gate_margins[name],
            alpha=context.alpha,
            n_boot=context.n_boot,
            rng=rng_for(nodeid, salt * 10 + index),
        )
        out[name] = _at_look(comparison, gate_margins[name], boundary, context.comparisons)
    return out


def should_replay(
    samples_s: np.ndarray,
    entry: BaselineEntry,
    context: EvidenceContext,
    nodeid: str,
    *,
    common_mode: float = 1.0,
) -> bool:
    """First look: does this measurement show a regression that a replay must confirm?"""
    if context.replay < 1 or entry.samples_s.size == 0 or samples_s.size == 0:
        return False
    found = _compare(
        entry.samples_s, samples_s / common_mode, margins(entry, context), context, nodeid, salt=0
    )
    # An explicit threshold's hit is not replayed: a replay cannot attribute a change of that
    # size to the code, only paired rounds can (gate.thresholds).
    return any(c.outcome == "different" for c in found.values())


def _with_fresh_sla(
    fresh: FreshReplay | None,
    result: TestResult,
    context: EvidenceContext,
    target: HardwareTarget | None,
) -> FreshReplay | None:
    """``fresh`` with the test's SLAs checked on its samples, as the first look's were."""
    if fresh is None or fresh.samples_s is None or not fresh.made:
        return fresh
    samples = fresh.samples_s
    declared = result.measurement.declared
    p50 = float(np.median(samples))
    point = target.place(declared, p50) if target and declared and p50 > 0 else None
    return replace(
        fresh,
        sla=tuple(
            _latency_sla(result, samples, context.alpha)
            + _roofline_sla(result, samples, point, target)
        ),
    )


def _latency_sla(result: TestResult, samples: np.ndarray, alpha: float) -> list[SlaOutcome]:
    out = []
    for key, threshold in result.sla.latency_budgets_s.items():
        check = stats.sla_check(
            samples, "max" if key == "max" else QUANTILES[key], threshold, alpha=alpha
        )
        estimate = check.estimate_s if math.isfinite(check.estimate_s) else None
        out.append(
            SlaOutcome(
                key=key,
                status=check.status,
                threshold=threshold,
                estimate=estimate,
                detail=f"{key} {format_seconds(estimate)} against SLA "
                f"{format_seconds(threshold)}: {check.status} (n={check.n})",
            )
        )
    return out


def _roofline_sla(
    result: TestResult,
    samples: np.ndarray,
    point: RooflinePoint | None,
    target: HardwareTarget | None,
) -> list[SlaOutcome]:
    sla, out = result.sla, []
    declared = result.measurement.declared
    if sla.min_efficiency is not None:
        if point is None or point.efficiency is None or target is None or declared is None:
            out.append(
                SlaOutcome(
                    "min_efficiency",
                    "unassessable",
                    sla.min_efficiency,
                    None,
                    "min_efficiency needs declared work and a hardware target",
                )
            )
        else:
            # The fastest plausible call (5th percentile) sets the most favourable efficiency:
            # if even that is below the requirement, the breach is confident.
            fast = float(np.quantile(samples, 0.05))
            best = target.place(declared, fast).efficiency or 0.0
            if best < sla.min_efficiency:
                status: SlaStatus = "breach"
            elif point.efficiency < sla.min_efficiency:
                status = "possible breach"
            else:
                status = "met"
            out.append(
                SlaOutcome(
                    "min_efficiency",
                    status,
                    sla.min_efficiency,
                    point.efficiency,
                    f"efficiency {point.efficiency:.1%} (best call {best:.1%}) against "
                    f"required {sla.min_efficiency:.1%}: {status}",
                )
            )
    if sla.bound is not None:
        if point is None or point.bound == "unknown":
            out.append(
                SlaOutcome(
                    "bound",
                    "unassessable",
                    sla.bound,
                    None,
                    "bound SLA needs declared work and a target",
                )
            )
        elif point.bound == sla.bound:
            out.append(
                SlaOutcome(
                    "bound", "met", sla.bound, point.bound, f"bound {point.bound} as required"
                )
            )
        elif point.bound == "ambiguous":
            out.append(
                SlaOutcome(
                    "bound",
                    "possible breach",
                    sla.bound,
                    point.bound,
                    f"bound ambiguous (near the ridge), required {sla.bound}",
                )
            )
        else:
            out.append(
                SlaOutcome(
                    "bound",
                    "breach",
                    sla.bound,
                    point.bound,
                    f"bound {point.bound}, required {sla.bound}",
                )
            )
    return out


def _quality(
    result: TestResult, entry: BaselineEntry | None
) -> tuple[tuple[QualityOutcome, ...], tuple[str, ...]]:
    outcomes = []
    for record in result.measurement.quality:
        base = entry.quality.get(record.name) if entry is not None else None
        ok: bool | None = None
        if base is not None:
            worsening = (
                (base.value - record.value)
                if record.higher_is_better
                else (record.value - base.value)
            )
            allowed = (
                record.tolerance
                if record.tolerance is not None
                else _QUALITY_RTOL * max(abs(base.value), 1e-300)
            )
            ok = worsening <= allowed
        outcomes.append(
            QualityOutcome(
                record.name,
                record.value,
                base.value if base else None,
                record.higher_is_better,
                record.tolerance,
                ok,
            )
        )
    recorded = {q.name for q in result.measurement.quality}
    missing = tuple(sorted(set(entry.quality) - recorded)) if entry is not None else ()
    return tuple(outcomes), missing


def _drift_threshold(deltas: Mapping[str, float]) -> float:
    """Smallest first-to-last window change that counts as drift.

    A drift smaller than half the p95 margin cannot by itself push a quantile past the margin,
    and machine speed on shared runners wanders by a few percent within seconds
    (docs/noise.md, section 2): flagging those would escalate unchanged code.
    """
    if "p95" in deltas:
        return max(0.03, deltas["p95"] / 2)
    return DRIFT_WITHOUT_BASELINE


def evaluate(
    result: TestResult,
    entry: BaselineEntry | None,
    context: EvidenceContext,
    *,
    target: HardwareTarget | None,
    replays: Sequence[np.ndarray] = (),
    common_mode: float = 1.0,
    confirmation: Confirmation | None = None,
    fresh_replay: FreshReplay | None = None,
) -> TestEvidence:
    """Gather all evidence about one test (see the module docstring for the multiplicity rule).

    :param confirmation: the paired confirmation of a first-look regression, once made.
    :param fresh_replay: the test measured again in a fresh process, once made (compared with
        the baseline here, as the first look was).
    """
    measurement = result.measurement
    samples = measurement.samples_s
    summary = summarize(samples)
    declared = measurement.declared
    point = target.place(declared, summary.p50_s) if target and declared and summary.p50_s else None
    mde = {
        name: stats.minimum_detectable_effect(samples, QUANTILES[name], alpha=context.alpha)
        for name in GATED_QUANTILES
        if samples.size >= stats.n_floor(QUANTILES[name], context.alpha)
    }
    comparisons: dict[str, stats.QuantileComparison] = {}
    gate_margins: dict[str, GateMargin] = {}
    replay: ReplayOutcome | None = None
    baseline_summary = baseline_point = bound = None
    efficiency_ratio = None
    precision_change = None
    work: dict[str, tuple[float, float]] = {}
    if entry is not None and entry.samples_s.size:
        baseline_summary = summarize(entry.samples_s)
        gate_margins = margins(entry, context)
        # The run-wide shift seen so far is divided out of the candidate before comparing, so a
        # machine that is slower for the whole run does not roll back every test;
        # the shift itself is reported and judged at run level.
        sampled = measurement.samples
        comparisons = _compare(
            entry.samples_s,
            samples / common_mode,
            gate_margins,
            context,
            result.nodeid,
            salt=0,
            looks=sampled.looks,
            final=sampled.stop_reason != "decisive",
        )
        if replays:
            replayed = [
                _compare(
                    entry.samples_s,
                    r / common_mode,
                    gate_margins,
                    context,
                    result.nodeid,
                    salt=i + 1,
                )
                for i, r in enumerate(replays)
            ]
            regressed = [name for name, c in comparisons.items() if c.outcome == "different"]
            # A replay too autocorrelated to decide on its own still corroborates a regression
            # its first look established when it reads DIFFERENT at the replay's own level.
            replay_boundary = final_boundary(context.plan, (), final=True)
            corroborated = [
                {
                    name
                    for name in regressed
                    if corroborates_at_look(found[name], gate_margins[name], replay_boundary)
                }
                for found in replayed
            ]
            reproduced = bool(regressed) and all(
                any(found[name].outcome == "different" or name in also for name in regressed)
                for found, also in zip(replayed, corroborated, strict=True)
            )
            replay = ReplayOutcome(
                True,
                len(replays),
                reproduced,
                {name: tuple(found[name].ratio for found in replayed) for name in GATED_QUANTILES},
                tuple(sorted(set().union(*corroborated))),
            )
        elif context.replay > 0 and any(c.outcome == "different" for c in comparisons.values()):
            replay = ReplayOutcome(False, 0, None)
        if fresh_replay is not None and fresh_replay.made:
            assert fresh_replay.samples_s is not None
            found = _compare(
                entry.samples_s,
                fresh_replay.samples_s / common_mode,
                gate_margins,
                context,
                result.nodeid,
                salt=FRESH_REPLAY_SALT,
            )
            boundary = final_boundary(context.plan, (), final=True)
            fresh_replay = replace(
                fresh_replay,
                comparisons=found,
                corroborated=tuple(
                    name
                    for name in GATED_QUANTILES
                    if corroborates_at_look(found[name], gate_margins[name], boundary)
                ),
            )
        if target is not None and entry.declared is not None and baseline_summary.p50_s:
            baseline_point = target.place(entry.declared, baseline_summary.p50_s)
        if point is not None and baseline_point is not None:
            bound = roofline.bound_change_between(baseline_point, point)
            if point.efficiency and baseline_point.efficiency:
                efficiency_ratio = point.efficiency / baseline_point.efficiency
        work = roofline.work_change(entry.declared, declared)
        base_precision = entry.declared.precision if entry.declared else None
        cand_precision = declared.precision if declared else None
        if base_precision != cand_precision and (base_precision or cand_precision):
            precision_change = (base_precision, cand_precision)
    quality, missing_quality = _quality(result, entry)
    counters = measurement.counters
    watched = measurement.host
    return TestEvidence(
        nodeid=result.nodeid,
        owners=result.owners,
        rollback=result.rollback,
        summary=summary,
        baseline_summary=baseline_summary,
        comparisons=comparisons,
        mde=mde,
        margins=gate_margins,
        replay=replay,
        sla=tuple(
            _latency_sla(result, samples, context.alpha)
            + _roofline_sla(result, samples, point, target)
        ),
        point=point,
        baseline_point=baseline_point,
        bound_change=bound,
        efficiency_ratio=efficiency_ratio,
        drift=stats.drift(
            samples, min_change=_drift_threshold({k: m.margin for k, m in gate_margins.items()})
        )
        if samples.size >= 20
        else None,
        quality=quality,
        missing_quality=missing_quality,
        precision_change=precision_change,
        counter_completeness=counters.completeness if counters else None,
        cpu_share=counters.cpu_share if counters else None,
        needs_counters=result.sla.bound is not None or result.sla.min_efficiency is not None,
        batched=measurement.samples.batch_size > 1,
        layers_changed=context.layers_changed if entry is not None else (),
        hardware_differs=context.hardware_differs if entry is not None else None,
        family_size=context.family_size,
        common_mode=common_mode,
        # Counters cover the sampling phase only (they start after warm-up).
        fidelity=counter_fidelity(
            declared, counters, calls=samples.size * measurement.samples.batch_size
        ),
        host=HostCheck(
            state=watched.state,
            reason=watched.reason,
            remeasured=watched.remeasured,
            shift=watched.host_shift if entry is not None else None,
        )
        if watched is not None
        else None,
        confirmation=confirmation,
        history_drift=label_drift(
            [*entry.history_samples, entry.samples_s],
            samples / common_mode,
            {name: QUANTILES[name] for name in GATED_QUANTILES},
            # The user's smallest effect, not the noise-widened margin: Sen's interval already
            # carries the run-to-run noise, and the margin would count it twice.
            {name: context.min_effect.get(name, 0.0) for name in GATED_QUANTILES},
            entry.commits,
        )
        if entry is not None and entry.history_samples and entry.samples_s.size
        else None,
        fail_thresholds=context.fail_thresholds if entry is not None else {},
        same_code=context.same_code and entry is not None,
        history_runs=len(entry.history_samples) + 1 if entry is not None else 0,
        baseline_level=baseline_levels(entry) if entry is not None else {},
        work_change=work,
        involuntary_switches=watched.host.involuntary_switches
        if watched is not None and watched.host is not None
        else None,
        other_cpu_share=watched.host.other_cpu_share
        if watched is not None and watched.host is not None
        else None,
        host_wall_s=watched.host.wall_s
        if watched is not None and watched.host is not None
        else None,
        baseline_cpu_share=entry.cpu_share if entry is not None else None,
        baseline_disturbed=entry.host_disturbed if entry is not None else None,
        # Within one run, so the user's smallest p50 effect is the margin: the label's
        # run-to-run noise floor is not noise between a soak's windows.
        soak=assess_soak(
            measurement.soak, margin=context.min_effect.get("p50", 0.0), alpha=context.alpha
        )
        if measurement.soak is not None
        else None,
        fresh_replay_due=context.fresh_replay,
        fresh_replay=_with_fresh_sla(fresh_replay, result, context, target),
    )
