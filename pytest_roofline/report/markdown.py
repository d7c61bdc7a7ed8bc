"""The compact Markdown summary (``--roofline-markdown``) for a CI step summary or a PR comment.

Rendered from the run document, like the HTML report; it decides nothing. It carries
the run decision, the count per decision and the tests that do not ship (ratio with interval,
owner, first reason), and points at the HTML report for everything else.

Test ids, owners, tags and reasons are untrusted: GitHub renders raw HTML inside Markdown, and
a ``|`` would break the table, so every such text is escaped (:func:`escape`).
"""

from __future__ import annotations

import posixpath
from pathlib import PurePath

from pytest_roofline.model.document import RunDocument, TestRecord
from pytest_roofline.report.format import (
    DECISION_ORDER,
    benchmark_line,
    code_spans,
    decision_name,
    evidence_lines,
    format_interval,
    format_ratio,
    outcome_text,
    review_order,
    soak_line,
)

__all__ = ["code", "escape", "render_markdown"]

#: Characters with a meaning anywhere in a line of GitHub-flavoured Markdown or in a table cell.
_MARKDOWN_SPECIALS = frozenset("\\`*_[]|~")
#: Characters that start a block (heading, list, quote) when they open a line or a list item.
_LINE_START = frozenset("#-+=>")
# How the headline's decision reads in a sentence about the run.
_PAST = {"rollback": "rolled back", "escalate": "escalated"}
# HTML-significant characters become entities, which Markdown shows as the plain character.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


def escape(text: object, *, line_start: bool = False) -> str:
    """``text`` as inert Markdown: no markup, no HTML, no links, no table breaks, one line.

    :param line_start: the text opens a line or a list item, where ``#``, ``-``, ``1.`` and
        the like would start a heading or a list.
    """
    flat = " ".join(str(text).split())
    out = []
    for index, char in enumerate(flat):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _MARKDOWN_SPECIALS or (line_start and index == 0 and char in _LINE_START):
            out.append("\\" + char)
        else:
            out.append(char)
    escaped = "".join(out)
    digits = len(escaped) - len(escaped.lstrip("0123456789"))
    if line_start and digits and escaped[digits : digits + 1] in (".", ")"):
        escaped = escaped[:digits] + "\\" + escaped[digits:]
    # "://" and "www." would become links in GitHub's renderer.
    return escaped.replace("://", ":\\/\\/").replace("www.", "www\\.")


def code(text: object) -> str:
    """``text`` as an inline code span: shown literally (and copyable), never interpreted."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    longest = run = 0
    for char in flat:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _ratio(test: TestRecord, q: str) -> str:
    comp = (test.change or {}).get(q)
    if comp is None:
        return "no baseline" if test.baseline is None else "n/a"
    text = format_ratio(comp.ratio)
    interval = format_interval(comp.ci_low, comp.ci_high)
    return " ".join(escape(part) for part in (text, interval, outcome_text(comp)) if part)


def _owner(test: TestRecord) -> str:
    owners = [o for o in test.owners if o]
    return escape(", ".join(owners)) if owners else "_none defined_"


def _first_reason(test: TestRecord) -> str:
    reasons = [r for r in test.reasons if r]
    text = escape(reasons[0]) if reasons else ""
    # The quantiles have their own columns; the host, the confirmation and the stop follow.
    rest = [line for line in evidence_lines(test) if not line.startswith(("p50 ", "p95 ", "p99 "))]
    benchmark = benchmark_line(test)
    if benchmark:
        rest.append(f"pytest-benchmark {benchmark}")
    if rest:
        text += "<br>" + escape("; ".join(rest))
    return text


def _headline(document: RunDocument) -> list[str]:
    run, tests = document.run, document.tests
    decision = decision_name(document.decision)
    word = "NO DECISION" if decision == "undecided" else decision.upper()
    label = escape(run.label or "unlabelled run")
    baseline = (
        f"**{escape(run.baseline_label)}**"
        + (f" (run {escape(run.baseline_run_id)})" if run.baseline_run_id is not None else "")
        if run.baseline_label
        else "no baseline"
    )
    target = escape((run.target.name if run.target else None) or "no target")
    counts = {d: 0 for d in DECISION_ORDER}
    for test in tests:
        counts[decision_name(test.decision)] += 1
    tally = " · ".join(f"{counts[d]} {d}" for d in DECISION_ORDER if counts[d] or d != "undecided")
    lines = [
        f"## pytest-roofline: **{word}**",
        "",
        f"**{label}** vs {baseline} on **{target}** · {len(tests)} tests: {tally}",
        "",
    ]
    lines += [f"- {escape(r, line_start=True)}" for r in document.reasons if r]
    if document.next_steps:
        lines.append("")
        lines += [f"**Next step:** {_spans(step)}" for step in document.next_steps if step]
    return lines


def _spans(text: str) -> str:
    """Text with its backticked commands as code spans, everything else escaped."""
    return "".join(code(part) if is_code else escape(part) for part, is_code in code_spans(text))


def _context(document: RunDocument) -> list[str]:
    run = document.run
    lines = []
    changes = [
        f"{escape(key)} {escape('absent' if change.baseline is None else change.baseline)} → "
        f"{escape('absent' if change.candidate is None else change.candidate)}"
        for key, change in sorted(run.tag_diff.items())
    ]
    if changes:
        first = run.first_failing_layer
        lead = f"first failing layer **{escape(first)}**; " if first else ""
        lines.append(f"Revision tags changed ({lead}{len(changes)}): " + ", ".join(changes))
    cm = run.common_mode
    if cm is not None and cm.factor is not None:
        n_tests = cm.n_tests if cm.n_tests is not None else "?"
        lines.append(f"Common-mode factor {format_ratio(cm.factor)} over {escape(n_tests)} tests.")
    return [line for item in lines for line in (item, "")]


def _percent(ratio: float | None) -> str:
    return "?" if ratio is None else f"{(ratio - 1.0) * 100:+.1f}%"


def _trend_lines(document: RunDocument, max_tests: int) -> list[str]:
    """One line per test whose trend over the label's last runs has a step (none without)."""
    runs = document.run.trend
    if runs is None:
        return []
    lines = []
    for test in document.tests:
        steps = test.trend.steps if test.trend is not None else ()
        if not steps:
            continue
        found = []
        for step in steps:
            index = step.index
            run = runs.runs[index] if index is not None and 0 <= index < len(runs.runs) else None
            where = (
                "this run"
                if run is not None and run.current
                else f"run #{run.run_id}"
                if run is not None and run.run_id is not None
                else "?"
            )
            low, high = step.ci if step.ci is not None else (None, None)
            found.append(
                f"{step.quantile or '?'} {_percent(step.ratio)} [{_percent(low)}, "
                f"{_percent(high)}] at {where}"
                f"{'' if step.confirmed else ' (not confirmed)'}"
            )
        lines.append(f"- {escape(test.nodeid, line_start=True)}: {escape('; '.join(found))}")
    if not lines:
        return []
    head = (
        f"Steps over the last {len(runs.runs)} runs of {code(runs.label or '?')} "
        "(this run last; the HTML report draws each test's trend):"
    )
    more = len(lines) - max_tests
    return [head, *lines[:max_tests], *([f"…and {more} more."] if more > 0 else [])]


