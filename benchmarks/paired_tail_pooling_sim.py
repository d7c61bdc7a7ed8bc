"""Simulation: per-pair quantile ratios (what paired mode does) against pooled quantiles with a
pair-jackknife interval, for p95 and p99, under A/A and tail regressions.

K = 8 window pairs; each pair shares a host speed (lognormal, sd 0.1); a window holds N samples
(lognormal body, sd 0.08), 15% of windows get a burst (1 to N/10 samples x1.5-x3); tail95 makes
8% of the candidate's calls x2, tail99 2% x3. Per method and cell (300 seeded draws): how often
the lower bound at alpha/30 clears +5% ("diff") and how often the upper 95% bound stays inside the
margin (5% p95, 10% p99: "same"). Result at stop 19 (seed 1, N = 100): pooling helps p95 (A/A
same 83% vs 66%, tail95 diff 89% vs 67%) and hurts p99 (A/A same 22% vs 52%), so it was not built.

Usage: python benchmarks/paired_tail_pooling_sim.py [SEED] [N]
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence

import numpy as np

from pytest_roofline.stats.distributions import t_ppf
from pytest_roofline.stats.paired import trimmed_mean_interval
from pytest_roofline.stats.quantiles import hd_quantiles

K = 8
ALPHA = 0.05 / 30
SIMS = 300
Windows = Sequence[np.ndarray]


def hd(x: np.ndarray, q: float) -> float:
    return float(hd_quantiles(x, [q])[0])


def window(rng: np.random.Generator, speed: float, scenario: str, n: int) -> np.ndarray:
    x = speed * rng.lognormal(-7, 0.08, n)
    if rng.random() < 0.15:  # a burst on this window
        k = int(rng.integers(1, max(2, n // 10)))
        x[:k] *= rng.uniform(1.5, 3)
    if scenario == "tail99":
        x[rng.random(n) < 0.02] *= 3
    if scenario == "tail95":
        x[rng.random(n) < 0.08] *= 2
    return x


def per_pair(base: Windows, cand: Windows, q: float) -> tuple[float, float, int]:
    logs = [math.log(hd(c, q) / hd(b, q)) for b, c in zip(base, cand, strict=True)]
    return trimmed_mean_interval(logs)


def pooled(base: Windows, cand: Windows, q: float) -> tuple[float, float, int]:
    def estimate(pairs: Sequence[int]) -> float:
        c = np.concatenate([cand[i] for i in pairs])
        b = np.concatenate([base[i] for i in pairs])
        return math.log(hd(c, q) / hd(b, q))

    jack = np.array([estimate([j for j in range(K) if j != i]) for i in range(K)])
    se = math.sqrt((K - 1) / K * float(((jack - jack.mean()) ** 2).sum()))
    return estimate(range(K)), se, K - 1


def main() -> None:
    rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    methods: dict[str, Callable[[Windows, Windows, float], tuple[float, float, int]]] = {
        "per_pair": per_pair,
        "pooled": pooled,
    }
    for scenario in ("none", "tail95", "tail99"):
        for q in (0.95, 0.99):
            diff = dict.fromkeys(methods, 0)
            same = dict.fromkeys(methods, 0)
            for _ in range(SIMS):
                speeds = rng.lognormal(0, 0.1, K)
                base = [window(rng, s, "none", n) for s in speeds]
                cand = [window(rng, s, scenario, n) for s in speeds]
                for name, method in methods.items():
                    m, se, df = method(base, cand, q)
                    diff[name] += m - float(t_ppf(1 - ALPHA, df)) * se > math.log(1.05)
                    margin = 1.05 if q < 0.99 else 1.10
                    same[name] += m + float(t_ppf(0.95, df)) * se < math.log(margin)
            print(
                scenario,
                q,
                {k: f"diff {diff[k] / SIMS:.3f} same {same[k] / SIMS:.3f}" for k in methods},
            )


if __name__ == "__main__":
    main()
