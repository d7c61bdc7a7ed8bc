"""The run document: the typed record of one run that every report is rendered from.

It owns its JSON, as pyperf's ``_bench.py`` owns its format: :meth:`RunDocument.to_json` writes
what ``--roofline-json`` holds and what the store keeps for ``pytest-roofline report``, and
:meth:`RunDocument.from_json` reads any version of it back (:mod:`pytest_roofline.model.codec`).
Every key is declared here; nothing else builds or picks apart the JSON. The gate builds a
document from typed evidence and decisions (:mod:`pytest_roofline.gate.record`,
:mod:`pytest_roofline.gate.run`); renderers only read it.

Format history. ``schema_version`` changes only when a reader of the old version could
misread a new document; keys added since are listed here with the release that added them.
Readers ignore keys they do not know.

* ``schema_version: 1``, pytest-roofline 0.1.0: the first format; paired runs add
  ``run.rounds``, ``run.paired`` and ``tests[].paired``.
* 0.2.0 adds each comparison's three-way ``outcome`` (``different`` / ``same`` / ``unknown``),
  ``margin`` (the same value as ``delta``) and ``margin_source`` (``min_effect``, ``history``
  or ``cap``), and the run's method settings as used (``run.method``: sample floors, absolute floor,
  ridge band, overhead share, default noise floors) and the platform projection as computed
  (``run.platforms``, ``tests[].platforms``), so a re-rendered run shows what it used, not what
  today's library would use. A document without ``run.method`` was made by 0.1.0 and reads as
  made with its settings (:data:`METHOD_V1`). It also adds ``next_steps``: what to do about
  each run-level reason (a run that escalates with no test to review still says what to do);
  and records the platform projection only onto the presets relevant to the run's target.
  The host canary adds ``tests[].host`` (what the host did around each test) and
  ``run.canary`` (the canary's level, window states and cost over the run), both only when
  the canary ran; ``tests[].confirmation`` records the paired confirmation of a two-run first
  look, where one was tried. ``run.gate`` adds ``max_margin``, ``unknown_extension`` and
  ``confirm`` as used, and ``confirm_time_s`` (``gate.confirm_time``: how long paired rounds
  may settle UNKNOWN first looks; ``null``: the default, as long as the session so far).
* Issue 14 (unreleased, schema 1 still: older readers ignore the keys) adds the label's trend:
  ``run.trend`` (the label and its last runs, oldest first, this run last with ``current``)
  and ``tests[].trend`` (per test, p50/p95/p99 with their intervals and the bound class of each
  of those runs, aligned with ``run.trend.runs``, and the steps found in its p50), both only
  when the run was compared with, or saved under, a label with earlier runs. The copy of the
  document kept in the store leaves them out (the store's series holds the same numbers).
* A soak (``--roofline-soak``, marker ``soak=``) adds ``tests[].soak`` (only to soaked tests):
  the window grid, each window's median latency and host evidence (CPU clock, CPU share,
  steal, canary ratios, NVML temperature, SM clock, power and throttle reasons), the host
  figures' statuses, the probes' share of the soak, and the first failing window (``finding``).
  ``schema_version`` stays 1: a reader without the key misreads nothing (a soak's escalation is
  in ``decision`` and ``reasons`` as every other one).

* Issue 10 (unreleased, schema 1 still) adds ``run.paired.windows.layout_shift_bytes``: the
  largest heap block of random size ``ab``'s workers held through each window (0: none).
  ``schema_version`` stays 1: a reader without the key misreads nothing.

* Issue 10, stop 40 (unreleased, schema 1 still) adds ``tests[].paired.order``: each kept
  window pair's order (``AB``: baseline first), on persistent workers only. ``schema_version``
  stays 1: a reader without the key misreads nothing.

* Issue 10, stop 41 (unreleased, schema 1 still) adds ``tests[].paired.worker_pair``: the pair
  of worker processes (0-based) that measured each kept window pair, on persistent workers
  only. ``schema_version`` stays 1: a reader without the key misreads nothing.

Why one long module: the declared JSON contract: one dataclass per object of the run document,
with the format history; one file keeps the contract readable in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_roofline.model.codec import Record
from pytest_roofline.vocabulary import (
    LATENCY_SLA_KEYS,
    BoundClass,
    Decision,
    Outcome,
    SlaStatus,
    Verdict,
)

__all__ = [
    "METHOD_V1",
    "SCHEMA_VERSION",
    "BaselineSummary",
    "BenchmarkInfo",
    "BoundChangeRecord",
    "CanaryRunRecord",
    "CommonModeRecord",
    "ConfirmationRecord",
    "CounterFidelity",
    "CountersRecord",
    "DeclaredRecord",
    "DriftRecord",
    "FreshReplayRecord",
    "GateRecord",
    "HostRecordDoc",
    "MethodRecord",
    "ObservabilityRecord",
    "PairedRun",
    "PairedSide",
    "PairedTest",
    "PlatformCell",
    "PlatformTarget",
    "ProvenanceRecord",
    "QualityCheck",
    "QuantileChange",
    "ReplayRecord",
    "RooflineRecord",
    "RoundTiming",
    "RunDocument",
    "RunInfo",
    "SampleAdequacy",
    "Series",
    "SlaCheckRecord",
    "SlaRecord",
    "SliceCoverage",
    "SoakFindingRecord",
    "SoakRecord",
    "SoakWindowRecord",
    "TagChange",
    "TargetRecord",
    "TestRecord",
    "TestTrendRecord",
    "TrendRun",
    "TrendRunsRecord",
    "TrendStepRecord",
]

SCHEMA_VERSION = 1

Design = Literal["two-run", "paired"]
FidelityStatus = Literal["measured", "unmeasured", "undeclared"]


# --------------------------------------------------------------------------- per test
@dataclass(frozen=True, slots=True)
class QuantileChange(Record):
    """One quantile of the candidate compared with the baseline (``tests[].change.p95``)."""

    quantile: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    # The p-value after the per-test Bonferroni bound (two-run) or BH (paired).
    p_adjusted: float | None = None
    # Benjamini-Hochberg across every comparison of the run (reported; the per-test bound decides).
    p_bh: float | None = None
    verdict: Verdict | None = None
    improvement: bool = False
    delta: float | None = None
    mde: float | None = None
    base_s: float | None = None
    cand_s: float | None = None
    abs_change_s: float | None = None
    n_base: int | None = None
    n_cand: int | None = None
    n_eff_base: float | None = None
    n_eff_cand: float | None = None
    se_log: float | None = None
    alpha: float | None = None
    abs_floor_s: float | None = None
    common_mode: float | None = None
    reason: str | None = None
    # 0.2.0: the three-way outcome and where the margin (``delta``) came from.
    outcome: Outcome | None = None
    margin_source: str | None = None

    def _derived(self) -> Mapping[str, Any]:
        # the JSON contract names the margin "margin"; 0.1.0 wrote it as "delta" (both are kept).
        return {"margin": self.delta}


@dataclass(frozen=True, slots=True)
class BaselineSummary(Record):
    """The baseline's quantiles of a test (``tests[].baseline``).

    ``level``: each quantile of the baseline run compared with, as a ratio of its label's median
    of recent runs (below 1: that run was a fast draw; a two-run regression's bar without paired
    rounds is then cleared against the median, ``gate.policy``); empty without such history.
    """

    p50_s: float | None = None
    p95_s: float | None = None
    p99_s: float | None = None
    samples: int | None = None
    level: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeclaredRecord(Record):
    """The work one call declares (``roofline.declare``)."""

    flops: float | None = None
    bytes_moved: float | None = None
    precision: str | None = None


@dataclass(frozen=True, slots=True)
class BoundChangeRecord(Record):
    changed: bool = False
    ambiguous: bool = False
    base: BoundClass = "unknown"
    cand: BoundClass = "unknown"
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class RooflineRecord(Record):
    """The test's place on the roofline, and the baseline's (``tests[].roofline``)."""

    intensity: float | None = None
    achieved_flops_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    attainable_flops_per_s: float | None = None
    efficiency: float | None = None
    bound: BoundClass = "unknown"
    ridge: float | None = None
    precision: str | None = None
    memory_level: str | None = None
    data_error: str | None = None
    note: str | None = None
    baseline_bound: BoundClass | None = None
    baseline_intensity: float | None = None
    baseline_achieved_flops_per_s: float | None = None
    baseline_efficiency: float | None = None
    bound_changed: bool | None = None
    bound_change: BoundChangeRecord | None = None
    efficiency_ratio: float | None = None


@dataclass(frozen=True, slots=True)
class CounterFidelity(Record):
    """How well counters confirm one declared quantity (``tests[].counter_fidelity.flops``)."""

    status: FidelityStatus | None = None
    declared_per_call: float | None = None
    measured_per_call: float | None = None
    relative_error: float | None = None
    source: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class CountersRecord(Record):
    """Counter statuses and values read around the sampling (``tests[].counters``)."""

    status: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, float] = field(default_factory=dict)
    completeness: float | None = None
    cpu_share: float | None = None
    wall_s: float | None = None
    threads: int | None = None
    notes: tuple[str, ...] = ()
    fidelity: Mapping[str, CounterFidelity] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SlaCheckRecord(Record):
    """One SLA key checked. Latency keys write ``threshold_s``/``estimate_s``; ``min_efficiency``
    and ``bound`` write ``threshold``/``estimate``."""

    key: str | None = None
    status: SlaStatus | None = None
    threshold_s: float | None = None
    estimate_s: float | None = None
    threshold: float | str | None = None
    estimate: float | str | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        latency = self.key in LATENCY_SLA_KEYS
        return {
            "key": self.key,
            "status": self.status,
            **(
                {"threshold_s": self.threshold_s, "estimate_s": self.estimate_s}
                if latency
                else {"threshold": self.threshold, "estimate": self.estimate}
            ),
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class SlaRecord(Record):
    """The test's SLA checks; ``ok`` is ``None`` when it has none."""

    ok: bool | None = None
    violations: tuple[str, ...] = ()
    checks: tuple[SlaCheckRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class QualityCheck(Record):
    """A quality value against the baseline's; ``ok`` is ``None`` without a baseline value."""

    value: float | None = None
    baseline: float | None = None
    higher_is_better: bool | None = None
    tolerance: float | None = None
    ok: bool | None = None


@dataclass(frozen=True, slots=True)
class ReplayRecord(Record):
    """Whether a first-look regression reproduced when the test was measured again."""

    attempted: bool = False
    count: int = 0
    reproduced: bool | None = None
    ratios: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DriftRecord(Record):
    """Within-run trend of the samples (Kendall tau, first-to-last window change)."""

    tau: float | None = None
    p_value: float | None = None
    window_change: float | None = None
    drifting: bool = False


@dataclass(frozen=True, slots=True)
class Series(Record):
    """Samples thinned for the charts (order kept, for the timeline)."""

    candidate: tuple[float | None, ...] | None = None
    baseline: tuple[float | None, ...] | None = None


@dataclass(frozen=True, slots=True)
class PairedTest(Record):
    """A paired run's per-round facts of one test (``tests[].paired``).

    On persistent workers (0.2.0) a round is a window pair: ``rounds`` counts the pairs kept,
    ``pairs`` those run, ``pairs_dropped`` those left out for a host-disturbed window on either
    side, ``stop`` why the alternation stopped (``decided``, ``max_pairs``, ``error``) and
    ``canary`` the pairs per canary state (``quiet``, ``disturbed_a`` (baseline),
    ``disturbed_b`` (candidate), ``disturbed_both``, ``unread``); ``order`` each kept pair's
    order (``AB``: baseline first), so a reader can check the kept pairs' balance: the first
    window of a pair runs after other tests' windows and reads up to a few percent slower
    (docs/paired.md, "The first window of a pair"), which ABBA cancels only when both orders
    are kept alike; ``worker_pair`` the pair of worker processes (0-based) that measured each
    kept pair, so a reader can compare the processes (a regression rolls back only if it stands
    with the spread between them in its interval: docs/paired.md, "Stop 41").
    """

    _OMIT_IF_NONE = ("pairs", "pairs_dropped", "stop", "order", "worker_pair")

    rounds: int | None = None
    rounds_used: Mapping[str, int] = field(default_factory=dict)
    ratios: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)
    samples: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    batch_size: Mapping[str, tuple[int | None, ...]] = field(default_factory=dict)
    pairs: int | None = None
    pairs_dropped: int | None = None
    stop: str | None = None
    canary: Mapping[str, int] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    worker_pair: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class HostRecordDoc(Record):
    """What the host did while the test was measured (0.2.0, ``tests[].host``).

    ``state`` is the host canary's state for the window the samples come from (``quiet``,
    ``disturbed``, ``unread``); ``windows`` counts the attempts (2 after a re-measure);
    ``baseline_ratios`` is the canary's level now ÷ at the baseline, per kind, and
    ``host_shift`` names the kinds beyond their floor. The rest are the host counters of the
    kept attempt (``measure.host``); ``wall_s`` is that attempt's window (warm-up, sampling and
    replays), which ``involuntary_switches`` and ``other_cpu_share`` cover.
    """

    state: str | None = None
    reason: str | None = None
    remeasured: bool = False
    windows: int = 0
    ratios: Mapping[str, float] = field(default_factory=dict)
    floors: Mapping[str, float] = field(default_factory=dict)
    baseline_ratios: Mapping[str, float] = field(default_factory=dict)
    host_shift: str | None = None
    cpu_share: float | None = None
    involuntary_switches: int | None = None
    steal_share: float | None = None
    other_cpu_share: float | None = None
    load_1m: float | None = None
    wall_s: float | None = None


