"""How much slower the first window of a window pair reads than the second, from stored ``ab`` runs.

``ab`` runs the two windows of a pair back to back in ABBA order: the baseline first in pairs
0, 2, 4, ... (``AB``), the candidate first in the others (``BA``). If the first window of a pair
reads slower by a factor ``1 + e`` (its caches were left by other tests' windows; the second runs
right after the same test on the other side), a pair's log ratio ``log(B / A)`` is about ``-e``
in ``AB`` pairs and ``+e`` in ``BA`` pairs. ABBA cancels that in the mean only while both orders
are kept alike; the canary's drops can leave more of one, and the ``+/-e`` adds to the pairs'
spread either way.

For every test of every run document in the scratch directories (``paired_process_bias.py``
leaves ``ab-1.json``, ``ab-2.json``, ...), takes each gated quantile's per-pair ratios
(``tests[].paired.ratios``) and their orders (``tests[].paired.order``; in documents written
before it existed, only test-runs with no pair dropped, whose kept pair ``i`` is pair ``i``), and
prints per test name and quantile: the mean over test-runs of ``mean log ratio of AB pairs -
mean of BA pairs`` (``-2e``) with its standard error, the median per-pair spread (sd of the
log ratios) and the spread within each order (pooled), and how unbalanced the kept orders were
(median and largest ``|#AB - #BA| / kept``).

Usage: python benchmarks/pair_position.py SCRATCH_DIR [SCRATCH_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

QUANTILES = ("p50", "p95", "p99")


@dataclass
class Tally:
    """One test name's and quantile's figures over the test-runs read."""

    differences: list[float] = field(default_factory=list)
    spreads: list[float] = field(default_factory=list)
    within: list[float] = field(default_factory=list)


def orders_of(paired: dict[str, object], kept: int) -> list[str] | None:
    """The kept pairs' orders: the document's, else ABBA by index when nothing was dropped."""
    order = paired.get("order")
    if isinstance(order, list) and len(order) == kept:
        return [str(o) for o in order]
    if int(str(paired.get("pairs_dropped") or 0)) == 0:
        return ["AB" if i % 2 == 0 else "BA" for i in range(kept)]
    return None


def pooled_sd(groups: Sequence[Sequence[float]]) -> float:
    """The standard deviation within groups, pooled (each group around its own mean)."""
    sums = sum((len(g) - 1) * statistics.variance(g) for g in groups if len(g) > 1)
    dof = sum(len(g) - 1 for g in groups if len(g) > 1)
    return math.sqrt(sums / dof) if dof else math.nan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scratch", type=Path, nargs="+")
    options = parser.parse_args()
    tallies: defaultdict[tuple[str, str], Tally] = defaultdict(Tally)
    imbalance: list[float] = []
    read = skipped = 0
    for scratch in options.scratch:
        for path in sorted(scratch.glob("ab-*.json")):
            for test in json.loads(path.read_text())["tests"]:
                paired = test.get("paired") or {}
                ratios = paired.get("ratios") or {}
                kept = len(ratios.get("p50") or ())
                orders = orders_of(paired, kept) if kept else None
                if orders is None:
                    skipped += 1
                    continue
                read += 1
                ab = orders.count("AB")
                imbalance.append(abs(2 * ab - kept) / kept)
                name = test["nodeid"].split("::")[-1]
                for quantile in QUANTILES:
                    pairs = [
                        (o, math.log(r))
                        for o, r in zip(orders, ratios.get(quantile) or (), strict=False)
                        if r
                    ]
                    first_a = [x for o, x in pairs if o == "AB"]
                    first_b = [x for o, x in pairs if o == "BA"]
                    if len(first_a) < 2 or len(first_b) < 2:
                        continue
                    tally = tallies[(name, quantile)]
                    tally.differences.append(statistics.mean(first_a) - statistics.mean(first_b))
                    tally.spreads.append(statistics.stdev([x for _, x in pairs]))
                    tally.within.append(pooled_sd([first_a, first_b]))
    print(f"test-runs read: {read} (skipped {skipped}: pairs dropped and no kept order stored)")
    if imbalance:
        print(
            f"kept orders |#AB - #BA| / kept: median {statistics.median(imbalance):.3f}, "
            f"largest {max(imbalance):.3f}"
        )
    for quantile in QUANTILES:
        print(f"== {quantile}: mean(AB pairs) - mean(BA pairs) of log(B/A), i.e. -2e")
        for (name, q), tally in sorted(tallies.items()):
            if q != quantile:
                continue
            d = tally.differences
            se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.nan
            mean = statistics.mean(d)
            print(
                f"  {name:20s} {len(d):4d} test-runs: {mean:+.4f} (se {se:.4f}, t {mean / se:+.1f}; "
                f"first window slower by {-mean / 2:+.2%}); per-pair sd {statistics.median(tally.spreads):.4f}, "
                f"within each order {statistics.median(tally.within):.4f}"
            )


if __name__ == "__main__":
    main()
