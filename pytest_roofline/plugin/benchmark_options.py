"""Options pytest-benchmark users already type, and which plugin owns the ``benchmark`` fixture.

Ownership (``--roofline-benchmark`` / ini ``roofline_benchmark``):

``auto`` (default)
    pytest-benchmark keeps ``benchmark`` when it is installed and active, so installing
    pytest-roofline changes nothing for its users; otherwise pytest-roofline provides it
    (``-p no:benchmark``, or pytest-benchmark not installed).
``roofline``
    pytest-roofline provides ``benchmark``; an installed pytest-benchmark is unloaded before any
    of its hooks run (its command-line options stay accepted, and the ones below are honoured).
``pytest-benchmark``
    pytest-roofline never provides ``benchmark``.

The terminal header says, once, which plugin owns ``benchmark``.

Options (their pytest-benchmark spellings are accepted too whenever pytest-roofline owns the
fixture): ``--roofline-only`` (``--benchmark-only``), ``--roofline-skip`` (``--benchmark-skip``),
``--roofline-disable`` (``--benchmark-disable``), ``--roofline-autosave``
(``--benchmark-autosave``; save every run under the label ``autosave``, with its git commit in
the run's tags, so a history builds up by itself) and ``--roofline-fail=p50:10%``
(``--benchmark-compare-fail=median:10%``; an explicit threshold decided by
:mod:`pytest_roofline.gate.thresholds` on top of the statistics).

With ``--roofline-benchmark=roofline`` and pytest-benchmark installed, its measurement options
(``--benchmark-min-rounds``, ``--benchmark-max-time``, ``--benchmark-warmup``..., often in a
project's ``addopts``) are read too, as session-wide ``@pytest.mark.benchmark`` defaults.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pytest

from pytest_roofline.config.benchmark_marker import (
    AUTOSAVE_LABEL,
    OWNER_CHOICES,
    PYTEST_BENCHMARK_MEASUREMENT_OPTIONS,
    BenchmarkSettings,
    Owner,
    benchmark_owner,
    bind_benchmark_marker,
    parse_fail_threshold,
    session_marker_kwargs,
)
from pytest_roofline.errors import ConfigError
from pytest_roofline.plugin.benchmark_fixture import FIXTURE_KEY, BenchmarkFixture
from pytest_roofline.plugin.session import REPORT_ATTRIBUTE, SESSION_KEY

__all__ = [
    "BenchmarkOptions",
    "BenchmarkOptionsPlugin",
    "adjust_cli",
    "fixture_for",
    "options_for",
]

# pytest-benchmark's plugin: its entry-point name (``-p no:benchmark``) and module.
_PB_NAME = "benchmark"
_PB_MODULE = "pytest_benchmark.plugin"


@dataclass(frozen=True, slots=True)
class BenchmarkOptions:
    """The resolved options of this run."""

    owner: Owner | None
    only: bool = False
    skip: bool = False
    disable: bool = False
    autosave: bool = False
    thresholds: Mapping[str, float] | None = None
    # pytest-benchmark's measurement options given on the command line (or addopts), as
    # @pytest.mark.benchmark keywords: the defaults every test's marker overrides key by key.
    session_marker: Mapping[str, object] | None = None


# --------------------------------------------------------------------------- pytest side
_STATE_KEY = pytest.StashKey[BenchmarkOptions]()
# A test's validated @pytest.mark.benchmark settings (BenchmarkSettings), bound at collection.
_SETTINGS_KEY = pytest.StashKey[BenchmarkSettings]()


def _pytest_benchmark_plugins(pluginmanager: pytest.PytestPluginManager) -> list[object]:
    return [
        plugin
        for _, plugin in pluginmanager.list_name_plugin()
        if getattr(plugin, "__name__", None) == _PB_MODULE
    ]


def _choice(config: pytest.Config, namespace: Any) -> str:
    value = getattr(namespace, "roofline_benchmark", None) or config.getini("roofline_benchmark")
    value = str(value or "auto").strip()
    if value not in OWNER_CHOICES:
        raise pytest.UsageError(
            f"roofline_benchmark = {value!r} (ini): must be one of {', '.join(OWNER_CHOICES)}"
        )
    return value


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # the option does not exist in this run (pytest-benchmark's, when absent)
        return None


def options_for(config: pytest.Config) -> BenchmarkOptions:
    """This run's options, resolved once (usage errors name the option and the valid form)."""
    found = config.stash.get(_STATE_KEY, None)
    if found is not None:
        return found
    active = bool(_pytest_benchmark_plugins(config.pluginmanager))
    owner = benchmark_owner(_choice(config, config.option), pytest_benchmark_active=active)
    # pytest-benchmark's own options exist when it was loaded and then handed the fixture to
    # us (--roofline-benchmark=roofline); they count only when we own the fixture.
    ours = owner == "roofline"
    only = bool(_option(config, "roofline_only")) or (
        ours and bool(_option(config, "benchmark_only"))
    )
    skip = bool(_option(config, "roofline_skip")) or (
        ours and bool(_option(config, "benchmark_skip"))
    )
    disable = bool(_option(config, "roofline_disable")) or (
        ours and bool(_option(config, "benchmark_disable"))
    )
    if ours and _option(config, "benchmark_enable"):
        disable = False
    autosave = bool(_option(config, "roofline_autosave")) or (
        ours and bool(_option(config, "benchmark_autosave"))
    )
    texts: list[tuple[str, str]] = [
        ("--roofline-fail", str(t)) for t in _option(config, "roofline_fail") or ()
    ]
    if ours:
        for check in _option(config, "benchmark_compare_fail") or ():
            # pytest-benchmark parsed these into checks with a field and a threshold.
            field, threshold = getattr(check, "field", None), getattr(check, "threshold", None)
            percent = type(check).__name__.startswith("Percentage")
            texts.append(
                ("--benchmark-compare-fail", f"{field}:{threshold}{'%' if percent else ''}")
            )
    thresholds: dict[str, float] = {}
    try:
        for where, text in texts:
            parsed = parse_fail_threshold(text, where=where)
            thresholds[parsed.quantile] = parsed.fraction
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    if only and skip:
        skip = False  # pytest-benchmark: --benchmark-only overrides --benchmark-skip
    session_marker: dict[str, object] = {}
    if ours:
        session_marker = session_marker_kwargs(
            {dest: _option(config, dest) for dest, *_ in PYTEST_BENCHMARK_MEASUREMENT_OPTIONS}
        )
        try:
            bind_benchmark_marker(
                "", (), session_marker, where="--benchmark-* options, as @pytest.mark.benchmark"
            )
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    state = BenchmarkOptions(owner, only, skip, disable, autosave, thresholds, session_marker)
    config.stash[_STATE_KEY] = state
    return state