@dataclass(frozen=True, slots=True)
class ConfirmationRecord(Record):
    """The paired confirmation of a two-run first look (0.2.0, ``tests[].confirmation``).

    ``state``: ``confirmed`` (paired rounds against a worktree of the baseline's commit find the
    regression), ``overturned`` (they rule it out), ``inconclusive``, or ``unavailable`` (with
    ``reason``: no commit, not reachable, ``--roofline-confirm=never``...). ``change`` holds the
    paired comparisons; ``command`` the ``pytest-roofline ab`` command that repeats them.
    """

    state: str | None = None
    reason: str | None = None
    command: str | None = None
    change: Mapping[str, QuantileChange] = field(default_factory=dict)
    pairs: int | None = None
    pairs_dropped: int | None = None
    stop: str | None = None


@dataclass(frozen=True, slots=True)
class FreshReplayRecord(Record):
    """The test measured again in a fresh pytest process (``tests[].fresh_replay``): a two-run
    regression that would roll back without paired rounds must reproduce there too.

    ``made`` is false when no replay could be made (``reason`` says why); ``samples`` is its
    sample count, ``host`` the canary's reason when the host was disturbed during it,
    ``change`` its comparisons with the baseline, and ``sla`` each SLA key's status on its
    samples (``breach``, ``ok``...).
    """

    made: bool = False
    reason: str | None = None
    samples: int | None = None
    host: str | None = None
    change: Mapping[str, QuantileChange] = field(default_factory=dict)
    sla: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SoakWindowRecord(Record):
    """One window of a soak (``tests[].soak.windows[]``): latency and the host beside it.

    ``ratio`` is the window's median ÷ the reference windows' level. Host figures are ``None``
    where not read (see ``tests[].soak.status``); ``canary`` maps each canary kind to its
    reading ÷ the session level (empty: no reading in this window); ``gpu_throttle`` names the
    NVML clock-event reasons on during the window.
    """

    offset_s: float | None = None
    duration_s: float | None = None
    p50_s: float | None = None
    n: int = 0
    ratio: float | None = None
    cpu_mhz: float | None = None
    cpu_share: float | None = None
    steal: float | None = None
    canary: Mapping[str, float] = field(default_factory=dict)
    gpu_temperature_c: float | None = None
    gpu_sm_clock_mhz: float | None = None
    gpu_power_w: float | None = None
    gpu_throttle: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SoakFindingRecord(Record):
    """A soak's first failing window (``tests[].soak.finding``).

    ``kind``: ``drift`` or ``throttling`` (a throttle onset aligned with the rise, described in
    ``throttle``); ``window`` its index, ``offset_s`` its start in the soak; ``ratio`` with
    ``ci_low`` .. ``ci_high`` the median latency from there ÷ the reference's; ``reason`` the
    escalation reason as the test's reasons carry it.
    """

    kind: str | None = None
    window: int | None = None
    offset_s: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    reference: int | None = None
    margin: float | None = None
    throttle: str | None = None
    canary_slow: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SoakRecord(Record):
    """A soaked test's latency timeline (``tests[].soak``).

    ``duration_s`` the soak asked for, ``window_s`` its window grid, ``reference`` the first
    windows every later one is compared with, ``margin`` the smallest rise that counts (the
    run's ``gate.min_effect`` for p50), ``sigma_log`` the window-to-window noise (log
    scale); ``status`` a status per host figure (``cpu_mhz``, ``cpu_share``, ``steal``,
    ``canary``, ``gpu``: ``ok``, ``unsupported``, ``denied``, ``invalid``) with ``notes``;
    ``probe_share`` the host probes' time ÷ the soak's (their overhead; ``canary_share`` the
    canary readings' part of it), ``canary_floors`` the
    ratio beyond which a canary reading is slow; ``summary`` one line; ``finding`` the first
    failing window, ``None`` when the soak was stable; ``transient_window`` and
    ``transient_ratio`` a slower stretch that did not last (noted, not escalated).
    """

    duration_s: float | None = None
    window_s: float | None = None
    elapsed_s: float | None = None
    reference: int | None = None
    margin: float | None = None
    sigma_log: float | None = None
    windows: tuple[SoakWindowRecord, ...] = ()
    status: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    probe_share: float | None = None
    canary_share: float | None = None
    canary_floors: Mapping[str, float] = field(default_factory=dict)
    summary: str | None = None
    finding: SoakFindingRecord | None = None
    transient_window: int | None = None
    transient_ratio: float | None = None


