"""Repeated looks of a two-run comparison: when sampling may stop, and the boundary it ends at.

Pure (no pytest). A test with a baseline is sampled until every gated quantile it can assess
is DIFFERENT or SAME, or any is DIFFERENT; an UNKNOWN one keeps being sampled past its budget up
to ``gate.unknown_extension`` times it (:class:`TwoRunStop`, the sampler's stop rule). Each
look is another chance for noise to cross a bound, so looks use a group-sequential boundary
(:mod:`pytest_roofline.stats.sequential`: Lan-DeMets O'Brien-Fleming-type error spending), and
the final comparison (:func:`final_boundary`) uses the boundary of the look sampling stopped
at, with the looks' information fractions recorded in the sample set. DIFFERENT spends
``alpha`` divided over the session's comparisons (a Bonferroni bound: each test is decided as
it finishes, before the other tests' p-values exist); SAME spends ``alpha`` per comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from pytest_roofline import stats
from pytest_roofline.measure.sampling import Look
from pytest_roofline.stats.sequential import (
    Estimate,
    LookBoundary,
    SequentialPlan,
    decide_look,
    detectable_change,
    two_run_information,
)
from pytest_roofline.stats.threeway import GateMargin
from pytest_roofline.vocabulary import QUANTILES

__all__ = [
    "MAX_LOOKS",
    "TwoRunStop",
    "corroborates_at_look",
    "decided_at_look",
    "final_boundary",
    "session_plan",
]

MAX_LOOKS = 64
"""Looks a test may take at most. The sampler looks on a geometric schedule (every ~25% more
samples), so 64 looks reach far beyond any budget; past them sampling stops as at the cap."""


def session_plan(alpha: float, comparisons: int) -> SequentialPlan:
    """The plan of one comparison in a session of ``comparisons`` comparisons."""
    return SequentialPlan(max_looks=MAX_LOOKS, alpha=alpha / max(1, comparisons), alpha_same=alpha)


def final_boundary(plan: SequentialPlan, looks: Sequence[float], *, final: bool) -> LookBoundary:
    """The boundary of the look sampling stopped at.

    :param looks: the information fraction of each look taken (the sample set's ``looks``);
        none: one fixed-sample look (a stored run compared offline).
    :param final: sampling stopped without a decision (budget, cap, or sample limit), so this
        look spends all the error left; a decided stop keeps the look's own boundary.
    """
    info = [min(1.0, t) for t in looks[:MAX_LOOKS]]
    if not info:
        return plan.boundary(1, information=[1.0], final=True)
    return plan.boundary(len(info), information=info, final=final)


def decided_at_look(
    comparison: stats.QuantileComparison,
    estimate: Estimate,
    margin: GateMargin,
    boundary: LookBoundary,
) -> stats.QuantileComparison:
    """``comparison`` decided at ``boundary``'s nominal levels instead of its fixed ``alpha``.

    The interval becomes the look's repeated confidence interval around ``estimate`` (a
    two-run bootstrap estimate, or a paired t estimate with its degrees of freedom) and the
    three-way rule is applied to it; the detectable change is the one at this look.
    """
    if comparison.verdict == "insufficient" or not math.isfinite(estimate.se_log):
        return comparison
    name = f"p{comparison.quantile * 100:g}"
    three = decide_look(
        estimate,
        boundary,
        margin,
        base_s=comparison.base_s,
        abs_floor_s=comparison.abs_floor_s,
        label=name,
    )
    look = (
        f"look {boundary.look}{', final' if boundary.final else ''}: "
        f"DIFFERENT at one-sided {boundary.alpha_different:.2g}, SAME at {boundary.alpha_same:.2g}"
    )
    return replace(
        comparison,
        ci=stats.ConfidenceInterval(three.ci_low, three.ci_high),
        verdict=three.verdict,
        outcome=three.outcome,
        improvement=three.improvement,
        mde=detectable_change(comparison.se_log, boundary, df=estimate.df),
        reason=f"{three.reason} ({look})",
    )


def corroborates_at_look(
    comparison: stats.QuantileComparison, margin: GateMargin, boundary: LookBoundary
) -> bool:
    """Whether a comparison too autocorrelated to decide on its own reads DIFFERENT at
    ``boundary``'s level, as :func:`decided_at_look` would decide it with enough independent
    samples (:func:`stats.only_autocorrelated`; its bootstrap se is already widened for the
    effective sample size).

    Such a comparison never decides a test; it may corroborate one that did: a same-process
    replay of a first-look regression (stop 44's demo: a GEMM x4.9 on its first look, replayed
    x5.35 on 47 drifting samples with p50's effective size 4 < 5, escalated as "not
    reproduced")."""
    if not stats.only_autocorrelated(comparison):
        return False
    three = decide_look(
        Estimate.from_comparison(comparison),
        boundary,
        margin,
        base_s=comparison.base_s,
        abs_floor_s=comparison.abs_floor_s,
    )
    return three.outcome == "different"


class TwoRunStop:
    """The sampler's stop rule for a test with a baseline (a :data:`measure.sampling.StopRule`).

    At each look it estimates each gated quantile's log ratio quickly
    (:func:`stats.log_quantile_estimate`: order statistics, no bootstrap), applies the look's
    boundary and says whether sampling may stop: yes when any quantile is DIFFERENT, or every
    quantile it can assess is SAME or cannot be decided by more samples (too noisy to gate).
    Within the budget (``progress < budget_share``) a quantile still below its sample floor
    holds sampling back, so the tails get their samples; past the budget it does not (it is
    reported as not assessed). A call with fewer samples than the last one starts a new
    measurement (a replay).
    """

    def __init__(
        self,
        baseline_s: np.ndarray,
        margins: Mapping[str, GateMargin],
        plan: SequentialPlan,
        *,
        alpha: float,
        common_mode: float = 1.0,
        budget_share: float = 1.0,
    ) -> None:
        self._margins = dict(margins)
        self._budget_share = budget_share
        self._plan = plan
        self._alpha = alpha
        self._log_common = math.log(common_mode)
        self._n_base = int(baseline_s.size)
        self._base = {
            name: stats.log_quantile_estimate(baseline_s, QUANTILES[name], alpha=alpha)
            for name in self._margins
        }
        self._observed: list[float] = []
        self._last_n = 0

    def __call__(self, samples_s: np.ndarray, progress: float) -> Look:
        n = int(samples_s.size)
        if n < self._last_n:
            self._observed = []
        self._last_n = n
        if len(self._observed) >= MAX_LOOKS or self._n_base == 0:
            return Look(decided=True)
        info = two_run_information(self._n_base, n, n / max(progress, 1e-9))
        if self._observed:
            info = max(info, self._observed[-1] * (1 + 1e-9))
        self._observed.append(min(info, 1.0))
        boundary = self._plan.boundary(len(self._observed), information=self._observed)
        outcomes = []
        waiting = False  # a quantile below its sample floor, while the budget lasts
        for name, margin in self._margins.items():
            base_log, base_se = self._base[name]
            cand_log, cand_se = stats.log_quantile_estimate(
                samples_s, QUANTILES[name], alpha=self._alpha
            )
            if not (math.isfinite(base_log) and math.isfinite(cand_log)):
                waiting = waiting or progress < self._budget_share
                continue
            if margin.too_noisy:
                outcomes.append("same")  # more samples cannot decide it: stop sampling for it
                continue
            estimate = Estimate(
                cand_log - self._log_common - base_log, math.hypot(cand_se, base_se)
            )
            outcomes.append(
                decide_look(
                    estimate,
                    boundary,
                    margin,
                    base_s=math.exp(base_log),
                    abs_floor_s=stats.ABS_FLOOR_S,
                ).outcome
            )
        decided = not waiting and (
            "different" in outcomes or (bool(outcomes) and all(o == "same" for o in outcomes))
        )
        return Look(decided=decided, information=self._observed[-1])
