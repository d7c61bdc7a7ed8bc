"""``pytest-roofline history``: the steps in a label's runs, per test, confirmed and attributed.

Reads the label's per-test series from the store (:meth:`Store.series
<pytest_roofline.store.Store.series>`), finds change points per test, confirms each on the raw
samples of the runs either side and attributes it (:mod:`pytest_roofline.gate.steps`), and
prints a table; ``--json=PATH`` writes::

    {"label": ..., "quantile": "p50",
     "runs": [{"run_id", "commit", "started"}],             # oldest first; index = position
     "tests": [{"nodeid",
                "change_points": [{"run_id", "index", "quantile", "ratio", "ci": [lo, hi],
                                   "first_failing_layer", ...}],
                "unconfirmed": [...], "drift": {...} | null}],
     "weeks": [{"week": "2026-W48", "runs", "tests", "compared", "escape_risk", ...,
                "confirmations": {...}, "replays": {...}}]}

``change_points`` holds the confirmed steps, with the keys issue 14 names first and, after them,
the detector's own figures (``series_ratio``, ``series_ci``, ``p_value``), the commit range
(``commits``), the revision-tag diff (``tag_diff``) and ``layers_changed``. ``unconfirmed`` holds
the change points the raw samples did not bear out, in the same form. A step most tests share,
or that the host canary's level shares, is a host event (:mod:`pytest_roofline.gate.host_events`:
``host_event``, ``host_reason``, and no ``first_failing_layer``). ``weeks`` is the observability
per ISO week of the label's runs (:mod:`pytest_roofline.gate.weeks`). The revision-tag layers
and the default ``--margin`` (``gate.min_effect``) come from the ``roofline.yaml`` in the
current directory, as the plugin reads it when pytest runs there (:func:`history_config`).
Exit status 0, or 2 for a usage or data error (a bad ``roofline.yaml`` among them), 7 when
``--json`` cannot be written.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_roofline.cli.commands import EXIT_OK, _open_store, _write_text
from pytest_roofline.config.defaults import DEFAULTS
from pytest_roofline.config.labels import check_label
from pytest_roofline.config.settings import CONFIG_FILENAME, DEFAULT_LAYERS, build_config
from pytest_roofline.errors import CliError, ConfigError
from pytest_roofline.gate.host_events import HostEvent, host_events, host_reasons
from pytest_roofline.gate.steps import (
    DriftFinding,
    HistorySettings,
    StepFinding,
    TestHistory,
    analyse_label,
)
from pytest_roofline.gate.weeks import WeekObservation, weekly
from pytest_roofline.report.html.trend import TrendMark, TrendStrip, trend_page
from pytest_roofline.stats.changepoint import DEFAULT_MAX_P_VALUE, DEFAULT_WINDOW
from pytest_roofline.store.observations import CONFIRMATION_STATES
from pytest_roofline.store.series import (
    SERIES_QUANTILES,
    FloatArray,
    LabelSeries,
    SeriesRun,
    TestSeries,
)
from pytest_roofline.text import shown, terminal_safe

__all__ = [
    "add_history_options",
    "cmd_history",
    "history_config",
    "history_document",
    "history_lines",
    "trend_strip_of",
    "week_lines",
    "week_rows",
]


def add_history_options(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``history`` (its ``--store`` comes from the caller)."""
    parser.add_argument(
        "nodeids", nargs="*", metavar="NODEID", help="tests to analyse (default: every test)"
    )
    parser.add_argument("--label", required=True, help="the label whose runs form the history")
    parser.add_argument("--json", metavar="OUT", help="write the change points as JSON")
    parser.add_argument(
        "--html",
        metavar="OUT",
        help="write a page of trend strips (p50/p95/p99 over the last --last runs, steps marked)",
    )
    parser.add_argument(
        "--last",
        type=int,
        default=30,
        metavar="RUNS",
        help="runs shown in each trend strip of --html (default 30)",
    )
    parser.add_argument(
        "--quantile",
        choices=tuple(SERIES_QUANTILES),
        default="p50",
        help="the per-run quantile searched for steps (default: p50)",
    )
    parser.add_argument(
        "--margin",
        type=float,
        metavar="FRACTION",
        help="smallest drift reported, e.g. 0.05 (default: the gate's min_effect of the quantile)",
    )
    parser.add_argument(
        "--max-p-value",
        type=float,
        default=DEFAULT_MAX_P_VALUE,
        metavar="P",
        help=f"change-point significance (default {DEFAULT_MAX_P_VALUE}, Apache Otava's)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        metavar="RUNS",
        help=f"runs per E-divisive window (default {DEFAULT_WINDOW}, Apache Otava's)",
    )


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _step_json(step: StepFinding, host: str | None = None) -> dict[str, Any]:
    return {
        "run_id": step.run_id,
        "index": step.index,
        "quantile": step.quantile,
        "ratio": _number(step.ratio),
        "ci": [_number(step.ci_low), _number(step.ci_high)],
        # A host event is not the code's: no layer is blamed (the tag diff stays below).
        "first_failing_layer": None if host else step.first_failing_layer,
        "host_event": host is not None,
        "host_reason": host,
        "confirmed": step.confirmed,
        "series_ratio": _number(step.series_ratio),
        "series_ci": [_number(step.series_ci_low), _number(step.series_ci_high)],
        "p_value": _number(step.p_value),
        "commits": [step.commit_before, step.commit_after],
        "tag_diff": {k: list(v) for k, v in step.tag_diff.items()},
        "layers_changed": list(step.layers_changed),
        "note": step.note,
    }


