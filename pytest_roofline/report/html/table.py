"""The report's test table: one row per test, and a paired test's per-round ratio strip."""

from __future__ import annotations

import math

from pytest_roofline.model.document import QuantileChange, RooflineRecord, SlaRecord, TestRecord
from pytest_roofline.report.charts.latency import ecdf_sketch
from pytest_roofline.report.format import (
    DECISION_ORDER,
    decision_name,
    format_interval,
    format_percent,
    format_ratio,
    format_seconds,
    id_parts,
)
from pytest_roofline.report.html.view import Cell, RatioStrip, Row, StripDot, StripRow

__all__ = ["owner_text", "ratio_strip", "table_row"]

# Sort rank of a quantile's verdict: regression first, then suspect, ...
_VERDICT_RANK = {
    "regression": 0,
    "suspect": 1,
    "insufficient": 2,
    "not detected": 3,
    "ok": 4,
    "": 5,
}


def _sort_key(value: float | None) -> str:
    # Missing values sort after every number whichever way the column is sorted: the script
    # treats an empty key as "no value" and always places it last.
    return "" if value is None else f"{value:.6g}"


def owner_text(test: TestRecord) -> str:
    """The test's owners, or "none defined"."""
    return ", ".join(test.owners) if test.owners else "none defined"


def _unconfirmed(test: TestRecord) -> bool:
    """A replay measured the test again and did not reproduce its first look's regression."""
    return test.replay is not None and test.replay.attempted and test.replay.reproduced is False


def _quantile_cell(test: TestRecord, q: str) -> Cell:
    cand = test.quantile_s(q)
    base = getattr(test.baseline, f"{q}_s") if test.baseline is not None else None
    sub = f"was {format_seconds(base)}" if base is not None else ""
    title = ""
    replay = test.replay
    if replay is not None and replay.attempted:
        # Replays are compared with the baseline but not kept: the row's numbers are the first.
        outcome = (
            "reproduced the regression"
            if replay.reproduced is True
            else "did not reproduce it (its ratios are in the verdict column)"
            if replay.reproduced is False
            else "has no recorded outcome"
        )
        title = f"the first measurement ({test.samples} samples); the replay {outcome}"
    return Cell(format_seconds(cand), _sort_key(cand), "num", sub=sub, sub_cls="muted", title=title)


def _verdict_class(verdict: str, unconfirmed: bool) -> str:
    if verdict == "regression" and unconfirmed:
        return "v-unconfirmed"
    return f"v-{verdict.replace(' ', '-')}" if verdict else ""


def _ratio_cell(comp: QuantileChange | None, q: str, test: TestRecord) -> Cell:
    if comp is None:
        return Cell("n/a" if test.baseline is not None else "no baseline", "", "num muted")
    verdict = comp.verdict or ""
    unconfirmed = _unconfirmed(test) and verdict == "regression"
    title_parts = [
        f"{q} {verdict or 'no verdict'}"
        + (" on first look, not reproduced" if unconfirmed else ""),
        f"p {comp.p_value:.2g}" if comp.p_value is not None else "",
        f"p (BH) {comp.p_adjusted:.2g}" if comp.p_adjusted is not None else "",
        f"margin {format_percent(comp.delta)}" if comp.delta is not None else "",
        f"detectable {format_percent(comp.mde)}" if comp.mde is not None else "",
    ]
    cls = _verdict_class(verdict, _unconfirmed(test))
    return Cell(
        format_ratio(comp.ratio),
        _sort_key(comp.ratio),
        f"num {cls}".strip(),
        sub=format_interval(comp.ci_low, comp.ci_high),
        sub_cls="muted",
        title=" · ".join(p for p in title_parts if p),
    )


