"""The self-contained HTML signoff report (DESIGN 9), rendered from the run's JSON document.

The JSON document (:func:`pytest_roofline.report.json_report.run_document`) is the source of
truth: this module reads it, formats numbers and lays out charts, and never decides anything.
Every field may be missing or ``null`` (older documents, runs without a baseline); a gap is
shown as a gap ("no baseline", "n/a"), never guessed.

The page is one file: CSS, SVG and a small sorting/filtering script inline, no external URL, so
it opens offline from a CI artifact. Its Content-Security-Policy allows no network at all and
only the one inline script (by hash), so even a markup bug could not run injected script.
Test ids, owners, tags and reasons are untrusted text: Jinja's autoescape renders them inert.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pytest_roofline.units import format_seconds
from pytest_roofline.errors import ConfigError
from pytest_roofline.hardware.target import HardwareTarget, load_presets
from pytest_roofline.report import charts
from pytest_roofline.report.charts import (
    LineChart,
    MatrixCell,
    PointInput,
    RooflineChart,
    format_interval,
    format_percent,
    format_ratio,
    si,
)
from pytest_roofline.report.json_report import write_atomic
from pytest_roofline.roofline import DEFAULT_OVERHEAD_EFFICIENCY, DEFAULT_RIDGE_MARGIN, DeclaredWork
from pytest_roofline.stats import ABS_FLOOR_S, n_floor

__all__ = ["render_html", "write_html"]

#: Decisions, in the order a reviewer works through them; anything else shows as "undecided".
DECISION_ORDER: tuple[str, ...] = ("rollback", "escalate", "ship", "undecided")
_VERDICTS = ("insufficient", "regression", "suspect", "ok", "not detected")
_BOUNDS = ("compute", "memory", "overhead", "ambiguous", "unknown")
_TEMPLATE = "report.html.j2"
_SCRIPT = "report.js"


# --------------------------------------------------------------------------- reading the document
def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _text(value: object) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in _list(value) if v is not None and v != "")


def _decision(value: object) -> str:
    return value if isinstance(value, str) and value in DECISION_ORDER[:3] else "undecided"


def _known(value: object, allowed: Sequence[str], default: str) -> str:
    return value if isinstance(value, str) and value in allowed else default


def _sort_key(value: float | None) -> str:
    # Missing values sort after every number whichever way the column is sorted: the script
    # treats an empty key as "no value" and always places it last.
    return "" if value is None else f"{value:.6g}"


def _owners(test: Mapping[str, Any]) -> tuple[str, ...]:
    owners = _texts(test.get("owners"))
    if owners:
        return owners
    owner = _text(test.get("owner"))
    return (owner,) if owner else ()


# --------------------------------------------------------------------------- view model
@dataclass(frozen=True, slots=True)
class Fact:
    """A labelled value in a memo or the banner; ``cls`` styles the value."""

    label: str
    value: str
    cls: str = ""


@dataclass(frozen=True, slots=True)
class Figure:
    """An observability figure: a share with a meter (``fraction`` in [0, 1]) and its meaning."""

    label: str
    value: str
    fraction: float | None
    hint: str


@dataclass(frozen=True, slots=True)
class TagChange:
    key: str
    baseline: str
    candidate: str
    layer: str
    first_failing: bool


@dataclass(frozen=True, slots=True)
class Banner:
    decision: str
    reasons: tuple[str, ...]
    label: str
    baseline: str
    target: str
    target_detail: str
    facts: tuple[Fact, ...]
    counts: tuple[tuple[str, int], ...]
    first_failing_layer: str | None
    tag_changes: tuple[TagChange, ...]
    tags: tuple[tuple[str, str], ...]
    figures: tuple[Figure, ...]
    common_mode: tuple[Fact, ...]
    gate: tuple[Fact, ...]
    missing_from_baseline: tuple[str, ...]
    missing_from_candidate: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Cell:
    """A table cell: main text, an optional second line, classes, hover text and sort key.

    ``sort`` is ``None`` when the cell's text is its own sort key (the script reads the text).
    """

    text: str
    sort: str | None
    cls: str = ""
    sub: str = ""
    sub_cls: str = ""
    title: str = ""


@dataclass(frozen=True, slots=True)
class StripDot:
    x: float
    title: str


@dataclass(frozen=True, slots=True)
class StripRow:
    """One quantile's per-round ratios on a paired run's strip (log scale, ratio 1 at ``one_x``)."""

    label: str
    y: float
    combined_x: float | None
    dots: tuple[StripDot, ...]


@dataclass(frozen=True, slots=True)
class RatioStrip:
    """The per-round candidate / baseline ratios of a paired test: is the change consistent?"""

    width: float
    height: float
    left: float
    right: float
    one_x: float
    rows: tuple[StripRow, ...]
    label: str


@dataclass(frozen=True, slots=True)
class Row:
    index: int
    nodeid: str
    slice: str
    source: str
    decision: str
    memo_id: str | None
    cells: tuple[Cell, ...]
    owner: str
    strip: RatioStrip | None = None


@dataclass(frozen=True, slots=True)
class CounterRow:
    name: str
    status: str
    value: str


@dataclass(frozen=True, slots=True)
class Memo:
    id: str
    row_id: str
    nodeid: str
    decision: str
    reasons: tuple[str, ...]
    owners: tuple[str, ...]
    symptom_text: str | None
    symptom: tuple[Fact, ...]
    tag_changes: tuple[TagChange, ...]
    mechanism_text: str | None
    mechanism: tuple[Fact, ...]
    counters: tuple[CounterRow, ...]
    counter_notes: tuple[str, ...]
    hypotheses: tuple[str, ...]
    missing_evidence: tuple[str, ...]
    rollback_boundary: str | None
    movement: tuple[str, ...]
    risks: tuple[str, ...]
    replay_command: str | None
    replay: str
    evidence: tuple[Fact, ...]
    ecdf: LineChart | None
    timeline: LineChart | None
    strip: RatioStrip | None = None


@dataclass(frozen=True, slots=True)
class MatrixTarget:
    name: str
    title: str
    current: bool


@dataclass(frozen=True, slots=True)
class MatrixRow:
    nodeid: str
    work: str
    measured: str
    cells: tuple[MatrixCell, ...]


@dataclass(frozen=True, slots=True)
class Matrix:
    targets: tuple[MatrixTarget, ...]
    rows: tuple[MatrixRow, ...]
    undeclared: int


@dataclass(frozen=True, slots=True)
class ReportView:
    """Everything ``report.html.j2`` draws; built by :func:`build_view`."""

    title: str
    banner: Banner
    chart: RooflineChart | None
    rows: tuple[Row, ...]
    memos: tuple[Memo, ...]
    matrix: Matrix
    gate: tuple[Fact, ...]
    method: tuple[Fact, ...]
    versions: tuple[tuple[str, str], ...]
    generated: str
    paired: tuple[Fact, ...] = ()


# --------------------------------------------------------------------------- banner
_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("counter_completeness", "Counter completeness", "requested counters collected"),
    ("trigger_coverage", "Trigger coverage", "non-ship tests with a full evidence capsule"),
    ("replay_success_rate", "Replay success", "flagged regressions that reproduced on replay"),
    ("escape_risk", "Escape risk", "tests whose detectable effect exceeds the gate's margin"),
)


def _figures(observability: Mapping[str, Any]) -> tuple[Figure, ...]:
    figures = []
    for key, label, hint in _FIGURES:
        value = _num(observability.get(key))
        figures.append(Figure(label, format_percent(value), value, hint))
    adequacy = _map(observability.get("sample_adequacy"))
    for q in ("p95", "p99"):
        value = _num(adequacy.get(q))
        figures.append(
            Figure(
                f"Sample adequacy {q}",
                format_percent(value),
                value,
                f"tests with enough samples for {q}",
            )
        )
    coverage = _map(observability.get("slice_coverage"))
    for key, label, hint in (
        ("multi_shape", "Multi-shape slices", "slice groups measured on more than one shape"),
        ("production", "Production slices", "slice groups with a production slice"),
    ):
        value = _num(coverage.get(key))
        figures.append(Figure(label, format_percent(value), value, hint))
    return tuple(figures)


def _tag_changes(run: Mapping[str, Any]) -> tuple[TagChange, ...]:
    first = _text(run.get("first_failing_layer"))
    changes = []
    for key, change in sorted(_map(run.get("tag_diff")).items()):
        if isinstance(change, Mapping):
            base, cand, layer = change.get("baseline"), change.get("candidate"), change.get("layer")
        elif isinstance(change, (list, tuple)) and len(change) == 2:
            base, cand, layer = change[0], change[1], None
        else:
            continue
        layer_text = _text(layer) or "unassigned"
        changes.append(
            TagChange(
                str(key),
                "absent" if base is None else str(base),
                "absent" if cand is None else str(cand),
                layer_text,
                first is not None and layer_text == first,
            )
        )
    return tuple(changes)


def _common_mode(run: Mapping[str, Any]) -> tuple[Fact, ...]:
    cm = run.get("common_mode")
    if not isinstance(cm, Mapping):
        return ()
    factor = _num(cm.get("factor"))
    threshold = _num(cm.get("threshold"))
    spread = _num(cm.get("spread"))
    applied = cm.get("applied")
    return (
        Fact("Factor", format_ratio(factor), "num"),
        Fact("Spread", format_percent(spread), "num"),
        Fact("Escalates beyond", format_percent(threshold), "num"),
        Fact("Tests", str(cm.get("n_tests", "n/a")), "num"),
        Fact(
            "Normalised",
            "yes (ratios divided by the factor)"
            if applied is True
            else "no"
            if applied is False
            else "n/a",
        ),
    )


def _gate(run: Mapping[str, Any]) -> tuple[Fact, ...]:
    gate = _map(run.get("gate"))
    if not gate:
        return ()
    min_effect = _map(gate.get("min_effect"))
    replay = gate.get("replay")
    return (
        Fact("Fails the run on", _text(gate.get("gate_on")) or "n/a"),
        Fact("α (one-sided, per bound)", str(_num(gate.get("alpha")) or "n/a"), "num"),
        Fact("Minimum effect p95", format_percent(_num(min_effect.get("p95"))), "num"),
        Fact("Minimum effect p99", format_percent(_num(min_effect.get("p99"))), "num"),
        Fact("Replays of a flagged regression", "off" if not replay else str(replay), "num"),
    )


def _design(run: Mapping[str, Any]) -> str | None:
    design = _text(run.get("design"))
    if design != "paired":
        return design
    rounds = run.get("rounds")
    ref = _text(_map(run.get("paired")).get("baseline_ref"))
    return f"paired, {rounds if isinstance(rounds, int) else '?'} rounds (ABBA)" + (
        f" against {ref}" if ref else ""
    )


def _banner(document: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> Banner:
    run = _map(document.get("run"))
    target = _map(run.get("target"))
    counts = {d: 0 for d in DECISION_ORDER}
    for test in tests:
        counts[_decision(test.get("decision"))] += 1
    baseline_label = _text(run.get("baseline_label"))
    baseline_id = run.get("baseline_run_id")
    baseline = (
        f"{baseline_label} (run {baseline_id})"
        if baseline_label and baseline_id is not None
        else baseline_label or "no baseline"
    )
    target_name = _text(target.get("name")) or "no target"
    detail = " · ".join(
        t for t in (_text(target.get("source")), _text(target.get("description"))) if t
    )
    facts = tuple(
        Fact(label, value)
        for label, value in (
            ("Started", _text(run.get("started"))),
            ("Finished", _text(run.get("finished"))),
            ("Machine", _text(run.get("machine"))),
            ("Design", _design(run)),
            ("Tests", str(len(tests))),
        )
        if value
    )
    return Banner(
        decision=_decision(document.get("decision")),
        reasons=_texts(document.get("reasons")),
        label=_text(run.get("label")) or "unlabelled run",
        baseline=baseline,
        target=target_name,
        target_detail=detail,
        facts=facts,
        counts=tuple((d, counts[d]) for d in DECISION_ORDER if counts[d] or d != "undecided"),
        first_failing_layer=_text(run.get("first_failing_layer")),
        tag_changes=_tag_changes(run),
        tags=tuple((str(k), str(v)) for k, v in sorted(_map(run.get("tags")).items())),
        figures=_figures(_map(document.get("observability"))),
        common_mode=_common_mode(run),
        gate=_gate(run),
        missing_from_baseline=_texts(run.get("missing_from_baseline")),
        missing_from_candidate=_texts(run.get("missing_from_candidate")),
    )


# --------------------------------------------------------------------------- table
def _quantile_cell(test: Mapping[str, Any], q: str) -> Cell:
    cand = _num(test.get(f"{q}_s"))
    base = _num(_map(test.get("baseline")).get(f"{q}_s"))
    sub = f"was {format_seconds(base)}" if base is not None else ""
    return Cell(format_seconds(cand), _sort_key(cand), "num", sub=sub, sub_cls="muted")


def _ratio_cell(change: Mapping[str, Any], q: str, has_baseline: bool) -> Cell:
    comp = _map(change.get(q))
    ratio = _num(comp.get("ratio"))
    verdict = _known(comp.get("verdict"), _VERDICTS, "")
    if not comp:
        return Cell("n/a" if has_baseline else "no baseline", "", "num muted")
    p_value, p_adjusted = _num(comp.get("p_value")), _num(comp.get("p_adjusted"))
    delta, mde = _num(comp.get("delta")), _num(comp.get("mde"))
    title_parts = [
        f"{q} {verdict or 'no verdict'}",
        f"p {p_value:.2g}" if p_value is not None else "",
        f"p (BH) {p_adjusted:.2g}" if p_adjusted is not None else "",
        f"margin {format_percent(delta)}" if delta is not None else "",
        f"detectable {format_percent(mde)}" if mde is not None else "",
    ]
    return Cell(
        format_ratio(ratio),
        _sort_key(ratio),
        f"num v-{verdict.replace(' ', '-')}" if verdict else "num",
        sub=format_interval(_num(comp.get("ci_low")), _num(comp.get("ci_high"))),
        sub_cls="muted",
        title=" · ".join(p for p in title_parts if p),
    )


def _verdict_cell(change: Mapping[str, Any]) -> Cell:
    v95 = _known(_map(change.get("p95")).get("verdict"), _VERDICTS, "")
    v99 = _known(_map(change.get("p99")).get("verdict"), _VERDICTS, "")
    improved = (
        _map(change.get("p95")).get("improvement") is True
        or _map(change.get("p99")).get("improvement") is True
    )
    v50 = _known(_map(change.get("p50")).get("verdict"), _VERDICTS, "")
    if not v95 and not v99:
        return Cell("n/a", "", "muted")
    # Sort by the worst verdict: regression first, then suspect, ...
    rank = {"regression": 0, "suspect": 1, "insufficient": 2, "not detected": 3, "ok": 4, "": 5}
    sub = f"p99 {v99 or 'n/a'}"
    if v50 in ("regression", "suspect"):
        # The median is gated too; show it when it is what points at a regression.
        sub += f" · p50 {v50}"
    worst_sub = min((v99, v50), key=rank.__getitem__) if v50 in ("regression", "suspect") else v99
    return Cell(
        f"p95 {v95 or 'n/a'}" + (" · improved" if improved else ""),
        str(min(rank[v95], rank[v99], rank[v50])),
        f"verdict v-{v95.replace(' ', '-')}" if v95 else "verdict muted",
        sub=sub,
        sub_cls=f"v-{worst_sub.replace(' ', '-')}" if worst_sub else "muted",
    )


def _bound_cell(point: Mapping[str, Any]) -> Cell:
    if not point:
        return Cell("n/a", "", "muted")
    bound = _known(point.get("bound"), _BOUNDS, "unknown")
    before = point.get("baseline_bound")
    changed = point.get("bound_changed") is True
    sub = ""
    if isinstance(before, str) and before in _BOUNDS:
        sub = f"was {before}" if changed or before != bound else "unchanged"
    return Cell(
        bound,
        None,
        f"b-{bound}",
        sub=sub,
        sub_cls="changed" if changed else "muted",
        title=_text(point.get("note")) or _text(point.get("data_error")) or "",
    )


def _sla_cell(sla: Mapping[str, Any]) -> Cell:
    violations = _texts(sla.get("violations"))
    ok = sla.get("ok")
    if violations:
        return Cell(f"{len(violations)} breach", "0", "sla-breach", title="\n".join(violations))
    if ok is True:
        return Cell("met", "2", "sla-ok")
    if ok is False:
        return Cell("not met", "0", "sla-breach")
    if _list(sla.get("checks")):
        return Cell("unassessed", "1", "muted")
    return Cell("none", "3", "muted")


_STRIP_WIDTH, _STRIP_LEFT, _STRIP_RIGHT = 168.0, 26.0, 162.0


def _strip(test: Mapping[str, Any]) -> RatioStrip | None:
    """The per-round ratio strip of a paired test (``None`` for a two-run test)."""
    info = _map(test.get("paired"))
    ratios = _map(info.get("ratios"))
    change = _map(test.get("change"))
    rows_in: list[tuple[str, list[float], float | None]] = []
    for q in ("p50", "p95", "p99"):
        values = [v for v in (_num(x) for x in _list(ratios.get(q))) if v is not None and v > 0]
        if not values:
            continue
        combined = _num(_map(change.get(q)).get("ratio"))
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
    rounds = info.get("rounds")
    label = f"candidate ÷ baseline per round ({rounds} rounds): " + "; ".join(
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


def _row(index: int, test: Mapping[str, Any], memo_id: str | None) -> Row:
    change = _map(test.get("change"))
    has_baseline = isinstance(test.get("baseline"), Mapping)
    point = _map(test.get("roofline"))
    efficiency = _num(point.get("efficiency"))
    decision = _decision(test.get("decision"))
    owners = _owners(test)
    owner = ", ".join(owners) if owners else "none defined"
    cells = (
        _quantile_cell(test, "p50"),
        _quantile_cell(test, "p95"),
        _quantile_cell(test, "p99"),
        _ratio_cell(change, "p95", has_baseline),
        _ratio_cell(change, "p99", has_baseline),
        _verdict_cell(change),
        _bound_cell(point),
        Cell(format_percent(efficiency), _sort_key(efficiency), "num"),
        _sla_cell(_map(test.get("sla"))),
        Cell(decision, str(DECISION_ORDER.index(decision)), f"d-{decision}"),
        Cell(owner, None, "owner" if owners else "owner muted"),
    )
    return Row(
        index=index,
        nodeid=str(test.get("nodeid", f"test #{index}")),
        slice=_text(test.get("slice")) or "",
        source=_text(test.get("source")) or "",
        decision=decision,
        memo_id=memo_id,
        cells=cells,
        owner=owner,
        strip=_strip(test),
    )


# --------------------------------------------------------------------------- memos
def _metric_facts(test: Mapping[str, Any]) -> list[Fact]:
    change = _map(test.get("change"))
    base = _map(test.get("baseline"))
    facts = []
    for q in ("p95", "p99"):
        comp = _map(change.get(q))
        cand_s, base_s = _num(test.get(f"{q}_s")), _num(base.get(f"{q}_s"))
        if not comp:
            value = f"{format_seconds(cand_s)} (no baseline to compare with)"
            facts.append(Fact(q, value))
            continue
        verdict = _known(comp.get("verdict"), _VERDICTS, "no verdict")
        interval = format_interval(_num(comp.get("ci_low")), _num(comp.get("ci_high")))
        value = (
            f"{format_seconds(base_s)} → {format_seconds(cand_s)}: "
            f"{format_ratio(_num(comp.get('ratio')))} {interval}, {verdict}"
        )
        facts.append(Fact(q, value, f"v-{verdict.replace(' ', '-')}"))
    return facts


def _symptom(test: Mapping[str, Any]) -> tuple[Fact, ...]:
    slice_name = _text(test.get("slice")) or "none"
    group = _text(test.get("slice_group"))
    source = _text(test.get("source"))
    slice_text = (
        slice_name + (f" in group {group}" if group else "") + (f" ({source})" if source else "")
    )
    samples = test.get("samples")
    batch = test.get("batch_size")
    sample_text = f"{samples} candidate" + (
        f", {_map(test.get('baseline')).get('samples')} baseline" if test.get("baseline") else ""
    )
    if isinstance(batch, int) and batch > 1:
        sample_text += f"; batched ×{batch} (tails are of batch means, not single calls)"
    return (
        *_metric_facts(test),
        Fact("Slice", slice_text),
        Fact("Samples", sample_text),
        Fact("First failing layer", _text(test.get("first_failing_layer")) or "none identified"),
    )


def _mechanism(test: Mapping[str, Any]) -> tuple[Fact, ...]:
    point = _map(test.get("roofline"))
    if not point:
        return (Fact("Roofline", "no roofline point (no declared work or no target)", "muted"),)
    bound = _known(point.get("bound"), _BOUNDS, "unknown")
    before = _text(point.get("baseline_bound"))
    facts = [
        Fact(
            "Bound class",
            f"{before} → {bound}" if before and before != bound else bound,
            f"b-{bound}",
        ),
        Fact(
            "Efficiency",
            f"{format_percent(_num(point.get('efficiency')))} of the attainable roof",
            "num",
        ),
        Fact(
            "Achieved",
            f"{si(_num(point.get('achieved_flops_per_s')), 'FLOP/s')} · "
            f"{si(_num(point.get('achieved_bytes_per_s')), 'B/s')} at "
            f"{si(_num(point.get('intensity')), 'FLOP/B')}",
        ),
        Fact(
            "Attainable",
            f"{si(_num(point.get('attainable_flops_per_s')), 'FLOP/s')} "
            f"({_text(point.get('precision')) or 'n/a'}, ridge {si(_num(point.get('ridge')), 'FLOP/B')})",
        ),
    ]
    for label, key, cls in (("Data error", "data_error", "changed"), ("Note", "note", "muted")):
        text = _text(point.get(key))
        if text:
            facts.append(Fact(label, text, cls))
    return tuple(facts)


def _counter_value(name: str, value: float) -> str:
    # Counter names carry their unit (DESIGN 4): "..._s" seconds, "..._bytes" bytes.
    if name.endswith("_s"):
        return format_seconds(value)
    if name.endswith("_bytes"):
        return si(value, "B")
    return f"{value:.4g}" if abs(value) < 1e6 else si(value, "")


def _counters(
    test: Mapping[str, Any],
) -> tuple[tuple[CounterRow, ...], tuple[str, ...], str | None]:
    """Collected counters with values, then one line per status that left counters out."""
    counters = test.get("counters")
    if not isinstance(counters, Mapping):
        return (), (), None
    values = _map(counters.get("values"))
    rows = []
    missing: dict[str, list[str]] = {}
    for name, status in sorted(_map(counters.get("status")).items()):
        value = _num(values.get(name))
        if status == "ok" and value is not None:
            rows.append(CounterRow(str(name), "ok", _counter_value(str(name), value)))
        else:
            missing.setdefault(str(status), []).append(str(name))
    notes = tuple(f"{status}: {', '.join(names)}" for status, names in sorted(missing.items()))
    completeness = format_percent(_num(counters.get("completeness")))
    share = _num(counters.get("cpu_share"))
    summary = f"completeness {completeness}" + (
        f", CPU share {format_percent(share)}" if share is not None else ""
    )
    return tuple(rows), notes + _texts(counters.get("notes")), summary


def _movement(test: Mapping[str, Any]) -> tuple[str, ...]:
    """Where each quantile goes if the change is undone and the baseline's speed returns."""
    base = _map(test.get("baseline"))
    moves = []
    for q in ("p50", "p95", "p99"):
        cand_s, base_s = _num(test.get(f"{q}_s")), _num(base.get(f"{q}_s"))
        if cand_s is None or base_s is None or cand_s <= 0:
            continue
        change = base_s / cand_s - 1
        moves.append(f"{q} {format_seconds(cand_s)} → ≈ {format_seconds(base_s)} ({change:+.0%})")
    return tuple(moves)


