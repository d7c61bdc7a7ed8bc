"""How liberal ``ab``'s trimmed-mean t is at other trimmed shares, by simulation (no timing).

``ab`` combines the per-pair log ratios of a test with a trimmed mean and Yuen's t interval
(``stats.paired.DEFAULT_TRIM`` of the pairs dropped at each end). Trimming more narrows the
interval on real window pairs, whose ratios have heavy tails (``paired_caps.py --trims``,
``paired_tail_estimators.py --trims``), but Yuen's t is liberal in the far tail at few kept
pairs. This prints, per trimmed share, the chance over ``ab``'s looks (4, 6, ..., 40 pairs, the
default plan) that the repeated interval ever reads DIFFERENT on unchanged code, at the whole
budget (``gate.alpha``) and at the share one comparison of a 10-test run gets (``alpha / 30``,
the Bonferroni split of ``ab_plan``), and ever reads SAME when the change is exactly the +5%
margin: the gate's three-way rule (``sequential_power.decide``), so a DIFFERENT also needs the
ratio at or past the margin, and each run goes on to the last look whatever it read before
(an upper bound on the rate of a rule that stops at its first decision). Monte Carlo sd:
``sqrt(p (1 - p) / sims)``, printed. Per-pair log ratios are normal (sd 0.08, as measured here) or Student t with 3 degrees
of freedom (heavy tails) at the same scale.

Usage: python benchmarks/trim_error_rates.py [--sims 20000] [--trims 0.2,0.25,0.3] [--seed 3]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from sequential_power import DIFFERENT, SAME, decide, yuen

from pytest_roofline.gate.paired_looks import look_sizes
from pytest_roofline.stats.sequential import SequentialPlan

LOOKS = look_sizes(4, 40, 2)
SD = 0.08
MARGIN_SHARE = 0.05  # gate.min_effect at p50 and p95
MARGIN = math.log1p(MARGIN_SHARE)


def ratios(rng: np.random.Generator, theta: float, shape: str, sims: int) -> np.ndarray:
    """Per-pair log ratios of ``sims`` runs of 40 pairs around ``theta``."""
    size = (sims, LOOKS[-1])
    noise = rng.normal(0.0, SD, size) if shape == "normal" else SD * rng.standard_t(3, size)
    return theta + noise


def ever(d: np.ndarray, trim: float, *, alpha: float, different: bool) -> float:
    """Share of runs that some look decides DIFFERENT (``different``) or SAME: the gate's
    three-way rule at the plan's boundary (a DIFFERENT also needs the ratio past the margin)."""
    plan = SequentialPlan.for_sizes(LOOKS, alpha=alpha, alpha_same=0.05)
    wanted = DIFFERENT if different else SAME
    hit = np.zeros(d.shape[0], dtype=bool)
    for look, pairs in enumerate(LOOKS, start=1):
        mean, se, df = yuen(d, pairs, trim)
        q_low, q_high = plan.boundary(look).critical(df)
        hit |= decide(mean, se, q_low, q_high, MARGIN_SHARE) == wanted
    return float(hit.mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sims", type=int, default=20000)
    parser.add_argument("--trims", default="0.2,0.25,0.3")
    parser.add_argument("--seed", type=int, default=3)
    options = parser.parse_args()
    trims = [float(t) for t in options.trims.split(",")]
    split = 0.05 / 30
    print(f"looks at {LOOKS} pairs; {options.sims} runs a cell")
    print(
        "| per-pair ratios | trim | false DIFFERENT, alpha 0.05 | false DIFFERENT, alpha 0.05/30 | SAME at +5% (budget 0.05) |"
    )
    print("|---|---|---|---|---|")
    for shape in ("normal", "t3"):
        rng = np.random.default_rng(options.seed)
        null, at_margin = (
            ratios(rng, 0.0, shape, options.sims),
            ratios(rng, MARGIN, shape, options.sims),
        )
        for trim in trims:
            whole = ever(null, trim, alpha=0.05, different=True)
            one = ever(null, trim, alpha=split, different=True)
            same = ever(at_margin, trim, alpha=0.05, different=False)
            mc = [math.sqrt(p * (1 - p) / options.sims) for p in (whole, one, same)]
            print(
                f"| {shape} | {trim:g} | {whole:.4f} ±{mc[0]:.4f} (x{whole / 0.05:.2f}) | "
                f"{one:.5f} ±{mc[1]:.5f} (x{one / split:.2f}) | "
                f"{same:.4f} ±{mc[2]:.4f} (x{same / 0.05:.2f}) |"
            )


if __name__ == "__main__":
    main()