def _verdict_text(test: TestRecord, q: str) -> str:
    """A quantile's verdict as the row states it; a first-look regression that a replay did not
    reproduce shows both measurements' ratios."""
    comp = (test.change or {}).get(q)
    verdict = (comp.verdict or "") if comp is not None else ""
    if comp is None or not verdict:
        return f"{q} n/a"
    if verdict == "regression" and _unconfirmed(test):
        replays = [r for r in (test.replay.ratios.get(q, ()) if test.replay else ()) if r]
        again = ", ".join(format_ratio(r) for r in replays) or "n/a"
        # Every replay past the margin: as slow, only its own samples fell short (policy's
        # wording); otherwise the replay moved back.
        as_slow = bool(replays) and comp.delta is not None and min(replays) >= 1.0 + comp.delta
        outcome = "as slow, not established" if as_slow else "not reproduced"
        return f"{q} regression {format_ratio(comp.ratio)} on first look, replay {again}: {outcome}"
    return f"{q} {verdict}"


def _verdict_cell(test: TestRecord) -> Cell:
    change = dict(test.change or {})

    def verdict(q: str) -> str:
        comp = change.get(q)
        return (comp.verdict or "") if comp is not None else ""

    v95, v99, v50 = verdict("p95"), verdict("p99"), verdict("p50")
    improved = any((comp := change.get(q)) is not None and comp.improvement for q in ("p95", "p99"))
    if not v95 and not v99:
        return Cell("n/a", "", "muted")
    unconfirmed = _unconfirmed(test)
    sub = [_verdict_text(test, "p99")]
    median_flagged = v50 in ("regression", "suspect")
    if median_flagged:
        # The median is gated too; show it when it is what points at a regression.
        sub.append(_verdict_text(test, "p50"))
    worst_sub = min((v99, v50), key=_VERDICT_RANK.__getitem__) if median_flagged else v99

    def rank(v: str) -> int:
        # A regression that did not reproduce ranks with the suspects.
        return _VERDICT_RANK["suspect"] if v == "regression" and unconfirmed else _VERDICT_RANK[v]

    title = ""
    shift = test.common_mode_applied
    # Only a shift the ratio's two decimals would show (×1.00 changes nothing a reader sees).
    if shift is not None and abs(shift - 1) >= 0.005:
        title = (
            f"ratios are candidate ÷ baseline after dividing out the run's shift {format_ratio(shift)}, "
            "so they differ from the quantiles ÷ 'was'"
        )
    return Cell(
        _verdict_text(test, "p95") + (" · improved" if improved else ""),
        str(min(rank(v95), rank(v99), rank(v50))),
        f"verdict {_verdict_class(v95, unconfirmed)}" if v95 else "verdict muted",
        sub=" · ".join(sub),
        sub_cls=_verdict_class(worst_sub, unconfirmed) or "muted",
        title=title,
    )


def _bound_cell(point: RooflineRecord | None) -> Cell:
    if point is None:
        return Cell("n/a", "", "muted")
    bound, before = point.bound, point.baseline_bound
    changed = point.bound_changed is True
    sub = ""
    if before is not None:
        sub = f"was {before}" if changed or before != bound else "unchanged"
    return Cell(
        bound,
        None,
        f"b-{bound}",
        sub=sub,
        sub_cls="changed" if changed else "muted",
        title=point.note or point.data_error or "",
    )


# Each SLA check's status as the cell shows it, worst first: (text, sort rank, class). Only
# "met" says met; a check that could not be assessed or was not confirmed says so.
_SLA_SHOWN: tuple[tuple[str, str, str, str], ...] = (
    ("breach", "breach", "0", "sla-breach"),
    ("possible breach", "possible breach", "1", "sla-possible"),
    ("unassessable", "unassessed", "1", "sla-possible"),
    ("not detected", "unconfirmed", "2", "muted"),
    ("met", "met", "3", "sla-ok"),
)


