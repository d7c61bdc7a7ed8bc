"""The report's banner: the run's decision, what was compared, its revision tags and figures."""

from __future__ import annotations

from pytest_roofline.model.document import (
    CommonModeRecord,
    GateRecord,
    ObservabilityRecord,
    RunDocument,
    RunInfo,
)
from pytest_roofline.report.format import (
    DECISION_ORDER,
    code_spans,
    decision_name,
    format_percent,
    format_ratio,
    format_seconds,
)
from pytest_roofline.report.html.view import Banner, Fact, Figure, TagRow

__all__ = ["banner", "design_text", "paired_method"]

_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("counter_completeness", "Counter completeness", "requested counters collected"),
    ("trigger_coverage", "Trigger coverage", "non-ship tests with a full evidence capsule"),
    ("replay_success_rate", "Replay success", "flagged regressions that reproduced on replay"),
    ("escape_risk", "Escape risk", "tests whose detectable effect exceeds the gate's margin"),
)


def _figures(observability: ObservabilityRecord) -> tuple[Figure, ...]:
    figures = []
    for key, label, hint in _FIGURES:
        value: float | None = getattr(observability, key)
        figures.append(Figure(label, format_percent(value), value, hint))
    adequacy = observability.sample_adequacy
    for q in ("p95", "p99"):
        value = getattr(adequacy, q) if adequacy is not None else None
        figures.append(
            Figure(
                f"Sample adequacy {q}",
                format_percent(value),
                value,
                f"tests with enough samples for {q}",
            )
        )
    coverage = observability.slice_coverage
    for key, label, hint in (
        ("multi_shape", "Multi-shape slices", "slice groups measured on more than one shape"),
        ("production", "Production slices", "slice groups with a production slice"),
    ):
        value = getattr(coverage, key) if coverage is not None else None
        figures.append(Figure(label, format_percent(value), value, hint))
    return tuple(figures)


def tag_rows(run: RunInfo) -> tuple[TagRow, ...]:
    """The changed revision tags, the first failing layer's marked."""
    first = run.first_failing_layer
    rows = []
    for key, change in sorted(run.tag_diff.items()):
        layer = change.layer or "unassigned"
        rows.append(
            TagRow(
                key,
                "absent" if change.baseline is None else change.baseline,
                "absent" if change.candidate is None else change.candidate,
                layer,
                first is not None and layer == first,
            )
        )
    return tuple(rows)


def _common_mode(cm: CommonModeRecord | None) -> tuple[Fact, ...]:
    if cm is None:
        return ()
    return (
        Fact("Factor", format_ratio(cm.factor), "num"),
        Fact("Spread", format_percent(cm.spread), "num"),
        Fact("Escalates beyond", format_percent(cm.threshold), "num"),
        Fact("Tests", str(cm.n_tests if cm.n_tests is not None else "n/a"), "num"),
        Fact(
            "Normalised",
            "yes (ratios divided by the factor)"
            if cm.applied is True
            else "no"
            if cm.applied is False
            else "n/a",
        ),
    )


def _gate(gate: GateRecord) -> tuple[Fact, ...]:
    if gate == GateRecord():
        return ()
    return (
        Fact("Fails the run on", gate.gate_on or "n/a"),
        Fact("α (one-sided, per bound)", str(gate.alpha or "n/a"), "num"),
        Fact("Minimum effect p95", format_percent(gate.min_effect.get("p95")), "num"),
        Fact("Minimum effect p99", format_percent(gate.min_effect.get("p99")), "num"),
        Fact(
            "Replays of a flagged regression", "off" if not gate.replay else str(gate.replay), "num"
        ),
    )


def design_text(run: RunInfo) -> str | None:
    """How the run compared its tests ("two-run", or the paired design with its rounds)."""
    if run.design != "paired":
        return run.design
    ref = run.paired.baseline_ref if run.paired is not None else None
    rounds = run.rounds if run.rounds is not None else "?"
    return f"paired, {rounds} rounds (ABBA)" + (f" against {ref}" if ref else "")