def adjust_cli(config: pytest.Config, cli: Mapping[str, Any]) -> dict[str, Any]:
    """The plugin's command-line settings with these options applied.

    ``--roofline-disable`` switches measuring off (as if ``--roofline`` were not given);
    ``--roofline-autosave`` measures and saves under :data:`AUTOSAVE_LABEL` unless
    ``--roofline-save`` names another label.
    """
    state = options_for(config)
    out = dict(cli)
    if state.autosave:
        out["enabled"] = True
        if out.get("save") is None:
            out["save"] = AUTOSAVE_LABEL
    if state.disable:
        out["enabled"] = False
    return out


def fixture_for(request: pytest.FixtureRequest) -> Any:
    """The ``benchmark`` object for the requesting test (used by the fixture)."""

    item = request.node
    settings = item.stash.get(_SETTINGS_KEY, None)
    if settings is None:
        mark = item.get_closest_marker("benchmark")
        session_marker = options_for(request.config).session_marker or {}
        try:
            settings = bind_benchmark_marker(
                item.nodeid,
                mark.args if mark else (),
                {**session_marker, **(mark.kwargs if mark else {})},
            )
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    session = request.config.stash.get(SESSION_KEY, None)
    make_probe = None
    if session is not None and session.settings.enabled:
        make_probe = lambda factory: session.make_probe(item, sampler_for=factory)  # noqa: E731
    return BenchmarkFixture(item, settings, make_probe)


