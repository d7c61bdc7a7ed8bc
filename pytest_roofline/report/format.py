"""Formatting shared by every renderer: units, ratios, intervals, percentages, decision order.

Renderers (terminal, Markdown, HTML, the command's tables) read the run document
(:mod:`pytest_roofline.model.document`) and this module, nothing else of the package.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pytest_roofline.model.document import TestRecord
from pytest_roofline.text import terminal_safe
from pytest_roofline.units import format_seconds, si

__all__ = [
    "DECISION_ORDER",
    "decision_name",
    "format_interval",
    "format_percent",
    "format_ratio",
    "format_seconds",
    "review_key",
    "review_order",
    "si",
    "terminal_safe",
]

DECISION_ORDER: tuple[str, ...] = ("rollback", "escalate", "ship", "undecided")
"""Decisions in the order a reviewer works through them; a test without one is "undecided"."""


def decision_name(decision: str | None) -> str:
    """The decision, or ``"undecided"`` when there is none."""
    return decision if decision in DECISION_ORDER[:3] else "undecided"


def review_key(test: TestRecord) -> tuple[int, str]:
    """Sort key of review order: rollback, escalate, ship, undecided; by node id within each."""
    return DECISION_ORDER.index(decision_name(test.decision)), test.nodeid


def review_order(tests: Iterable[TestRecord]) -> list[TestRecord]:
    """Tests in review order (:func:`review_key`)."""
    return sorted(tests, key=review_key)


def format_ratio(ratio: float | None) -> str:
    """A candidate/baseline ratio as ``"×1.32"``."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio >= 10:
        return f"×{ratio:.0f}"
    return f"×{ratio:.2f}" if ratio >= 0.1 else f"×{ratio:.2g}"


def format_interval(low: float | None, high: float | None) -> str:
    """An interval of ratios as ``"[1.20, 1.45]"``; empty when either end is missing."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{low:.2f}, {high:.2f}]"


def format_percent(fraction: float | None) -> str:
    """A fraction as a percentage with one decimal below 10% (``"4.2%"``, ``"42%"``)."""
    if fraction is None or not math.isfinite(fraction):
        return "n/a"
    return f"{fraction:.1%}" if abs(fraction) < 0.1 else f"{fraction:.0%}"
