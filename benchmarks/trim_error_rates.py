"""How liberal ``ab``'s trimmed-mean t is at other trimmed shares, by simulation (no timing).

``ab`` combines the per-pair log ratios of a test with a trimmed mean and Yuen's t interval
(``stats.paired.DEFAULT_TRIM`` of the pairs dropped at each end). Trimming more narrows the
interval on real window pairs, whose ratios have heavy tails (``paired_caps.py --trims``,
``paired_tail_estimators.py --trims``), but Yuen's t is liberal in the far tail at few kept
pairs. This prints, per trimmed share, the chance over ``ab``'s looks (4, 6, ..., 40 pairs, the
default plan) that the repeated interval ever reads DIFFERENT on unchanged code, at the whole
budget (``gate.alpha``) and at the share one comparison of a 10-test run gets (``alpha / 30``,
the Bonferroni split of ``ab_plan``), and ever reads SAME when the change is exactly the +5%
margin. Per-pair log ratios are normal (sd 0.08, as measured here) or Student t with 3 degrees
of freedom (heavy tails) at the same scale.

Usage: python benchmarks/trim_error_rates.py [--sims 20000] [--trims 0.2,0.25,0.3] [--seed 3]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from sequential_power import yuen

from pytest_roofline.gate.paired_looks import look_sizes
from pytest_roofline.stats.sequential import SequentialPlan

LOOKS = look_sizes(4, 40, 2)
SD = 0.08
MARGIN = math.log(1.05)


def ratios(rng: np.random.Generator, theta: float, shape: str, sims: int) -> np.ndarray:
    """Per-pair log ratios of ``sims`` runs of 40 pairs around ``theta``."""
    size = (sims, LOOKS[-1])
    noise = rng.normal(0.0, SD, size) if shape == "normal" else SD * rng.standard_t(3, size)
    return theta + noise


def ever(d: np.ndarray, trim: float, *, alpha: float, different: bool) -> float:
    """Share of runs whose interval ever crosses: lower bound > 0, or upper bound < the margin."""
    plan = SequentialPlan.for_sizes(LOOKS, alpha=alpha, alpha_same=0.05)
    hit = np.zeros(d.shape[0], dtype=bool)
    for look, pairs in enumerate(LOOKS, start=1):
        mean, se, df = yuen(d, pairs, trim)
        q_low, q_high = plan.boundary(look).critical(df)
        hit |= (mean - q_low * se > 0) if different else (mean + q_high * se < MARGIN)
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
            print(
                f"| {shape} | {trim:g} | {whole:.4f} (x{whole / 0.05:.2f}) | "
                f"{one:.4f} (x{one / split:.2f}) | {same:.4f} (x{same / 0.05:.2f}) |"
            )


if __name__ == "__main__":
    main()
