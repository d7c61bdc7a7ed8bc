"""Every default of pytest-roofline's settings, in one place (docs/configuration.md lists them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

from pytest_roofline.vocabulary import FailOn

__all__ = ["CONFIRM_CHOICES", "DEFAULTS", "Confirm", "GateOn"]

GateOn = FailOn
Confirm = Literal["auto", "never"]
"""``--roofline-confirm``: confirm first-look regressions by paired rounds against the
baseline's commit where a git worktree of it can be made (``auto``), or never."""
CONFIRM_CHOICES: tuple[Confirm, ...] = get_args(Confirm)


@dataclass(frozen=True, slots=True)
class _Defaults:
    target: str = "auto"
    store: str = ".roofline/store.sqlite"
    # Half a second per test samples a 1 ms kernel ~500 times (enough for p95; p99 needs 299) and
    # keeps a 20-test suite near 10 s, against pytest-benchmark's ~1.4 s per test.
    budget_s: float = 0.5
    # The p95 estimate needs 59 samples before any one-sided bound exists; below that a slow test
    # still gets its minimum and its verdict says "insufficient".
    min_samples: int = 10
    max_samples: int = 200_000
    warmup_s: float = 0.05
    # Warm-up runs before every measured test: a value past a minute is a typo (100000 for
    # 100 ms) that would hold a CI job for hours, not a warm-up.
    max_warmup_s: float = 60.0
    alpha: float = 0.05
    # The smallest change worth a rollback, per quantile (docs/configuration.md).
    min_effect: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"p50": 0.05, "p95": 0.05, "p99": 0.10})
    )
    # A doubling never passes unseen: a test noisier than x2 between runs is not gated on timing.
    max_margin: float = 1.0
    # An UNKNOWN comparison is sampled on past its budget, up to this many times it.
    unknown_extension: float = 3.0
    replay: int = 1
    history: int = 10
    confirm: Confirm = "auto"
    # Settling UNKNOWN first looks by paired rounds takes at least this long if it is needed:
    # a worktree, two workers and a few window pairs per test.
    min_confirm_time_s: float = 30.0
    # ...and by default at least this long for each test a pair of workers is asked about: 16
    # window pairs of 0.2 s a side and their canary readings take 4-8 s here, up to 8 more pairs
    # replacing disturbed ones about 3 s more. A flat 30 s left 11 of 30 p95 regressions
    # unreached when every test of a 10-test suite regressed.
    confirm_time_per_test_s: float = 12.0
    # ...but never more than this per pair of workers: past it, the tests not reached escalate
    # with the ``ab`` command that settles them.
    max_confirm_time_s: float = 300.0
    gate_on: GateOn = "rollback"


DEFAULTS = _Defaults()
