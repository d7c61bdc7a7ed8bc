"""The report's test table: one row per test, and a paired test's per-round ratio strip."""

from __future__ import annotations

import math

from pytest_roofline.model.document import QuantileChange, RooflineRecord, SlaRecord, TestRecord
from pytest_roofline.report.format import (
    DECISION_ORDER,
    decision_name,
    format_interval,
    format_percent,
    format_ratio,
    format_seconds,
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


def _quantile_cell(test: TestRecord, q: str) -> Cell:
    cand = test.quantile_s(q)
    base = getattr(test.baseline, f"{q}_s") if test.baseline is not None else None
    sub = f"was {format_seconds(base)}" if base is not None else ""
    return Cell(format_seconds(cand), _sort_key(cand), "num", sub=sub, sub_cls="muted")


def _ratio_cell(comp: QuantileChange | None, q: str, has_baseline: bool) -> Cell:
    if comp is None:
        return Cell("n/a" if has_baseline else "no baseline", "", "num muted")
    verdict = comp.verdict or ""
    title_parts = [
        f"{q} {verdict or 'no verdict'}",
        f"p {comp.p_value:.2g}" if comp.p_value is not None else "",
        f"p (BH) {comp.p_adjusted:.2g}" if comp.p_adjusted is not None else "",
        f"margin {format_percent(comp.delta)}" if comp.delta is not None else "",
        f"detectable {format_percent(comp.mde)}" if comp.mde is not None else "",
    ]
    return Cell(
        format_ratio(comp.ratio),
        _sort_key(comp.ratio),
        f"num v-{verdict.replace(' ', '-')}" if verdict else "num",
        sub=format_interval(comp.ci_low, comp.ci_high),
        sub_cls="muted",
        title=" · ".join(p for p in title_parts if p),
    )


def _verdict_cell(change: dict[str, QuantileChange]) -> Cell:
    def verdict(q: str) -> str:
        comp = change.get(q)
        return (comp.verdict or "") if comp is not None else ""

    v95, v99, v50 = verdict("p95"), verdict("p99"), verdict("p50")
    improved = any((comp := change.get(q)) is not None and comp.improvement for q in ("p95", "p99"))
    if not v95 and not v99:
        return Cell("n/a", "", "muted")
    sub = f"p99 {v99 or 'n/a'}"
    median_flagged = v50 in ("regression", "suspect")
    if median_flagged:
        # The median is gated too; show it when it is what points at a regression.
        sub += f" · p50 {v50}"
    worst_sub = min((v99, v50), key=_VERDICT_RANK.__getitem__) if median_flagged else v99
    return Cell(
        f"p95 {v95 or 'n/a'}" + (" · improved" if improved else ""),
        str(min(_VERDICT_RANK[v95], _VERDICT_RANK[v99], _VERDICT_RANK[v50])),
        f"verdict v-{v95.replace(' ', '-')}" if v95 else "verdict muted",
        sub=sub,
        sub_cls=f"v-{worst_sub.replace(' ', '-')}" if worst_sub else "muted",
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


def _sla_cell(sla: SlaRecord) -> Cell:
    violations = tuple(v for v in sla.violations if v)
    if violations:
        return Cell(f"{len(violations)} breach", "0", "sla-breach", title="\n".join(violations))
    if sla.ok is True:
        return Cell("met", "2", "sla-ok")
    if sla.ok is False:
        return Cell("not met", "0", "sla-breach")
    if sla.checks:
        return Cell("unassessed", "1", "muted")
    return Cell("none", "3", "muted")


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
    has_baseline = test.baseline is not None
    efficiency = test.roofline.efficiency if test.roofline is not None else None
    decision = decision_name(test.decision)
    owner = owner_text(test)
    cells = (
        _quantile_cell(test, "p50"),
        _quantile_cell(test, "p95"),
        _quantile_cell(test, "p99"),
        _ratio_cell(change.get("p95"), "p95", has_baseline),
        _ratio_cell(change.get("p99"), "p99", has_baseline),
        _verdict_cell(change),
        _bound_cell(test.roofline),
        Cell(format_percent(efficiency), _sort_key(efficiency), "num"),
        _sla_cell(test.sla),
        Cell(decision, str(DECISION_ORDER.index(decision)), f"d-{decision}"),
        Cell(owner, None, "owner" if test.owners else "owner muted"),
    )
    return Row(
        index=index,
        nodeid=test.nodeid,
        slice=test.slice or "",
        source=test.source or "",
        decision=decision,
        memo_id=memo_id,
        cells=cells,
        owner=owner,
        strip=ratio_strip(test),
    )
