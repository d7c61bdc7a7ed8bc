"""The session object registered as a plugin: collects measurements, analyses and saves the run.

Data flows one way (DESIGN 3): the ``roofline`` fixture measures on whichever process runs the
test; the measurement rides on the call-phase ``TestReport`` (identical with and without xdist);
the controller collects reports, builds the run's view at the end of the test loop, saves it to
the store and writes the files in ``pytest_sessionfinish``, and renders the terminal summary.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.calibration import host_target, machine_fingerprint
from pytest_roofline.config import RooflineConfig, TestSettings, resolve_test
from pytest_roofline.errors import RooflineError, RooflineWarning, StoreError
from pytest_roofline.hardware import HardwareTarget, nvml_gpu_name, resolve_target
from pytest_roofline.markers import MarkerSettings, bind_marker
from pytest_roofline.measure.counters import CounterSession, default_backends
from pytest_roofline.measure.sampling import Sampler, SamplingPolicy
from pytest_roofline.probe import RooflineProbe
from pytest_roofline.report.json_report import write_json
from pytest_roofline.report.model import RunView, TestView
from pytest_roofline.report.terminal import render_terminal
from pytest_roofline.results import TestResult, summarize
from pytest_roofline.store import Baseline, RunRecord, Store, StoredResult
from pytest_roofline.tags import collect_tags, tag_diff

__all__ = ["PROBE_KEY", "REPORT_ATTRIBUTE", "SETTINGS_KEY", "RooflineSession"]

SETTINGS_KEY = pytest.StashKey[TestSettings]()
PROBE_KEY = pytest.StashKey[RooflineProbe]()
# The call-phase TestReport attribute that carries a measurement to the controller; pytest (and
# so xdist) serialises extra report attributes, so one transport serves both.
REPORT_ATTRIBUTE = "roofline"
_WORKLOAD = "workload"


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
        self.view: RunView | None = None
        self.started = time.time()
        self._target: HardwareTarget | None = None
        self._target_resolved = False
        self._counters: CounterSession | None = None
        self._collection_errors: list[str] = []
        self._invalid_definitions: set[str] = set()
        self._files: list[str] = []

    # -- set-up --------------------------------------------------------------------------
    def start(self) -> None:
        """Open the store and load the baseline (controller, ``--roofline`` only).

        :raises pytest.UsageError: the store or the baseline label cannot be used.
        """
        settings = self.settings
        if not settings.enabled:
            return
        if self.is_controller:
            try:
                self.store = Store.open(settings.store_path)
                if settings.baseline_label is not None:
                    self.baseline = self.store.load_baseline(
                        settings.baseline_label, history=settings.gate.history
                    )
            except StoreError as exc:
                raise pytest.UsageError(f"--roofline-store: {exc}") from None
            self.tags = collect_tags(settings.rootdir, extra=settings.tags)
        target = self.target
        if target is not None:
            self.tags.setdefault("target", target.name)

    def close(self) -> None:
        if self._counters is not None:
            self._counters.close()
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
                host=lambda: host_target(self.store, warn=warn),
                gpu_name=nvml_gpu_name,
            )
        except RooflineError as exc:
            raise pytest.UsageError(f"--roofline-target: {exc}") from None
        return self._target

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

    def make_probe(self, item: pytest.Item) -> RooflineProbe:
        """The ``roofline`` fixture's object for ``item``."""
        test = item.stash.get(SETTINGS_KEY, None) or resolve_test(self.settings, None, item.nodeid)
        sampler = None
        if self.settings.enabled:
            clock = self.config.hook.pytest_roofline_clock(config=self.config)
            policy = SamplingPolicy(
                budget_s=test.budget_s,
                min_samples=self.settings.min_samples,
                max_samples=self.settings.max_samples,
                warmup_s=self.settings.warmup_s,
            )
            sampler = Sampler(policy, clock=clock) if clock is not None else Sampler(policy)
        probe = RooflineProbe(
            nodeid=item.nodeid,
            precision=test.precision,
            sampler=sampler,
            counters=self._counter_session() if sampler is not None else None,
            target=lambda: self.target,
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
        for item in items:
            fixturenames = getattr(item, "fixturenames", ())
            if item.get_closest_marker("roofline") is None and "roofline" not in fixturenames:
                continue
            if item.nodeid.partition("[")[0] in self._invalid_definitions:
                continue  # already reported from pytest_generate_tests
            try:
                item.stash[SETTINGS_KEY] = resolve_test(
                    self.settings, _marker_settings(item), item.nodeid
                )
            except RooflineError as exc:
                if str(exc) not in errors:
                    errors.append(str(exc))
        if errors:
            raise pytest.UsageError("\n".join(errors))

    # -- per test ------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when == "call" and report.passed:
            probe = item.stash.get(PROBE_KEY, None)
            measurement = probe.finish() if probe is not None else None
            if measurement is not None:
                test = item.stash.get(SETTINGS_KEY, None) or resolve_test(
                    self.settings, None, item.nodeid
                )
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
                setattr(report, REPORT_ATTRIBUTE, result.to_dict())
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if not self.is_controller or report.when != "call" or not isinstance(data, dict):
            return
        self.results[report.nodeid] = TestResult.from_dict(data)

    # -- end of run ----------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        outcome = yield
        if self.settings.enabled and self.is_controller:
            self.view = self._build_view()
        return outcome

    def _build_view(self) -> RunView:
        baseline_run = self.baseline.latest if self.baseline is not None else None
        baseline_results = baseline_run.results if baseline_run is not None else {}
        target = self.target
        tests = []
        for nodeid in sorted(self.results):
            result = self.results[nodeid]
            measurement = result.measurement
            summary = summarize(measurement.samples_s)
            stored = baseline_results.get(nodeid)
            point = None
            if (
                target is not None
                and measurement.declared is not None
                and summary.p50_s is not None
            ):
                point = target.place(measurement.declared, summary.p50_s)
            tests.append(
                TestView(
                    nodeid=nodeid,
                    slice_name=result.slice.name if result.slice else None,
                    source=result.slice.source if result.slice else None,
                    owners=result.owners,
                    rollback_boundary=result.rollback,
                    summary=summary,
                    batch_size=measurement.samples.batch_size,
                    stop_reason=measurement.samples.stop_reason,
                    elapsed_s=measurement.samples.elapsed_s,
                    baseline=summarize(stored.samples_s) if stored is not None else None,
                    declared=measurement.declared.to_dict() if measurement.declared else None,
                    roofline=point,
                    counters=measurement.counters.to_dict() if measurement.counters else None,
                    sla=result.sla.to_dict(),
                    quality={q.name: q.to_dict() for q in measurement.quality},
                )
            )
        return RunView(
            label=self.settings.save_label,
            baseline_label=self.baseline.label if self.baseline else None,
            baseline_run_id=baseline_run.id if baseline_run else None,
            tags=self.tags,
            tag_diff=tag_diff(baseline_run.record.tags, self.tags) if baseline_run else {},
            target=target.to_dict() if target is not None else None,
            machine=machine_fingerprint(),
            started=self.started,
            finished=time.time(),
            tests=tests,
            missing_from_baseline=tuple(
                n for n in sorted(self.results) if baseline_run and n not in baseline_results
            ),
            missing_from_candidate=tuple(
                n for n in sorted(baseline_results) if n not in self.results
            ),
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        view = self.view
        if view is None:
            return
        settings = self.settings
        if settings.save_label is not None:
            self._save(view)
        if settings.json_path is not None:
            self._write("JSON", settings.json_path, lambda path: write_json(path, view))
        self.config.hook.pytest_roofline_run_finished(config=self.config, view=view)

    def _save(self, view: RunView) -> None:
        if self.store is None:
            return
        if not self.results:
            self._warn(f"--roofline-save={view.label}: no test was measured, so no run was saved")
            return
        record = RunRecord(
            label=view.label,
            started=view.started,
            finished=view.finished,
            tags=view.tags,
            target=view.target or {},
            machine=view.machine,
            summary={"tests": len(view.tests), "decision": view.decision},
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
            self._warn(f"saving the run failed: {exc}")
            return
        self._files.append(f"roofline: saved run {run_id} as {view.label!r} in {self.store.path}")

    def _write(self, kind: str, path: Path, writer: Any) -> None:
        try:
            writer(path)
        except OSError as exc:
            self._warn(f"could not write the {kind} report to {path}: {exc}")
            return
        self._files.append(f"roofline: wrote {kind} to {path}")

    def _warn(self, message: str) -> None:
        # Shown in the terminal summary; warnings capture has ended by session finish.
        self._files.append(f"roofline: WARNING {message}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.view is None:
            return
        if not self.settings.summary:
            for line in self._files:
                terminalreporter.write_line(line)
            return
        render_terminal(
            self.view,
            write_sep=terminalreporter.write_sep,
            write_line=terminalreporter.write_line,
            verbosity=self.config.get_verbosity(),
            files=self._files,
        )
