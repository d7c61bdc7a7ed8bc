"""pytest-roofline plugin wiring: options, hooks, and the session object's lifecycle.

Nothing here measures, decides or renders: :mod:`~.options` declares the options,
:mod:`~.session` is the per-session plugin object, :mod:`~.probe` and :mod:`~.fixtures` are what
tests use. This package is the only part of pytest-roofline that imports pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.config.markers import MARKER_HELP
from pytest_roofline.config.settings import build_config
from pytest_roofline.errors import RooflineError, RooflineWarning
from pytest_roofline.plugin.benchmark_options import BenchmarkOptionsPlugin, adjust_cli
from pytest_roofline.plugin.fixtures import hardware, roofline, workload  # noqa: F401  (registers fixtures)
from pytest_roofline.plugin.options import (
    add_options,
    inert_options,
    inert_warning,
    read_options,
)
from pytest_roofline.plugin.session import SESSION_KEY, RooflineSession

__all__ = ["SESSION_KEY"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_roofline.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)
    # pytest-benchmark compatibility (benchmark_options.py): its options, the `benchmark` fixture.
    if pluginmanager.get_plugin("roofline-benchmark") is None:
        pluginmanager.register(BenchmarkOptionsPlugin(), "roofline-benchmark")


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    cli, ini = read_options(config)
    cli = adjust_cli(config, cli)  # --roofline-autosave, --roofline-disable (benchmark_options)
    try:
        settings = build_config(
            rootdir=Path(config.rootpath),
            cli=cli,
            ini=ini,
            invocation_dir=Path(config.invocation_params.dir),
            inifile=Path(config.inipath) if config.inipath else None,
        )
    except RooflineError as exc:
        raise pytest.UsageError(str(exc)) from None
    given = inert_options(cli)
    if given and not settings.enabled and not hasattr(config, "workerinput"):
        # Without this the options were silently ignored; pytest shows it in its warnings summary.
        config.issue_config_time_warning(RooflineWarning(inert_warning(given)), stacklevel=2)
    session = RooflineSession(config, settings)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "roofline-session")
    if session.is_controller and config.pluginmanager.hasplugin("xdist"):
        from pytest_roofline.plugin.xdist import XdistHooks

        config.pluginmanager.register(XdistHooks(session), "roofline-xdist")
    session.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        return
    session.close()
    for name in ("roofline-session", "roofline-xdist"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
    del config.stash[SESSION_KEY]
