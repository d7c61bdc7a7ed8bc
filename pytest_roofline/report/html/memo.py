"""A review memo per test that does not ship: symptom, mechanism, action, signoff, evidence."""

from __future__ import annotations

from pytest_roofline.model.document import CountersRecord, TestRecord
from pytest_roofline.report.charts.latency import ecdf_chart, timeline_chart
from pytest_roofline.report.format import (
    KEEP_FASTER_ADVICE,
    benchmark_line,
    decision_name,
    evidence_lines,
    format_interval,
    format_percent,
    format_ratio,
    format_seconds,
    got_faster,
    id_parts,
    outcome_text,
    si,
)
from pytest_roofline.report.html.table import ratio_strip
from pytest_roofline.report.html.view import CounterRow, Fact, Memo, TagRow

__all__ = ["memo"]


def _metric_facts(test: TestRecord) -> list[Fact]:
    change = test.change or {}
    facts = []
    # p50 is gated since the three-way rule; a document from before it compared p95 and p99.
    for q in ("p50", "p95", "p99") if "p50" in change else ("p95", "p99"):
        comp = change.get(q)
        cand_s = test.quantile_s(q)
        base_s = getattr(test.baseline, f"{q}_s") if test.baseline is not None else None
        if comp is None:
            facts.append(Fact(q, f"{format_seconds(cand_s)} (no baseline to compare with)"))
            continue
        verdict = comp.verdict or "no verdict"
        value = (
            f"{format_seconds(base_s)} → {format_seconds(cand_s)}: "
            f"{format_ratio(comp.ratio)} {format_interval(comp.ci_low, comp.ci_high)}, "
            f"{outcome_text(comp) or verdict}"
        )
        if comp.outcome is not None and comp.delta is not None:
            value += f" (margin +{comp.delta:.0%}, from {comp.margin_source or 'n/a'})"
        facts.append(Fact(q, value, f"v-{verdict.replace(' ', '-')}"))
    return facts


def _symptom(test: TestRecord) -> tuple[Fact, ...]:
    slice_text = (
        (test.slice or "none")
        + (f" in group {test.slice_group}" if test.slice_group else "")
        + (f" ({test.source})" if test.source else "")
    )
    sample_text = f"{test.samples} candidate" + (
        f", {test.baseline.samples} baseline" if test.baseline is not None else ""
    )
    if test.batch_size > 1:
        sample_text += f"; batched ×{test.batch_size} (tails are of batch means, not single calls)"
    return (
        *_metric_facts(test),
        Fact("Slice", slice_text),
        Fact("Samples", sample_text),
        Fact("First failing layer", test.first_failing_layer or "none identified"),
    )


def _mechanism(test: TestRecord) -> tuple[Fact, ...]:
    point = test.roofline
    if point is None:
        return (Fact("Roofline", "no roofline point (no declared work or no target)", "muted"),)
    bound, before = point.bound, point.baseline_bound
    facts = [
        Fact(
            "Bound class",
            f"{before} → {bound}" if before and before != bound else bound,
            f"b-{bound}",
        ),
        Fact("Efficiency", f"{format_percent(point.efficiency)} of the attainable roof", "num"),
        Fact(
            "Achieved",
            f"{si(point.achieved_flops_per_s, 'FLOP/s')} · "
            f"{si(point.achieved_bytes_per_s, 'B/s')} at {si(point.intensity, 'FLOP/B')}",
        ),
        Fact(
            "Attainable",
            f"{si(point.attainable_flops_per_s, 'FLOP/s')} "
            f"({point.precision or 'n/a'}, ridge {si(point.ridge, 'FLOP/B')})",
        ),
    ]
    for label, text, cls in (
        ("Data error", point.data_error, "changed"),
        ("Note", point.note, "muted"),
    ):
        if text:
            facts.append(Fact(label, text, cls))
    return tuple(facts)


def _counter_value(name: str, value: float) -> str:
    # Counter names carry their unit (docs/counters.md): "..._s" seconds, "..._bytes" bytes.
    if name.endswith("_s"):
        return format_seconds(value)
    if name.endswith("_bytes"):
        return si(value, "B")
    return f"{value:.4g}" if abs(value) < 1e6 else si(value, "")


def _counters(
    counters: CountersRecord | None,
) -> tuple[tuple[CounterRow, ...], tuple[str, ...], str | None]:
    """Collected counters with values, then one line per status that left counters out."""
    if counters is None:
        return (), (), None
    rows = []
    missing: dict[str, list[str]] = {}
    for name, status in sorted(counters.status.items()):
        value = counters.values.get(name)
        if status == "ok" and value is not None:
            rows.append(CounterRow(name, "ok", _counter_value(name, value)))
        else:
            missing.setdefault(status, []).append(name)
    notes = tuple(f"{status}: {', '.join(names)}" for status, names in sorted(missing.items()))
    summary = f"completeness {format_percent(counters.completeness)}" + (
        f", CPU share {format_percent(counters.cpu_share)}"
        if counters.cpu_share is not None
        else ""
    )
    return tuple(rows), notes + tuple(n for n in counters.notes if n), summary