def _drift_json(drift: DriftFinding | None) -> dict[str, Any] | None:
    if drift is None:
        return None
    return {
        "since_run_id": drift.since_run_id,
        "since_index": drift.since_index,
        "since_commit": drift.since_commit,
        "ratio": _number(drift.ratio),
        "ci": [_number(drift.ci_low), _number(drift.ci_high)],
        "p_value": _number(drift.p_value),
        "runs": drift.runs,
    }


def history_document(
    label: str,
    quantile: str,
    runs: Sequence[SeriesRun],
    tests: Sequence[TestHistory],
    events: Mapping[tuple[str, int], HostEvent] | None = None,
    weeks: Sequence[WeekObservation] = (),
) -> dict[str, Any]:
    """The ``--json`` document (see the module docstring); ``events`` label host events,
    ``weeks`` the observability per ISO week."""
    events = events or {}

    def step(nodeid: str, found: StepFinding) -> dict[str, Any]:
        event = events.get((nodeid, found.index))
        return _step_json(found, event.reason if event is not None else None)

    return {
        "label": label,
        "quantile": quantile,
        "runs": [
            {"run_id": run.run_id, "commit": run.commit, "started": _iso(run.started)}
            for run in runs
        ],
        "tests": [
            {
                "nodeid": test.nodeid,
                "change_points": [step(test.nodeid, s) for s in test.confirmed],
                "unconfirmed": [step(test.nodeid, s) for s in test.unconfirmed],
                "drift": _drift_json(test.drift),
            }
            for test in tests
        ],
        "weeks": [week.to_json() for week in weeks],
    }


def _percent(ratio: float | None) -> str:
    return "?" if ratio is None or not math.isfinite(ratio) else f"{(ratio - 1.0) * 100:+.1f}%"


def _interval(low: float | None, high: float | None) -> str:
    return f"[{_percent(low)}, {_percent(high)}]"


def _commit(commit: str | None) -> str:
    return commit[:10] if commit else "?"