def _replay(test: Mapping[str, Any]) -> str:
    replay = test.get("replay")
    if not isinstance(replay, Mapping) or not replay.get("attempted"):
        return "not attempted"
    reproduced = replay.get("reproduced")
    count = replay.get("count")
    runs = f"{count} replay(s)" if count is not None else "replay"
    if reproduced is True:
        return f"reproduced ({runs})"
    if reproduced is False:
        return f"did not reproduce ({runs})"
    return f"{runs}, outcome unknown"


def _risks(test: Mapping[str, Any], counters_summary: str | None) -> tuple[str, ...]:
    risks = [f"replay: {_replay(test)}"]
    drift = test.get("drift")
    if isinstance(drift, Mapping):
        tau, p = _num(drift.get("tau")), _num(drift.get("p_value"))
        window = _num(drift.get("window_change"))
        state = "drifting" if drift.get("drifting") is True else "no drift flagged"
        risks.append(
            f"within-run drift: {state} (Kendall τ {tau:.2f}, p {p:.2g}"
            if tau is not None and p is not None
            else f"within-run drift: {state} ("
        )
        risks[-1] += f", first → last window {window:+.0%})" if window is not None else ")"
    else:
        risks.append("within-run drift: not assessed")
    risks.append(f"counters: {counters_summary}" if counters_summary else "counters: none recorded")
    hypotheses = _texts(test.get("competing_hypotheses"))
    if hypotheses:
        risks.append(f"{len(hypotheses)} competing hypothesis(es) not ruled out")
    if test.get("batched") is True:
        risks.append("batched samples: per-call tails are not observed directly")
    return tuple(risks)