def _sla_cell(sla: SlaRecord) -> Cell:
    """The worst of the test's SLA checks: a breach, a possible breach, unassessed, unconfirmed,
    or met when every check is confidently met."""
    checks = [c for c in sla.checks if c.status is not None]
    title = "\n".join(c.detail or f"{c.key}: {c.status}" for c in checks)
    for status, text, rank, cls in _SLA_SHOWN:
        hits = [c for c in checks if c.status == status]
        if hits:
            shown = f"{len(hits)} breach" if status == "breach" else text
            return Cell(shown, rank, cls, title=title)
    # A document that recorded no per-check status (or none this version knows).
    violations = tuple(v for v in sla.violations if v)
    if violations:
        return Cell(f"{len(violations)} breach", "0", "sla-breach", title="\n".join(violations))
    if sla.ok is False:
        return Cell("not met", "0", "sla-breach")
    if sla.ok is True and not sla.checks:
        return Cell("met", "3", "sla-ok")
    if sla.checks:
        return Cell("unassessed", "1", "muted")
    return Cell("none", "4", "muted")


_STRIP_WIDTH, _STRIP_LEFT, _STRIP_RIGHT = 168.0, 26.0, 162.0


def ratio_strip(test: TestRecord) -> RatioStrip | None:
    """The per-round ratio strip of a paired test (``None`` for a two-run test)."""
    info = test.paired
    if info is None:
        return None
    change = test.change or {}
    rows_in: list[tuple[str, list[float], float | None]] = []
    for q in ("p50", "p95", "p99"):
        values = [v for v in info.ratios.get(q, ()) if v is not None and v > 0]
        if not values:
            continue
        combined = change[q].ratio if q in change else None
        rows_in.append((q, values, combined if combined is not None and combined > 0 else None))
    if not rows_in:
        return None
    everything = [1.0] + [v for _, vs, c in rows_in for v in (*vs, *([c] if c else []))]
    low, high = math.log(min(everything) / 1.05), math.log(max(everything) * 1.05)

    def x(value: float) -> float:
        return _STRIP_LEFT + (math.log(value) - low) / (high - low) * (_STRIP_RIGHT - _STRIP_LEFT)

    rows = []
    for i, (q, values, combined) in enumerate(rows_in):
        # Rounds keep their order in the titles so a reviewer can match them to the run's log.
        dots = tuple(
            StripDot(round(x(v), 1), f"{q} round {n + 1}: {format_ratio(v)}")
            for n, v in enumerate(values)
        )
        rows.append(StripRow(q, 8.0 + 12.0 * i, round(x(combined), 1) if combined else None, dots))
    label = f"candidate ÷ baseline per round ({info.rounds} rounds): " + "; ".join(
        f"{q} " + " ".join(format_ratio(v) for v in values) for q, values, _ in rows_in
    )
    return RatioStrip(
        width=_STRIP_WIDTH,
        height=2.0 + 10.0 * len(rows),
        left=_STRIP_LEFT,
        right=_STRIP_RIGHT,
        one_x=round(x(1.0), 1),
        rows=tuple(rows),
        label=label,
    )


def table_row(index: int, test: TestRecord, memo_id: str | None) -> Row:
    """The table row of ``test`` (``memo_id``: its review memo, when it has one)."""
    change = dict(test.change or {})
    efficiency = test.roofline.efficiency if test.roofline is not None else None
    decision = decision_name(test.decision)
    owner = owner_text(test)
    cells = (
        _quantile_cell(test, "p50"),
        _quantile_cell(test, "p95"),
        _quantile_cell(test, "p99"),
        _ratio_cell(change.get("p95"), "p95", test),
        _ratio_cell(change.get("p99"), "p99", test),
        _verdict_cell(test),
        _bound_cell(test.roofline),
        Cell(format_percent(efficiency), _sort_key(efficiency), "num"),
        _sla_cell(test.sla),
        Cell(decision, str(DECISION_ORDER.index(decision)), f"d-{decision}"),
        Cell(owner, None, "owner" if test.owners else "owner muted"),
    )
    return Row(
        index=index,
        nodeid=test.nodeid,
        id_parts=id_parts(test.nodeid),
        slice=test.slice or "",
        source=test.source or "",
        decision=decision,
        memo_id=memo_id,
        cells=cells,
        owner=owner,
        strip=ratio_strip(test),
        dist=ecdf_sketch(test.series.candidate, test.series.baseline),
    )