def history_lines(
    label: str,
    quantile: str,
    series: LabelSeries,
    tests: Sequence[TestHistory],
    margin: float,
    events: Mapping[tuple[str, int], HostEvent] | None = None,
) -> list[str]:
    """The terminal table: one row per change point, then host events, drifts and what was
    left out."""
    events = events or {}
    runs = series.runs
    first, last = (_iso(runs[0].started), _iso(runs[-1].started)) if runs else ("-", "-")
    lines = [
        f"history of label {label!r}: {len(runs)} runs ({first} .. {last}), "
        f"{len(tests)} tests, {quantile} per run"
    ]
    rows = [
        (
            "test",
            "first run after",
            "step (raw samples, 95%)",
            "per-run series",
            "commits",
            "first failing layer",
        )
    ]
    for test in tests:
        for step in test.steps:
            mark = "" if step.confirmed else " (not confirmed)"
            rows.append(
                (
                    test.nodeid,
                    f"#{step.run_id} (index {step.index})",
                    f"{_percent(step.ratio)} {_interval(step.ci_low, step.ci_high)}{mark}",
                    f"{_percent(step.series_ratio)} p={step.p_value:.1g}",
                    f"{_commit(step.commit_before)}..{_commit(step.commit_after)}",
                    "host event"
                    if (test.nodeid, step.index) in events
                    else step.first_failing_layer or "-",
                )
            )
    if len(rows) > 1:
        safe = [tuple(terminal_safe(cell) for cell in row) for row in rows]
        widths = [max(len(row[i]) for row in safe) for i in range(len(safe[0]))]
        for row in safe:
            lines.append(
                "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            )
    else:
        lines.append("  no change points")
    for (nodeid, index), event in sorted(events.items()):
        lines.append(terminal_safe(f"  {nodeid} at index {index}: {event.reason}"))
    for test in tests:
        drift = test.drift
        if drift is not None:
            lines.append(
                terminal_safe(
                    f"  {test.nodeid}: cumulative drift since {_commit(drift.since_commit)} "
                    f"(run #{drift.since_run_id}, {drift.runs} runs): {_percent(drift.ratio)} "
                    f"{_interval(drift.ci_low, drift.ci_high)}, beyond the {margin:.0%} margin"
                )
            )
    quiet = sum(1 for t in tests if not t.steps and t.drift is None)
    if quiet:
        lines.append(f"  {quiet} tests without a step or a drift beyond the margin")
    problems = [run for run in runs if run.problem]
    for run in problems:
        lines.append(terminal_safe(f"  run #{run.run_id} left out: {run.problem}"))
    return lines


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


WEEK_HEADERS = (
    "week",
    "runs",
    "tests compared",
    "escape risk",
    "tails not assessed",
    "confirmations c/o/i/u",
    "confirmed",
    "replays reproduced/tried",
)


def week_rows(weeks: Sequence[WeekObservation]) -> list[tuple[str, ...]]:
    """One row per week (:data:`WEEK_HEADERS`), for the terminal and the HTML page."""
    rows: list[tuple[str, ...]] = []
    for w in weeks:
        c = w.confirmations
        rows.append(
            (
                w.week,
                str(w.runs) + (f" ({w.unreadable_runs} unreadable)" if w.unreadable_runs else ""),
                f"{w.compared} of {w.tests}",
                f"{_share(w.escape_risk)} ({w.escape_risk_tests})",
                str(w.tails_not_assessed),
                "/".join(str(c.get(s, 0)) for s in CONFIRMATION_STATES),
                _share(w.confirmed_rate),
                f"{w.replays.get('reproduced', 0)}/{w.replays.get('attempted', 0)}"
                f" ({_share(w.reproduced_rate)})",
            )
        )
    return rows


def week_lines(weeks: Sequence[WeekObservation]) -> list[str]:
    """The terminal table of observability per ISO week of the label's runs."""
    if not weeks:
        return []
    rows = [WEEK_HEADERS, *week_rows(weeks)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(WEEK_HEADERS))]
    lines = ["observability per ISO week of the label's runs (every test of each run):"]
    for row in rows:
        lines.append(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        )
    return lines