@dataclass(frozen=True, slots=True)
class PlatformCell(Record):
    """Declared work projected onto one preset: time at the roof and the class there."""

    seconds: float | None = None
    bound: str | None = None


@dataclass(frozen=True, slots=True)
class BenchmarkInfo(Record):
    """pytest-benchmark's names of a test measured through the ``benchmark`` fixture."""

    group: str | None = None
    name: str | None = None
    fullname: str | None = None
    param: str | None = None
    extra_info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TrendStepRecord(Record):
    """A step in a test's trend (``tests[].trend.steps[]``).

    ``index`` is the position in ``run.trend.runs`` of the first run after the step, ``run_id``
    that run's (``None`` for this run, before it is saved). ``ratio`` and ``ci`` size it on the
    raw samples of the runs either side; ``confirmed`` says whether that interval lies wholly
    on the detector's side of 1 (``docs/history.md``).
    """

    index: int | None = None
    run_id: int | None = None
    quantile: str | None = None
    ratio: float | None = None
    ci: tuple[float | None, float | None] | None = None
    confirmed: bool = False
    first_failing_layer: str | None = None


@dataclass(frozen=True, slots=True)
class TestTrendRecord(Record):
    """One test over the label's last runs (``tests[].trend``), aligned with ``run.trend.runs``.

    Per run, the Harrell-Davis quantile in seconds and its 95% interval (``None`` where the run
    has no result for the test, or too few samples for the interval), and the bound class.
    Numbers keep four significant digits (the intervals are wider than that).
    """

    __test__ = False

    p50_s: tuple[float | None, ...] = ()
    p50_low_s: tuple[float | None, ...] = ()
    p50_high_s: tuple[float | None, ...] = ()
    p95_s: tuple[float | None, ...] = ()
    p95_low_s: tuple[float | None, ...] = ()
    p95_high_s: tuple[float | None, ...] = ()
    p99_s: tuple[float | None, ...] = ()
    p99_low_s: tuple[float | None, ...] = ()
    p99_high_s: tuple[float | None, ...] = ()
    bound: tuple[str | None, ...] = ()
    steps: tuple[TrendStepRecord, ...] = ()

    def column(self, name: str) -> tuple[float | None, ...]:
        """``p50_s``, ``p95_low_s``... by name (an empty tuple for an unknown name)."""
        value = getattr(self, name, ()) if name.endswith("_s") else ()
        return value if isinstance(value, tuple) else ()


