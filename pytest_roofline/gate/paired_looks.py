"""Repeated looks of a paired comparison: add window pairs while UNKNOWN, decide at the look.

Pure (no pytest, no workers). Paired rounds (``ab.workers.PairedWorkers``) alternate windows of
one test on the two sides; from ``min_pairs`` on, every ``look_every`` pairs, the stop rule
(:class:`PairedStop`) compares the asked quantiles over the pairs so far
(:func:`pytest_roofline.stats.paired.compare_paired`: trimmed mean of the per-pair log ratios,
t interval) and says whether more pairs are needed. As in two-run mode, each look is another
chance for noise to cross a bound, so each look uses its own nominal levels from a
group-sequential plan over the pair counts (:func:`paired_plan`; Lan-DeMets O'Brien-Fleming
type error spending, :mod:`pytest_roofline.stats.sequential`), and the final comparison is
decided at the boundary of the look the alternation stopped at (:func:`paired_look`). A
regression must also stand on the window pairs the host left steady (:func:`steady_look`,
:mod:`pytest_roofline.gate.steady_pairs`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pytest_roofline import stats
from pytest_roofline.gate.confirm import held_to_process_floor
from pytest_roofline.gate.evidence import Confirmation
from pytest_roofline.gate.looks import decided_at_look
from pytest_roofline.gate.steady_pairs import steady_pairs
from pytest_roofline.stats import paired
from pytest_roofline.stats.paired import PairedComparison
from pytest_roofline.stats.sequential import Estimate, SequentialPlan
from pytest_roofline.stats.threeway import GateMargin
from pytest_roofline.vocabulary import QUANTILES

__all__ = [
    "PairedStop",
    "SteadyLook",
    "WorkerSpreadLook",
    "look_sizes",
    "paired_look",
    "paired_look_detail",
    "paired_plan",
    "rests_on_unsteady_pairs",
    "steady_look",
    "with_worker_spread",
]


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
    boundary_pairs: int | None = None,
) -> dict[str, paired.PairedComparison]:
    """:func:`paired_look` with each quantile's per-pair ratios kept: the
    :class:`~pytest_roofline.stats.paired.PairedComparison` whose ``comparison`` is decided at
    the look's boundary.

    :param boundary_pairs: the pair count whose look's boundary applies (default: the windows'
        own; a subset of a look's pairs keeps that look's boundary).
    """
    pairs = min(len(base_windows), len(cand_windows))
    look_pairs = pairs if boundary_pairs is None else boundary_pairs
    boundary = plan.boundary(_look_of(plan, look_pairs), final=final)
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
    regression is established, on the window pairs the host left steady too:
    :mod:`pytest_roofline.gate.steady_pairs`, and, on a host the canary read busy, beyond the
    process floor: :func:`pytest_roofline.gate.confirm.held_to_process_floor`) or all of them
    are SAME (it is ruled out); it goes on while any is UNKNOWN, up to the plan's cap.
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
        dropped: int = 0,
    ) -> bool:
        """Whether more pairs are needed; ``worker_pairs`` (which pair of worker processes
        measured each window pair) is not used: fresh pairs replicate a regression afterwards
        (``gate.confirm.replicated``). ``dropped``: the pairs run so far and left out for a
        disturbed host."""
        found = paired_look_detail(
            base_windows, cand_windows, self._margins, self._plan, alpha=self._alpha, final=False
        )
        outcomes = [c.comparison.outcome for c in found.values()]
        if "different" in outcomes:
            # A regression only the unsteady pairs carry is not decided: more pairs.
            if rests_on_unsteady_pairs(
                base_windows, cand_windows, found, self._margins, self._plan, alpha=self._alpha
            ):
                return True
            # On a busy host it rolls back only beyond the process floor: more pairs until
            # its interval clears it (or the cap, where the final look decides).
            regressed = [n for n, c in found.items() if c.comparison.outcome == "different"]
            return held_to_process_floor(
                {n: c.comparison for n, c in found.items()},
                regressed,
                pairs=len(base_windows) + dropped,
                dropped=dropped,
                replicated=True,
            )
        return not (bool(outcomes) and all(o == "same" for o in outcomes))


@dataclass(frozen=True, slots=True)
class SteadyLook:
    """A look on the window pairs whose p50 ratio stays at the test's level (:func:`steady_pairs`).

    :ivar comparisons: each quantile compared on those pairs at the full look's boundary.
    :ivar fenced: how many of the look's pairs were left out.
    :ivar pairs: how many pairs the look had.
    """

    comparisons: Mapping[str, PairedComparison]
    fenced: int
    pairs: int

    def stands(self, regressed: Sequence[str]) -> bool:
        """Whether some quantile of ``regressed`` (DIFFERENT on every pair) is DIFFERENT here."""
        return any(
            (c := self.comparisons.get(name)) is not None and c.comparison.outcome == "different"
            for name in regressed
        )

    def describe(self, names: Sequence[str]) -> str:
        """``without the 7 of 38 window pairs whose p50 ratio left the test's own level (...):
        p99 x1.093 [0.966, 1.170] UNKNOWN``."""
        shown = "; ".join(
            f"{name} x{c.comparison.ratio:.3f} [{c.comparison.ci.low:.3f}, "
            f"{c.comparison.ci.high:.3f}] {c.comparison.outcome.upper()}"
            for name in names
            if (c := self.comparisons.get(name)) is not None
        )
        return (
            f"without the {self.fenced} of {self.pairs} window pairs whose p50 ratio left the "
            f"test's own level (a host disturbance inside a window, unseen by the canary): {shown}"
        )

    def disputes(self, found: Confirmation, regressed: Sequence[str]) -> Confirmation:
        """``found`` (a regression of ``regressed``) left ``inconclusive``: it does not stand
        on these pairs (``disputed`` by the host, not necessarily the code)."""
        return replace(
            found,
            state="inconclusive",
            reason=f"{found.reason}, but not on the steady window pairs alone "
            f"({self.describe(regressed)}): the host, not necessarily the code",
            disputed=True,
            dispute="host",
        )


def steady_look(
    base_windows: Sequence[np.ndarray],
    cand_windows: Sequence[np.ndarray],
    look: Mapping[str, PairedComparison],
    margins: Mapping[str, GateMargin],
    plan: SequentialPlan,
    *,
    alpha: float,
    final: bool,
) -> SteadyLook | None:
    """``look`` (over these windows) made again on the steady window pairs only, at the same
    look's boundary; ``None`` when every pair is steady, so the look stands as it is.

    The fence reads each pair's p50 ratio, from ``look`` where it compared p50, else from the
    windows (a confirmation may be asked about a tail only).
    """
    pairs = min(len(base_windows), len(cand_windows))
    base, cand = list(base_windows[:pairs]), list(cand_windows[:pairs])
    p50 = look.get("p50")
    ratios = p50.round_ratios if p50 is not None else tuple(map(_p50_ratio, base, cand))
    keep = steady_pairs(ratios)
    if len(keep) != pairs:
        raise ValueError(f"{len(keep)} p50 ratios for {pairs} window pairs")
    if all(keep):
        return None
    # The boundary stays the full look's: fencing pairs must not move the test to another look
    # of its plan (an earlier one's boundary would be stricter).
    found = paired_look_detail(
        [w for w, k in zip(base, keep, strict=True) if k],
        [w for w, k in zip(cand, keep, strict=True) if k],
        margins,
        plan,
        alpha=alpha,
        final=final,
        boundary_pairs=pairs,
    )
    return SteadyLook(found, fenced=keep.count(False), pairs=pairs)


def _p50_ratio(base: np.ndarray, cand: np.ndarray) -> float:
    """One window pair's candidate/baseline p50 (Harrell-Davis, as the comparisons'); NaN
    below two samples a side."""
    if base.size < 2 or cand.size < 2:
        return math.nan
    base_p50, cand_p50 = (float(stats.hd_quantiles(w, [0.5])[0]) for w in (base, cand))
    return cand_p50 / base_p50 if base_p50 > 0 and cand_p50 > 0 else math.nan


def rests_on_unsteady_pairs(
    base_windows: Sequence[np.ndarray],
    cand_windows: Sequence[np.ndarray],
    look: Mapping[str, PairedComparison],
    margins: Mapping[str, GateMargin],
    plan: SequentialPlan,
    *,
    alpha: float,
) -> bool:
    """Whether a look's regression (some quantile DIFFERENT) is not DIFFERENT on the steady
    pairs: a stop rule then measures more pairs rather than stop on it."""
    regressed = [name for name, c in look.items() if c.comparison.outcome == "different"]
    steady = steady_look(base_windows, cand_windows, look, margins, plan, alpha=alpha, final=False)
    return bool(regressed) and steady is not None and not steady.stands(regressed)


@dataclass(frozen=True, slots=True)
class WorkerSpreadLook:
    """A look's regressed quantiles decided again with the spread between the pairs of worker
    processes in their interval (:func:`with_worker_spread`).

    :ivar comparisons: each quantile re-decided at the look's boundary (its ``ci``, ``outcome``
        and ``verdict`` widened; ``se_log`` and ``mde`` stay the pooled look's).
    :ivar factors: each quantile's variance factor (1: the worker pairs agree within the window
        pairs' own spread, or it could not be read, and the look stands as it was).
    """

    comparisons: Mapping[str, PairedComparison]
    factors: Mapping[str, float]

    def stands(self, name: str) -> bool:
        """Whether quantile ``name`` is still DIFFERENT with the worker pairs' spread."""
        c = self.comparisons.get(name)
        return c is not None and c.comparison.outcome == "different"

    def describe(self, name: str) -> str:
        """``p99 with the worker pairs' spread (variance x4.6): x1.141 [0.876, 1.326]
        UNKNOWN``."""
        c = self.comparisons[name].comparison
        return (
            f"{name} with the worker pairs' spread (variance x{self.factors[name]:.1f}): "
            f"x{c.ratio:.3f} [{c.ci.low:.3f}, {c.ci.high:.3f}] {c.outcome.upper()}"
        )