def cmd_history(args: argparse.Namespace) -> int:
    check_label(args.label, where="--label")
    if not 0.0 < args.max_p_value < 1.0:
        raise CliError(f"--max-p-value must be in (0, 1); got {args.max_p_value}")
    if args.last < 2:
        raise CliError(f"--last must be at least 2 runs; got {args.last}")
    if args.window < 12:
        raise CliError(f"--window must be at least 12 runs; got {args.window}")
    layers, min_effect = history_config(Path.cwd())
    margin = args.margin if args.margin is not None else min_effect.get(args.quantile, 0.05)
    if not (math.isfinite(margin) and 0.0 <= margin < 10.0):
        raise CliError(f"--margin must be a fraction >= 0, e.g. 0.05; got {margin}")
    settings = HistorySettings(
        quantile=args.quantile, window=args.window, max_p_value=args.max_p_value, margin=margin
    )
    wanted = list(dict.fromkeys(args.nodeids)) or None
    with _open_store(args.store) as store:
        series = store.series(args.label, wanted)
        if wanted is not None:
            absent = [n for n in wanted if n not in series.tests]
            if absent:
                raise CliError(
                    f"no result for {', '.join(repr(shown(n)) for n in absent)} in the runs of "
                    f"label {args.label!r} in {store.path}"
                )
        tests = analyse_label(series, settings, store.samples_of, layers)
        weeks = weekly(store.observations(args.label))
    events = host_events(series, tests, quantile=args.quantile)
    document = history_document(args.label, args.quantile, series.runs, tests, events, weeks)
    if args.json:
        _write_text(args.json, json.dumps(document, indent=2, allow_nan=False) + "\n")
        print(terminal_safe(f"wrote JSON to {args.json}"))
    if args.html:
        by_id = {t.nodeid: t for t in tests}
        strips = [
            trend_strip_of(
                test,
                series.runs,
                by_id.get(nodeid),
                last=args.last,
                host=host_reasons(events, nodeid),
            )
            for nodeid, test in sorted(series.tests.items())
        ]
        lines = history_lines(args.label, args.quantile, series, tests, margin, events)
        tables = (
            [("Observability per ISO week of the label's runs", WEEK_HEADERS, week_rows(weeks))]
            if weeks
            else []
        )
        _write_text(args.html, trend_page(f"History of {args.label}", strips, lines, tables=tables))
        print(terminal_safe(f"wrote HTML to {args.html}"))
    for line in history_lines(args.label, args.quantile, series, tests, margin, events):
        print(line)
    for line in week_lines(weeks):
        print(terminal_safe(line))
    return EXIT_OK


def history_config(cwd: Path) -> tuple[Mapping[str, Sequence[str]], Mapping[str, float]]:
    """The revision-tag layers and ``gate.min_effect`` of the ``roofline.yaml`` in ``cwd``.

    Found as the plugin finds it when pytest's rootdir is ``cwd`` (``CONFIG_FILENAME`` there,
    read by :func:`~pytest_roofline.config.settings.build_config`, so every key is validated as
    the plugin would); without one, the defaults (``docs/configuration.md``).

    :raises CliError: the file cannot be read or holds a bad value (the message names it).
    """
    if not (cwd / CONFIG_FILENAME).is_file():
        return DEFAULT_LAYERS, DEFAULTS.min_effect
    try:
        config = build_config(rootdir=cwd, cli={}, ini={})
    except ConfigError as exc:
        raise CliError(f"cannot use {cwd / CONFIG_FILENAME}: {exc}") from None
    return config.layers, config.gate.min_effect


def trend_strip_of(
    test: TestSeries,
    runs: Sequence[SeriesRun],
    history: TestHistory | None,
    *,
    last: int = 30,
    host: Mapping[int, str] | None = None,
) -> TrendStrip:
    """The trend strip of one test over the last ``last`` runs: its quantiles with intervals,
    the steps ``history`` found (positions within the strip; ``host`` holds the host-event
    reason of a step by its index) and the bound-class changes."""
    host = host or {}
    start = max(0, len(runs) - last)
    shown = runs[start:]

    def column(values: FloatArray) -> tuple[float | None, ...]:
        return tuple(float(v) if math.isfinite(v) else None for v in values[start:])

    values, lows, highs = {}, {}, {}
    for name in SERIES_QUANTILES:
        low, high = test.interval_s(name)
        values[name] = column(test.quantile_s(name))
        lows[name], highs[name] = column(low), column(high)
    marks: list[TrendMark] = []
    for step in history.steps if history is not None else ():
        if step.index >= start:
            state = "" if step.confirmed else " (not confirmed)"
            event = f"; {host[step.index]}" if step.index in host else ""
            marks.append(
                TrendMark(
                    step.index - start,
                    "step",
                    f"{step.quantile} step {_percent(step.ratio)} "
                    f"{_interval(step.ci_low, step.ci_high)}{state} at run #{step.run_id}, "
                    f"commits {_commit(step.commit_before)}..{_commit(step.commit_after)}{event}",
                )
            )
    bounds = test.bounds[start:]
    previous = None
    for i, bound in enumerate(bounds):
        if bound is None:
            continue
        if previous is not None and bound != previous:
            marks.append(
                TrendMark(
                    i, "bound", f"bound class {previous} -> {bound} at run #{shown[i].run_id}"
                )
            )
        previous = bound
    return TrendStrip(
        nodeid=test.nodeid,
        run_labels=tuple(f"#{run.run_id}" for run in shown),
        values_s=values,
        low_s=lows,
        high_s=highs,
        marks=tuple(marks),
    )