@dataclass(frozen=True, slots=True)
class TestRecord(Record):
    """One measured test: what was measured, the evidence and the decision (``tests[]``)."""

    __test__ = False  # not a pytest test class

    nodeid: str = "?"
    slice: str | None = None
    slice_group: str | None = None
    source: str | None = None
    owners: tuple[str, ...] = ()
    rollback_boundary: str | None = None
    decision: Decision | None = None
    reasons: tuple[str, ...] = ()
    symptom: str | None = None
    mechanism: str | None = None
    competing_hypotheses: tuple[str, ...] = ()
    missing_evidence: tuple[str, ...] = ()
    first_failing_layer: str | None = None
    replay_command: str | None = None
    samples: int | None = None
    batch_size: int = 1
    stop_reason: str | None = None
    elapsed_s: float | None = None
    p50_s: float | None = None
    p95_s: float | None = None
    p99_s: float | None = None
    mean_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    baseline: BaselineSummary | None = None
    change: Mapping[str, QuantileChange] | None = None
    margins: Mapping[str, float] = field(default_factory=dict)
    mde: Mapping[str, float] = field(default_factory=dict)
    declared: DeclaredRecord | None = None
    roofline: RooflineRecord | None = None
    counters: CountersRecord | None = None
    sla: SlaRecord = field(default_factory=SlaRecord)
    quality: Mapping[str, QualityCheck] = field(default_factory=dict)
    missing_quality: tuple[str, ...] = ()
    precision_change: tuple[str | None, str | None] | None = None
    replay: ReplayRecord | None = None
    drift: DriftRecord | None = None
    common_mode_applied: float | None = None
    counter_fidelity: Mapping[str, CounterFidelity] = field(default_factory=dict)
    layers_changed: tuple[str, ...] = ()
    hardware_differs: str | None = None
    series: Series = field(default_factory=Series)
    paired: PairedTest | None = None
    platforms: Mapping[str, PlatformCell] = field(default_factory=dict)
    host: HostRecordDoc | None = None
    confirmation: ConfirmationRecord | None = None
    # The test measured again in a fresh process (plugin.fresh_replay), where that was due.
    fresh_replay: FreshReplayRecord | None = None
    # Set for a test that used the ``benchmark`` fixture (plugin.benchmark_options).
    benchmark: BenchmarkInfo | None = None
    # The label's last runs (issue 14; ``run.trend`` names them).
    trend: TestTrendRecord | None = None
    # Set for a soaked test (``--roofline-soak``, marker ``soak=``).
    soak: SoakRecord | None = None

    _OMIT_IF_NONE = (
        "paired",
        "host",
        "confirmation",
        "fresh_replay",
        "benchmark",
        "trend",
        "soak",
    )

    def _derived(self) -> Mapping[str, Any]:
        return {
            "owner": ", ".join(self.owners) if self.owners else None,
            "batched": self.batch_size > 1,
        }

    def quantile_s(self, name: str) -> float | None:
        """The candidate's ``p50`` / ``p95`` / ``p99`` in seconds."""
        return {"p50": self.p50_s, "p95": self.p95_s, "p99": self.p99_s}.get(name)

    def ratio(self, name: str) -> float | None:
        """Candidate / baseline of a quantile: the gate's estimate when compared, else the ratio
        of the two summaries."""
        compared = (self.change or {}).get(name)
        if compared is not None and compared.ratio is not None:
            return compared.ratio
        if self.baseline is None:
            return None
        cand = self.quantile_s(name)
        base = {"p50": self.baseline.p50_s, "p95": self.baseline.p95_s, "p99": self.baseline.p99_s}
        before = base.get(name)
        if cand is None or before is None or before <= 0:
            return None
        return cand / before