def _evidence(test: Mapping[str, Any]) -> tuple[Fact, ...]:
    facts = []
    sla = _map(test.get("sla"))
    for check in _list(sla.get("checks")):
        check = _map(check)
        facts.append(
            Fact(
                f"SLA {check.get('key', '?')}",
                f"{format_seconds(_num(check.get('estimate_s')))} against "
                f"{format_seconds(_num(check.get('threshold_s')))}: {check.get('status', 'n/a')}",
                "sla-breach" if check.get("status") not in (None, "ok", "met") else "",
            )
        )
    for violation in _texts(sla.get("violations")):
        facts.append(Fact("SLA breach", violation, "sla-breach"))
    for name, quality in sorted(_map(test.get("quality")).items()):
        quality = _map(quality)
        ok = quality.get("ok")
        facts.append(
            Fact(
                f"Quality {name}",
                f"{quality.get('baseline', 'n/a')} → {quality.get('value', 'n/a')}"
                f" (tolerance {quality.get('tolerance', 'none')}): "
                + (
                    "within tolerance"
                    if ok is True
                    else "beyond tolerance"
                    if ok is False
                    else "unassessed"
                ),
                "sla-breach" if ok is False else "",
            )
        )
    return tuple(facts)


def _memo(index: int, test: Mapping[str, Any], run_changes: tuple[TagChange, ...]) -> Memo:
    rows, notes, summary = _counters(test)
    series = _map(test.get("series"))
    base = _map(test.get("baseline"))
    cand_series = _list(series.get("candidate"))
    references = {
        "baseline p95": _num(base.get("p95_s")),
        "candidate p95": _num(test.get("p95_s")),
    }
    return Memo(
        id=f"memo-{index}",
        row_id=f"t-{index}",
        nodeid=str(test.get("nodeid", f"test #{index}")),
        decision=_decision(test.get("decision")),
        reasons=_texts(test.get("reasons")),
        owners=_owners(test),
        symptom_text=_text(test.get("symptom")),
        symptom=_symptom(test),
        tag_changes=run_changes,
        mechanism_text=_text(test.get("mechanism")),
        mechanism=_mechanism(test),
        counters=rows,
        counter_notes=notes,
        hypotheses=_texts(test.get("competing_hypotheses")),
        missing_evidence=_texts(test.get("missing_evidence")),
        rollback_boundary=_text(test.get("rollback_boundary")),
        movement=_movement(test),
        risks=_risks(test, summary),
        replay_command=_text(test.get("replay_command")),
        replay=_replay(test),
        evidence=_evidence(test),
        ecdf=charts.ecdf_chart(cand_series, _list(series.get("baseline"))),
        timeline=charts.timeline_chart(cand_series, references=references),
        strip=_strip(test),
    )


