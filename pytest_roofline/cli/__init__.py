"""The ``pytest-roofline`` command: list, re-render, compare, move and calibrate stored runs.

Subcommands (``pytest-roofline SUBCOMMAND --help`` for each):

``runs``       list the runs in a store
``report``     re-render a stored run's report (HTML, Markdown, JSON)
``compare``    compare two stored runs offline and render the result
``export``     write a stored run as JSON (``pytest-roofline-run`` format)
``import``     read a run from our JSON or from pytest-benchmark JSON (with raw data)
``calibrate``  measure (or show the cached) roofs of this host
``ab``         measure a git revision (baseline) and the current tree in alternating rounds

Exit status: 0 success or ship; 1 rollback (and escalate under ``--gate escalate``); 2 a usage
or data error, with a message on stderr naming the problem (never a traceback for bad input).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from pytest_roofline.errors import RooflineError
from pytest_roofline.store.sqlite import RunRecord, Store, StoredResult

__all__ = ["EXIT_FAIL", "EXIT_OK", "EXIT_USAGE", "main", "pytest_benchmark_run"]

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2

#: The plugin's default store (``--roofline-store``), relative to the current directory here.
DEFAULT_STORE = ".roofline/store.sqlite"
GATES = ("rollback", "escalate", "never")
_BENCHMARK_LABEL = "pytest-benchmark"


class CliError(Exception):
    """Bad input to the command: the message is printed as is and the exit status is 2."""


# --------------------------------------------------------------------------- helpers
def _open_store(path: str, *, create: bool = False) -> Store:
    return Store.open(Path(path), create=create)


def _run_id(store: Store, text: str) -> int:
    """A run id, or the latest run saved under a label."""
    if text.isdigit():
        return int(text)
    ids = store.run_ids(text)
    if ids:
        return ids[0]
    labels = ", ".join(store.labels()) or "none"
    raise CliError(
        f"{text!r} is neither a run id nor a label in {store.path} (labels: {labels}); "
        "list the runs with: pytest-roofline runs --store PATH"
    )


def _write_text(path: str, text: str) -> None:
    from pytest_roofline.report.json_report import write_atomic

    try:
        write_atomic(Path(path), text)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def _gate_exit(decision: object, gate: str) -> int:
    if gate == "never":
        return EXIT_OK
    if decision == "rollback" or (decision == "escalate" and gate == "escalate"):
        return EXIT_FAIL
    return EXIT_OK


def _summary_lines(document: Mapping[str, Any]) -> list[str]:
    """A few lines for the terminal: the decision, counts, and each test that does not ship."""
    from pytest_roofline.report.charts import format_interval, format_ratio

    tests = [t for t in document.get("tests") or () if isinstance(t, Mapping)]
    counts: dict[str, int] = {}
    for test in tests:
        key = str(test.get("decision") or "undecided")
        counts[key] = counts.get(key, 0) + 1
    decision = document.get("decision")
    tally = ", ".join(f"{n} {d}" for d, n in sorted(counts.items()))
    lines = [
        f"decision: {str(decision).upper() if decision else 'NONE'} ({len(tests)} tests: {tally or 'none'})"
    ]
    for test in tests:
        if test.get("decision") not in ("rollback", "escalate"):
            continue
        p95 = (test.get("change") or {}).get("p95") or {}
        ratio = format_ratio(p95.get("ratio")) if p95 else "no baseline"
        interval = format_interval(p95.get("ci_low"), p95.get("ci_high")) if p95 else ""
        owner = ", ".join(test.get("owners") or ()) or test.get("owner") or "no owner"
        reasons = test.get("reasons") or ["no reason given"]
        lines.append(
            f"  {str(test['decision']).upper()} {test.get('nodeid')}: p95 {ratio} {interval} "
            f"· {owner} · {reasons[0]}".replace("  ·", " ·")
        )
    return lines


def _render(document: Mapping[str, Any], args: argparse.Namespace) -> None:
    """Write the outputs asked for (``--html``, ``--markdown``, ``--json``) and say so."""
    from pytest_roofline.report.html import render_html
    from pytest_roofline.report.markdown import render_markdown

    if args.json:
        _write_text(args.json, json.dumps(document, indent=2, allow_nan=False) + "\n")
        print(f"wrote JSON to {args.json}")
    if args.html:
        _write_text(args.html, render_html(document))
        print(f"wrote HTML to {args.html}")
    if args.markdown:
        _write_text(args.markdown, render_markdown(document, report_path=args.html))
        print(f"wrote Markdown to {args.markdown}")
    for line in _summary_lines(document):
        print(line)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


# --------------------------------------------------------------------------- subcommands
def _cmd_runs(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        runs = store.list_runs()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": run_id,
                        "label": record.label,
                        "started": _iso(record.started),
                        "tests": n,
                        "decision": record.summary.get("decision"),
                        "target": record.target.get("name"),
                    }
                    for run_id, record, n in runs
                ],
                indent=2,
            )
        )
        return EXIT_OK
    if not runs:
        print(f"no runs in {args.store}")
        return EXIT_OK
    rows = [("id", "label", "started (UTC)", "tests", "decision", "target")]
    for run_id, record, n in runs:
        rows.append(
            (
                str(run_id),
                record.label or "-",
                _iso(record.started),
                str(n),
                str(record.summary.get("decision") or "-"),
                str(record.target.get("name") or "-"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        run_id = _run_id(store, args.run)
        run = store.load_run(run_id)
    document = run.record.summary.get("document")
    if not isinstance(document, Mapping):
        raise CliError(
            f"run {run_id} has no saved report document: it was saved by a pytest-roofline that "
            "did not keep one, or imported from another tool. Compare it with another run "
            f"instead: pytest-roofline compare BASE {run_id} --store {args.store} --html OUT"
        )
    _render(document, args)
    return _gate_exit(document.get("decision"), args.gate)


def _cmd_compare(args: argparse.Namespace) -> int:
    try:
        from pytest_roofline.gate.run import compare_stored_runs
    except ImportError:
        raise CliError(
            "offline comparison is not available in this installation "
            "(pytest_roofline.analysis.compare_stored_runs is missing)"
        ) from None
    with _open_store(args.store) as store:
        base_id = _run_id(store, args.base)
        cand_id = _run_id(store, args.candidate)
        document = compare_stored_runs(store, base_id, cand_id, gate_on=args.gate)
    _render(document, args)
    return _gate_exit(document.get("decision"), args.gate)


def _cmd_export(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        document = store.export_run(_run_id(store, args.run))
    text = json.dumps(document, indent=2, allow_nan=False) + "\n"
    if args.output:
        _write_text(args.output, text)
        print(f"exported run to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _read_json(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None


def _cmd_import(args: argparse.Namespace) -> int:
    document = _read_json(args.file)
    if isinstance(document, Mapping) and document.get("format") == "pytest-roofline-run":
        if args.label is not None:
            document = {**document, "run": {**_mapping(document.get("run")), "label": args.label}}
        with _open_store(args.store, create=True) as store:
            run_id = store.import_run(document, source=args.file)
        kind = "pytest-roofline run"
        n = len(document.get("results") or ())
        label = _mapping(document.get("run")).get("label")
    elif isinstance(document, Mapping) and isinstance(document.get("benchmarks"), list):
        label = args.label if args.label is not None else _BENCHMARK_LABEL
        record, results = pytest_benchmark_run(document, label=label, source=args.file)
        with _open_store(args.store, create=True) as store:
            run_id = store.save_run(record, results)
        kind = "pytest-benchmark file"
        n = len(results)
    else:
        raise CliError(
            f"{args.file}: neither a pytest-roofline run export (from 'pytest-roofline export') nor "
            "a pytest-benchmark JSON file (from 'pytest --benchmark-json=FILE --benchmark-save-data')"
        )
    print(
        f"imported {kind} {args.file} as run {run_id} (label {label!r}, {n} tests) into {args.store}"
    )
    return EXIT_OK


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from pytest_roofline.hardware.calibration import format_roofs, host_target

    def warn(message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    with _open_store(args.store, create=True) as store:
        target = host_target(store, refresh=args.refresh, warn=warn)
    print(format_roofs(target))
    return EXIT_OK


def _cmd_ab(args: argparse.Namespace) -> int:
    from pytest_roofline.ab.command import AbOptions, run_ab
    from pytest_roofline.units import parse_duration

    budget = parse_duration(args.budget, where="--budget") if args.budget is not None else None
    options = AbOptions(
        baseline_ref=args.baseline,
        pytest_args=tuple(args.pytest_args),
        rounds=args.rounds,
        budget_s=budget,
        setup=args.setup,
        import_root=args.import_root,
        baseline_python=args.baseline_python,
        candidate_python=args.candidate_python,
        store_path=Path(args.store),
        label=args.label,
        gate_on=args.gate,
    )
    outcome = run_ab(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    for warning in outcome.warnings:
        print(f"pytest-roofline ab: warning: {warning}", file=sys.stderr)
    if outcome.run_id is not None:
        print(
            f"saved the paired run as run {outcome.run_id} ({args.label!r}) in {outcome.store_path}"
        )
    _render(outcome.document, args)
    return _gate_exit(outcome.document.get("decision"), args.gate)


# --------------------------------------------------------------------------- pytest-benchmark
def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _started(document: Mapping[str, Any]) -> float:
    stamp = document.get("datetime")
    if isinstance(stamp, str):
        try:
            parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            # pytest-benchmark writes UTC; older versions without an offset.
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()
    return time.time()


def _benchmark_tags(document: Mapping[str, Any]) -> dict[str, str]:
    """Revision tags under the names the plugin itself records, so tag diffs line up."""
    machine = _mapping(document.get("machine_info"))
    commit = _mapping(document.get("commit_info"))
    cpu = _mapping(machine.get("cpu"))
    candidates = {
        "python": machine.get("python_version"),
        "python_implementation": machine.get("python_implementation"),
        "machine": machine.get("machine"),
        "os": " ".join(str(v) for v in (machine.get("system"), machine.get("release")) if v)
        or None,
        "cpu": cpu.get("brand_raw"),
        "git_commit": commit.get("id"),
        "git_branch": commit.get("branch"),
        "git_dirty": None
        if commit.get("dirty") is None
        else ("yes" if commit.get("dirty") else "no"),
    }
    return {k: str(v) for k, v in candidates.items() if v not in (None, "")}


def _benchmark_result(bench: Mapping[str, Any], where: str) -> StoredResult:
    from pytest_roofline.measure.measurement import Measurement
    from pytest_roofline.measure.sampling import SampleSet
    from pytest_roofline.model.results import TestResult
    from pytest_roofline.config.sla import SlaSpec

    nodeid = bench.get("fullname")
    if not isinstance(nodeid, str) or not nodeid:
        raise CliError(f"{where}: has no 'fullname' (the test's node id)")
    stats = _mapping(bench.get("stats"))
    data = stats.get("data")
    try:
        samples = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise CliError(f"{where} ({nodeid}): stats.data must be a list of seconds") from None
    if samples.ndim != 1 or samples.size == 0 or not np.all(np.isfinite(samples) & (samples > 0)):
        raise CliError(
            f"{where} ({nodeid}): stats.data must be a non-empty list of positive seconds"
        )
    iterations = stats.get("iterations", 1)
    batch = int(iterations) if isinstance(iterations, int) and iterations >= 1 else 1
    # pytest-benchmark stores each round's time divided by its iterations: per-call seconds,
    # batched by ``iterations`` calls, which is exactly our batch_size.
    measurement = Measurement(
        samples=SampleSet(
            samples_s=samples,
            batch_size=batch,
            warmup_calls=0,
            warmup_s=0.0,
            stop_reason="imported",
            elapsed_s=float(samples.sum() * batch),
            synced=False,
        ),
        declared=None,
        quality=(),
        counters=None,
    )
    result = TestResult(
        nodeid=nodeid,
        slice=None,
        owners=(),
        rollback=None,
        sla=SlaSpec(),
        precision=None,
        measurement=measurement,
    )
    return StoredResult(nodeid, result.to_dict(include_samples=False), samples)


def pytest_benchmark_run(
    document: Mapping[str, Any], *, label: str | None, source: str
) -> tuple[RunRecord, list[StoredResult]]:
    """Convert a pytest-benchmark JSON document into a run the store and the plugin can read.

    Every benchmark needs its raw timings (``stats.data``): pytest-benchmark writes them to
    ``--benchmark-json`` files always, and to ``--benchmark-save``/``--benchmark-autosave``
    files only with ``--benchmark-save-data``. Each benchmark becomes a stored result whose samples are its per-call
    round times and whose batch size is its iteration count.

    :raises CliError: a benchmark without raw data (the message says to re-run with
        ``--benchmark-save-data``), a malformed entry, or two benchmarks with one node id.
    """
    benchmarks = [b for b in document.get("benchmarks") or () if isinstance(b, Mapping)]
    if not benchmarks:
        raise CliError(f"{source}: the pytest-benchmark file holds no benchmarks")
    without_data = [
        str(b.get("fullname") or b.get("name") or "?")
        for b in benchmarks
        if "data" not in _mapping(b.get("stats"))
    ]
    if without_data:
        shown = ", ".join(without_data[:3]) + (
            f" and {len(without_data) - 3} more" if len(without_data) > 3 else ""
        )
        raise CliError(
            f"{source}: no raw timings for {shown}; pytest-roofline needs every round's time. "
            "Re-run pytest-benchmark with --benchmark-save-data (files saved with "
            "--benchmark-save/--benchmark-autosave carry the timings only then; "
            "--benchmark-json files always do), then import that file."
        )
    results = [_benchmark_result(b, f"{source}: benchmarks[{i}]") for i, b in enumerate(benchmarks)]
    seen: set[str] = set()
    for result in results:
        if result.nodeid in seen:
            raise CliError(f"{source}: two benchmarks share the node id {result.nodeid!r}")
        seen.add(result.nodeid)
    started = _started(document)
    finished = started + sum(
        float(r.samples_s.sum()) * int(r.payload["measurement"]["batch_size"]) for r in results
    )
    machine = _mapping(document.get("machine_info"))
    record = RunRecord(
        label=label,
        started=started,
        finished=finished if math.isfinite(finished) else started,
        tags=_benchmark_tags(document),
        target={},
        machine="pytest-benchmark import: "
        + " · ".join(
            str(v)
            for v in (machine.get("node"), _mapping(machine.get("cpu")).get("brand_raw"))
            if v
        ),
        summary={
            "tests": len(results),
            "decision": None,
            "imported_from": {
                "tool": "pytest-benchmark",
                "version": str(document.get("version", "")),
                "file": Path(source).name,
            },
        },
    )
    return record, results


# --------------------------------------------------------------------------- parser
def _store_option(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--store",
        default=None if required else DEFAULT_STORE,
        required=required,
        metavar="PATH",
        help="result store (the plugin's --roofline-store)"
        + ("" if required else f"; default: {DEFAULT_STORE}"),
    )


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", metavar="OUT", help="write the HTML signoff report")
    parser.add_argument("--markdown", metavar="OUT", help="write the Markdown summary")
    parser.add_argument("--json", metavar="OUT", help="write the JSON document")
    parser.add_argument(
        "--gate",
        choices=GATES,
        default="rollback",
        help="which decision exits with status 1 (default: rollback; escalate: rollback and escalate)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytest-roofline",
        description="Inspect, compare and move pytest-roofline runs.",
        epilog="Exit status: 0 success or ship, 1 rollback (and escalate under --gate escalate), "
        "2 usage or data error.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands: list[tuple[str, str, Callable[[argparse.Namespace], int]]] = [
        ("runs", "list the runs in a store", _cmd_runs),
        ("report", "re-render a stored run's report", _cmd_report),
        ("compare", "compare two stored runs offline", _cmd_compare),
        ("export", "write a stored run as JSON", _cmd_export),
        ("import", "import a run (pytest-roofline export or pytest-benchmark JSON)", _cmd_import),
        ("calibrate", "measure (or show the cached) roofs of this host", _cmd_calibrate),
        (
            "ab",
            "measure a git revision and the current tree in alternating rounds, and gate",
            _cmd_ab,
        ),
    ]
    made = {}
    for name, summary, func in commands:
        made[name] = sub.add_parser(
            name, help=summary, description=summary[0].upper() + summary[1:] + "."
        )
        made[name].set_defaults(func=func)
    _store_option(made["runs"], required=False)
    made["runs"].add_argument("--json", action="store_true", help="print the list as JSON")
    made["report"].add_argument("run", metavar="RUN", help="run id, or a label (its latest run)")
    _store_option(made["report"], required=True)
    _output_options(made["report"])
    made["compare"].add_argument("base", metavar="BASE", help="baseline run id or label")
    made["compare"].add_argument("candidate", metavar="CAND", help="candidate run id or label")
    _store_option(made["compare"], required=True)
    _output_options(made["compare"])
    made["export"].add_argument("run", metavar="RUN", help="run id, or a label (its latest run)")
    _store_option(made["export"], required=True)
    made["export"].add_argument(
        "-o", "--output", metavar="FILE", help="write here instead of stdout"
    )
    made["import"].add_argument("file", metavar="FILE", help="JSON file to import")
    _store_option(made["import"], required=True)
    made["import"].add_argument(
        "--label",
        help=f"save the run under this label (default: the export's own; {_BENCHMARK_LABEL!r} for pytest-benchmark)",
    )
    _store_option(made["calibrate"], required=False)
    made["calibrate"].add_argument(
        "--refresh", action="store_true", help="measure again even if a calibration is cached"
    )
    _ab_options(made["ab"])
    return parser


def _ab_options(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "pytest-roofline ab --baseline=REF [--rounds=K] [--budget=SECONDS] [options] "
        "-- [pytest args]"
    )
    parser.epilog = (
        "Defaults for --rounds, --budget, --setup and --import-root come from the ab: section "
        "of roofline.yaml. Exit status: 0 ship, 1 rollback (and escalate under --gate "
        "escalate), 2 usage error or a refused run. See docs/paired.md."
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
        help="alternating rounds, ABBA order (default 8; at least 3)",
    )
    parser.add_argument(
        "--budget",
        metavar="SECONDS",
        help="measurement time per test and side over all rounds, e.g. 1 or 2s (default 1 s)",
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
    _store_option(parser, required=False)
    parser.add_argument("--label", default="ab", help="label of the saved paired run (default: ab)")
    parser.add_argument(
        "--report", "--html", dest="html", metavar="OUT", help="write the HTML signoff report"
    )
    parser.add_argument("--markdown", metavar="OUT", help="write the Markdown summary")
    parser.add_argument("--json", metavar="OUT", help="write the JSON document")
    parser.add_argument(
        "--gate",
        choices=GATES,
        default="rollback",
        help="which decision exits with status 1 (default: rollback; escalate: rollback and escalate)",
    )
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
    try:
        status: int = args.func(args)
    except (CliError, RooflineError) as exc:
        print(f"pytest-roofline {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(
            f"pytest-roofline {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr
        )
        return EXIT_USAGE
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
