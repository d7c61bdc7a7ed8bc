"""The session object registered as a plugin: collects measurements, analyses and saves the run.

Data flows one way (docs/architecture.md): the ``roofline`` fixture measures on whichever process runs the
test; the measurement rides on the call-phase ``TestReport`` (identical with and without xdist);
the controller collects reports, builds the run's document at the end of the test loop, saves it to
the store and writes the files in ``pytest_sessionfinish``, and renders the terminal summary.

Why one long module: the pytest hook implementations of one session, which share its state;
measuring, judging, reporting and storing are delegated to their packages.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline import exits, stats
from pytest_roofline.config.markers import MarkerSettings, bind_marker
from pytest_roofline.config.settings import (
    GateSettings,
    RooflineConfig,
    TestSettings,
    resolve_test,
)
from pytest_roofline.errors import RooflineError, RooflineWarning, StoreError
from pytest_roofline.files import write_atomic
from pytest_roofline.gate.confirm import (
    busy_host,
    disturbed_note,
    first_look_margins,
    is_regression_check,
    needs_confirmation,
    settling_order,
)
from pytest_roofline.gate.evidence import (
    BaselineEntry,
    Confirmation,
    EvidenceContext,
    margins,
    should_replay,
)
from pytest_roofline.gate.looks import TwoRunStop
from pytest_roofline.gate.policy import DriftBound, awaits_fresh_replay, drift_inside_margins
from pytest_roofline.gate.record import canary_level, canary_record
from pytest_roofline.gate.run import (
    COMMON_MODE_THRESHOLD,
    BaselineFacts,
    analyse_run,
    baseline_entries,
    evidence_context,
    judge_test,
)
from pytest_roofline.gate.steps import HistorySettings
from pytest_roofline.gate.thresholds import recorded_threshold_hits
from pytest_roofline.gate.trend import CurrentRun, label_trends, with_trends, without_trends
from pytest_roofline.hardware.calibration import host_target
from pytest_roofline.hardware.machine import machine_fingerprint
from pytest_roofline.hardware.presets import nvml_gpu_name, resolve_target
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.measure.blas import (
    BLAS_THREADS_TAG,
    AppliedBlasThreads,
    apply_blas_threads,
    check_blas_oversubscription,
)
from pytest_roofline.measure.canary import Canary, CanarySummary, default_kernels
from pytest_roofline.measure.counters import CounterSession, NvmlBackend, default_backends
from pytest_roofline.measure.host import HostProbe
from pytest_roofline.measure.hostwatch import HostWatch
from pytest_roofline.measure.lock import MeasurementLock
from pytest_roofline.measure.measurement import decode_samples, encode_samples
from pytest_roofline.measure.sampling import Clock, Sampler, SamplingPolicy, StopRule
from pytest_roofline.measure.soak import CpuFreqReader, SoakMeasurement, SoakMonitor, run_soak
from pytest_roofline.model.document import RunDocument, TestRecord
from pytest_roofline.model.results import TestResult
from pytest_roofline.model.stored import check_stored_run
from pytest_roofline.plugin.confirm import ConfirmPlan, confirm_tests, plan_confirmation
from pytest_roofline.plugin.fresh_replay import FreshReplayer
from pytest_roofline.plugin.fresh_replay import window_s as replay_window_s
from pytest_roofline.plugin.probe import RooflineProbe, SoakRunner
from pytest_roofline.report.format import terminal_safe
from pytest_roofline.report.json import render_json
from pytest_roofline.report.markdown import render_markdown
from pytest_roofline.report.terminal import memo_text, render_terminal
from pytest_roofline.revision import collect_tags
from pytest_roofline.roofline import work_change
from pytest_roofline.store import Baseline, RunRecord, Store, StoredResult
from pytest_roofline.vocabulary import fails_run

__all__ = [
    "PROBE_KEY",
    "REPORT_ATTRIBUTE",
    "SESSION_KEY",
    "SETTINGS_KEY",
    "WINDOW_KEY",
    "RooflineSession",
    "SamplingWindow",
]

SETTINGS_KEY = pytest.StashKey[TestSettings]()
PROBE_KEY = pytest.StashKey[RooflineProbe]()
# The call-phase TestReport attribute that carries a measurement to the controller; pytest (and
# so xdist) serialises extra report attributes, so one transport serves both.
REPORT_ATTRIBUTE = "roofline"
_WORKLOAD = "workload"
# Where an xdist worker hands its canary summary to the controller (``config.workeroutput``),
# and where the controller tells it whether first looks are confirmed (``workerinput``).
CANARY_OUTPUT_KEY = "roofline_canary"
CONFIRM_INPUT_KEY = "roofline_confirm"
# The median of fewer earlier tests is too close to any one of them to stand for "the run".
MIN_TESTS_FOR_RUNNING_COMMON_MODE = 3


# -- paired-mode windows (pytest_roofline.plugin.ab_worker) ------------------------------------
@dataclass(frozen=True, slots=True)
class SamplingWindow:
    """One short measurement window of a persistent paired-mode worker.

    The worker puts it in the item's stash before each run of the test. It replaces the test's
    budget and warm-up; the early-stop rule and replays are off (both sides' windows must last
    the same time, and the controller compares, not the worker), and so is the per-test record
    (no baseline in a worker; it would cost every window an analysis).
    """

    budget_s: float
    warmup_s: float
    # The longest warm-up (``None``: the sampling policy's), so a window can warm up for
    # exactly ``warmup_s`` rather than until the calls stop getting faster.
    warmup_max_s: float | None = None


WINDOW_KEY = pytest.StashKey[SamplingWindow]()


def _drifts_beyond_margins(record: TestRecord) -> bool:
    """Whether the first look's latency drifts within the run more than its margins absorb (the
    policy escalates on that unless paired rounds settle it)."""
    drift = record.drift
    if drift is None or not drift.drifting or not record.change:
        return False
    return not drift_inside_margins(
        drift.window_change,
        [DriftBound(c.outcome, c.verdict, c.ci_high, c.delta) for c in record.change.values()],
    )


def _past_threshold(record: TestRecord, thresholds: Mapping[str, float]) -> dict[str, float]:
    """The quantiles of a first look that are a real change past the user's explicit threshold
    (``--roofline-fail``), with that threshold: paired rounds attribute them to the code."""
    hits = recorded_threshold_hits(record.change or {}, thresholds)
    return {name: thresholds[name] for name in hits}


def _regression_check(record: TestRecord, thresholds: Mapping[str, float]) -> bool:
    """Whether paired rounds check a possible rollback of ``record`` (a first-look regression,
    or a change past an explicit threshold) rather than only settle an undecided first look."""
    return is_regression_check(record.change or {}) or bool(_past_threshold(record, thresholds))


def _asked_quantiles(
    record: TestRecord,
    entry: BaselineEntry | None,
    gate: GateSettings,
    thresholds: Mapping[str, float],
) -> tuple[str, ...]:
    """The gated quantiles paired rounds are asked to settle (DIFFERENT or UNKNOWN first looks,
    SAME ones shifted beyond ``min_effect`` inside the label's margin or past an explicit
    threshold, and every one of a test whose latency drifted within the run or whose baseline
    the host slowed x3 or more)."""
    return needs_confirmation(
        record.change or {},
        gate.min_effect,
        drifting=_drifts_beyond_margins(record),
        baseline_disturbed=entry is not None and entry.host_disturbed is not None,
        past_threshold=_past_threshold(record, thresholds),
    )


def _first_look_question(record: TestRecord, asked: tuple[str, ...]) -> str:
    """What paired rounds are asked about a first look that found no regression (and raised no
    other question: a disturbed baseline's is the record's symptom)."""
    change = record.change or {}
    if _drifts_beyond_margins(record):
        return "latency drifted within the run"
    if any(change[name].outcome == "unknown" for name in asked if name in change):
        return "first look UNKNOWN"
    return "first look shifted beyond min_effect inside the label's run-to-run margin"


def _render_html(document: RunDocument) -> str:
    # Jinja2 and the report's templates cost about 0.1 s to import: only for --roofline-report.
    from pytest_roofline.report.html import render_html

    return render_html(document)


def _text(path: Path | None) -> str | None:
    return str(path) if path is not None else None


def _marker_settings(node: pytest.Item | pytest.Function) -> MarkerSettings | None:
    mark = node.get_closest_marker("roofline")
    if mark is None:
        return None
    return bind_marker(node.nodeid, mark.args, mark.kwargs)


class RooflineSession:
    """pytest-roofline's per-session state and hooks (registered as the ``roofline-session`` plugin)."""

    def __init__(self, config: pytest.Config, settings: RooflineConfig) -> None:
        self.config = config
        self.settings = settings
        self.is_controller = not hasattr(config, "workerinput")
        self.store: Store | None = None
        self.baseline: Baseline | None = None
        self.tags: dict[str, str] = {}
        self.results: dict[str, TestResult] = {}
        self.records: dict[str, TestRecord] = {}
        self.machine = machine_fingerprint()
        self.context = EvidenceContext()
        self._context_made = False
        self._entries: dict[str, BaselineEntry] = {}
        # p50 log ratios of the tests compared so far in this process: the running common mode.
        self._p50_log_ratios: list[float] = []
        # Workers serialise their measurements through a lock file beside the store.
        self._lock = (
            MeasurementLock(settings.store_path.parent / "measure.lock")
            if not self.is_controller
            else None
        )
        self.document: RunDocument | None = None
        # An ab worker (plugin.ab_worker) serves windows to a controller that analyses them; this
        # session's own end-of-run analysis would be thrown away, after the windows, in every
        # worker (about 0.1-0.3 s of CPU each while ab waits for them to end).
        self.serves_windows = False
        self.started = time.time()
        self.finished = self.started
        self._target: HardwareTarget | None = None
        self._target_resolved = False
        self._counters: CounterSession | None = None
        self._soak_gpu: NvmlBackend | None = None
        self._collection_errors: list[str] = []
        self._invalid_definitions: set[str] = set()
        self._files: list[str] = []
        self._not_written: list[str] = []
        self._watch: HostWatch | None = None
        self._watch_made = False
        self._blas: AppliedBlasThreads | None = None
        self.blas_warning: str | None = None
        # Every measuring process's canary summary (xdist workers send theirs at the end).
        self.canary_summaries: list[CanarySummary] = []
        self.confirm_plan = ConfirmPlan(commit=None, reason=None)
        # First looks awaiting paired confirmation: node id -> (replays, common mode applied).
        self._pending: dict[str, tuple[tuple[np.ndarray, ...], float]] = {}
        # Replays in a fresh process (plugin.fresh_replay), started at the first one asked for.
        self._replayer: FreshReplayer | None = None
        self._measured_ids: list[str] = []

    # -- set-up --------------------------------------------------------------------------
    def start(self) -> None:
        """Open the store and load the baseline (controller, ``--roofline`` only).

        :raises pytest.UsageError: the store or the baseline label cannot be used.
        """
        settings = self.settings
        if not settings.enabled:
            return
        # Workers read the baseline too: each test is compared, and replayed, as it finishes.
        if self.is_controller or settings.baseline_label is not None:
            try:
                self.store = Store.open(settings.store_path, create=self.is_controller)
                if settings.baseline_label is not None:
                    self.baseline = self.store.load_baseline(
                        settings.baseline_label, history=settings.gate.history
                    )
                    # A damaged baseline is refused here, naming the run and the row, not
                    # met later inside the statistics (an INTERNALERROR).
                    check_stored_run(self.baseline.latest, store=self.store.path)
                    for skipped in self.baseline.skipped:
                        self._warn(f"left out of the baseline's history: {skipped}")
            except StoreError as exc:
                raise pytest.UsageError(f"--roofline-store: {exc}") from None
        self._entries = baseline_entries(self.baseline)
        self.tags = collect_tags(settings.rootdir, extra=settings.tags)
        self._limit_blas_threads()
        target = self.target
        if target is not None:
            self.tags.setdefault("target", target.name)
        self.confirm_plan = self._plan_confirmation()

    def _plan_confirmation(self) -> ConfirmPlan:
        """The controller decides (git is asked once); xdist workers are told."""
        workerinput: Mapping[str, Any] | None = getattr(self.config, "workerinput", None)
        if workerinput is not None:
            return ConfirmPlan.from_dict(workerinput.get(CONFIRM_INPUT_KEY) or {})
        return plan_confirmation(
            self.settings,
            baseline_tags=self.baseline.latest.record.tags if self.baseline is not None else None,
            tags=self.tags,
        )

    def _limit_blas_threads(self) -> None:
        """Apply ``--roofline-blas-threads`` in this process, or say when BLAS is oversubscribed.

        Each measuring process applies the limit itself (threadpoolctl acts on the process it
        runs in); the limit is a revision tag, so runs with different limits are told apart.
        """
        threads = self.settings.blas_threads
        if threads is not None:
            try:
                self._blas = apply_blas_threads(threads)
            except RooflineError as exc:
                raise pytest.UsageError(str(exc)) from None
            self.tags[BLAS_THREADS_TAG] = str(threads)
            return
        if self.is_controller:
            # Shown in the summary and recorded with the run, not raised as a warning: it
            # depends on the load of the moment, and under ``-W error`` (or a filterwarnings
            # error entry) a warning at configure time stops pytest with an internal error.
            self.blas_warning = check_blas_oversubscription()

    def close(self) -> None:
        self._close_replayer()
        if self._blas is not None:
            self._blas.restore()
        if self._counters is not None:
            self._counters.close()
        if self._soak_gpu is not None:
            self._soak_gpu.close()
        if self.store is not None:
            self.store.close()

    @property
    def target(self) -> HardwareTarget | None:
        """The hardware target in force, resolved once (a plugin hook may supply it)."""
        if self._target_resolved:
            return self._target
        self._target_resolved = True
        workerinput: Mapping[str, Any] | None = getattr(self.config, "workerinput", None)
        if workerinput is not None and workerinput.get("roofline_target"):
            self._target = HardwareTarget.from_dict(workerinput["roofline_target"])
            return self._target
        name = self.settings.target
        provided: HardwareTarget | None = self.config.hook.pytest_roofline_hardware_target(
            config=self.config, name=name
        )
        if provided is not None:
            self._target = provided
            return provided

        def warn(message: str) -> None:
            warnings.warn(RooflineWarning(message), stacklevel=2)

        try:
            self._target = resolve_target(
                name,
                config_targets=self.settings.targets,
                host=lambda: host_target(self._calibration_cache(), warn=warn),
                gpu_name=nvml_gpu_name,
            )
        except RooflineError as exc:
            raise pytest.UsageError(f"--roofline-target: {exc}") from None
        return self._target

    def _calibration_cache(self) -> Store | None:
        """Where host calibrations are cached: the result store.

        Without ``--roofline`` the store is not opened for results, but the ``hardware`` fixture
        still needs the host target: an existing store lends its cached calibration, so a
        functional run does not spend seconds measuring the host again.
        """
        if self.store is not None or self.settings.enabled:
            return self.store
        if not self.settings.store_path.is_file():
            return None
        try:
            self.store = Store.open(self.settings.store_path, create=False)
        except StoreError:
            return None  # a functional run is no place to complain about the store
        return self.store

    def _counter_session(self) -> CounterSession | None:
        if not self.settings.counters:
            return None
        if self._counters is None:
            extra = [
                b
                for backends in self.config.hook.pytest_roofline_counter_backends(
                    config=self.config
                )
                for b in backends
            ]
            # Plugin backends go first so the perf backend stays innermost around the samples.
            self._counters = CounterSession([*extra, *default_backends()])
            self._counters.probe()
        return self._counters

    def _host_watch(self) -> HostWatch | None:
        """This process's host watch (canary and host counters), made on first use.

        Off with ``--roofline-no-canary``, and when a plugin supplies the clock without a
        canary (see :func:`~pytest_roofline.plugin.hookspecs.pytest_roofline_canary`).
        """
        if self._watch_made:
            return self._watch
        self._watch_made = True
        if not self.settings.canary:
            return None
        hook = self.config.hook
        canary: Canary | None = hook.pytest_roofline_canary(config=self.config)
        if canary is None:
            if hook.pytest_roofline_clock(config=self.config) is not None:
                return None
            # Built here, in the measuring process, after any BLAS thread limit: the GEMM
            # canary runs with the suite's threads.
            canary = Canary(default_kernels(blas_threads=self.settings.blas_threads))
            probe: HostProbe | None = HostProbe()
        else:
            probe = None  # an injected canary's clock is not the host's
        baseline = BaselineFacts.of(self.baseline) if self.baseline is not None else None
        self._watch = HostWatch(
            canary, probe, baseline=canary_level(baseline.canary if baseline else None)
        )
        return self._watch

    def _soak_runner(self, duration_s: float) -> SoakRunner:
        """Soaks a measured callable for ``duration_s`` on the session's clock, reading the host
        (CPU clock, CPU share and steal, the canary, NVML unless counters are off) per window."""
        clock = self.config.hook.pytest_roofline_clock(config=self.config) or time.perf_counter_ns
        watch = self._host_watch()
        canary = watch.canary if watch is not None else None
        if self.settings.counters and self._soak_gpu is None:
            self._soak_gpu = NvmlBackend()

        def run(
            fn: Callable[..., Any],
            args: tuple[Any, ...],
            kwargs: dict[str, Any],
            sync: Callable[[], object] | None,
            batch_size: int,
        ) -> tuple[Any, SoakMeasurement]:
            monitor = SoakMonitor(
                probe=HostProbe(),
                cpufreq=CpuFreqReader(),
                gpu=self._soak_gpu,
                canary=canary,
                clock=clock,
            )
            return run_soak(
                fn,
                args,
                kwargs,
                duration_s=duration_s,
                batch_size=batch_size,
                clock=clock,
                sync=sync,
                monitor=monitor,
            )

        return run

    def window_canary(self) -> Canary | None:
        """The started host canary of a paired worker's windows, or ``None`` when it is off.

        The canary of :meth:`_host_watch` (off under ``--roofline-no-canary`` and under a fake
        clock without a canary hook); :mod:`~pytest_roofline.plugin.ab_worker` reads it around
        each window instead of the watch's own re-measuring protocol.
        """
        watch = self._host_watch()
        if watch is None or watch.canary is None:
            return None
        watch.start()
        return watch.canary

    def _stop_rule(self, entry: BaselineEntry | None) -> StopRule:
        """When sampling may stop: with a baseline, once every gated quantile is decided
        (group-sequential looks, :class:`gate.looks.TwoRunStop`); without one, once the p95
        and p99 intervals are tight."""
        if entry is not None and entry.samples_s.size:
            return TwoRunStop(
                entry.samples_s,
                margins(entry, self.context),
                self.context.plan,
                alpha=self.context.alpha,
                common_mode=self.running_common_mode,
                budget_share=1.0 / self.settings.gate.unknown_extension,
            )

        def rule(samples: np.ndarray, progress: float) -> str | None:
            state = stats.sampling_decisive(samples)
            return state.reason if state.decisive else None

        return rule

    def _replays_for(self, samples: np.ndarray, *, entry: BaselineEntry, nodeid: str) -> int:
        """How many replays a first measurement needs: ``gate.replay`` if it looks like a regression."""
        regressed = should_replay(
            samples, entry, self.context, nodeid, common_mode=self.running_common_mode
        )
        return self.context.replay if regressed else 0

    @property
    def running_common_mode(self) -> float:
        """The run-wide shift of the tests compared so far (1.0 until there are enough of them)."""
        if len(self._p50_log_ratios) < MIN_TESTS_FOR_RUNNING_COMMON_MODE:
            return 1.0
        factor = stats.common_mode(self._p50_log_ratios).factor
        # Beyond the run-level bound the shift is not divided out: the run escalates for it
        # anyway, and dividing out a 5x slowdown of the whole suite shipped later tests one by
        # one ("+29% ruled out") in the validation runs (docs/gate.md). Each test is then judged
        # on its own evidence (canary, paired confirmation).
        return factor if abs(factor - 1.0) <= COMMON_MODE_THRESHOLD else 1.0

    def _record_shift(self, result: TestResult, entry: BaselineEntry | None) -> None:
        if entry is None or entry.samples_s.size == 0 or result.measurement.samples_s.size == 0:
            return
        base = float(np.median(entry.samples_s))
        cand = float(np.median(result.measurement.samples_s))
        if base > 0 and cand > 0:
            self._p50_log_ratios.append(math.log(cand / base))

    def make_probe(
        self,
        item: pytest.Item,
        *,
        sampler_for: Callable[[SamplingPolicy, Clock, StopRule | None], Sampler] | None = None,
    ) -> RooflineProbe:
        """The ``roofline`` fixture's object for ``item``.

        :param sampler_for: builds the sampler from the test's policy, clock and stop rule (the
            ``benchmark`` fixture adapts the policy to its marker, or runs pedantic rounds).
        """
        test = item.stash.get(SETTINGS_KEY, None) or resolve_test(self.settings, None, item.nodeid)
        sampler = None
        replays_for = None
        window = item.stash.get(WINDOW_KEY, None)
        if self.settings.enabled:
            entry = self._entries.get(item.nodeid)
            clock = self.config.hook.pytest_roofline_clock(config=self.config)
            policy = SamplingPolicy(
                budget_s=test.budget_s if window is None else window.budget_s,
                min_samples=self.settings.min_samples,
                max_samples=self.settings.max_samples,
                warmup_s=self.settings.warmup_s if window is None else window.warmup_s,
                max_extension=self.settings.gate.unknown_extension if entry is not None else 1.0,
            )
            if window is not None and window.warmup_max_s is not None:
                policy = replace(policy, warmup_max_s=window.warmup_max_s)
            stop_rule = self._stop_rule(entry) if window is None else None
            make = sampler_for or (lambda p, c, r: Sampler(p, clock=c, stop_rule=r))
            sampler = make(policy, clock or time.perf_counter_ns, stop_rule)
            # A same-process replay cannot tell a slower process from slower code, and where
            # paired rounds will decide the first look (confirm_plan.available) it would decide
            # nothing: it is skipped (if the rounds then cannot run, the regression escalates
            # as "not yet confirmed by a replay").
            if (
                window is None
                and entry is not None
                and self.context.replay > 0
                and not self.confirm_plan.available
            ):
                replays_for = partial(self._replays_for, entry=entry, nodeid=item.nodeid)
        probe = RooflineProbe(
            nodeid=item.nodeid,
            precision=test.precision,
            sampler=sampler,
            counters=self._counter_session() if sampler is not None else None,
            target=lambda: self.target,
            replays_for=replays_for,
            lock=self._lock,
            watch=self._host_watch() if sampler is not None and window is None else None,
            # Not in a paired worker's windows: they must all last the same time.
            soak=self._soak_runner(test.soak_s)
            if sampler is not None and window is None and test.soak_s > 0
            else None,
        )
        item.stash[PROBE_KEY] = probe
        return probe

    # -- collection ----------------------------------------------------------------------
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if _WORKLOAD not in metafunc.fixturenames:
            return
        nodeid = metafunc.definition.nodeid
        try:
            test = resolve_test(self.settings, _marker_settings(metafunc.definition), nodeid)
            if not test.slices:
                raise RooflineError(
                    f"{nodeid}: uses the 'workload' fixture but names no slices; add "
                    "@pytest.mark.roofline(slices=GROUP) with GROUP under 'slices:' in roofline.yaml, "
                    'or an inline list: slices=[{"name": "small", "params": {"n": 256}}]'
                )
        except RooflineError as exc:
            # Raised here it would become a collection error (exit 2); it is reported as a usage
            # error (exit 4) from pytest_collection_modifyitems with every other marker problem.
            self._collection_errors.append(str(exc))
            self._invalid_definitions.add(nodeid)
            metafunc.parametrize(_WORKLOAD, [None], ids=["invalid"], indirect=True)
            return
        metafunc.parametrize(
            _WORKLOAD, list(test.slices), ids=[s.name for s in test.slices], indirect=True
        )

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        errors = list(self._collection_errors)
        measured = 0
        for item in items:
            fixturenames = getattr(item, "fixturenames", ())
            if "roofline" in fixturenames or "benchmark" in fixturenames:
                # What a replay in a fresh process may be asked about (plugin.fresh_replay).
                self._measured_ids.append(item.nodeid)
            if item.get_closest_marker("roofline") is None and "roofline" not in fixturenames:
                continue
            if item.nodeid.partition("[")[0] in self._invalid_definitions:
                continue  # already reported from pytest_generate_tests
            measured += "roofline" in fixturenames
            try:
                item.stash[SETTINGS_KEY] = resolve_test(
                    self.settings, _marker_settings(item), item.nodeid
                )
            except RooflineError as exc:
                if str(exc) not in errors:
                    errors.append(str(exc))
        if errors:
            raise pytest.UsageError("\n".join(errors))
        if self.settings.enabled:
            self._make_context(measured)

    def _make_context(self, measured: int) -> None:
        """The run-level facts every test is judged with (``measured``: the tests measured).

        Made at collection; an xdist controller, which does not collect, makes it from its
        workers' first report, so that it decides the tests it decides again at the end of the
        loop (paired rounds, a fresh replay) as its workers decided them first.
        """
        self.context = evidence_context(
            self.settings.gate,
            family_size=max(1, measured),
            baseline=BaselineFacts.of(self.baseline) if self.baseline is not None else None,
            tags=self.tags,
            layers=self.settings.layers,
            target=self.target,
            machine=self.machine,
            # A live session measures a regression again in a fresh process before deciding it
            # (a paired worker's windows are not judged here at all: they return before).
            fresh_replay=True,
        )
        self._context_made = True

    # -- per test ------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when != "call" or not report.passed:
            return report
        probe = item.stash.get(PROBE_KEY, None)
        measurement = probe.finish() if probe is not None else None
        if probe is None or measurement is None:
            return report
        test = item.stash.get(SETTINGS_KEY, None) or resolve_test(self.settings, None, item.nodeid)
        workload = getattr(item, "callspec", None)
        slice_ = workload.params.get(_WORKLOAD) if workload is not None else None
        result = TestResult(
            nodeid=item.nodeid,
            slice=slice_,
            owners=test.owners,
            rollback=test.rollback,
            sla=test.sla,
            precision=test.precision,
            measurement=measurement,
        )
        if item.stash.get(WINDOW_KEY, None) is not None:
            # A paired worker's window: the controller compares the windows; no record here.
            setattr(report, REPORT_ATTRIBUTE, {"result": result.to_dict(), "record": None})
            return report
        entry = self._entries.get(item.nodeid)
        common_mode = self.running_common_mode
        confirmation = self.confirm_plan.unavailable(item.nodeid) if entry is not None else None
        record = judge_test(
            result,
            entry,
            self.context,
            target=self.target,
            replays=probe.replays,
            common_mode=common_mode,
            confirmation=confirmation,
        )
        self._record_shift(result, entry)
        data: dict[str, Any] = {
            "result": result.to_dict(),
            "record": record.to_json(),
            # An xdist controller makes its context from them (_make_context).
            "family_size": self.context.family_size,
            "fail_thresholds": dict(self.context.fail_thresholds),
        }
        thresholds = self.context.fail_thresholds
        regression = _regression_check(record, thresholds)
        settles = regression or self.settings.gate.confirm_time_s != 0
        asked = _asked_quantiles(record, entry, self.settings.gate, thresholds)
        # A test whose declared work changed since the baseline is not judged on timing
        # (gate.policy): paired rounds would spend the confirmation time on nothing.
        same_work = entry is None or not work_change(entry.declared, measurement.declared)
        if self.confirm_plan.available and asked and settles and same_work:
            # Decided again at the end of the loop, with paired rounds as evidence: not failed
            # now, since the first look alone establishes neither the regression nor, for an
            # UNKNOWN quantile, its absence.
            data["pending"] = {
                "replays": [encode_samples(r) for r in probe.replays],
                "common_mode": common_mode,
            }
            report.sections.append(
                (
                    "roofline",
                    f"{record.symptom or _first_look_question(record, asked)}: awaiting paired rounds "
                    f"against {self.confirm_plan.commit} at the end of the session",
                )
            )
            setattr(report, REPORT_ATTRIBUTE, data)
            return report
        # One process's evidence cannot tell a slower process from slower code: a regression
        # that would roll back on it is measured again in a fresh process first.
        record = self._replayed_in_fresh_process(
            record, result, entry, replays=probe.replays, common_mode=common_mode,
            confirmation=confirmation,
        )  # fmt: skip
        data["record"] = record.to_json()
        setattr(report, REPORT_ATTRIBUTE, data)
        if record.decision is not None and fails_run(record.decision, self.settings.gate_on):
            report.outcome = "failed"
            report.longrepr = terminal_safe(
                f"pytest-roofline {record.decision.upper()}: {record.symptom}"
            )
            report.sections.append(("roofline", memo_text(record)))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if not self.is_controller or report.when != "call" or not isinstance(data, dict):
            return
        if data["record"] is None:
            return  # a paired worker's window (SamplingWindow): not part of this run's document
        family = data.get("family_size")
        if not self._context_made and self.settings.enabled and isinstance(family, int):
            self._make_context(family)
            thresholds = data.get("fail_thresholds") or {}
            self.context = replace(
                self.context,
                fail_thresholds={str(k): float(v) for k, v in dict(thresholds).items()},
            )
        self.results[report.nodeid] = TestResult.from_dict(data["result"])
        self.records[report.nodeid] = TestRecord.from_json(data["record"])
        pending = data.get("pending")
        if isinstance(pending, dict):
            self._pending[report.nodeid] = (
                tuple(decode_samples(r) for r in pending["replays"]),
                float(pending["common_mode"]),
            )

    # -- end of run ----------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        outcome = yield
        self._close_replayer()  # tests are replayed in a fresh process as they are reported
        if self.settings.enabled and self.is_controller and not self.serves_windows:
            own = self._finish_canary()
            if own is not None:
                self.canary_summaries.insert(0, own)
            if self._pending:
                session.testsfailed += self._confirm_pending()
            self.document = self._analyse()
            if fails_run(self.document.decision, self.settings.gate_on) and not session.testsfailed:
                # A run-level escalation (e.g. a large common-mode shift) fails no single test;
                # the gate fails the run the way pytest-cov does.
                session.testsfailed += 1
        return outcome

    def _confirm_pending(self) -> int:
        """Confirm the first looks that found a regression; return how many now fail the run."""
        plan = self.confirm_plan
        assert plan.commit is not None
        # First-look regressions first, while gate.confirm_time lasts; then UNKNOWN first looks
        # are settled while the session's settling time lasts.
        thresholds = self.context.fail_thresholds
        required = [n for n in self._pending if _regression_check(self.records[n], thresholds)]
        to_settle = settling_order(
            {n: self.records[n].decision for n in self._pending if n not in required}
        )
        nodeids = required + to_settle
        session_s = time.time() - self.started
        gate = self.settings.gate

        def pair_time_s(tests: int) -> float:
            return gate.confirm_time_for_regressions_s(session_s, tests)

        # The first pair of workers has a clock for the regressions and, after them, one for
        # settling (plugin.confirm.RoundsBudget), each sized to the tests it is asked about.
        settle_s = gate.settle_time_s(session_s, len(to_settle))
        confirm_s = pair_time_s(len(required))
        log = self._log_line
        settling = len(nodeids) - len(required)
        log(
            f"confirming {len(required)} first-look regression(s) with paired rounds against "
            f"a worktree of {plan.commit[:12]}"
            + (f" for up to {confirm_s:.0f} s" if required else "")
            + (
                f", and settling {settling} undecided first look(s) (UNKNOWN, shifted, drifting, against a "
                f"disturbed baseline or "
                f"autocorrelated) for up to "
                f"{settle_s:.0f} s"
                if settling
                else ""
            )
        )
        found = confirm_tests(
            {
                n: _asked_quantiles(self.records[n], self._entries.get(n), gate, thresholds)
                for n in nodeids
            },
            required=required,
            settle_s=settle_s,
            confirm_s=confirm_s,
            replica_s=pair_time_s,
            first_look={
                n: first_look_margins(
                    self.records[n].change or {},
                    gate.min_effect,
                    _past_threshold(self.records[n], thresholds),
                )
                for n in nodeids
            },
            call_s={n: self.results[n].summary().p50_s or 0.0 for n in nodeids},
            commit=plan.commit,
            rootdir=self.settings.rootdir,
            invocation_args=tuple(self.config.invocation_params.args),
            gate=gate,
            store_path=self.settings.store_path,
            log=log,
        )
        failing = 0
        for nodeid in nodeids:
            replays, common_mode = self._pending[nodeid]
            record = judge_test(
                self.results[nodeid],
                self._entries.get(nodeid),
                self.context,
                target=self.target,
                replays=replays,
                common_mode=common_mode,
                confirmation=found[nodeid],
            )
            self.records[nodeid] = record
            fails = record.decision is not None and fails_run(
                record.decision, self.settings.gate_on
            )
            log(
                f"{nodeid}: {found[nodeid].state}; {(record.decision or 'ship').upper()}"
                + (" (fails the run)" if fails else "")
            )
            failing += fails
        return failing

    def _replayed_in_fresh_process(
        self,
        record: TestRecord,
        result: TestResult,
        entry: BaselineEntry | None,
        *,
        replays: Sequence[np.ndarray],
        common_mode: float,
        confirmation: Confirmation | None,
    ) -> TestRecord:
        """``record``, or where it awaits a replay in a fresh process
        (:func:`~pytest_roofline.gate.policy.awaits_fresh_replay`), the test decided again once
        a fresh process measured it (:class:`~pytest_roofline.plugin.fresh_replay.FreshReplayer`)."""
        if not awaits_fresh_replay(record.missing_evidence):
            return record
        if self._replayer is None:
            self._replayer = FreshReplayer(
                self._measured_ids or [result.nodeid],
                rootdir=self.settings.rootdir,
                invocation_args=tuple(self.config.invocation_params.args),
                store_path=self.settings.store_path,
                log=self._log_line,
            )
        self._log_line(
            f"{result.nodeid}: measuring it again in a fresh process before deciding "
            "(one process cannot tell a slower process from slower code)"
        )
        # Under xdist no other worker measures meanwhile.
        with self._lock if self._lock is not None else nullcontext():
            fresh = self._replayer.replay(
                result.nodeid, replay_window_s(result.measurement.samples.elapsed_s)
            )
        return judge_test(
            result,
            entry,
            self.context,
            target=self.target,
            replays=replays,
            common_mode=common_mode,
            confirmation=confirmation,
            fresh_replay=fresh,
        )

    def _close_replayer(self) -> None:
        if self._replayer is not None:
            self._replayer.close()
            self._replayer = None

    def _log_line(self, line: str) -> None:
        """A ``roofline:`` line in the terminal (nothing without a terminal reporter)."""
        writer = self.config.pluginmanager.get_plugin("terminalreporter")
        if writer is not None:
            writer.write_line(f"roofline: {line}")

    def _finish_canary(self) -> CanarySummary | None:
        """This process's canary summary, after the end-of-session readings."""
        return self._watch.finish() if self._watch is not None else None

    def add_canary(self, data: Mapping[str, Any]) -> None:
        """Take an xdist worker's canary summary (``config.workeroutput``)."""
        try:
            self.canary_summaries.append(CanarySummary.from_dict(data))
        except ValueError as exc:
            self._warn(f"a worker's host canary summary was unreadable: {exc}")

    def _analyse(self) -> RunDocument:
        settings = self.settings
        self.finished = time.time()
        baseline = BaselineFacts.of(self.baseline) if self.baseline is not None else None
        document = analyse_run(
            self.results,
            self.records,
            baseline=baseline,
            gate=settings.gate,
            gate_on=settings.gate_on,
            label=settings.save_label,
            tags=self.tags,
            layers=settings.layers,
            target=self.target,
            machine=self.machine,
            started=self.started,
            finished=self.finished,
            canary=canary_record(
                self.canary_summaries,
                baseline=baseline.canary if baseline is not None else None,
                blas=self.blas_warning,
            ),
        )
        return self._with_trend(document)

    def _with_trend(self, document: RunDocument) -> RunDocument:
        """The document with the label's trend per test (gate.trend): the baseline label's, or
        the saved label's when it already has runs. One series query for the whole run."""
        settings = self.settings
        label = settings.baseline_label or settings.save_label
        if label is None or self.store is None or not self.results:
            return document
        try:
            if not self.store.run_ids(label):  # a label's first run has no trend yet
                return document
            series = self.store.series(label, sorted(self.results))
        except StoreError as exc:
            self._warn(f"no trend of label {label!r} in the report: {exc}")
            return document
        current = CurrentRun(
            commit=self.tags.get("git_commit"),
            started=self.started,
            tags=self.tags,
            samples_s={n: r.measurement.samples_s for n, r in self.results.items()},
            bounds={t.nodeid: t.roofline.bound if t.roofline else None for t in document.tests},
        )
        found = label_trends(
            series,
            current,
            load=self.store.samples_of,
            layers=settings.layers,
            settings=HistorySettings(margin=settings.gate.min_effect.get("p50", 0.05)),
        )
        return document if found is None else with_trends(document, *found)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput: dict[str, Any] | None = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            # Before xdist's own sessionfinish sends the worker's output to the controller.
            summary = self._finish_canary()
            if summary is not None:
                workeroutput[CANARY_OUTPUT_KEY] = summary.to_dict()
        document = self.document
        if document is None:
            return
        settings = self.settings
        if settings.save_label is not None:
            self._save(document)
        writers: list[tuple[str, Path | None, Callable[[], str]]] = [
            ("JSON", settings.json_path, lambda: render_json(document)),
            ("HTML report", settings.report_path, lambda: _render_html(document)),
            (
                "Markdown summary",
                settings.markdown_path,
                lambda: render_markdown(
                    document,
                    report_path=_text(settings.report_path),
                    markdown_path=_text(settings.markdown_path),
                ),
            ),
        ]
        for kind, path, render in writers:
            if path is not None:
                self._write(kind, path, render)
        self.config.hook.pytest_roofline_run_finished(config=self.config, document=document)
        # A requested output that was not written fails the run with its own status, unless a
        # rollback or an error already fails it (exits.py); the summary lists what was not written.
        if self._not_written and session.exitstatus == exits.OK:
            session.exitstatus = exits.WRITE_FAILED

    def _save(self, document: RunDocument) -> None:
        if self.store is None:
            return
        label = self.settings.save_label
        if not self.results:
            self._warn(f"--roofline-save={label!r}: no test was measured, so no run was saved")
            return
        target = self.target
        record = RunRecord(
            label=label,
            started=self.started,
            finished=self.finished,
            tags=self.tags,
            target=target.to_dict() if target is not None else {},
            machine=self.machine,
            # The document lets `pytest-roofline report RUN` re-render exactly what this run showed.
            summary={
                "tests": len(document.tests),
                "decision": document.decision,
                # Without the trends: the store's series holds those numbers (gate.trend).
                "document": without_trends(document).to_json(),
            },
        )
        stored = [
            StoredResult(
                nodeid, result.to_dict(include_samples=False), result.measurement.samples_s
            )
            for nodeid, result in self.results.items()
        ]
        try:
            run_id = self.store.save_run(record, stored)
        except StoreError as exc:
            self._fail(f"could not save the run as {label!r}: {exc}")
            return
        self._files.append(f"roofline: saved run {run_id} as {label!r} in {self.store.path}")

    def _write(self, kind: str, path: Path, render: Callable[[], str]) -> None:
        try:
            write_atomic(path, render())
        except OSError as exc:
            self._fail(f"could not write the {kind} to {path}: {exc.strerror or exc}")
            return
        self._files.append(f"roofline: wrote {kind} to {path}")

    def _warn(self, message: str) -> None:
        # Shown in the terminal summary; warnings capture has ended by session finish.
        self._files.append(f"roofline: WARNING {message}")

    def _fail(self, message: str) -> None:
        """A requested output was not written: the summary says so and the run exits 7."""
        self._not_written.append(message)
        self._files.append(f"roofline: ERROR {message}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.document is None:
            return
        if self.blas_warning is not None:
            self._files.insert(0, f"roofline: note: {self.blas_warning}")
        # Escalations whose paired rounds could not run, and those the canary's drops left open:
        # each gets one line that names the common cause.
        confirmations = [
            t.confirmation
            for t in self.document.tests
            if t.decision == "escalate" and t.confirmation is not None
        ]
        notes = (
            self.confirm_plan.unsettled_note(sum(c.state == "unavailable" for c in confirmations)),
            disturbed_note(
                sum(
                    c.state == "inconclusive" and busy_host(c.pairs, c.pairs_dropped)
                    for c in confirmations
                )
            ),
        )
        for note in notes:
            if note is not None:
                self._files.insert(0, f"roofline: note: {note}")
        if not self.settings.summary:
            for line in self._files:
                terminalreporter.write_line(terminal_safe(line))
            return
        render_terminal(
            self.document,
            write_sep=terminalreporter.write_sep,
            write_line=terminalreporter.write_line,
            verbosity=self.config.get_verbosity(),
            files=self._files,
        )


SESSION_KEY = pytest.StashKey[RooflineSession]()
"""Where the session object lives in ``config.stash``."""
