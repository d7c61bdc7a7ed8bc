"""Repeated looks of a paired comparison: add window pairs while UNKNOWN, decide at the look.

Pure (no pytest, no workers). Paired rounds (``ab.workers.PairedWorkers``) alternate windows of
one test on the two sides; from ``min_pairs`` on, every ``look_every`` pairs, the stop rule
(:class:`PairedStop`) compares the asked quantiles over the pairs so far
(:func:`pytest_roofline.stats.paired.compare_paired`: trimmed mean of the per-pair log ratios,
t interval) and says whether more pairs are needed. As in two-run mode, each look is another
chance for noise to cross a bound, so each look uses its own nominal levels from a
group-sequential plan over the pair counts (:func:`paired_plan`; Lan-DeMets O'Brien-Fleming
type error spending, :mod:`pytest_roofline.stats.sequential`), and the final comparison is
decided at the boundary of the look the alternation stopped at (:func:`paired_look`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from pytest_roofline import stats
from pytest_roofline.gate.looks import decided_at_look
from pytest_roofline.stats import paired
from pytest_roofline.stats.sequential import Estimate, SequentialPlan
from pytest_roofline.stats.threeway import GateMargin
from pytest_roofline.vocabulary import QUANTILES

__all__ = ["PairedStop", "look_sizes", "paired_look", "paired_look_detail", "paired_plan"]


def look_sizes(min_pairs: int, max_pairs: int, look_every: int) -> tuple[int, ...]:
    """The pair counts the stop rule looks at: ``min_pairs``, every ``look_every``, ``max_pairs``.

    >>> look_sizes(4, 12, 2)
    (4, 6, 8, 10, 12)
    >>> look_sizes(4, 9, 2)
    (4, 6, 8, 9)
    """
    sizes = list(range(min_pairs, max_pairs, look_every))
    return (*sizes, max_pairs) if not sizes or sizes[-1] != max_pairs else tuple(sizes)


def paired_plan(
    min_pairs: int, max_pairs: int, look_every: int, *, alpha: float, alpha_same: float
) -> SequentialPlan:
    """A plan with one look per :func:`look_sizes` entry, information ``pairs / max_pairs``."""
    return SequentialPlan.for_sizes(
        look_sizes(min_pairs, max_pairs, look_every), alpha=alpha, alpha_same=alpha_same
    )


def _look_of(plan: SequentialPlan, pairs: int) -> int:
    """The 1-based look a pair count stands at: the last planned size it reaches."""
    sizes = plan.sizes or ()
    return max(1, sum(1 for s in sizes if s <= pairs))


def paired_look(
    base_windows: Sequence[np.ndarray],
    cand_windows: Sequence[np.ndarray],
    margins: Mapping[str, GateMargin],
    plan: SequentialPlan,
    *,
    alpha: float,
    final: bool,
) -> dict[str, stats.QuantileComparison]:
    """Each quantile in ``margins`` compared over the window pairs so far, decided at this look.

    :param final: the alternation stopped without a decision (``max_pairs``), so this look
        spends all the error left; a decided stop keeps the look's own boundary.
    """
    found = paired_look_detail(base_windows, cand_windows, margins, plan, alpha=alpha, final=final)
    return {name: c.comparison for name, c in found.items()}


def paired_look_detail(
    base_windows: Sequence[np.ndarray],
    cand_windows: Sequence[np.ndarray],
    margins: Mapping[str, GateMargin],
    plan: SequentialPlan,
    *,
    alpha: float,
    final: bool,
) -> dict[str, paired.PairedComparison]:
    """:func:`paired_look` with each quantile's per-pair ratios kept: the
    :class:`~pytest_roofline.stats.paired.PairedComparison` whose ``comparison`` is decided at
    the look's boundary."""
    pairs = min(len(base_windows), len(cand_windows))
    boundary = plan.boundary(_look_of(plan, pairs), final=final)
    base, cand = list(base_windows[:pairs]), list(cand_windows[:pairs])
    out: dict[str, paired.PairedComparison] = {}
    for name, margin in margins.items():
        result = paired.compare_paired(base, cand, QUANTILES[name], delta=margin, alpha=alpha)
        decided = decided_at_look(result.comparison, Estimate.from_paired(result), margin, boundary)
        out[name] = replace(result, comparison=decided)
    return out


class PairedStop:
    """``should_continue`` for paired rounds: more pairs while no asked quantile is decided.

    The alternation stops at the first look where any asked quantile is DIFFERENT (the
    regression is established) or all of them are SAME (it is ruled out); it goes on while any
    is UNKNOWN, up to the plan's cap.
    """

    def __init__(
        self, margins: Mapping[str, GateMargin], plan: SequentialPlan, *, alpha: float
    ) -> None:
        self._margins = dict(margins)
        self._plan = plan
        self._alpha = alpha

    def __call__(
        self,
        nodeid: str,
        base_windows: Sequence[np.ndarray],
        cand_windows: Sequence[np.ndarray],
        worker_pairs: Sequence[int] = (),
    ) -> bool:
        """Whether more pairs are needed; ``worker_pairs`` (which pair of worker processes
        measured each window pair) is not used: fresh pairs replicate a regression afterwards
        (``gate.confirm.replicated``)."""
        found = paired_look(
            base_windows, cand_windows, self._margins, self._plan, alpha=self._alpha, final=False
        )
        outcomes = [c.outcome for c in found.values()]
        decided = "different" in outcomes or (bool(outcomes) and all(o == "same" for o in outcomes))
        return not decided
