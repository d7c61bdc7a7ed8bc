"""Whether every pair of worker processes sees a paired regression, not one pair alone.

``pytest-roofline ab`` starts several pairs of worker processes (one process per side each,
``ab.worker_pairs``, default 3) and gives them a test's window pairs in turn. A process can run a
test off for its whole life (where memory it allocated once landed: ``docs/paired.md``); in one
pair that shifts every window pair it measures, and so the pooled comparison by a third. So a
regression the pooled comparison establishes (a quantile DIFFERENT) rolls back only when every
worker pair, on its own window pairs, puts that quantile at least :data:`AGREEMENT_SHARE` of the
margin above 1 (in log units). A real change moves every process; a process's draw moves one.
For a test whose window pairs spread widely, the other pairs reach that share by chance, so
since stop 41 the regression must also stand with the spread between the worker pairs in its
interval (:meth:`Agreement.standing`, :func:`pytest_roofline.gate.paired_looks.with_worker_spread`).

This replaces measuring a regressed test again, start to finish, on two fresh pairs of workers
after the first (``gate.confirm.replicated``, still how a two-run session's confirmation is
replicated): the fresh pairs cost ``ab`` up to three times its wall time whenever something
regressed, and each had to reach DIFFERENT on its own, at the run's Bonferroni-split level.

Pure: per-pair ratios in, an :class:`Agreement` out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_roofline.stats.threeway import GateMargin

__all__ = ["AGREEMENT_SHARE", "Agreement", "worker_agreement"]

AGREEMENT_SHARE = 0.5
"""The share of a quantile's margin (log units) every worker pair's own estimate must reach.

Half the margin: a +5% p50 margin asks each pair for x1.025 or more. Simulated with 16 window
pairs on three worker pairs (5 or 6 each) and a spread of 0.03 (log) per window pair, about
the validation fixture's p50 here (``tests/unit/test_worker_agreement.py``, 2000 seeded trials
each): with one pair's process x1.3 off for its whole life and the code unchanged, the other
two both pass in 0.15% of trials; with two pairs off the same way, the third passes in 3.6%;
a real +10% passes every pair in 100%, a +5% (the margin itself) in 91%. The pooled pairs must
be DIFFERENT as well, at the run's Bonferroni-split level."""


@dataclass(frozen=True, slots=True)
class Agreement:
    """What each worker pair found for the quantiles the pooled comparison found DIFFERENT.

    :ivar estimates: per such quantile, each worker pair's ratio (geometric mean of its kept
        window pairs' ratios; ``None``: it kept no usable pair of that test).
    :ivar needed: per such quantile, the ratio each pair must reach (``1 + margin`` to the
        power :data:`AGREEMENT_SHARE`).
    :ivar agreed: the quantiles on which every worker pair reached it (and, once
        :meth:`standing` has been applied, that stay DIFFERENT with the worker pairs' spread in
        the interval).
    :ivar spread: the quantiles every pair reached but that fell short of DIFFERENT with the
        worker pairs' spread in the interval, each with what that look read
        (:func:`pytest_roofline.gate.paired_looks.with_worker_spread`).
    """

    estimates: Mapping[str, tuple[float | None, ...]]
    needed: Mapping[str, float]
    agreed: tuple[str, ...]
    spread: Mapping[str, str] = field(default_factory=dict)

    @property
    def confirmed(self) -> bool:
        """Some DIFFERENT quantile is found by every worker pair."""
        return bool(self.agreed)

    def standing(self, fell: Mapping[str, str]) -> Agreement:
        """This agreement without the agreed quantiles in ``fell`` (each with what the look
        read with the worker pairs' spread: kept in :attr:`spread`)."""
        kept = tuple(name for name in self.agreed if name not in fell)
        return Agreement(self.estimates, self.needed, kept, {**self.spread, **fell})

    def describe(self) -> str:
        """``p50 by worker pair: x1.104, x1.098, x1.113 (each needs x1.025)`` per quantile,
        then each agreed quantile that fell short with the worker pairs' spread."""
        parts = []
        for name, values in self.estimates.items():
            shown = ", ".join("none kept" if v is None else f"x{v:.3f}" for v in values)
            parts.append(f"{name} by worker pair: {shown} (each needs x{self.needed[name]:.3f})")
        parts.extend(self.spread.values())
        return "; ".join(parts)


def worker_agreement(
    ratios: Mapping[str, Sequence[float]],
    different: Sequence[str],
    worker_pairs: Sequence[int],
    count: int,
    margins: Mapping[str, GateMargin],
) -> Agreement:
    """Each worker pair's own estimate of every ``different`` quantile, and which agree.

    :param ratios: per quantile, the candidate/baseline ratio of every kept window pair, in
        order (NaN for a pair with too few samples: not used).
    :param different: the quantiles the pooled comparison found DIFFERENT.
    :param worker_pairs: the worker pair (0-based) of every kept window pair, same order.
    :param count: how many worker pairs took window pairs (``ab.worker_pairs``).
    :param margins: each quantile's margin.

    >>> from pytest_roofline.stats.threeway import gate_margin
    >>> m = {"p50": gate_margin(0.05, 0.0)}
    >>> a = worker_agreement({"p50": [1.1, 1.12, 1.09, 1.11]}, ["p50"], [0, 1, 2, 0], 3, m)
    >>> a.agreed, a.describe()
    (('p50',), 'p50 by worker pair: x1.105, x1.120, x1.090 (each needs x1.025)')
    >>> worker_agreement({"p50": [1.3, 1.0, 1.01]}, ["p50"], [0, 1, 2], 3, m).confirmed
    False
    """
    estimates: dict[str, tuple[float | None, ...]] = {}
    needed: dict[str, float] = {}
    agreed = []
    for name in different:
        logs: list[list[float]] = [[] for _ in range(count)]
        for ratio, pair in zip(ratios.get(name, ()), worker_pairs, strict=False):
            if 0 <= pair < count and math.isfinite(ratio) and ratio > 0:
                logs[pair].append(math.log(ratio))
        found = tuple(math.exp(sum(v) / len(v)) if v else None for v in logs)
        needed[name] = (1.0 + margins[name].different_at) ** AGREEMENT_SHARE
        estimates[name] = found
        if all(v is not None and v >= needed[name] for v in found):
            agreed.append(name)
    return Agreement(estimates, needed, tuple(agreed))
