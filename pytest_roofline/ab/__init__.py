"""``pytest-roofline ab``: a git revision and the current tree measured in alternating windows.

:mod:`~.plan` resolves what was asked, :mod:`~.git` makes the baseline's worktree,
:mod:`~.sides` sets up and checks each side, :mod:`~.workers` runs one persistent pytest worker
per side and alternates windows between them, :mod:`~.pairs` drops host-disturbed pairs,
:mod:`~.analysis` compares and decides, :mod:`~.command` ties the steps together.
"""

from pytest_roofline.ab.analysis import (
    DESIGN,
    PairedSamples,
    analyse_rounds,
    analyse_windows,
    load_paired,
)
from pytest_roofline.ab.command import AbOutcome, ab_windows, run_ab
from pytest_roofline.ab.plan import AbOptions
from pytest_roofline.ab.sides import check_side

__all__ = [
    "DESIGN",
    "AbOptions",
    "AbOutcome",
    "PairedSamples",
    "ab_windows",
    "analyse_rounds",
    "analyse_windows",
    "check_side",
    "load_paired",
    "run_ab",
]
