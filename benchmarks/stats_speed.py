"""Speed of the statistics behind the gate (``pytest_roofline.stats``).

The requirement it checks: comparing p50, p95 and p99 of 1000 tests with 2000 samples per side
the way the gate does (one test at a time, as each finishes), plus the run's common-mode factor
and Benjamini-Hochberg, takes at most a few seconds on a 2-core CI runner. Also times the
per-test building blocks the sampler and the report call.

Run::

    python benchmarks/stats_speed.py            # 1000 tests x 2000 samples, 5 repetitions
    python benchmarks/stats_speed.py --tests 200 --samples 5000 --reps 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from pytest_roofline import stats


def latencies(rng: np.random.Generator, k: int, n: int, scale: float = 1.0) -> np.ndarray:
    """k runs of n call latencies (s): lognormal body around 1 ms and a 1% heavy stall tail."""
    x = np.exp(np.log(1e-3) + 0.15 * rng.standard_normal((k, n)))
    stall = rng.random((k, n)) < 0.01
    return np.asarray(np.where(stall, x * (1.0 + 2.0 * rng.pareto(2.0, (k, n))), x) * scale)


def timed(fn: Callable[[], object], reps: int) -> tuple[float, float, float]:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


MIN_EFFECT = {0.5: 0.05, 0.95: 0.05, 0.99: 0.10}


def gate(
    bases: list[np.ndarray], cands: list[np.ndarray], seed: int
) -> list[stats.QuantileComparison]:
    """What a session does: compare each test's quantiles, then the common mode and BH."""
    rngs = np.random.default_rng(seed).spawn(len(bases))
    comps = [
        stats.compare_quantile(b, c, q, delta=delta, rng=rng)
        for b, c, rng in zip(bases, cands, rngs, strict=True)
        for q, delta in MIN_EFFECT.items()
    ]
    stats.common_mode(np.log([c.ratio for c in comps if c.quantile == 0.5]))
    stats.bh_adjust([c.p_value for c in comps if np.isfinite(c.p_value)])
    return comps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261129)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    base = latencies(rng, a.tests, a.samples)
    cand = latencies(rng, a.tests, a.samples, scale=1.02)
    bases, cands = list(base), list(cand)
    print(f"numpy {np.__version__}; {a.tests} tests x {a.samples} samples per side; B = 2000")

    med, lo, hi = timed(lambda: gate(bases, cands, a.seed), a.reps)
    print(
        f"gate p50+p95+p99 (compare_quantile per test, common_mode, bh_adjust): "
        f"median {med:.3f} s (min {lo:.3f}, max {hi:.3f}) over {a.reps} reps; "
        f"{1e3 * med / a.tests:.3f} ms per test"
    )
    verdicts = [c.verdict for c in gate(bases, cands, a.seed)]
    print("  verdicts:", {v: verdicts.count(v) for v in sorted(set(verdicts))})

    # mixed lengths: the grouping path
    lengths = rng.integers(a.samples // 2, a.samples * 2, a.tests)
    mixed_b = [latencies(rng, 1, int(n))[0] for n in lengths]
    mixed_c = [latencies(rng, 1, int(n))[0] for n in lengths]
    med, lo, hi = timed(lambda: gate(mixed_b, mixed_c, a.seed), a.reps)
    print(
        f"gate p50+p95+p99, {a.tests} tests of mixed lengths {a.samples // 2}..{a.samples * 2}: "
        f"median {med:.3f} s (min {lo:.3f}, max {hi:.3f})"
    )

    one_b, one_c = base[0], cand[0]
    reps = 50
    med, _, _ = timed(
        lambda: stats.compare_quantile(one_b, one_c, 0.99, delta=0.1, rng=np.random.default_rng(1)),
        reps,
    )
    print(f"compare_quantile, one test, one quantile, n={a.samples}: median {1e3 * med:.2f} ms")
    for n in (1_000, 10_000, 100_000):
        x = latencies(rng, 1, n)[0]
        m1, _, _ = timed(partial(stats.sampling_decisive, x), 20)
        m2, _, _ = timed(partial(stats.sampling_decisive, x, ess=False), 20)
        m3, _, _ = timed(partial(stats.sampling_decisive, x, baseline=x, deltas=0.1), 20)
        print(
            f"sampling_decisive n={n:>6}: {1e3 * m1:.2f} ms (ESS), {1e3 * m2:.2f} ms (no ESS), "
            f"{1e3 * m3:.2f} ms (against a baseline, ESS)"
        )
    x = latencies(rng, 1, 10_000)[0]
    for label, fn in (
        ("drift", lambda: stats.drift(x)),
        ("sla_check p99", lambda: stats.sla_check(x, 0.99, 4e-3)),
        ("minimum_detectable_effect p99", lambda: stats.minimum_detectable_effect(x, 0.99)),
    ):
        med, _, _ = timed(fn, 20)
        print(f"{label}, n=10000: {1e3 * med:.2f} ms")


if __name__ == "__main__":
    main()
