"""``pytest-roofline ab``: a git revision and the current tree measured in alternating rounds.

:mod:`~.plan` resolves what was asked, :mod:`~.git` makes the baseline's worktree,
:mod:`~.sides` sets up and checks each side, :mod:`~.rounds` runs them, :mod:`~.analysis`
compares and decides, :mod:`~.command` ties the steps together.
"""

from pytest_roofline.ab.analysis import DESIGN, PairedSamples, analyse_rounds, load_paired
from pytest_roofline.ab.command import AbOutcome, run_ab
from pytest_roofline.ab.plan import AbOptions
from pytest_roofline.ab.rounds import RoundRecord
from pytest_roofline.ab.sides import check_side

__all__ = [
    "DESIGN",
    "AbOptions",
    "AbOutcome",
    "PairedSamples",
    "RoundRecord",
    "analyse_rounds",
    "check_side",
    "load_paired",
    "run_ab",
]
