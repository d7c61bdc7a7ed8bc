"""The ``pytest-roofline`` command: list, re-render, compare, move and calibrate stored runs.

Subcommands (``pytest-roofline SUBCOMMAND --help`` for each):

``runs``       list the runs in a store
``report``     re-render a stored run's report (HTML, Markdown, JSON)
``compare``    compare two stored runs offline and render the result
``export``     write a stored run as JSON (``pytest-roofline-run`` format)
``import``     read a run from our JSON, pytest-benchmark JSON, or a ``.benchmarks/`` folder
``calibrate``  measure (or show the cached) roofs of this host
``ab``         measure a git revision (baseline) and the current tree in alternating rounds
``history``    change points per test over a label's runs, confirmed and attributed

Exit status (:mod:`pytest_roofline.exits`): 0 success or ship; 1 rollback (and escalate under
``--gate escalate``); 2 a usage or data error, with a message on stderr naming the problem (never
a traceback for bad input); 7 a requested output (``--json``, ``--html``, ``--markdown``, ``-o``,
an import's save) could not be written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_roofline.cli.commands import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WRITE_FAILED,
    cmd_ab,
    cmd_calibrate,
    cmd_compare,
    cmd_export,
    cmd_import,
    cmd_report,
    cmd_runs,
    format_roofs,
)
from pytest_roofline.cli.history import add_history_options, cmd_history
from pytest_roofline.cli.pytest_benchmark import (
    AUTOSAVE_LABEL,
    BENCHMARK_LABEL,
    import_benchmarks,
)
from pytest_roofline.config.defaults import DEFAULTS
from pytest_roofline.config.labels import check_nonempty
from pytest_roofline.config.outputs import check_outputs, protected_paths
from pytest_roofline.errors import CliError, OutputError, RooflineError
from pytest_roofline.text import terminal_safe
from pytest_roofline.vocabulary import FAILS_ON

__all__ = [
    "EXIT_FAIL",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_WRITE_FAILED",
    "format_roofs",
    "import_benchmarks",
    "main",
]

#: The plugin's default store (``--roofline-store``), relative to the current directory here;
#: every subcommand takes ``--store`` and defaults to it.
DEFAULT_STORE = DEFAULTS.store


# --------------------------------------------------------------------------- parser
def _store_option(parser: argparse.ArgumentParser) -> None:
    # One default everywhere: the plugin's, so a command run where pytest ran finds its store.
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        metavar="PATH",
        help=f"result store (the plugin's --roofline-store); default: {DEFAULT_STORE}",
    )


def _output_options(parser: argparse.ArgumentParser, *, html: Sequence[str] = ("--html",)) -> None:
    parser.add_argument(*html, dest="html", metavar="OUT", help="write the HTML signoff report")
    parser.add_argument("--markdown", metavar="OUT", help="write the Markdown summary")
    parser.add_argument("--json", metavar="OUT", help="write the JSON document")
    parser.add_argument(
        "--gate",
        choices=FAILS_ON,
        default="rollback",
        help="which decision exits with status 1 (default: rollback; escalate: rollback and escalate)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytest-roofline",
        description="Inspect, compare and move pytest-roofline runs.",
        epilog="Exit status: 0 success or ship, 1 rollback (and escalate under --gate escalate), "
        "2 usage or data error, 7 a requested output could not be written. A RUN is a label (its "
        "latest run) or #N for run id N.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands: list[tuple[str, str, Callable[[argparse.Namespace], int]]] = [
        ("runs", "list the runs in a store", cmd_runs),
        ("report", "re-render a stored run's report", cmd_report),
        ("compare", "compare two stored runs offline", cmd_compare),
        ("export", "write a stored run as JSON", cmd_export),
        (
            "import",
            "import a run (pytest-roofline export, pytest-benchmark JSON or .benchmarks/ folder)",
            cmd_import,
        ),
        ("calibrate", "measure (or show the cached) roofs of this host", cmd_calibrate),
        (
            "ab",
            "measure a git revision and the current tree in alternating rounds, and gate",
            cmd_ab,
        ),
        ("history", "change points per test over a label's runs", cmd_history),
    ]
    made = {}
    for name, summary, func in commands:
        made[name] = sub.add_parser(
            name, help=summary, description=summary[0].upper() + summary[1:] + "."
        )
        made[name].set_defaults(func=func)
    _store_option(made["runs"])
    made["runs"].add_argument("--json", action="store_true", help="print the list as JSON")
    made["report"].add_argument(
        "run", metavar="RUN", help="a label (its latest run) or #N for run id N"
    )
    _store_option(made["report"])
    _output_options(made["report"])
    made["compare"].add_argument("base", metavar="BASE", help="baseline run: a label or #N")
    made["compare"].add_argument("candidate", metavar="CAND", help="candidate run: a label or #N")
    _store_option(made["compare"])
    _output_options(made["compare"])
    made["export"].add_argument(
        "run", metavar="RUN", help="a label (its latest run) or #N for run id N"
    )
    _store_option(made["export"])
    made["export"].add_argument(
        "-o", "--output", metavar="FILE", help="write here instead of stdout"
    )
    made["import"].add_argument(
        "file",
        metavar="PATH",
        help="JSON file to import, or a pytest-benchmark .benchmarks/ folder (every saved run)",
    )
    _store_option(made["import"])
    made["import"].add_argument(
        "--label",
        help=f"save the run under this label (default: the export's own; {BENCHMARK_LABEL!r} for a "
        f"pytest-benchmark file, {AUTOSAVE_LABEL!r} for a .benchmarks/ folder)",
    )
    _store_option(made["calibrate"])
    made["calibrate"].add_argument(
        "--refresh", action="store_true", help="measure again even if a calibration is cached"
    )
    _ab_options(made["ab"])
    add_history_options(made["history"])
    _store_option(made["history"])
    return parser


def _ab_options(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "pytest-roofline ab --baseline=REF [--rounds=K] [--budget=SECONDS] [options] "
        "-- [pytest args]"
    )
    parser.epilog = (
        "Defaults for --rounds, --budget, --worker-pairs, --pin-cpus, --setup and --import-root "
        "come from "
        "the ab: section "
        "of roofline.yaml. Exit status: 0 ship, 1 rollback (and escalate under --gate "
        "escalate), 2 usage error or a refused run, 7 an output could not be written. See "
        "docs/paired.md."
    )
    parser.add_argument(
        "--baseline",
        required=True,
        metavar="REF",
        help="git revision to compare with (branch, tag, commit; e.g. origin/main or HEAD~1)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        metavar="K",
        help="alternating rounds, ABBA order (default 40; at least 3)",
    )
    parser.add_argument(
        "--budget",
        metavar="SECONDS",
        help="measurement time per test and side over all rounds, e.g. 1 or 2s (default 2.5 s)",
    )
    parser.add_argument(
        "--worker-pairs",
        type=int,
        metavar="N",
        help="pairs of worker processes that take the rounds in turn; a regression rolls back "
        "only if every pair finds it (default 3; 1 to 8)",
    )
    parser.add_argument(
        "--pin-cpus",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="hold both windows of each window pair on one CPU, the pairs taking the CPUs in "
        "turn (default on; ab.pin_cpus; --no-pin-cpus leaves them to the scheduler)",
    )
    parser.add_argument(
        "--setup", metavar="CMD", help="shell command run once in each tree before the rounds"
    )
    parser.add_argument(
        "--import-root",
        metavar="DIR",
        help="directory of each tree put first on PYTHONPATH, relative to the tree (default .)",
    )
    parser.add_argument(
        "--baseline-python",
        metavar="PATH",
        help="interpreter for the baseline side (a relative path is taken in the baseline tree)",
    )
    parser.add_argument(
        "--candidate-python",
        metavar="PATH",
        help="interpreter for the candidate side (default: this Python)",
    )
    _store_option(parser)
    parser.add_argument("--label", default="ab", help="label of the saved paired run (default: ab)")
    _output_options(parser, html=("--report", "--html"))
    parser.add_argument(
        "pytest_args",
        nargs="*",
        metavar="PYTEST_ARGS",
        help="after --: pytest arguments used in both trees (test paths, -k, -m ...)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pytest-roofline`` command with ``argv`` (default: ``sys.argv[1:]``).

    :returns: the exit status (0, 1 or 2; see the module docstring).
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage error (or --help)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE

    def error(message: object) -> None:
        # Messages echo user input (labels, paths): escaped, line breaks of our own kept.
        text = terminal_safe(
            f"pytest-roofline {args.command}: error: {message}", keep_newlines=True
        )
        print(text, file=sys.stderr)

    try:
        _check_arguments(args)
        status: int = args.func(args)
    except OutputError as exc:  # before RooflineError: a store that could not be written is one
        error(exc)
        return EXIT_WRITE_FAILED
    except (CliError, RooflineError) as exc:
        error(exc)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        error(f"{where}{exc.strerror or exc}")
        return EXIT_USAGE
    return status


# Arguments naming a file to write, in the order they are written, and what each is called.
_OUTPUT_ARGS = (
    ("json", "--json"),
    ("html", "--html"),
    ("markdown", "--markdown"),
    ("output", "-o"),
)


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse empty values (unset CI variables) and outputs over the store, before any work."""
    for name, what in (("store", "path"), ("json", "path"), ("html", "path"),
                       ("markdown", "path"), ("output", "path"), ("file", "path")):  # fmt: skip
        value = getattr(args, name, None)
        if isinstance(value, str):
            check_nonempty(value, where=f"--{name}" if name != "file" else "FILE", what=what)
    for name, where in (("run", "RUN"), ("base", "BASE"), ("candidate", "CAND")):
        value = getattr(args, name, None)
        if isinstance(value, str):
            check_nonempty(value, where=where, what="run (a label or #N)")
    store = getattr(args, "store", None)
    outputs = [
        (option, Path(value))
        for name, option in _OUTPUT_ARGS
        if isinstance(value := getattr(args, name, None), str)
    ]
    check_outputs(outputs, protected_paths(Path(store) if store else None))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