# --------------------------------------------------------------------------- per run
@dataclass(frozen=True, slots=True)
class TagChange(Record):
    """A revision tag that differs from the baseline's, and its layer."""

    baseline: str | None = None
    candidate: str | None = None
    layer: str | None = None


@dataclass(frozen=True, slots=True)
class ProvenanceRecord(Record):
    value: float | None = None
    unit: str | None = None
    sparse: bool = False
    source: str | None = None
    date: str | None = None
    note: str | None = None
    # A measured bandwidth roof: the bytes per array it was measured on (other roofs: absent).
    array_bytes: int | None = None

    _OMIT_IF_NONE = ("array_bytes",)


@dataclass(frozen=True, slots=True)
class TargetRecord(Record):
    """The hardware target's roofs as the run used them."""

    name: str | None = None
    source: str | None = None
    description: str | None = None
    peak_flops_per_s: Mapping[str, float] = field(default_factory=dict)
    peak_bytes_per_s: Mapping[str, float] = field(default_factory=dict)
    sparse_peak_flops_per_s: Mapping[str, float] = field(default_factory=dict)
    provenance: Mapping[str, ProvenanceRecord] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CommonModeRecord(Record):
    """The run-wide shift of the p50 ratios (and the threshold beyond which it escalates)."""

    factor: float | None = None
    log_factor: float | None = None
    n_tests: int | None = None
    spread: float | None = None
    threshold: float | None = None
    applied: bool | None = None