# --------------------------------------------------------------------------- roofline chart
def _point_title(test: Mapping[str, Any], point: Mapping[str, Any], decision: str) -> str:
    lines = [
        str(test.get("nodeid", "")),
        f"{decision} · {point.get('bound', 'unknown')} · "
        f"{format_percent(_num(point.get('efficiency')))} of attainable",
        f"intensity {si(_num(point.get('intensity')), 'FLOP/B')}, "
        f"achieved {si(_num(point.get('achieved_flops_per_s')), 'FLOP/s')} "
        f"of {si(_num(point.get('attainable_flops_per_s')), 'FLOP/s')}",
    ]
    if _num(point.get("baseline_achieved_flops_per_s")) is not None:
        lines.append(
            f"baseline: intensity {si(_num(point.get('baseline_intensity')), 'FLOP/B')}, "
            f"achieved {si(_num(point.get('baseline_achieved_flops_per_s')), 'FLOP/s')}"
            + (f" ({point.get('baseline_bound')})" if point.get("baseline_bound") else "")
        )
    return "\n".join(lines)


def _chart(
    document: Mapping[str, Any], tests: Sequence[Mapping[str, Any]], memo_ids: Mapping[int, str]
) -> RooflineChart | None:
    inputs = []
    precisions: set[str] = set()
    levels: set[str] = set()
    for index, test in enumerate(tests):
        point = _map(test.get("roofline"))
        if not point:
            continue
        decision = _decision(test.get("decision"))
        if isinstance(point.get("precision"), str):
            precisions.add(point["precision"])
        levels.add(str(point.get("memory_level") or "dram"))
        inputs.append(
            PointInput(
                intensity=_num(point.get("intensity")),
                achieved_flops_per_s=_num(point.get("achieved_flops_per_s")),
                baseline_intensity=_num(point.get("baseline_intensity")),
                baseline_achieved_flops_per_s=_num(point.get("baseline_achieved_flops_per_s")),
                decision=decision,
                title=_point_title(test, point, decision),
                href=f"#{memo_ids.get(index, f't-{index}')}",
                flagged=bool(point.get("data_error")),
            )
        )
    target = _map(_map(document.get("run")).get("target")) or None
    return charts.roofline_chart(
        target, inputs, used_precisions=sorted(precisions), used_levels=sorted(levels)
    )