def _binary_bytes(count: int) -> str:
    """``4 MiB``, ``64 KiB``, ``512 B``: a memory size in the unit the allocator thinks in.

    >>> _binary_bytes(4 << 20), _binary_bytes(96 * 1024), _binary_bytes(1536 * 1024), _binary_bytes(512)
    ('4 MiB', '96 KiB', '1.5 MiB', '512 B')
    """
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} B"


def paired_method(run: RunInfo) -> tuple[Fact, ...]:
    """What a reviewer needs to know about a paired run's design (empty for two-run designs)."""
    info = run.paired
    if run.design != "paired" or info is None:
        return ()
    facts = [
        Fact("Design", design_text(run) or "paired"),
        Fact("Baseline", f"{info.baseline_ref or '?'} ({(info.baseline_commit or '?')[:12]})"),
        Fact(
            "Candidate",
            f"current tree ({(info.candidate_commit or '?')[:12]}"
            + (", with uncommitted changes)" if info.candidate_dirty else ")"),
        ),
        Fact("Order", " ".join(info.order) or "n/a", "mono"),
        Fact(
            "Budget",
            f"{format_seconds(info.budget_s)} per test and side "
            f"({format_seconds(info.budget_per_round_s)} a round)",
        ),
    ]
    shift = info.windows.get("layout_shift_bytes")
    if shift is not None:
        facts.append(
            Fact(
                "Heap shift per window",
                f"random, up to {_binary_bytes(int(shift))} (where a test's memory lands is drawn"
                " again every window)"
                if shift
                else "off (each worker's memory layout is drawn once)",
            )
        )
    if info.worker_env:
        facts.append(
            Fact(
                "Set in both workers",
                " ".join(f"{name}={value}" for name, value in sorted(info.worker_env.items())),
                "mono",
            )
        )
    for side in ("baseline", "candidate"):
        facts.append(
            Fact(
                f"{side.capitalize()} imports",
                ", ".join(
                    f"{k} from {v}"
                    for k, v in sorted(
                        info.sides[side].resolved.items() if side in info.sides else ()
                    )
                )
                or "n/a",
                "mono",
            )
        )
    return tuple(facts)


def banner(document: RunDocument) -> Banner:
    """The banner of ``document``."""
    run, tests = document.run, document.tests
    counts = {d: 0 for d in DECISION_ORDER}
    for test in tests:
        counts[decision_name(test.decision)] += 1
    baseline = (
        f"{run.baseline_label} (run {run.baseline_run_id})"
        if run.baseline_label and run.baseline_run_id is not None
        else run.baseline_label or "no baseline"
    )
    target = run.target
    detail = " · ".join(t for t in (target.source, target.description) if t) if target else ""
    facts = tuple(
        Fact(label, value)
        for label, value in (
            ("Started", run.started),
            ("Finished", run.finished),
            ("Machine", run.machine),
            ("Design", design_text(run)),
            ("Tests", str(len(tests))),
        )
        if value
    )
    return Banner(
        decision=decision_name(document.decision),
        reasons=tuple(r for r in document.reasons if r),
        next_steps=tuple(code_spans(step) for step in document.next_steps if step),
        label=run.label or "unlabelled run",
        baseline=baseline,
        target=(target.name if target else None) or "no target",
        target_detail=detail,
        facts=facts,
        counts=tuple((d, counts[d]) for d in DECISION_ORDER if counts[d] or d != "undecided"),
        first_failing_layer=run.first_failing_layer,
        tag_changes=tag_rows(run),
        tags=tuple(sorted(run.tags.items())),
        figures=_figures(document.observability),
        common_mode=_common_mode(run.common_mode),
        gate=_gate(run.gate),
        missing_from_baseline=run.missing_from_baseline,
        missing_from_candidate=run.missing_from_candidate,
    )
