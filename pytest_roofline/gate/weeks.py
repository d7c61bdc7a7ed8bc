"""Observability per ISO week of a label's runs: the escape-risk trend and how often replays and
paired confirmations succeeded (issue 14; ``pytest-roofline history``).

Pure: it groups the runs' counts (:class:`~pytest_roofline.store.observations.RunObservation`)
by the ISO 8601 week (UTC) of each run's start and sums them. A share is ``None`` where its
denominator is zero (no compared test, no replay, no confirmation tried): nothing was at stake,
which is not the same as none of it failing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pytest_roofline.store.observations import (
    CONFIRMATION_STATES,
    REPLAY_KEYS,
    RunObservation,
)

__all__ = ["WeekObservation", "iso_week", "weekly"]


def iso_week(timestamp: float) -> str:
    """``2026-W48``: the ISO 8601 week (UTC) of a Unix time."""
    year, week, _ = datetime.fromtimestamp(timestamp, tz=timezone.utc).isocalendar()
    return f"{year}-W{week:02d}"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True, slots=True)
class WeekObservation:
    """The summed counts of one week's runs, and the shares they give."""

    week: str
    runs: int = 0
    tests: int = 0
    compared: int = 0
    escape_risk_tests: int = 0
    tails_not_assessed: int = 0
    confirmations: Mapping[str, int] = field(default_factory=dict)
    replays: Mapping[str, int] = field(default_factory=dict)
    unreadable_runs: int = 0

    @property
    def escape_risk(self) -> float | None:
        """Share of compared test results at escape risk (p95 MDE unknown or above margin)."""
        return _share(self.escape_risk_tests, self.compared)

    @property
    def confirmed_rate(self) -> float | None:
        """Share of paired confirmations tried (not ``unavailable``) that confirmed."""
        tried = sum(self.confirmations.get(s, 0) for s in CONFIRMATION_STATES[:3])
        return _share(self.confirmations.get("confirmed", 0), tried)

    @property
    def reproduced_rate(self) -> float | None:
        """Share of replayed first-look regressions that reproduced (``replay_success_rate``)."""
        return _share(self.replays.get("reproduced", 0), self.replays.get("attempted", 0))

    def to_json(self) -> dict[str, Any]:
        """The ``weeks[]`` entry of ``history --json``."""
        return {
            "week": self.week,
            "runs": self.runs,
            "tests": self.tests,
            "compared": self.compared,
            "escape_risk": self.escape_risk,
            "escape_risk_tests": self.escape_risk_tests,
            "tails_not_assessed": self.tails_not_assessed,
            "confirmations": {**self.confirmations, "confirmed_rate": self.confirmed_rate},
            "replays": {**self.replays, "reproduced_rate": self.reproduced_rate},
            "unreadable_runs": self.unreadable_runs,
        }


def weekly(observations: Iterable[RunObservation]) -> tuple[WeekObservation, ...]:
    """The runs' counts summed per ISO week, oldest week first."""
    weeks: dict[str, dict[str, Any]] = {}
    for run in observations:
        week = weeks.setdefault(
            iso_week(run.started),
            {
                "runs": 0,
                "tests": 0,
                "compared": 0,
                "escape_risk_tests": 0,
                "tails_not_assessed": 0,
                "unreadable_runs": 0,
                "confirmations": dict.fromkeys(CONFIRMATION_STATES, 0),
                "replays": dict.fromkeys(REPLAY_KEYS, 0),
            },
        )
        week["runs"] += 1
        week["unreadable_runs"] += run.problem is not None
        week["tests"] += run.counts.get("tests", 0)
        week["compared"] += run.counts.get("compared", 0)
        week["escape_risk_tests"] += run.counts.get("escape_risk", 0)
        week["tails_not_assessed"] += run.counts.get("tails_not_assessed", 0)
        for state in CONFIRMATION_STATES:
            week["confirmations"][state] += run.confirmations.get(state, 0)
        for key in REPLAY_KEYS:
            week["replays"][key] += run.replays.get(key, 0)
    # ISO week names sort in time order ("2026-W09" < "2026-W10"; years are four digits).
    return tuple(WeekObservation(week=name, **weeks[name]) for name in sorted(weeks))