# --------------------------------------------------------------------------- platform matrix
def _work_text(work: DeclaredWork) -> str:
    parts = []
    if work.flops is not None:
        parts.append(si(work.flops, "FLOP"))
    if work.bytes_moved is not None:
        parts.append(si(work.bytes_moved, "B"))
    parts.append(work.precision or "fp32 (default)")
    return " · ".join(parts)


def _matrix(document: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]) -> Matrix:
    presets: Mapping[str, HardwareTarget] = load_presets()
    current = _text(_map(_map(document.get("run")).get("target")).get("name"))
    targets = tuple(
        MatrixTarget(
            name,
            f"{t.description} · DRAM {si(t.peak_bytes_per_s.get('dram'), 'B/s')}".strip(" ·"),
            name == current,
        )
        for name, t in presets.items()
    )
    rows = []
    undeclared = 0
    for test in tests:
        declared = test.get("declared")
        try:
            work = DeclaredWork.from_dict(declared) if isinstance(declared, Mapping) else None
        except ConfigError:
            work = None
        if work is None or not (work.flops or work.bytes_moved):
            undeclared += 1
            continue
        rows.append(
            MatrixRow(
                str(test.get("nodeid", "")),
                _work_text(work),
                format_seconds(_num(test.get("p50_s"))),
                tuple(charts.platform_cell(t, work) for t in presets.values()),
            )
        )
    return Matrix(targets, tuple(rows), undeclared)


