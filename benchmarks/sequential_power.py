"""Power and cost of sequential three-way decisions, by simulation (no timing involved).

Paired design: each window pair gives a log ratio ``theta + N(0, sd)`` (``sd`` 0.08 by default:
measured here, the window-to-window sd is 0.07-0.11, ``research/noise-protocols.md``); the
statistic is compare_paired's 20%-trimmed mean with Yuen's t interval; looks after 6 .. 40
pairs; margin = ``gate.min_effect`` = 5% (no history floor: alternation cancels the run-to-run
noise). Two-run design: a candidate run compared with a fixed baseline of 200 samples; the
log ratio is ``theta + run offset + sampling error``, the offset ``N(0, 0.1)`` (between-run sd
of the ratio), the sampling error that of a median of lognormal(sigma = 0.15) samples
(``sqrt(pi / 2) sigma / sqrt(n)`` per side); looks at 200 .. 800 candidate samples (a cap of 4x
the budget); margin = ``max(5%, history floor)`` with the floor the 99% bound of the offset
(+26.2%), as ``stats.noise_floor`` gives with a long history.

Every cell is ``--sims`` seeded simulations; rates are percentages (Monte Carlo sd at most
``50 / sqrt(sims)`` points). The decision rule is ``threeway.classify_three_way`` at
``sequential`` boundaries, vectorised here and checked against ``sequential.decide_look`` on
random inputs before the tables are printed.

Then, the boundary alone (no margin condition) over 8 looks for a known-variance z, a plain
t and compare_paired's trimmed t against naive 5% looks, and the trimmed t's own tail accuracy
at one look (``--check-sims``).

Usage: python benchmarks/sequential_power.py [--sims 4000] [--check-sims 20000] [--seed 20261130]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_roofline.stats.paired import trimmed_mean_interval
from pytest_roofline.stats.sequential import (
    Estimate,
    SequentialPlan,
    decide_look,
    geometric_sizes,
    run_noise_sd,
)
from pytest_roofline.stats.threeway import NEVER_SAME_RATIO

UNKNOWN, DIFFERENT, SAME = 0, 1, 2


def yuen(d: np.ndarray, n: int, trim: float = 0.2) -> tuple[np.ndarray, np.ndarray, int]:
    """compare_paired's trimmed mean, its se and df over the first ``n`` pairs of every row."""
    x = np.sort(d[:, :n], axis=1)
    g = math.floor(trim * n + 1e-9)
    h = n - 2 * g
    w = np.clip(x, x[:, [g]], x[:, [n - g - 1]])
    se = np.sqrt((n - 1) * w.var(axis=1, ddof=1) / (h * (h - 1)))
    return x[:, g : n - g].mean(axis=1), se, h - 1


def decide(m: np.ndarray, se: np.ndarray, qd: float, qs: float, margin: float) -> np.ndarray:
    """classify_three_way on the look's interval, vectorised (no absolute floor here)."""
    edge = math.log1p(margin)
    different = (m - qd * se > 0) & (m >= edge)
    same = ~different & (m < math.log(NEVER_SAME_RATIO)) & (m + qs * se < edge)
    return np.where(different, DIFFERENT, np.where(same, SAME, UNKNOWN))


@dataclass(frozen=True)
class Cell:
    different: float
    same: float
    unknown: float
    mean_units: float
    p90_units: float


def sequence(
    m: np.ndarray,
    se: np.ndarray,
    crit: Sequence[tuple[float, float]],
    units: Sequence[int],
    margin: float,
) -> Cell:
    """Run every simulated comparison through the looks; stop at its first decision."""
    r = m.shape[0]
    outcome = np.full(r, UNKNOWN)
    used = np.full(r, units[-1])
    alive = np.ones(r, dtype=bool)
    for k, (qd, qs) in enumerate(crit):
        dec = decide(m[:, k], se[:, k], qd, qs, margin)
        stop = alive & (dec != UNKNOWN)
        outcome[stop] = dec[stop]
        used[stop] = units[k]
        alive &= ~stop
    return Cell(
        100 * float(np.mean(outcome == DIFFERENT)),
        100 * float(np.mean(outcome == SAME)),
        100 * float(np.mean(outcome == UNKNOWN)),
        float(used.mean()),
        float(np.quantile(used, 0.9)),
    )


