"""How long ``ab``'s later windows must re-warm: the per-pair noise and the time of each setting.

After the other side's window a worker's caches hold the other process's data, so every window
after a test's first warms the test up again before sampling (``WindowSettings.rewarm_s``,
10 ms). By default that warm-up goes on until the calls stop getting faster (the plugin's
settling rule), which took 15 ms a window on average here, a sixth of the window pair's time.
This script measures what a shorter or fixed re-warm-up costs in noise, on A/A pairs of the
validation fixture (``paired_validation.py``'s ten tests, one tree on both sides, three worker
pairs, 62.5 ms windows, ``--pairs`` window pairs per test, nothing dropped).

For each setting and test it computes, per window pair ``i`` and gated quantile ``q``, the log
ratio ``d_i = log HD_q(candidate window i) - log HD_q(baseline window i)`` (Harrell-Davis, as
``ab`` compares), and its robust spread (1.4826 x MAD) over the pairs: the noise the stop rule's
intervals are made of. Settings run in a rotating order within each trial, so each trial gives
every setting one run on about the same host state; the spreads of a setting are compared with
the first setting's on the same trial and test (median ratio, and a Wilcoxon signed-rank test
over those matched test-runs). It also prints the mean time of a later window (wall, the
warm-up within it) per setting.

Usage: python benchmarks/paired_rewarm.py [--settings settle:0.01,fixed:0.01,fixed:0.005]
[--trials 4] [--pairs 16]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_validation import fixture_workers, make_project

from pytest_roofline.ab.workers import PairedWorkers, WindowSettings
from pytest_roofline.stats.quantiles import hd_quantiles

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def parse_settings(text: str) -> list[tuple[str, bool, float]]:
    """``settle:0.01,fixed:0.005`` -> [(label, settles, seconds), ...]."""
    out = []
    for item in text.split(","):
        mode, _, seconds = item.partition(":")
        if mode not in ("settle", "fixed"):
            raise SystemExit(f"--settings: {item!r}: use settle:SECONDS or fixed:SECONDS")
        out.append((f"{mode} {float(seconds) * 1e3:g} ms", mode == "settle", float(seconds)))
    return out


def robust_sd(values: np.ndarray) -> float:
    return float(1.4826 * np.median(np.abs(values - np.median(values))))


def measure(
    root: Path, trees: tuple[Path, Path], settles: bool, rewarm_s: float, pairs: int
) -> dict:
    """One A/A run of every test to ``pairs`` window pairs; per test and quantile the robust
    spread of the per-pair log ratios, and the later windows' mean wall and warm-up."""
    specs = fixture_workers(root, *trees)
    settings = WindowSettings(
        window_s=0.0625,
        min_pairs=pairs,
        max_pairs=pairs,
        worker_pairs=3,
        rewarm_s=rewarm_s,
        rewarm_settles=settles,
        drop_disturbed=False,
    )
    with PairedWorkers(*specs, settings) as workers:
        run = workers.run()
    spreads: dict[str, dict[str, float]] = {}
    walls, warmups = [], []
    for nodeid, test in run.tests.items():
        base, cand = test.base_windows, test.cand_windows
        spreads[nodeid] = {}
        for name, q in QUANTILES.items():
            d = np.array(
                [
                    math.log(hd_quantiles(c, [q])[0]) - math.log(hd_quantiles(b, [q])[0])
                    for b, c in zip(base, cand, strict=False)
                ]
            )
            spreads[nodeid][name] = robust_sd(d)
        seen = set()
        for window in test.windows:
            key = (window.worker_pair, window.side)
            if key in seen:
                walls.append(window.wall_s)
                warmups.append(window.warmup_s)
            seen.add(key)
    # With fewer pairs than the three worker pairs take, every window is a first one.
    return {
        "spreads": spreads,
        "wall": statistics.fmean(walls) if walls else math.nan,
        "warmup": statistics.fmean(warmups) if warmups else math.nan,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--settings", default="settle:0.01,fixed:0.01,fixed:0.005")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=16)
    options = parser.parse_args()
    settings = parse_settings(options.settings)
    root = Path(tempfile.mkdtemp(prefix="paired-rewarm-"))
    repo, base = make_project(root, [])  # the same commit in two trees, as ab has them
    results: dict[str, list[dict]] = {label: [] for label, _, _ in settings}
    for trial in range(options.trials):
        shift = trial % len(settings)
        for label, settles, seconds in settings[shift:] + settings[:shift]:
            result = measure(root, (base, repo), settles, seconds, options.pairs)
            results[label].append(result)
            medians = {
                name: statistics.median(s[name] for s in result["spreads"].values())
                for name in QUANTILES
            }
            print(
                f"trial {trial + 1} {label}: later window {result['wall'] * 1e3:.1f} ms "
                f"(warm-up {result['warmup'] * 1e3:.1f} ms); median spread "
                + ", ".join(f"{k} {v:.4f}" for k, v in medians.items()),
                flush=True,
            )
    reference = settings[0][0]
    print(
        f"\n{options.trials} trials, {options.pairs} window pairs of 62.5 ms per test, 3 worker "
        f"pairs, A/A; spreads compared with {reference!r} on the same trial and test\n"
    )
    print(
        "| setting | later window (ms) | its warm-up (ms) | "
        + " | ".join(
            f"{name} spread, median (ratio to reference, Wilcoxon p)" for name in QUANTILES
        )
        + " |"
    )
    print("|---|---|---|" + "---|" * len(QUANTILES))
    for label, _, _ in settings:
        runs = results[label]
        cells = []
        for name in QUANTILES:
            mine = [s[name] for r in runs for s in r["spreads"].values()]
            ref = [s[name] for r in results[reference] for s in r["spreads"].values()]
            ratio = [m / r for m, r in zip(mine, ref, strict=True) if r > 0 and m > 0]
            logs = np.log(ratio)
            p = stats.wilcoxon(logs).pvalue if label != reference and np.any(logs) else math.nan
            cells.append(
                f"{statistics.median(mine):.4f} (x{math.exp(float(np.median(logs))):.3f}, p {p:.2g})"
            )
        wall = statistics.fmean(r["wall"] for r in runs) * 1e3
        warm = statistics.fmean(r["warmup"] for r in runs) * 1e3
        print(f"| {label} | {wall:.1f} | {warm:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