@dataclass(frozen=True, slots=True)
class GateRecord(Record):
    """The ``gate:`` settings and ``--roofline-gate`` as used."""

    alpha: float | None = None
    min_effect: Mapping[str, float] = field(default_factory=dict)
    replay: int | None = None
    gate_on: str | None = None
    max_margin: float | None = None
    unknown_extension: float | None = None
    confirm: str | None = None
    confirm_time_s: float | None = None


@dataclass(frozen=True, slots=True)
class MethodRecord(Record):
    """The method's constants as used (0.2.0): what the report's method notes show."""

    sample_floor: Mapping[str, int] = field(default_factory=dict)
    abs_floor_s: float | None = None
    ridge_margin: float | None = None
    overhead_efficiency: float | None = None
    default_noise_floor: Mapping[str, float] = field(default_factory=dict)


METHOD_V1 = MethodRecord(
    sample_floor={"p95": 59, "p99": 299},
    abs_floor_s=1e-7,
    ridge_margin=0.15,
    overhead_efficiency=0.2,
    default_noise_floor={"p50": 0.35, "p95": 0.37, "p99": 0.60},
)
"""The settings every run of pytest-roofline 0.1.0 used (its documents record none)."""


@dataclass(frozen=True, slots=True)
class PlatformTarget(Record):
    """A preset the run's declared work was projected onto (0.2.0)."""

    name: str = "?"
    description: str | None = None
    dram_bytes_per_s: float | None = None