@dataclass(frozen=True)
class Design:
    name: str
    sizes: tuple[int, ...]
    spending: str  # "obrien-fleming" | "pocock" | "fixed" (one look at the cap) | "naive"
    alpha: float = 0.05
    alpha_same: float = 0.05
    spending_same: str | None = None


def _plan(design: Design, n_base: int | None = None) -> SequentialPlan:
    kw = dict(
        alpha=design.alpha,
        alpha_same=design.alpha_same,
        spending=design.spending,
        spending_same=design.spending_same,
    )
    if n_base is None:
        return SequentialPlan.for_sizes(design.sizes, **kw)  # type: ignore[arg-type]
    return SequentialPlan.for_two_run(n_base, design.sizes, **kw)  # type: ignore[arg-type]


def _fixed(design: Design, df: float) -> tuple[float, float]:
    def q(a: float) -> float:
        return float(stats.t.isf(a, df) if math.isfinite(df) else stats.norm.isf(a))

    return q(design.alpha), q(design.alpha_same)


def criticals(design: Design, dfs: Sequence[float]) -> list[tuple[float, float]]:
    """Per-look (lower, upper) critical multipliers of se for a paired design."""
    if design.spending in ("fixed", "naive"):
        return [_fixed(design, df) for df in dfs]
    plan = _plan(design)
    return [plan.boundary(k + 1).critical(df) for k, df in enumerate(dfs)]


def two_run_criticals(design: Design, n_base: int) -> list[tuple[float, float]]:
    if design.spending in ("fixed", "naive"):
        return [_fixed(design, math.inf)] * len(design.sizes)
    return [b.critical() for b in _plan(design, n_base).boundaries()]


def paired_cell(
    design: Design,
    theta: float,
    *,
    sd: float,
    margin: float,
    sims: int,
    rng: np.random.Generator,
    disturbed: float = 0.0,
) -> Cell:
    n_max = design.sizes[-1]
    d = rng.normal(theta, sd, (sims, n_max))
    if disturbed:
        # A neighbour's burst on one side of a pair: that pair's ratio is off by N(0, 0.5).
        hit = rng.random((sims, n_max)) < disturbed
        d = d + hit * rng.normal(0.0, 0.5, (sims, n_max))
    looks = [yuen(d, n) for n in design.sizes]
    m = np.stack([lk[0] for lk in looks], axis=1)
    se = np.stack([lk[1] for lk in looks], axis=1)
    crit = criticals(design, [lk[2] for lk in looks])
    return sequence(m, se, crit, design.sizes, margin)


def two_run_cell(
    design: Design,
    theta: float,
    *,
    run_sd: float,
    sample_sd: float,
    n_base: int,
    margin: float,
    sims: int,
    rng: np.random.Generator,
    run_noise: bool,
) -> Cell:
    v = (math.sqrt(math.pi / 2.0) * sample_sd) ** 2  # variance of one sample's influence on log p50
    offset = rng.normal(0.0, run_sd, sims)
    base_err = rng.normal(0.0, math.sqrt(v / n_base), sims)
    sizes = design.sizes
    steps = np.diff(sizes, prepend=0)
    sums = np.cumsum(rng.normal(0.0, 1.0, (sims, len(sizes))) * np.sqrt(v * steps), axis=1)
    m = theta + offset[:, None] + sums / np.asarray(sizes) - base_err[:, None]
    se_w = np.sqrt(v * (1.0 / n_base + 1.0 / np.asarray(sizes, dtype=float)))
    se = np.broadcast_to(np.hypot(se_w, run_sd) if run_noise else se_w, m.shape)
    crit = two_run_criticals(design, n_base)
    return sequence(m, se, crit, sizes, margin)