def report_link(report_path: str, markdown_path: str | None) -> tuple[str, str]:
    """How the summary names the HTML report: a path that works where the summary is read.

    A local absolute path means nothing in CI (the summary is read in a browser, the report is
    an artifact), so the report is named relative to the summary's directory when it lies in
    or below it, and by its file name otherwise. Returns the path and a note saying which.
    """
    report = PurePath(report_path)
    if markdown_path is not None and report.is_absolute() == PurePath(markdown_path).is_absolute():
        here = PurePath(markdown_path).parent
        try:
            relative = report.relative_to(here)
        except ValueError:
            relative = None
        if relative is not None:
            if relative.parent == PurePath("."):
                return relative.as_posix(), "written beside this summary"
            return relative.as_posix(), "path relative to this summary's directory"
    elif not report.is_absolute():
        return posixpath.normpath(report.as_posix()), "path relative to where the run was made"
    return report.name, "file name only: in CI, find it among the job's artifacts"


def render_markdown(
    document: RunDocument,
    *,
    report_path: str | None = None,
    markdown_path: str | None = None,
    report_option: str = "--roofline-report=PATH",
    max_tests: int = 50,
) -> str:
    """Render the Markdown summary of ``document``.

    :param report_path: where the HTML report was written, named in the closing pointer
        (:func:`report_link`).
    :param markdown_path: where this summary is written, so the pointer can be relative to it.
    :param report_option: the option that writes the HTML report, for the command that made
        this summary (``--roofline-report=PATH`` for pytest, ``--html PATH`` for the command).
    :param max_tests: at most this many non-ship tests are listed (a PR comment has a size
        limit); the rest are counted.
    :returns: GitHub-flavoured Markdown ending in a newline.
    """
    tests = document.tests
    lines = _headline(document)
    lines.append("")
    lines += _context(document)
    flagged = [t for t in review_order(tests) if t.decision in ("rollback", "escalate")]
    if flagged:
        lines += [
            "| decision | test | p50 (90% interval) | p95 (90% interval) | p99 (90% interval) "
            "| owner | first reason |",
            "|---|---|---|---|---|---|---|",
        ]
        for test in flagged[:max_tests]:
            lines.append(
                f"| **{decision_name(test.decision).upper()}** | {escape(test.nodeid)} "
                f"| {_ratio(test, 'p50')} | {_ratio(test, 'p95')} | {_ratio(test, 'p99')} "
                f"| {_owner(test)} | {_first_reason(test)} |"
            )
        if len(flagged) > max_tests:
            lines += [
                "",
                f"…and {len(flagged) - max_tests} more non-ship test(s): see the HTML report.",
            ]
    elif tests:
        if document.decision == "ship":
            lines.append(f"All {len(tests)} tests ship.")
        elif document.decision in ("rollback", "escalate"):
            lines.append(
                f"No single test needs review: the run {_PAST[document.decision]} for the "
                "run-level reason(s) above; the next step says what to do."
            )
        else:
            lines.append("No test needs review.")
    else:
        lines.append("No measured tests in this run.")
    soaked = [(t, line) for t in review_order(tests) if (line := soak_line(t)) is not None]
    if soaked:
        lines += ["", f"**Soak** ({len(soaked)} test(s)):"]
        lines += [f"- {escape(t.nodeid)}: {escape(line)}" for t, line in soaked[:max_tests]]
        if len(soaked) > max_tests:
            lines.append(f"- …and {len(soaked) - max_tests} more: see the HTML report.")
    lines.append("")
    trend = _trend_lines(document, max_tests)
    if trend:
        lines += [*trend, ""]
    if report_path:
        link, note = report_link(report_path, markdown_path)
        lines.append(
            "Full signoff report (roofline chart, review memos, platform matrix): "
            f"{code(link)} ({escape(note)})"
        )
    else:
        lines.append(f"Write the full signoff report with {code(report_option)}.")
    return "\n".join(lines) + "\n"