# --------------------------------------------------------------------------- method and versions
def _method() -> tuple[Fact, ...]:
    return (
        Fact(
            "p95 sample floor", f"{n_floor(0.95)} samples (below it p95 is 'insufficient')", "num"
        ),
        Fact("p99 sample floor", f"{n_floor(0.99)} samples", "num"),
        Fact("Absolute floor", f"{format_seconds(ABS_FLOOR_S)} per call", "num"),
        Fact("Ridge band", f"±{DEFAULT_RIDGE_MARGIN:.0%} around the ridge is 'ambiguous'", "num"),
        Fact("Overhead", f"efficiency below {DEFAULT_OVERHEAD_EFFICIENCY:.0%} of the roof", "num"),
    )


def _paired_method(run: Mapping[str, Any]) -> tuple[Fact, ...]:
    """What a reviewer needs to know about a paired run's design (empty for two-run designs)."""
    if run.get("design") != "paired":
        return ()
    info = _map(run.get("paired"))
    sides = _map(info.get("sides"))
    facts = [
        Fact("Design", _design(run) or "paired"),
        Fact(
            "Baseline",
            f"{info.get('baseline_ref', '?')} ({str(info.get('baseline_commit', '?'))[:12]})",
        ),
        Fact(
            "Candidate",
            f"current tree ({str(info.get('candidate_commit', '?'))[:12]}"
            + (", with uncommitted changes)" if info.get("candidate_dirty") else ")"),
        ),
        Fact("Order", " ".join(str(o) for o in _list(info.get("order"))) or "n/a", "mono"),
        Fact(
            "Budget",
            f"{format_seconds(_num(info.get('budget_s')))} per test and side "
            f"({format_seconds(_num(info.get('budget_per_round_s')))} a round)",
        ),
    ]
    for side in ("baseline", "candidate"):
        facts.append(
            Fact(
                f"{side.capitalize()} imports",
                ", ".join(
                    f"{k} from {v}"
                    for k, v in sorted(_map(_map(sides.get(side)).get("resolved")).items())
                )
                or "n/a",
                "mono",
            )
        )
    return tuple(facts)