def self_check(rng: np.random.Generator) -> None:
    """The vectorised rule agrees with decide_look (the module's own path) on random inputs."""
    plan = SequentialPlan.for_sizes((6, 9, 14, 21, 32, 40))
    names = {"unknown": UNKNOWN, "different": DIFFERENT, "same": SAME}
    for _ in range(400):
        k = int(rng.integers(1, 7))
        m, se, df = (
            float(rng.normal(0.05, 0.1)),
            float(rng.uniform(0.005, 0.06)),
            float(rng.integers(3, 30)),
        )
        b = plan.boundary(k)
        qd, qs = b.critical(df)
        want = names[decide_look(Estimate(m, se, df), b, 0.05).outcome]
        got = int(decide(np.array([m]), np.array([se]), qd, qs, 0.05)[0])
        assert got == want, (m, se, df, k, got, want)
    # And the vectorised Yuen statistic is compare_paired's.
    d = rng.normal(0, 0.08, (5, 13))
    vm, vse, vdf = yuen(d, 13)
    for i in range(5):
        mean, se, df = trimmed_mean_interval(d[i])
        assert abs(mean - vm[i]) < 1e-12 and abs(se - vse[i]) < 1e-12 and df == vdf


def checks(sims: int, rng: np.random.Generator) -> None:
    """The boundary alone (no margin condition) over 8 looks, and the trimmed t at one look."""
    looks = (6, 9, 13, 18, 24, 30, 35, 40)
    plan = SequentialPlan.for_sizes(looks)
    edge = math.log(1.05)
    print(
        f"\n## The boundary alone: 8 looks after {','.join(map(str, looks))} pairs, alpha = "
        f"alpha_same = 0.05, normal data, {sims} simulations\n"
    )
    print("| statistic | looks | P(ever lower > 1 \\| no change) | P(ever upper < 1.05 \\| +5%) |")
    print("|---|---|---|---|")
    for name, trim in (
        ("known-variance z", None),
        ("plain t", 0.0),
        ("trimmed t (compare_paired)", 0.2),
    ):
        for label, naive in (("O'Brien-Fleming", False), ("naive 5% each", True)):
            rates = []
            for theta, low in ((0.0, True), (edge, False)):
                d = rng.normal(theta, 1.0, (sims, looks[-1]))
                hit = np.zeros(sims, dtype=bool)
                for k, n in enumerate(looks):
                    if trim is None:
                        m, se, df = (
                            d[:, :n].mean(axis=1),
                            np.full(sims, 1.0 / math.sqrt(n)),
                            math.inf,
                        )
                    else:
                        m, se, df = yuen(d, n, trim)
                    b = SequentialPlan(1).boundary(1) if naive else plan.boundary(k + 1)
                    qd, qs = b.critical(df)
                    hit |= (m - qd * se > 0) if low else (m + qs * se < theta)
                rates.append(float(hit.mean()))
            print(f"| {name} | {label} | {rates[0]:.4f} | {rates[1]:.4f} |")
    print(
        f"\n## compare_paired's trimmed t alone, one look, normal data: actual / nominal rate "
        f"of t > t_(1-a, h-1), {10 * sims} simulations\n"
    )
    print("| pairs | df | a = 5% | a = 1% | a = 0.1% |")
    print("|---|---|---|---|---|")
    for n in (5, 6, 8, 10, 15, 20, 30, 40):
        d = rng.normal(0.0, 1.0, (10 * sims, n))
        m, se, df = yuen(d, n)
        ratios = [float(np.mean(m / se > stats.t.isf(a, df))) / a for a in (0.05, 0.01, 0.001)]
        print(f"| {n} | {df} | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")


