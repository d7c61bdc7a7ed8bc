"""Soak analysis on simulated window series: false alarms, detection and where the onset lands.

Each series is ``windows`` window medians (log-normal around 1 ms, spread ``sd`` between
windows, as a window's median wanders on this VM: 1-5% quiet, more under load). Null series
are noise only: independent windows, and autocorrelated ones (AR(1), ``phi`` 0.5 and 0.8:
host speed that wanders slowly, the case the analysis is not built for). Step series get
``+step`` from a random window in the second half on. Every figure is
:func:`pytest_roofline.gate.soak.assess_soak` at the gate's defaults (margin 5%, alpha 0.05).

Usage: python benchmarks/soak_validation.py [--series 1000] [--windows 30] [--seed 20261201]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pytest_roofline.gate.soak import assess_soak
from pytest_roofline.measure.soak import SoakMeasurement, SoakWindow


def _soak(p50_s: np.ndarray) -> SoakMeasurement:
    windows = tuple(
        SoakWindow(offset_s=float(i), duration_s=1.0, n=1000, p50_s=float(p))
        for i, p in enumerate(p50_s)
    )
    return SoakMeasurement(float(len(windows)), 1.0, float(len(windows)), 1, windows)


def _noise(rng: np.random.Generator, n: int, sd: float, phi: float) -> np.ndarray:
    e = np.zeros(n)
    for k in range(n):
        e[k] = (phi * e[k - 1] if k else 0.0) + rng.normal(0.0, sd * np.sqrt(1 - phi**2))
    return e


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n, count = args.windows, args.series

    print(f"{count} series of {n} windows each; margin 5%, alpha 0.05\n")
    print("| null series | sd between windows | false alarms |")
    print("|---|---|---|")
    for phi in (0.0, 0.5, 0.8):
        for sd in (0.01, 0.03, 0.08):
            alarms = sum(
                assess_soak(_soak(1e-3 * np.exp(_noise(rng, n, sd, phi))), margin=0.05).finding
                is not None
                for _ in range(count)
            )
            kind = "independent" if phi == 0 else f"AR(1) phi {phi}"
            print(f"| {kind} | {sd:.0%} | {alarms / count:.1%} |")

    print("\n| step | sd | detected | onset exact | within 1 window | median delay |")
    print("|---|---|---|---|---|---|")
    began = time.perf_counter()
    analyses = 0
    for step in (0.05, 0.10, 0.20):
        for sd in (0.01, 0.03):
            found, errors = 0, []
            for _ in range(count):
                y = _noise(rng, n, sd, 0.0)
                at = int(rng.integers(n // 2, n - 3))
                y[at:] += np.log1p(step)
                finding = assess_soak(_soak(1e-3 * np.exp(y)), margin=0.05).finding
                analyses += 1
                if finding is not None:
                    found += 1
                    errors.append(finding.window - at)
            err = np.array(errors)
            exact = float(np.mean(err == 0)) if err.size else float("nan")
            near = float(np.mean(np.abs(err) <= 1)) if err.size else float("nan")
            delay = float(np.median(err)) if err.size else float("nan")
            print(
                f"| +{step:.0%} | {sd:.0%} | {found / count:.1%} | {exact:.0%} | {near:.0%} "
                f"| {delay:+.0f} |"
            )
    cost = (time.perf_counter() - began) / analyses
    print(f"\nanalysis cost: {cost * 1e3:.2f} ms per soak of {n} windows")


if __name__ == "__main__":
    main()