def _versions(document: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    versions = _map(document.get("versions"))
    return tuple((str(k), str(v)) for k, v in versions.items() if v is not None)


def _ordered(tests: Sequence[Mapping[str, Any]]) -> list[int]:
    """Row order: rollback, escalate, ship, undecided; by node id within each."""
    return sorted(
        range(len(tests)),
        key=lambda i: (
            DECISION_ORDER.index(_decision(tests[i].get("decision"))),
            str(tests[i].get("nodeid", "")),
        ),
    )


def build_view(document: Mapping[str, Any]) -> ReportView:
    """Build the presentation model of ``document`` (exposed for tests; no I/O)."""
    tests = [t for t in _list(document.get("tests")) if isinstance(t, Mapping)]
    order = _ordered(tests)
    memo_ids = {
        i: f"memo-{i}"
        for i in order
        if _decision(tests[i].get("decision")) in ("rollback", "escalate")
    }
    banner = _banner(document, tests)
    run = _map(document.get("run"))
    title = f"{banner.decision.upper()} · {banner.label} vs {banner.baseline} · pytest-roofline"
    return ReportView(
        title=title,
        banner=banner,
        chart=_chart(document, tests, memo_ids),
        rows=tuple(_row(i, tests[i], memo_ids.get(i)) for i in order),
        memos=tuple(_memo(i, tests[i], banner.tag_changes) for i in memo_ids),
        matrix=_matrix(document, tests),
        gate=banner.gate,
        method=_method(),
        versions=_versions(document),
        generated=_text(run.get("finished")) or _text(run.get("started")) or "",
        paired=_paired_method(run),
    )


# --------------------------------------------------------------------------- rendering
@functools.lru_cache(maxsize=1)
def _environment() -> Environment:
    # Every template is HTML, so autoescape is on for all of them (names end in .j2).
    env = Environment(
        loader=PackageLoader("pytest_roofline", "report/templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


@functools.lru_cache(maxsize=1)
def _script() -> tuple[Markup, str]:
    """The inline script (trusted, ours) and its CSP hash, so the page allows that script only."""
    loader = _environment().loader
    assert loader is not None
    source = loader.get_source(_environment(), _SCRIPT)[0]
    digest = base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")
    return Markup(source), f"'sha256-{digest}'"


def render_html(document: Mapping[str, Any]) -> str:
    """Render the signoff report for ``document`` (the run's JSON document) as one HTML page.

    :param document: the mapping :func:`~pytest_roofline.report.json_report.run_document`
        returns (or its JSON read back); missing fields render as gaps.
    :returns: a complete, self-contained HTML document.
    """
    script, script_hash = _script()
    template = _environment().get_template(_TEMPLATE)
    return template.render(view=build_view(document), script=script, script_hash=script_hash)


def write_html(path: Path | str, document: Mapping[str, Any]) -> None:
    """Render ``document`` and write it to ``path`` atomically (never a half-written file)."""
    write_atomic(Path(path), render_html(document))
