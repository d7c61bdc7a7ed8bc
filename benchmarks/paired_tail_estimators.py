"""Real window pairs: per-pair tail ratios (what ``ab`` does) against pooled tail quantiles with a
pair-bootstrap interval, on A/A data and on changes injected into the candidate's windows.

Reads the window pairs that ``pytest-roofline ab`` stored (``--store``; e.g. the ``ab.sqlite``
of a ``paired_process_bias.py`` scratch directory): every kept pair of every test of every
paired run. For each test-run and scenario it decides p50, p95 and p99 at the final look of ``ab``'s
default plan (the same boundary and margins ``ab`` uses) in two ways:

* ``per-pair``: ``ab``'s own comparison (:func:`pytest_roofline.gate.paired_looks.paired_look_detail`:
  the 20%-trimmed mean of the per-pair log ratios of Harrell-Davis quantiles, Yuen's t);
* ``trim T`` (``--trims``): the per-pair rule with another share ``T`` of pairs trimmed from
  each end (``ab`` trims 0.2);
* ``pooled``: the log ratio of the two sides' quantiles over all kept pairs pooled, its
  standard error from ``--boot`` resamples of whole window pairs (pairs stay the unit of
  replication: both sides of a resampled pair go together), ``K - 1`` degrees of freedom.

Scenarios, applied to the candidate's stored windows with a seeded generator (the baseline's
windows are left as measured): ``aa`` (nothing), ``uniform10`` (every call x1.10), ``tail95``
(8% of calls x2, as ``gate_validation.py``), ``tail95small`` (8% of calls x1.25), ``tail99``
(2% of calls x3), ``burst1`` / ``burst2`` / ``burst3`` (every call of 1, 2 or 3 randomly chosen
candidate windows x2: host disturbance the canary did not catch, which must not roll back).

Prints, per scenario, quantile and estimator, the outcomes (SAME / UNKNOWN / DIFFERENT) over
the test-runs and the median interval width, and per test the A/A outcomes.

Usage: python benchmarks/paired_tail_estimators.py STORE [STORE ...] [--boot 300] [--seed 1]
       [--trims 0.1,0.3] [--no-pooled]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from pytest_roofline.ab.analysis import ab_plan, load_paired, paired_margin
from pytest_roofline.ab.command import ab_windows
from pytest_roofline.config.settings import AbSettings, GateSettings
from pytest_roofline.gate.looks import decided_at_look
from pytest_roofline.gate.paired_looks import paired_look_detail
from pytest_roofline.stats.paired import compare_paired
from pytest_roofline.stats.sequential import Estimate
from pytest_roofline.store.sqlite import Store
from pytest_roofline.vocabulary import QUANTILES

Windows = list[np.ndarray]
NAMES = ("p50", "p95", "p99")


def _scale_calls(share: float, factor: float) -> Callable[[np.random.Generator, Windows], Windows]:
    def inject(rng: np.random.Generator, cand: Windows) -> Windows:
        return [np.where(rng.random(w.size) < share, w * factor, w) for w in cand]

    return inject


def _burst(count: int) -> Callable[[np.random.Generator, Windows], Windows]:
    def inject(rng: np.random.Generator, cand: Windows) -> Windows:
        hit = set(rng.choice(len(cand), size=min(count, len(cand)), replace=False).tolist())
        return [w * 2.0 if i in hit else w for i, w in enumerate(cand)]

    return inject


SCENARIOS: dict[str, Callable[[np.random.Generator, Windows], Windows]] = {
    "aa": lambda rng, cand: cand,
    "uniform10": _scale_calls(1.0, 1.10),
    "tail95": _scale_calls(0.08, 2.0),
    "tail95small": _scale_calls(0.08, 1.25),
    "tail99": _scale_calls(0.02, 3.0),
    "burst1": _burst(1),
    "burst2": _burst(2),
    "burst3": _burst(3),
}


def pooled_estimate(
    base: Sequence[np.ndarray],
    cand: Sequence[np.ndarray],
    q: float,
    boot: int,
    rng: np.random.Generator,
) -> Estimate:
    """Log ratio of the pooled quantiles; se over resampled window pairs; ``K - 1`` df."""
    k = len(base)

    def log_ratio(idx: Sequence[int]) -> float:
        b = np.concatenate([base[i] for i in idx])
        c = np.concatenate([cand[i] for i in idx])
        return math.log(float(np.quantile(c, q)) / float(np.quantile(b, q)))

    draws = [log_ratio(rng.integers(0, k, k).tolist()) for _ in range(boot)]
    return Estimate(log_ratio(range(k)), float(np.std(draws, ddof=1)), float(k - 1))


def linearised_estimate(
    base: Sequence[np.ndarray], cand: Sequence[np.ndarray], q: float
) -> Estimate:
    """Log ratio of the pooled quantiles; se from each pair's influence (Woodruff-type
    linearisation: a pair's share of calls at or below the pooled quantile, over the density of
    log time there), summed over pairs as a cluster-robust variance; ``K - 1`` df."""
    k = len(base)
    h = min(0.5 * (1.0 - q), 0.5 * q, 0.02)

    def side(windows: Sequence[np.ndarray]) -> tuple[float, np.ndarray]:
        pooled = np.concatenate(windows)
        low, mid, high = np.quantile(pooled, [q - h, q, q + h])
        spread = math.log(high / low) / (2 * h)  # d log Q / dq = 1 / density of log time
        excess = np.array([np.count_nonzero(w <= mid) - q * w.size for w in windows])
        return math.log(mid), excess * spread / pooled.size

    log_b, infl_b = side(base)
    log_c, infl_c = side(cand)
    d = infl_b - infl_c  # more calls below the quantile: a smaller quantile
    var = k / (k - 1) * float(((d - d.mean()) ** 2).sum())
    return Estimate(log_c - log_b, math.sqrt(var), float(k - 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("stores", nargs="+", type=Path)
    parser.add_argument("--boot", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--trims", default="", help="other trimmed shares for the per-pair rule, e.g. 0.1,0.3"
    )
    parser.add_argument(
        "--no-pooled", action="store_true", help="skip the pooled and linearised estimators"
    )
    options = parser.parse_args()
    rng = np.random.default_rng(options.seed)  # the injected changes
    boot_rng = np.random.default_rng(options.seed + 1)  # so --no-pooled injects the same changes
    trims = [float(t) for t in options.trims.split(",") if t.strip()]
    gate = GateSettings()
    margins = {name: paired_margin(gate, name) for name in NAMES}
    defaults = AbSettings()
    tally: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    widths: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    per_test: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for path in options.stores:
        with Store.open(path, create=False) as store:
            paired_runs = [
                (run_id, load_paired(store, run_id))
                for run_id, record, _ in store.list_runs()
                if record.design == "paired"
            ]
        for _, runs in paired_runs:
            plan = ab_plan(gate, ab_windows(defaults.rounds, defaults.budget_s), len(runs))
            for nodeid, samples in runs.items():
                base = list(samples.baseline)
                pairs = len(base)
                if pairs < 4:
                    continue
                boundary_look = max(1, sum(1 for s in plan.sizes or () if s <= pairs))
                boundary = plan.boundary(boundary_look, final=True)
                for scenario, inject in SCENARIOS.items():
                    cand = inject(rng, list(samples.candidate))
                    found = paired_look_detail(
                        base, cand, margins, plan, alpha=gate.alpha, final=True
                    )
                    for name, margin in margins.items():
                        q = QUANTILES[name]
                        current = found[name].comparison
                        results = [("per-pair", current)]
                        for trim in trims:
                            if pairs - 2 * math.floor(trim * pairs) < 2:
                                continue  # fewer than two pairs left: no interval
                            other = compare_paired(
                                base, cand, q, delta=margin, alpha=gate.alpha, trim=trim
                            )
                            decided = decided_at_look(
                                other.comparison, Estimate.from_paired(other), margin, boundary
                            )
                            results.append((f"trim {trim:g}", decided))
                        if not options.no_pooled:
                            pooled = pooled_estimate(base, cand, q, options.boot, boot_rng)
                            linear = linearised_estimate(base, cand, q)
                            results.append(
                                ("pooled", decided_at_look(current, pooled, margin, boundary))
                            )
                            results.append(
                                ("linear", decided_at_look(current, linear, margin, boundary))
                            )
                        for label, result in results:
                            key = (scenario, name, label)
                            tally[key][result.outcome] += 1
                            if result.ci.low > 0 and math.isfinite(result.ci.high):
                                widths[key].append(math.log(result.ci.high / result.ci.low))
                            if scenario == "aa":
                                short = nodeid.rsplit("/", 1)[-1]
                                per_test[(short, f"{name} {label}")][result.outcome] += 1
    print("scenario     quantile estimator  same unknown different  median log width")
    for (scenario, name, label), counts in tally.items():
        width = statistics.median(widths[(scenario, name, label)] or [math.nan])
        print(
            f"{scenario:12} {name:8} {label:9} {counts['same']:5} {counts['unknown']:7} "
            f"{counts['different']:9}  {width:.3f}"
        )
    print("\nA/A outcomes per test:")
    for (test, what), counts in sorted(per_test.items()):
        print(f"  {test:40} {what:14} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
