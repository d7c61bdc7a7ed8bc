"""The HTML report's view model: everything ``report.html.j2`` draws, as plain frozen values."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_roofline.report.charts.latency import LineChart, Sketch, SketchFrame
from pytest_roofline.report.charts.roofline import RooflineChart
from pytest_roofline.report.html.soak import SoakView

__all__ = [
    "Banner",
    "Cell",
    "CounterRow",
    "Fact",
    "Figure",
    "Matrix",
    "MatrixCell",
    "MatrixRow",
    "MatrixTarget",
    "Memo",
    "RatioStrip",
    "ReportView",
    "Row",
    "Spans",
    "StripDot",
    "StripRow",
    "TagRow",
]


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
class TagRow:
    """A changed revision tag as the banner and the memos list it."""

    key: str
    baseline: str
    candidate: str
    layer: str
    first_failing: bool


Spans = tuple[tuple[str, bool], ...]
"""Text as ``(part, is_code)`` pieces: the template shows code pieces as ``<code>``."""


@dataclass(frozen=True, slots=True)
class Banner:
    decision: str
    reasons: tuple[str, ...]
    #: What to do about each run-level reason (commands as code pieces).
    next_steps: tuple[Spans, ...]
    label: str
    baseline: str
    target: str
    target_detail: str
    facts: tuple[Fact, ...]
    counts: tuple[tuple[str, int], ...]
    first_failing_layer: str | None
    tag_changes: tuple[TagRow, ...]
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
    #: The node id cut where a line may break (``<wbr>`` between the parts).
    id_parts: tuple[str, ...]
    slice: str
    source: str
    decision: str
    memo_id: str | None
    cells: tuple[Cell, ...]
    owner: str
    strip: RatioStrip | None = None
    #: The test's small latency ECDF, collapsed in its row.
    dist: Sketch | None = None
    #: The label's trend strip (``report.html.trend``: escaped HTML, collapsed), or "".
    trend_html: str = ""


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
    id_parts: tuple[str, ...]
    decision: str
    reasons: tuple[str, ...]
    owners: tuple[str, ...]
    symptom_text: str | None
    symptom: tuple[Fact, ...]
    tag_changes: tuple[TagRow, ...]
    mechanism_text: str | None
    mechanism: tuple[Fact, ...]
    counters: tuple[CounterRow, ...]
    counter_notes: tuple[str, ...]
    hypotheses: tuple[str, ...]
    missing_evidence: tuple[str, ...]
    rollback_boundary: str | None
    movement: tuple[str, ...]
    #: Set when the test got faster: nothing to revert, and what a human must decide instead.
    faster: str | None
    decide: str | None
    risks: tuple[str, ...]
    replay_command: str | None
    replay: str
    evidence: tuple[Fact, ...]
    ecdf: LineChart | None
    timeline: LineChart | None
    strip: RatioStrip | None = None
    #: The label's trend strip, as in the test's row.
    trend_html: str = ""


@dataclass(frozen=True, slots=True)
class MatrixCell:
    """Declared work projected onto one target: time at the roof and the bound class there."""

    seconds: float | None
    time: str
    bound: str
    #: ``cell``, and ``current`` in the column of the run's own target.
    cls: str = "cell"


@dataclass(frozen=True, slots=True)
class MatrixTarget:
    name: str
    title: str
    current: bool


@dataclass(frozen=True, slots=True)
class MatrixRow:
    nodeid: str
    id_parts: tuple[str, ...]
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
    #: The frame every row's latency sketch is drawn in.
    sketch_frame: SketchFrame | None = None
    #: Soaked tests' timelines, in review order (``report.html.soak``).
    soaks: tuple[SoakView, ...] = ()