def _movement(test: TestRecord) -> tuple[str, ...]:
    """Where each quantile goes if the change is undone and the baseline's speed returns."""
    moves = []
    for q in ("p50", "p95", "p99"):
        cand_s = test.quantile_s(q)
        base_s = getattr(test.baseline, f"{q}_s") if test.baseline is not None else None
        if cand_s is None or base_s is None or cand_s <= 0:
            continue
        change = base_s / cand_s - 1
        moves.append(f"{q} {format_seconds(cand_s)} → ≈ {format_seconds(base_s)} ({change:+.0%})")
    return tuple(moves)


def _faster(test: TestRecord) -> str | None:
    """For a test that got faster: there is nothing to revert (``None`` otherwise)."""
    if not got_faster(test):
        return None
    ratios = ", ".join(
        f"{q} {format_ratio(r)}" for q in ("p50", "p95", "p99") if (r := test.ratio(q)) is not None
    )
    return f"Nothing to revert: the test got faster than the baseline ({ratios})."


def _replay(test: TestRecord) -> str:
    replay = test.replay
    if replay is None or not replay.attempted:
        return "not attempted"
    runs = f"{replay.count} replay(s)"
    if replay.reproduced is True:
        return f"reproduced ({runs})"
    if replay.reproduced is False:
        return f"did not reproduce ({runs})"
    return f"{runs}, outcome unknown"


def _risks(test: TestRecord, counters_summary: str | None) -> tuple[str, ...]:
    risks = [f"replay: {_replay(test)}"]
    drift = test.drift
    if drift is not None:
        state = "drifting" if drift.drifting else "no drift flagged"
        text = (
            f"within-run drift: {state} (Kendall τ {drift.tau:.2f}, p {drift.p_value:.2g}"
            if drift.tau is not None and drift.p_value is not None
            else f"within-run drift: {state} ("
        )
        window = drift.window_change
        risks.append(
            text + (f", first → last window {window:+.0%})" if window is not None else ")")
        )
    else:
        risks.append("within-run drift: not assessed")
    risks.append(f"counters: {counters_summary}" if counters_summary else "counters: none recorded")
    if test.competing_hypotheses:
        risks.append(f"{len(test.competing_hypotheses)} competing hypothesis(es) not ruled out")
    if test.batch_size > 1:
        risks.append("batched samples: per-call tails are not observed directly")
    return tuple(risks)


def _evidence(test: TestRecord) -> tuple[Fact, ...]:
    facts = []
    for check in test.sla.checks:
        facts.append(
            Fact(
                f"SLA {check.key or '?'}",
                f"{format_seconds(check.estimate_s)} against "
                f"{format_seconds(check.threshold_s)}: {check.status or 'n/a'}",
                "sla-breach" if check.status not in (None, "ok", "met") else "",
            )
        )
    for line in evidence_lines(test):
        name, _, rest = line.partition(" ")
        if name in ("host", "paired", "sampling"):
            label = {"host": "Host canary", "paired": "Paired", "sampling": "Sampling"}
            facts.append(Fact(label[name], rest))
    benchmark = benchmark_line(test)
    if benchmark:
        facts.append(Fact("pytest-benchmark", benchmark))
    for violation in test.sla.violations:
        facts.append(Fact("SLA breach", violation, "sla-breach"))
    for name, quality in sorted(test.quality.items()):
        outcome = (
            "within tolerance"
            if quality.ok is True
            else "beyond tolerance"
            if quality.ok is False
            else "unassessed"
        )
        facts.append(
            Fact(
                f"Quality {name}",
                f"{quality.baseline} → {quality.value} (tolerance {quality.tolerance}): {outcome}",
                "sla-breach" if quality.ok is False else "",
            )
        )
    return tuple(facts)


def memo(index: int, test: TestRecord, run_changes: tuple[TagRow, ...]) -> Memo:
    """The review memo of ``test`` (the ``index``-th test of the document)."""
    rows, notes, summary = _counters(test.counters)
    candidate = list(test.series.candidate or ())
    faster = _faster(test)
    references = {
        "baseline p95": test.baseline.p95_s if test.baseline is not None else None,
        "candidate p95": test.p95_s,
    }
    return Memo(
        id=f"memo-{index}",
        row_id=f"t-{index}",
        nodeid=test.nodeid,
        id_parts=id_parts(test.nodeid),
        decision=decision_name(test.decision),
        reasons=tuple(r for r in test.reasons if r),
        owners=test.owners,
        symptom_text=test.symptom,
        symptom=_symptom(test),
        tag_changes=run_changes,
        mechanism_text=test.mechanism,
        mechanism=_mechanism(test),
        counters=rows,
        counter_notes=notes,
        hypotheses=test.competing_hypotheses,
        missing_evidence=test.missing_evidence,
        rollback_boundary=test.rollback_boundary,
        # Where the quantiles go if a change is undone: no question for an improvement.
        movement=_movement(test) if faster is None else (),
        faster=faster,
        decide=KEEP_FASTER_ADVICE if faster is not None else None,
        risks=_risks(test, summary),
        replay_command=test.replay_command,
        replay=_replay(test),
        evidence=_evidence(test),
        ecdf=ecdf_chart(candidate, list(test.series.baseline or ())),
        timeline=timeline_chart(candidate, references=references),
        strip=ratio_strip(test),
    )