@dataclass(frozen=True, slots=True)
class PairedSide(Record):
    """Where one side of a paired run came from, as the import probe saw it."""

    tree: str | None = None
    workdir: str | None = None
    import_root: str | None = None
    commit: str | None = None
    dirty: bool | None = None
    python: str | None = None
    test_files: tuple[str, ...] = ()
    resolved: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RoundTiming(Record):
    round: int | None = None
    side: str | None = None
    seconds: float | None = None
    exit: int | None = None


@dataclass(frozen=True, slots=True)
class PairedRun(Record):
    """How a paired run (``pytest-roofline ab``) was made (``run.paired``).

    0.2.0 (persistent workers): ``round_seconds`` holds, per window pair and side, the seconds
    that side's windows took over all tests; ``windows`` the alternation's settings
    (``window_s``, ``min_pairs``, ``max_pairs``, ``look_every``, ``layout_shift_bytes``: the
    largest heap block a worker held through a window); ``pairs_dropped`` the pairs
    left out for a disturbed host over all tests; ``startup_s`` the workers' start and
    collection; ``canary_s`` the time of the canary readings around the windows;
    ``worker_env`` the environment variables ``ab`` set in both workers because the user had
    not (``OPENBLAS_THREAD_TIMEOUT``: an idle worker's BLAS threads must not spin into the
    other's window).
    """

    _OMIT_IF_NONE = ("pairs_dropped", "startup_s", "canary_s")

    baseline_ref: str | None = None
    baseline_commit: str | None = None
    candidate_commit: str | None = None
    candidate_dirty: bool | None = None
    rounds: int | None = None
    order: tuple[str, ...] = ()
    budget_s: float | None = None
    budget_per_round_s: float | None = None
    setup: str | None = None
    pytest_args: tuple[str, ...] = ()
    sides: Mapping[str, PairedSide] = field(default_factory=dict)
    round_seconds: tuple[RoundTiming, ...] = ()
    wall_s: float | None = None
    windows: Mapping[str, float] = field(default_factory=dict)
    pairs_dropped: int | None = None
    startup_s: float | None = None
    canary_s: float | None = None
    worker_env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CanaryRunRecord(Record):
    """The host canary over the run (0.2.0, ``run.canary``).

    ``levels_s`` and ``floors`` are the session level (median seconds per kernel call) and the
    ratio beyond which a reading counted as disturbed, of the first measuring process; a later
    run compares its level with them (``spec`` must match). ``windows`` counts the test
    windows per state over every measuring process; ``remeasured`` the tests measured again
    after a disturbed window; ``cost_share`` the canary's time between tests ÷ the run's.
    """

    processes: int = 0
    spec: Mapping[str, str] = field(default_factory=dict)
    levels_s: Mapping[str, float] = field(default_factory=dict)
    floors: Mapping[str, float] = field(default_factory=dict)
    end_ratios: Mapping[str, float] = field(default_factory=dict)
    baseline_ratios: Mapping[str, float] = field(default_factory=dict)
    windows: Mapping[str, int] = field(default_factory=dict)
    remeasured: int = 0
    recovery_wait_s: float | None = None
    cost_share: float | None = None
    blas: str | None = None