def row(label: str, scenario: str, c: Cell, unit: str) -> str:
    return (
        f"| {label} | {scenario} | {c.different:.1f} | {c.same:.1f} | {c.unknown:.1f} | "
        f"{c.mean_units:.1f} | {c.p90_units:.0f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--pair-sd", type=float, default=0.08)
    parser.add_argument("--run-sd", type=float, default=0.10)
    parser.add_argument("--check-sims", type=int, default=20000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    self_check(rng)

    every = tuple(range(6, 41))
    geo = geometric_sizes(6, 40)
    geo_name = ",".join(map(str, geo))
    obf, poc = "obrien-fleming", "pocock"
    paired_designs = [
        Design("OBF / OBF, 0.05 / 0.05, every pair", every, obf),
        Design(f"OBF / OBF, 0.05 / 0.05, pairs {geo_name}", geo, obf),
        Design("Pocock / Pocock, 0.05 / 0.05, every pair", every, poc),
        Design("OBF / OBF, 0.01 / 0.05, every pair", every, obf, alpha=0.01),
        Design("OBF / Pocock, 0.01 / 0.05, every pair", every, obf, alpha=0.01, spending_same=poc),
        Design("one look at 40 pairs, 0.05 / 0.05", (40,), "fixed"),
        Design("naive 5% at every pair", every, "naive"),
    ]
    paired_scenarios = [
        ("A/A", 0.0, 0.0),
        ("A/A, 5% of pairs disturbed", 0.0, 0.05),
        ("+5% (= margin)", math.log(1.05), 0.0),
        ("+10%", math.log(1.10), 0.0),
        ("+20%", math.log(1.20), 0.0),
        ("-10% (improvement)", math.log(0.90), 0.0),
        ("x3", math.log(3.0), 0.0),
    ]
    margin = 0.05
    print(
        f"## Paired: window-pair log-ratio sd {args.pair_sd}, 6..40 pairs, margin +{margin:.0%}, "
        f"{args.sims} simulations per row\n"
    )
    print("Design: spending of DIFFERENT / SAME, alpha / alpha_same, looks.\n")
    print("| design | true change | DIFFERENT % | SAME % | UNKNOWN % | mean pairs | p90 pairs |")
    print("|---|---|---|---|---|---|---|")
    for design in paired_designs:
        for scenario, theta, disturbed in paired_scenarios:
            cell = paired_cell(
                design,
                theta,
                sd=args.pair_sd,
                margin=margin,
                sims=args.sims,
                rng=rng,
                disturbed=disturbed,
            )
            print(row(design.name, scenario, cell, "pairs"))

    z99 = float(stats.norm.ppf(0.99))
    floor = math.expm1(z99 * args.run_sd)
    assert abs(run_noise_sd(floor) - args.run_sd) < 1e-12
    # The margin at which SAME can hold 5% at the margin and still pass 95% of A/A: the two
    # one-sided 5% bounds must fit between 0 and the margin.
    sized = math.expm1(2.0 * float(stats.norm.ppf(0.95)) * args.run_sd)
    looks = geometric_sizes(200, 800, growth=math.sqrt(2.0))
    looks_name = ",".join(map(str, looks))
    two_designs = [
        (
            Design(f"OBF, n = {looks_name}, within-run interval, margin = floor", looks, obf),
            False,
            floor,
        ),
        (
            Design("one look at n = 200, within-run interval, margin = floor", (200,), "fixed"),
            False,
            floor,
        ),
        (
            Design(f"OBF, n = {looks_name}, interval with run noise, margin = floor", looks, obf),
            True,
            floor,
        ),
        (
            Design(
                f"OBF, n = {looks_name}, interval with run noise, margin = +{sized:.0%}", looks, obf
            ),
            True,
            sized,
        ),
    ]
    two_scenarios = [
        ("A/A", 0.0),
        ("+10%", math.log(1.10)),
        ("+20%", math.log(1.20)),
        (f"+{floor:.1%} (= floor)", math.log1p(floor)),
        (f"+{sized:.1%}", math.log1p(sized)),
        ("+50%", math.log(1.5)),
        ("x2", math.log(2.0)),
        ("x3", math.log(3.0)),
        ("-20% (improvement)", math.log(0.8)),
    ]
    print(
        f"\n## Two-run: between-run sd {args.run_sd} (log ratio), baseline 200 samples, "
        f"candidate 200..800 samples, history floor +{floor:.1%}, alpha = alpha_same = 0.05, "
        f"{args.sims} simulations per row\n"
    )
    print(
        "| design | true change | DIFFERENT % | SAME % | UNKNOWN % | mean samples | p90 samples |"
    )
    print("|---|---|---|---|---|---|---|")
    for design, run_noise, two_margin in two_designs:
        for scenario, theta in two_scenarios:
            cell = two_run_cell(
                design,
                theta,
                run_sd=args.run_sd,
                sample_sd=0.15,
                n_base=200,
                margin=two_margin,
                sims=args.sims,
                rng=rng,
                run_noise=run_noise,
            )
            print(row(design.name, scenario, cell, "samples"))
    checks(args.check_sims, rng)
    print(f"\n({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