def _uses(item: pytest.Item, name: str) -> bool:
    return name in getattr(item, "fixturenames", ())


class BenchmarkOptionsPlugin:
    """pytest-benchmark compatibility hooks (registered by :mod:`pytest_roofline.plugin` as ``roofline-benchmark``)."""

    def pytest_addoption(
        self, parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager
    ) -> None:
        group = parser.getgroup("roofline")
        group.addoption(
            "--roofline-benchmark",
            choices=OWNER_CHOICES,
            default=None,
            dest="roofline_benchmark",
            help="Which plugin provides the 'benchmark' fixture: auto (default: pytest-benchmark "
            "when active, else pytest-roofline), roofline, pytest-benchmark.",
        )
        parser.addini(
            "roofline_benchmark", "Default for --roofline-benchmark (auto, roofline, pytest-benchmark).",
            default="",
        )  # fmt: skip
        flags = (
            ("only", "Run only performance tests (those using 'roofline' or 'benchmark')."),
            ("skip", "Skip performance tests (those using 'roofline' or 'benchmark')."),
            ("disable", "Run performance tests without measuring (each function once), even under --roofline."),
            ("autosave", f"Measure and save every run under the label {AUTOSAVE_LABEL!r} (commit in its tags)."),
        )  # fmt: skip
        for name, text in flags:
            group.addoption(
                f"--roofline-{name}",
                action="store_true",
                default=False,
                dest=f"roofline_{name}",
                help=text,
            )
        group.addoption(
            "--roofline-fail",
            action="append",
            metavar="QUANTILE:PERCENT%",
            default=None,
            dest="roofline_fail",
            help="Also fail a test whose p50/p95/p99 rose by more than PERCENT when the statistics "
            "say the change is real (repeatable), e.g. --roofline-fail=p50:10%%.",
        )
        # pytest-benchmark's spellings, when pytest-benchmark will not define them itself.
        if (
            pluginmanager.is_blocked(_PB_NAME)
            or importlib.util.find_spec("pytest_benchmark") is None
        ):
            alias = parser.getgroup(
                "roofline-benchmark", "pytest-benchmark options (pytest-roofline)"
            )
            for name, _ in flags:
                alias.addoption(
                    f"--benchmark-{name}", action="store_true", default=False,
                    dest=f"roofline_{name}", help=f"Same as --roofline-{name}.",
                )  # fmt: skip
            alias.addoption(
                "--benchmark-compare-fail", nargs="+", action="extend", metavar="EXPR",
                dest="roofline_fail", help="Same as --roofline-fail (median:10% is p50:10%).",
            )  # fmt: skip
            alias.addoption(
                "--benchmark-save-data", action="store_true", default=False,
                dest="roofline_save_data",
                help="Accepted for pytest-benchmark compatibility: pytest-roofline always stores raw samples.",
            )  # fmt: skip

    def pytest_load_initial_conftests(
        self, early_config: pytest.Config, parser: pytest.Parser, args: list[str]
    ) -> None:
        # --roofline-benchmark=roofline: unload pytest-benchmark before its configure, fixture
        # and report hooks exist (its options were added already and stay accepted).
        if _choice(early_config, early_config.known_args_namespace) != "roofline":
            return
        manager = early_config.pluginmanager
        for plugin in _pytest_benchmark_plugins(manager):
            name = manager.get_name(plugin)
            manager.unregister(plugin)
            if name is not None:
                manager.set_blocked(name)

    def pytest_configure(self, config: pytest.Config) -> None:
        state = options_for(config)
        if state.owner == "roofline":
            from pytest_roofline.plugin import benchmark_fixture

            config.addinivalue_line(
                "markers", "benchmark(group=None, min_rounds=..., max_time=..., min_time=..., "
                "warmup=False, warmup_iterations=..., disable_gc=False, timer=..., "
                "calibration_precision=...): pytest-benchmark's settings for this test "
                "(pytest-roofline maps them onto its own)",
            )  # fmt: skip
            if not config.pluginmanager.is_registered(benchmark_fixture):
                config.pluginmanager.register(benchmark_fixture, "roofline-benchmark-fixture")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        from pytest_roofline.plugin import benchmark_fixture

        if config.pluginmanager.is_registered(benchmark_fixture):
            config.pluginmanager.unregister(benchmark_fixture)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        state = options_for(config)
        enabled = _enabled(config)
        lines = []
        if state.owner == "roofline":
            how = "measured and gated" if enabled else "no --roofline: each function is called once"
            lines.append(f"roofline: the 'benchmark' fixture is pytest-roofline's ({how})")
        elif state.owner == "pytest-benchmark" and enabled:
            lines.append(
                "roofline: the 'benchmark' fixture is pytest-benchmark's: those tests are not gated "
                "(--roofline-benchmark=roofline or -p no:benchmark gates them)"
            )
        baseline = _baseline(config)
        if baseline is not None and baseline.latest.record.summary.get("summary_only"):
            lines.append(
                f"roofline: baseline {baseline.label!r} (run {baseline.latest.id}) was imported "
                "from pytest-benchmark without raw timings: no test is compared with it (its "
                "medians serve as history once a run with samples is saved under the label)"
            )
        return lines

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None, None, None]:
        yield  # the session object's own checks and gate context come first
        state = options_for(config)
        errors: list[str] = []
        measured = 0
        skip_perf = pytest.mark.skip(reason="performance test (--roofline-skip)")
        skip_other = pytest.mark.skip(reason="not a performance test (--roofline-only)")
        for item in items:
            ours = state.owner == "roofline" and _uses(item, "benchmark")
            perf = _uses(item, "benchmark") or _uses(item, "roofline")
            measured += ours or _uses(item, "roofline")
            if ours:
                mark = item.get_closest_marker("benchmark")
                try:
                    settings = bind_benchmark_marker(
                        item.nodeid,
                        mark.args if mark else (),
                        {**(state.session_marker or {}), **(mark.kwargs if mark else {})},
                    )
                except ConfigError as exc:
                    errors.append(str(exc))
                else:
                    item.stash[_SETTINGS_KEY] = settings
                    _check_budget_conflict(item, settings.max_time_s, errors)
            if state.skip and perf:
                item.add_marker(skip_perf)
            if state.only and not perf:
                item.add_marker(skip_other)
        if errors:
            raise pytest.UsageError("\n".join(errors))
        _update_gate_context(config, measured=measured, thresholds=state.thresholds or {})

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        fixture = item.stash.get(FIXTURE_KEY, None)
        if fixture is None:
            return report
        fixture.skipped = report.outcome == "skipped"
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if (
            report.when == "call"
            and isinstance(data, dict)
            and isinstance(data.get("record"), dict)
        ):
            # group, name, param and extra_info ride with the test's record into the run
            # document (JSON report, stored run), as pytest-benchmark keeps them with its stats.
            data["record"]["benchmark"] = fixture.info()
        return report


def _enabled(config: pytest.Config) -> bool:
    session = config.stash.get(SESSION_KEY, None)
    return bool(session is not None and session.settings.enabled)


def _baseline(config: pytest.Config) -> Any:
    session = config.stash.get(SESSION_KEY, None)
    return session.baseline if session is not None else None


def _check_budget_conflict(item: pytest.Item, max_time_s: float | None, errors: list[str]) -> None:
    mark = item.get_closest_marker("roofline")
    if max_time_s is None or mark is None or mark.kwargs.get("budget") is None:
        return
    errors.append(
        f"{item.nodeid}: both @pytest.mark.benchmark(max_time=...) and "
        "@pytest.mark.roofline(budget=...) set the measurement time; keep one"
    )


def _update_gate_context(
    config: pytest.Config, *, measured: int, thresholds: Mapping[str, float]
) -> None:
    """Count ``benchmark`` tests in the session's multiplicity family and add the thresholds."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None or not session.settings.enabled:
        return
    session.context = replace(
        session.context, family_size=max(1, measured), fail_thresholds=dict(thresholds)
    )