def with_worker_spread(
    look: Mapping[str, PairedComparison],
    worker_pairs: Sequence[int],
    count: int,
    margins: Mapping[str, GateMargin],
    plan: SequentialPlan,
    *,
    final: bool,
) -> WorkerSpreadLook:
    """Each quantile of ``look`` (in ``margins``) decided again at the look's boundary with its
    variance widened by the spread between the worker pairs.

    ``ab`` gives a test's window pairs to its pairs of worker processes in turn. The pooled
    interval treats the window pairs as independent; if a process runs the test off for its
    whole life (a draw the heap shift per window does not reach: docs/paired.md, "Stop 41"),
    the window pairs of one worker pair share that offset and the pooled interval is too narrow.
    So the pooled variance is multiplied by the design effect of the worker pairs
    (:func:`pytest_roofline.stats.paired.cluster_design_effect`, the between-worker-pair over
    the total mean square of the window pairs' log ratios) where it is above 1. The degrees of
    freedom stay the pooled look's: with three worker pairs an estimate of the spread has two,
    and a t quantile on two would leave no regression short of several-fold decidable; the
    rule's false-alarm rate and power are calibrated by simulation instead
    (``benchmarks/worker_spread_sim.py``).

    :param worker_pairs: the worker pair (0-based) of every window pair of the look, in order.
    :param count: how many worker pairs took window pairs (``ab.worker_pairs``).
    :raises ValueError: ``worker_pairs`` does not name one worker pair per window pair.
    """
    comparisons: dict[str, PairedComparison] = {}
    factors: dict[str, float] = {}
    for name, margin in margins.items():
        found = look.get(name)
        if found is None:
            continue
        if len(worker_pairs) != len(found.round_ratios):
            raise ValueError(
                f"{len(worker_pairs)} worker pairs named for {len(found.round_ratios)} window pairs"
            )
        logs = [math.log(r) if r > 0 else math.nan for r in found.round_ratios]
        effect = paired.cluster_design_effect(logs, worker_pairs, count)
        factor = effect if math.isfinite(effect) and effect > 1.0 else 1.0
        factors[name] = factor
        estimate = Estimate.from_paired(found)
        if factor == 1.0 or not math.isfinite(estimate.se_log):
            comparisons[name] = found
            continue
        boundary = plan.boundary(_look_of(plan, len(found.round_ratios)), final=final)
        widened = replace(estimate, se_log=estimate.se_log * math.sqrt(factor))
        decided = decided_at_look(found.comparison, widened, margin, boundary)
        comparisons[name] = replace(found, comparison=decided)
    return WorkerSpreadLook(comparisons, factors)