@dataclass(frozen=True, slots=True)
class TrendRun(Record):
    """One run of the label's trend (``run.trend.runs[]``); ``current`` marks this run, whose
    ``run_id`` is ``None`` (it is saved, if at all, after the document is made)."""

    run_id: int | None = None
    commit: str | None = None
    started: str | None = None
    current: bool = False


@dataclass(frozen=True, slots=True)
class TrendRunsRecord(Record):
    """The runs the tests' trends cover (``run.trend``): the last ``last`` runs of ``label``,
    this one included and last, oldest first."""

    label: str | None = None
    last: int | None = None
    runs: tuple[TrendRun, ...] = ()

    @property
    def current_index(self) -> int | None:
        """The position of this run among :attr:`runs` (the last one, where it is marked)."""
        marked = [i for i, run in enumerate(self.runs) if run.current]
        return marked[-1] if marked else None


@dataclass(frozen=True, slots=True)
class RunInfo(Record):
    """Run-level facts (``run``)."""

    label: str | None = None
    baseline_label: str | None = None
    baseline_run_id: int | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    tag_diff: Mapping[str, TagChange] = field(default_factory=dict)
    first_failing_layer: str | None = None
    first_failing_slices: Mapping[str, str] = field(default_factory=dict)
    target: TargetRecord | None = None
    machine: str | None = None
    started: str | None = None
    finished: str | None = None
    common_mode: CommonModeRecord | None = None
    design: Design | None = None
    gate: GateRecord = field(default_factory=GateRecord)
    missing_from_baseline: tuple[str, ...] = ()
    missing_from_candidate: tuple[str, ...] = ()
    rounds: int | None = None
    paired: PairedRun | None = None
    method: MethodRecord | None = None
    platforms: tuple[PlatformTarget, ...] = ()
    canary: CanaryRunRecord | None = None
    trend: TrendRunsRecord | None = None

    # Only paired runs have these (schema 1 left them out of two-run documents); only runs
    # that timed the host canary have ``canary``; only runs of a label with earlier runs
    # have ``trend``.
    _OMIT_IF_NONE = ("rounds", "paired", "canary", "trend")


@dataclass(frozen=True, slots=True)
class SampleAdequacy(Record):
    p95: float | None = None
    p99: float | None = None


@dataclass(frozen=True, slots=True)
class SliceCoverage(Record):
    groups: int | None = None
    multi_shape: float | None = None
    production: float | None = None


@dataclass(frozen=True, slots=True)
class ObservabilityRecord(Record):
    """The run's evidence-quality figures, each a share of its measured tests (docs/gate.md)."""

    counter_completeness: float | None = None
    trigger_coverage: float | None = None
    replay_success_rate: float | None = None
    sample_adequacy: SampleAdequacy | None = None
    escape_risk: float | None = None
    slice_coverage: SliceCoverage | None = None


@dataclass(frozen=True, slots=True)
class RunDocument(Record):
    """One run: its decision, facts, evidence-quality figures and tests (the JSON document)."""

    schema_version: int = SCHEMA_VERSION
    decision: Decision | None = None
    reasons: tuple[str, ...] = ()
    # 0.2.0: the next step of each run-level reason (commands in backticks).
    next_steps: tuple[str, ...] = ()
    run: RunInfo = field(default_factory=RunInfo)
    observability: ObservabilityRecord = field(default_factory=ObservabilityRecord)
    versions: Mapping[str, str | None] = field(default_factory=dict)
    tests: tuple[TestRecord, ...] = ()

    @property
    def method(self) -> MethodRecord:
        """The method settings the run used (0.1.0's for a document that recorded none)."""
        return self.run.method if self.run.method is not None else METHOD_V1

    @classmethod
    def read(cls, data: object) -> RunDocument:
        """Read a document of any version; anything but a JSON object reads as an empty run."""
        return cls.from_json(data) if isinstance(data, Mapping) else cls()
