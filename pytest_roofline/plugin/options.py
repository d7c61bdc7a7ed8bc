"""The ``roofline`` option group and its ``roofline_*`` ini keys, read as plain mappings.

Every option has an ini key; :func:`read_options` hands both, unresolved, to
:func:`pytest_roofline.config.settings.build_config`, the one place precedence is decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pytest

from pytest_roofline.config.defaults import CONFIRM_CHOICES
from pytest_roofline.config.settings import GATE_CHOICES

__all__ = ["add_options", "inert_options", "inert_warning", "read_options"]

# (option suffix, ini type, help) for the options whose ini key takes the same value.
_VALUE_OPTIONS: tuple[tuple[str, str, Literal["string"], str], ...] = (
    ("config", "PATH", "string", "YAML config (default: roofline.yaml in rootdir if present)."),
    (
        "target",
        "NAME",
        "string",
        "Hardware target: a preset, a config target, 'host' (measured here) or 'auto' (default).",
    ),
    ("store", "PATH", "string", "Result store (default: .roofline/store.sqlite under rootdir)."),
    ("save", "LABEL", "string", "Save this run under LABEL (e.g. main)."),
    (
        "baseline",
        "LABEL",
        "string",
        "Compare with the latest run saved under LABEL; earlier ones form its history.",
    ),
    ("json", "PATH", "string", "Write the run's JSON document to PATH."),
    ("report", "PATH", "string", "Write the self-contained HTML signoff report to PATH."),
    (
        "markdown",
        "PATH",
        "string",
        "Write a Markdown summary (CI step summary, PR comment) to PATH.",
    ),
    (
        "budget",
        "SECONDS",
        "string",
        "Measurement time budget per test, e.g. 0.5 or '2s' (default 0.5 s).",
    ),
    (
        "soak",
        "SECONDS",
        "string",
        "After measuring, run each roofline test for SECONDS more and record its latency "
        "timeline with host evidence; drift or throttling escalates (default: off; the marker's "
        "soak= wins).",
    ),
    (
        "blas_threads",
        "N",
        "string",
        "Limit the BLAS thread pools of every measuring process to N threads (threadpoolctl); "
        "recorded as the revision tag blas_threads (default: leave them as they are).",
    ),
)
_TRUE = ("1", "true", "yes", "on")
# Options that only act when the run measures (--roofline): given without it, they do nothing.
_INERT_WITHOUT_ROOFLINE = (
    "save", "baseline", "json", "report", "markdown", "store", "budget", "gate", "tags",
    "confirm", "soak",
)  # fmt: skip


def add_options(parser: pytest.Parser) -> None:
    """Register the ``roofline`` option group and the ``roofline_*`` ini keys."""
    group = parser.getgroup("roofline", "performance roofline gating (pytest-roofline)")
    group.addoption(
        "--roofline",
        action="store_true",
        default=None,
        dest="roofline_enabled",
        help="Measure performance tests and gate on them (off: fixtures call fn once, nothing is recorded).",
    )
    parser.addini(
        "roofline", "Measure and gate as if --roofline were given (true/false).", default=""
    )
    for name, metavar, ini_type, text in _VALUE_OPTIONS:
        flag = f"--roofline-{name.replace('_', '-')}"
        # 0.2.0 registered --roofline-blas_threads (underscore): kept as an alias.
        aliases = (f"--roofline-{name}",) if "_" in name else ()
        group.addoption(
            flag, *aliases, metavar=metavar, default=None, dest=f"roofline_{name}", help=text
        )
        parser.addini(f"roofline_{name}", f"Default for {flag}: {text}", type=ini_type, default="")
    group.addoption(
        "--roofline-gate",
        choices=GATE_CHOICES,
        default=None,
        dest="roofline_gate",
        help="Which decisions fail the run: rollback (default), escalate (rollback and escalate), never.",
    )
    parser.addini("roofline_gate", "Default for --roofline-gate.", default="")
    group.addoption(
        "--roofline-confirm",
        choices=CONFIRM_CHOICES,
        default=None,
        dest="roofline_confirm",
        help="Confirm first-look regressions of a two-run comparison by paired rounds against a "
        "worktree of the baseline's commit: auto (default, where the commit is reachable) or never.",
    )
    parser.addini("roofline_confirm", "Default for --roofline-confirm (auto or never).", default="")
    group.addoption(
        "--roofline-tag",
        action="append",
        metavar="KEY=VALUE",
        default=None,
        dest="roofline_tags",
        help="Revision tag for this run (repeatable): dataset, model, runtime or hardware knobs.",
    )
    parser.addini(
        "roofline_tags", "Revision tags, one KEY=VALUE per line.", type="linelist", default=[]
    )
    group.addoption(
        "--roofline-no-summary",
        action="store_false",
        default=None,
        dest="roofline_summary",
        help="Do not print the roofline section of the terminal summary.",
    )
    parser.addini(
        "roofline_summary", "Print the roofline terminal summary (default true).", default=""
    )
    group.addoption(
        "--roofline-no-counters",
        action="store_false",
        default=None,
        dest="roofline_counters",
        help="Do not read counters (perf_event, rusage, NVML) around measured tests.",
    )
    parser.addini(
        "roofline_counters", "Read counters around measured tests (default true).", default=""
    )
    group.addoption(
        "--roofline-no-canary",
        action="store_false",
        default=None,
        dest="roofline_canary",
        help="Do not time the host canary around measured tests (a disturbed host is then not "
        "detected, and a regression measured on it can be rolled back).",
    )
    parser.addini(
        "roofline_canary", "Time the host canary around measured tests (default true).", default=""
    )
    for key, text in (
        ("min_samples", "Minimum samples per test, honoured past the budget (default 10)."),
        ("max_samples", "Maximum samples per test (default 200000)."),
        ("warmup", "Warm-up time per test before sampling (default 0.05 s)."),
    ):
        parser.addini(f"roofline_{key}", text, default="")


def _ini_value(config: pytest.Config, name: str) -> Any:
    value = config.getini(name)
    return None if value in ("", [], None) else value


def _flag(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return str(value).strip().lower() in _TRUE


def read_options(config: pytest.Config) -> tuple[dict[str, Any], dict[str, Any]]:
    """The command line's and the ini file's values, ``None`` where not given."""
    cli = {
        "enabled": config.getoption("roofline_enabled"),
        "gate": config.getoption("roofline_gate"),
        "tags": config.getoption("roofline_tags"),
        "summary": config.getoption("roofline_summary"),
        "counters": config.getoption("roofline_counters"),
        "canary": config.getoption("roofline_canary"),
        "confirm": config.getoption("roofline_confirm"),
        **{name: config.getoption(f"roofline_{name}") for name, *_ in _VALUE_OPTIONS},
    }
    ini = {
        "enabled": _flag(_ini_value(config, "roofline")),
        "gate": _ini_value(config, "roofline_gate"),
        "tags": _ini_value(config, "roofline_tags"),
        "summary": _flag(_ini_value(config, "roofline_summary")),
        "counters": _flag(_ini_value(config, "roofline_counters")),
        "canary": _flag(_ini_value(config, "roofline_canary")),
        "confirm": _ini_value(config, "roofline_confirm"),
        "min_samples": _ini_value(config, "roofline_min_samples"),
        "max_samples": _ini_value(config, "roofline_max_samples"),
        "warmup": _ini_value(config, "roofline_warmup"),
        **{name: _ini_value(config, f"roofline_{name}") for name, *_ in _VALUE_OPTIONS},
    }
    return cli, ini


def inert_options(cli: Mapping[str, Any]) -> list[str]:
    """The command-line options given that do nothing without ``--roofline``, as typed.

    Only the command line counts: an ini file may set where reports go for the runs that do
    measure, and a plain ``pytest`` run with such an ini file is not a mistake.
    """
    given: list[str] = []
    for name in _INERT_WITHOUT_ROOFLINE:
        value = cli.get(name)
        if value is None:
            continue
        option = "--roofline-tag" if name == "tags" else f"--roofline-{name}"
        values = value if isinstance(value, list) else [value]
        given.extend(f"{option}={v}" for v in values)
    return given


def inert_warning(given: list[str]) -> str:
    """The warning for options given without ``--roofline``."""
    verb = "has" if len(given) == 1 else "have"
    return (
        f"{', '.join(given)} {verb} no effect without --roofline: nothing is measured, saved, "
        "compared or written; add --roofline (or 'roofline = true' in the ini file)"
    )
