"""The subcommands of ``pytest-roofline``: each reads its arguments and returns an exit status."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_roofline import exits
from pytest_roofline.cli.pytest_benchmark import (
    import_benchmarks,
    is_pytest_benchmark_document,
    mapping,
)
from pytest_roofline.config.labels import RUN_ID_PREFIX, check_label, check_nonempty
from pytest_roofline.errors import CliError, OutputError
from pytest_roofline.files import write_atomic
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.model.document import RunDocument
from pytest_roofline.model.stored import check_export, check_stored_run, stored_document
from pytest_roofline.store import Store, StoredRun
from pytest_roofline.store.checks import parse_export
from pytest_roofline.store.sqlite import STORE_SCHEMA_VERSION
from pytest_roofline.text import is_utf8, shown, terminal_safe
from pytest_roofline.units import si
from pytest_roofline.vocabulary import Decision, FailOn, fails_run

__all__ = [
    "EXIT_FAIL",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_WRITE_FAILED",
    "cmd_ab",
    "cmd_calibrate",
    "cmd_compare",
    "cmd_export",
    "cmd_import",
    "cmd_report",
    "cmd_runs",
    "format_roofs",
]

EXIT_OK = exits.OK
EXIT_FAIL = exits.ROLLBACK
EXIT_USAGE = exits.CLI_USAGE
EXIT_WRITE_FAILED = exits.WRITE_FAILED

# SQLite's integer ids are signed 64-bit: a larger number names no run (and cannot be bound).
_MAX_RUN_ID = 2**63 - 1


# --------------------------------------------------------------------------- helpers
def _open_store(path: str, *, create: bool = False) -> Store:
    return Store.open(Path(path), create=create)


def _checked_id(store: Store, digits: str, text: str) -> int:
    run_id = int(digits)
    if not 1 <= run_id <= _MAX_RUN_ID or run_id not in store.run_ids():
        raise CliError(
            f"{text!r}: no run with id {digits} in {store.path}; list the runs with: "
            f"pytest-roofline runs --store {shlex.quote(str(store.path))}"
        )
    return run_id


def _run_id(store: Store, text: str) -> int:
    """The run a RUN argument names: ``#N`` is run id N; a label is its latest run.

    Plain digits are a run id unless a label of that name exists: then the label is meant, and
    a note on stderr says how to name the run id (``#N``).
    """
    if not is_utf8(text):
        raise CliError(
            f"RUN {shown(text)}: not valid UTF-8; no label can hold it (labels are UTF-8 text)"
        )
    if text.startswith(RUN_ID_PREFIX):
        digits = text[len(RUN_ID_PREFIX) :]
        if not (digits.isascii() and digits.isdigit()):
            raise CliError(f"{text!r}: #N names run id N, e.g. #3 (N is a number)")
        return _checked_id(store, digits, text)
    ids = store.run_ids(text)
    if text.isascii() and text.isdigit():
        if not ids:
            return _checked_id(store, text, text)
        if 1 <= int(text) <= _MAX_RUN_ID and int(text) in store.run_ids():
            print(
                f"note: {text!r} is both a label and a run id; using the latest run under the "
                f"label (run {ids[0]}); write #{text} for run id {text}",
                file=sys.stderr,
            )
    if ids:
        return ids[0]
    labels = ", ".join(repr(label) for label in store.labels()) or "none"
    raise CliError(
        f"{text!r} is neither a run id nor a label in {store.path} (labels: {labels}); "
        f"list the runs with: pytest-roofline runs --store {shlex.quote(str(store.path))}"
    )


def _load_run(store: Store, run_id: int) -> StoredRun:
    """A run read and decoded as the gate reads it (a damaged row is named, not a traceback)."""
    run = store.load_run(run_id)
    check_stored_run(run, store=store.path)
    return run


def _write_text(path: str, text: str) -> None:
    try:
        write_atomic(Path(path), text)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _gate_exit(decision: Decision | None, gate: FailOn) -> int:
    return EXIT_FAIL if fails_run(decision, gate) else EXIT_OK


def _summary_lines(document: RunDocument) -> list[str]:
    """A few lines for the terminal: the decision, counts, and each test that does not ship."""
    from pytest_roofline.report.format import format_interval, format_ratio

    tests = document.tests
    counts: dict[str, int] = {}
    for test in tests:
        key = test.decision or "undecided"
        counts[key] = counts.get(key, 0) + 1
    decision = document.decision
    tally = ", ".join(f"{n} {d}" for d, n in sorted(counts.items()))
    lines = [
        f"decision: {decision.upper() if decision else 'NONE'} ({len(tests)} tests: {tally or 'none'})"
    ]
    for test in tests:
        if test.decision not in ("rollback", "escalate"):
            continue
        p95 = (test.change or {}).get("p95")
        ratio = format_ratio(p95.ratio) if p95 is not None else "no baseline"
        interval = format_interval(p95.ci_low, p95.ci_high) if p95 is not None else ""
        owner = ", ".join(test.owners) or "no owner"
        reason = test.reasons[0] if test.reasons else "no reason given"
        lines.append(
            f"  {test.decision.upper()} {test.nodeid}: p95 {ratio} {interval} "
            f"· {owner} · {reason}".replace("  ·", " ·")
        )
    # A run-level reason says what to do, also when no single test is listed above.
    lines += [f"  run: {reason}" for reason in document.reasons if document.decision != "ship"]
    lines += [f"  next: {step}" for step in document.next_steps]
    return [terminal_safe(line) for line in lines]


def _render(
    document: RunDocument, args: argparse.Namespace, *, stored: Mapping[str, Any] | None = None
) -> None:
    """Write the outputs asked for (``--html``, ``--markdown``, ``--json``) and say so.

    :param stored: the document as the store holds it: ``--json`` writes it unchanged.
    """
    from pytest_roofline.report.html import render_html
    from pytest_roofline.report.json import render_json
    from pytest_roofline.report.markdown import render_markdown

    outputs: list[tuple[str, str | None, Callable[[], str]]] = [
        (
            "JSON",
            args.json,
            lambda: (
                render_json(document) if stored is None else json.dumps(stored, indent=2) + "\n"
            ),
        ),
        ("HTML", args.html, lambda: render_html(document)),
        (
            "Markdown",
            args.markdown,
            lambda: render_markdown(
                document,
                report_path=args.html,
                markdown_path=args.markdown,
                # Every subcommand that renders writes the HTML report with --html.
                report_option="--html PATH",
            ),
        ),
    ]
    # Every output is attempted; the first that could not be written fails the command (7).
    failed: OutputError | None = None
    for kind, path, render in outputs:
        if not path:
            continue
        try:
            _write_text(path, render())
        except OutputError as exc:
            failed = failed or exc
            print(terminal_safe(f"error: {exc}"), file=sys.stderr)
            continue
        print(terminal_safe(f"wrote {kind} to {path}"))
    for line in _summary_lines(document):
        print(line)
    if failed is not None:
        raise failed


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


# --------------------------------------------------------------------------- subcommands
def format_roofs(target: HardwareTarget) -> str:
    """A plain-text table of ``target``'s roofs, ridges and provenance.

    One row per compute roof (with its ridge against DRAM), per bandwidth roof, per sparse
    peak (marked as never used), and the dispatch floor of measured targets.
    """
    lines = [f"hardware target {target.name} ({target.source}): {target.description}".rstrip()]
    rows: list[tuple[str, str, str, str]] = [("roof", "peak", "ridge vs dram", "source")]

    def origin(key: str) -> str:
        prov = target.provenance.get(key)
        if prov is None:
            return ""
        text = prov.source + (
            f" ({prov.date})" if prov.date and prov.date not in prov.source else ""
        )
        return f"{text}: {prov.note}" if prov.note else text

    for precision, value in target.peak_flops_per_s.items():
        unit = "OP/s" if precision.startswith("int") else "FLOP/s"
        rows.append(
            (
                f"compute {precision}",
                si(value, unit),
                f"{target.ridge(precision):.3g} FLOP/B",
                origin(f"flops.{precision}"),
            )
        )
    for level, value in target.peak_bytes_per_s.items():
        rows.append((f"bandwidth {level}", si(value, "B/s"), "", origin(f"bytes.{level}")))
    for precision, value in target.sparse_peak_flops_per_s.items():
        rows.append(
            (
                f"sparse {precision} (never a roof)",
                si(value, "OP/s" if precision.startswith("int") else "FLOP/s"),
                "",
                origin(f"sparse_flops.{precision}"),
            )
        )
    floor = target.provenance.get("dispatch_floor")
    if floor is not None:
        rows.append(
            ("dispatch floor", f"{floor.value * 1e6:.3g} us/call", "", origin("dispatch_floor"))
        )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(3)]
        lines.append(("  " + "  ".join(cells) + "  " + row[3]).rstrip())
    return "\n".join(lines)


def cmd_runs(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        runs = store.list_runs()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": run_id,
                        "label": record.label,
                        "started": _iso(record.started) if record.problem is None else None,
                        "tests": n,
                        "decision": record.summary.get("decision"),
                        "target": record.target.get("name"),
                        **({"problem": record.problem} if record.problem else {}),
                    }
                    for run_id, record, n in runs
                ],
                indent=2,
            )
        )
        return EXIT_OK
    if not runs:
        print(terminal_safe(f"no runs in {args.store}"))
        return EXIT_OK
    rows = [("id", "label", "started (UTC)", "tests", "decision", "target")]
    problems = []
    for run_id, record, n in runs:
        if record.problem is not None:
            problems.append(f"run {run_id} is unreadable: {record.problem}")
        rows.append(
            (
                str(run_id),
                record.label or "-",
                _iso(record.started) if record.problem is None else "-",
                str(n),
                str(record.summary.get("decision") or "-")
                if record.problem is None
                else "unreadable",
                str(record.target.get("name") or "-"),
            )
        )
    # Cells are escaped before they are measured, so the columns line up as shown.
    safe = [tuple(terminal_safe(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in safe) for i in range(len(safe[0]))]
    for row in safe:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    for line in problems:
        print(terminal_safe(line))
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        run_id = _run_id(store, args.run)
        run = _load_run(store, run_id)  # a run with a damaged row is not shown as if whole
        read = stored_document(run.record.summary, where=f"{store.path}: run {run_id}: summary")
    stored = run.record.summary.get("document")
    if read is None or not isinstance(stored, Mapping):
        raise CliError(
            f"run {run_id} has no saved report document: it was saved by a pytest-roofline that "
            "did not keep one, or imported from another tool. Compare it with another run "
            f"instead: pytest-roofline compare BASE '#{run_id}' --store "
            f"{shlex.quote(args.store)} --html OUT"
        )
    from pytest_roofline.gate.record import with_platforms

    document = with_platforms(read)
    _render(document, args, stored=stored)
    return _gate_exit(document.decision, args.gate)


def cmd_compare(args: argparse.Namespace) -> int:
    from pytest_roofline.gate.compare import compare_stored_runs

    with _open_store(args.store) as store:
        base_id = _run_id(store, args.base)
        cand_id = _run_id(store, args.candidate)
        for run_id in dict.fromkeys((base_id, cand_id)):
            _load_run(store, run_id)
        document = compare_stored_runs(store, base_id, cand_id, gate_on=args.gate)
    _render(document, args)
    return _gate_exit(document.decision, args.gate)


def cmd_export(args: argparse.Namespace) -> int:
    with _open_store(args.store) as store:
        run_id = _run_id(store, args.run)
        _load_run(store, run_id)  # a damaged run is not passed on
        document = store.export_run(run_id)
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


def cmd_import(args: argparse.Namespace) -> int:
    if args.label is not None:
        check_label(args.label, where="--label")
    document = None if Path(args.file).is_dir() else _read_json(args.file)
    if document is None or is_pytest_benchmark_document(document):
        # A .benchmarks/ folder (every saved run, as the label's history) or one file.
        with _open_store(args.store, create=True) as store:
            summary = import_benchmarks(store, Path(args.file), label=args.label)
        for line in summary.lines(args.store):
            print(terminal_safe(line))
        return EXIT_OK
    if isinstance(document, Mapping) and document.get("format") == "pytest-roofline-run":
        if args.label is not None:
            document = {**document, "run": {**mapping(document.get("run")), "label": args.label}}
        version = document.get("schema_version")
        if (
            isinstance(version, bool)
            or not isinstance(version, int)
            or version > STORE_SCHEMA_VERSION
        ):
            raise CliError(
                f"{args.file}: export schema version {document.get('schema_version')!r} is not "
                f"readable by this pytest-roofline (reads up to {STORE_SCHEMA_VERSION})"
            )
        # Everything is checked before the store is opened for writing: nothing half-imported.
        record, results = parse_export(document, source=args.file)
        check_export(record, results, source=args.file)
        with _open_store(args.store, create=True) as store:
            run_id = store.save_run(record, results)
        kind = "pytest-roofline run"
        n = len(document.get("results") or ())
        label = mapping(document.get("run")).get("label")
    else:
        raise CliError(
            f"{args.file}: neither a pytest-roofline run export (from 'pytest-roofline export') nor "
            "a pytest-benchmark JSON file (from 'pytest --benchmark-json=FILE') or .benchmarks/ folder"
        )
    print(
        terminal_safe(
            f"imported {kind} {args.file} as run {run_id} (label {label!r}, {n} tests) "
            f"into {args.store}"
        )
    )
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from pytest_roofline.hardware.calibration import host_target

    def warn(message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    with _open_store(args.store, create=True) as store:
        target = host_target(store, refresh=args.refresh, warn=warn)
    print(format_roofs(target))
    return EXIT_OK


def cmd_ab(args: argparse.Namespace) -> int:
    from pytest_roofline.ab import AbOptions, run_ab
    from pytest_roofline.units import parse_duration

    check_nonempty(args.baseline, where="--baseline", what="git revision")
    check_label(args.label, where="--label")
    budget = parse_duration(args.budget, where="--budget") if args.budget is not None else None
    options = AbOptions(
        baseline_ref=args.baseline,
        pytest_args=tuple(args.pytest_args),
        rounds=args.rounds,
        budget_s=budget,
        worker_pairs=args.worker_pairs,
        pin_cpus=args.pin_cpus,
        setup=args.setup,
        import_root=args.import_root,
        baseline_python=args.baseline_python,
        candidate_python=args.candidate_python,
        store_path=Path(args.store),
        label=args.label,
        gate_on=args.gate,
    )
    outcome = run_ab(
        options, log=lambda line: print(terminal_safe(line), file=sys.stderr, flush=True)
    )
    for warning in outcome.warnings:
        print(terminal_safe(f"pytest-roofline ab: warning: {warning}"), file=sys.stderr)
    if outcome.run_id is not None:
        print(
            terminal_safe(
                f"saved the paired run as run {outcome.run_id} ({args.label!r}) in "
                f"{outcome.store_path}"
            )
        )
    _render(outcome.document, args)
    return _gate_exit(outcome.document.decision, args.gate)
