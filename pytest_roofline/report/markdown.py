"""The compact Markdown summary (``--roofline-markdown``) for a CI step summary or a PR comment.

Rendered from the run's JSON document, like the HTML report; it decides nothing. It carries
the run decision, the count per decision and the tests that do not ship (ratio with interval,
owner, first reason), and points at the HTML report for everything else.

Test ids, owners, tags and reasons are untrusted: GitHub renders raw HTML inside Markdown, and
a ``|`` would break the table, so every such text is escaped (:func:`escape`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_roofline.report.charts import format_interval, format_ratio
from pytest_roofline.report.html import DECISION_ORDER

__all__ = ["code", "escape", "render_markdown"]

#: Characters with a meaning anywhere in a line of GitHub-flavoured Markdown or in a table cell.
_MARKDOWN_SPECIALS = frozenset("\\`*_[]|~")
#: Characters that start a block (heading, list, quote) when they open a line or a list item.
_LINE_START = frozenset("#-+=>")
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


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _decision(value: object) -> str:
    return value if isinstance(value, str) and value in DECISION_ORDER[:3] else "undecided"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _ratio(test: Mapping[str, Any], q: str) -> str:
    comp = _map(_map(test.get("change")).get(q))
    if not comp:
        return "no baseline" if test.get("baseline") is None else "n/a"
    text = format_ratio(_number(comp.get("ratio")))
    interval = format_interval(_number(comp.get("ci_low")), _number(comp.get("ci_high")))
    verdict = comp.get("verdict")
    return " ".join(
        escape(part)
        for part in (text, interval, verdict if isinstance(verdict, str) else "")
        if part
    )


def _owner(test: Mapping[str, Any]) -> str:
    owners = [str(o) for o in test.get("owners") or () if o]
    if not owners and test.get("owner"):
        owners = [str(test["owner"])]
    return escape(", ".join(owners)) if owners else "_none defined_"


def _first_reason(test: Mapping[str, Any]) -> str:
    reasons = [r for r in test.get("reasons") or () if r]
    return escape(reasons[0]) if reasons else ""


def _headline(document: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> list[str]:
    run = _map(document.get("run"))
    decision = _decision(document.get("decision"))
    word = "NO DECISION" if decision == "undecided" else decision.upper()
    label = escape(run.get("label") or "unlabelled run")
    baseline_label = run.get("baseline_label")
    baseline = (
        f"**{escape(baseline_label)}**"
        + (
            f" (run {escape(run['baseline_run_id'])})"
            if run.get("baseline_run_id") is not None
            else ""
        )
        if baseline_label
        else "no baseline"
    )
    target = escape(_map(run.get("target")).get("name") or "no target")
    counts = {d: 0 for d in DECISION_ORDER}
    for test in tests:
        counts[_decision(test.get("decision"))] += 1
    tally = " · ".join(f"{counts[d]} {d}" for d in DECISION_ORDER if counts[d] or d != "undecided")
    lines = [
        f"## pytest-roofline: **{word}**",
        "",
        f"**{label}** vs {baseline} on **{target}** · {len(tests)} tests: {tally}",
        "",
    ]
    lines += [f"- {escape(r, line_start=True)}" for r in document.get("reasons") or () if r]
    return lines


def _context(document: Mapping[str, Any]) -> list[str]:
    run = _map(document.get("run"))
    lines = []
    first = run.get("first_failing_layer")
    changes = []
    for key, change in sorted(_map(run.get("tag_diff")).items()):
        change = _map(change)
        before, after = change.get("baseline"), change.get("candidate")
        changes.append(
            f"{escape(key)} {escape('absent' if before is None else before)} → "
            f"{escape('absent' if after is None else after)}"
        )
    if changes:
        lead = f"first failing layer **{escape(first)}**; " if first else ""
        lines.append(f"Revision tags changed ({lead}{len(changes)}): " + ", ".join(changes))
    cm = _map(run.get("common_mode"))
    factor = _number(cm.get("factor"))
    if factor is not None:
        lines.append(
            f"Common-mode factor {format_ratio(factor)} over {escape(cm.get('n_tests', '?'))} tests."
        )
    return [line for item in lines for line in (item, "")]


def render_markdown(
    document: Mapping[str, Any], *, report_path: str | None = None, max_tests: int = 50
) -> str:
    """Render the Markdown summary of ``document`` (the run's JSON document).

    :param document: what :func:`~pytest_roofline.report.json_report.run_document` returns.
    :param report_path: where the HTML report was written, named in the closing pointer.
    :param max_tests: at most this many non-ship tests are listed (a PR comment has a size
        limit); the rest are counted.
    :returns: GitHub-flavoured Markdown ending in a newline.
    """
    tests = [t for t in document.get("tests") or () if isinstance(t, Mapping)]
    lines = _headline(document, tests)
    lines.append("")
    lines += _context(document)
    flagged = sorted(
        (t for t in tests if _decision(t.get("decision")) in ("rollback", "escalate")),
        key=lambda t: (
            DECISION_ORDER.index(_decision(t.get("decision"))),
            str(t.get("nodeid", "")),
        ),
    )
    if flagged:
        lines += [
            "| decision | test | p95 (90% interval) | p99 (90% interval) | owner | first reason |",
            "|---|---|---|---|---|---|",
        ]
        for test in flagged[:max_tests]:
            lines.append(
                f"| **{_decision(test.get('decision')).upper()}** | {escape(test.get('nodeid', '?'))} "
                f"| {_ratio(test, 'p95')} | {_ratio(test, 'p99')} | {_owner(test)} | {_first_reason(test)} |"
            )
        if len(flagged) > max_tests:
            lines += [
                "",
                f"…and {len(flagged) - max_tests} more non-ship test(s): see the HTML report.",
            ]
    elif tests:
        lines.append(
            f"All {len(tests)} tests ship."
            if document.get("decision") == "ship"
            else "No test needs review."
        )
    else:
        lines.append("No measured tests in this run.")
    lines.append("")
    if report_path:
        lines.append(
            f"Full signoff report (roofline chart, review memos, platform matrix): {code(report_path)}"
        )
    else:
        lines.append("Write the full signoff report with `--roofline-report=PATH`.")
    return "\n".join(lines) + "\n"
