"""Validate change-point detection and cumulative drift on synthetic per-run histories.

Synthetic part of the history validation (issue 14). Each series is the log of one test's
per-run p50: Gaussian noise (sd 0.05 and 0.10, the range measured here after the common-mode
correction, ``research/noise-here.md`` §3; ``--noise student-t`` uses Student's t with 3 degrees
of freedom scaled to the same sd, for heavy-tailed runs) of 30, 60 or 100 runs, with

* **steps**: none, or a step of +2, +5, +10 or +20% at run ``n // 2``;
* **drift**: +1% per run from run ``n // 2`` on.

Every series is analysed twice:

* **retrospectively**, once on the whole series: detection rate (a change point within
  ``--tolerance`` runs of the true step, upwards), the share of those located within one run,
  and false steps per 100 runs (change points not matching the step);
* **as CI sees it**, on every prefix ``z[:L]`` for ``L = 2 * min_segment .. n`` (one prefix per
  run landing on the branch): the delay to detection (runs after the step in the first prefix that
  shows it) and false alerts per 100 runs (a change point not matching the step that was not in
  the previous prefix's list within one run: a new alert someone would be shown).

For the drift scenario (and for no-step series, for its false alarms) a drift alarm is
``cumulative_drift(prefix, change_points).exceeds(margin)`` (default margin 5%, the gate's p95
``min_effect``); an alarm is counted when it turns on. The drift is reported by whichever comes
first: a change point at or after the onset, upwards, or a drift alarm.

It then times the detector on ``--cost-tests`` series of ``--cost-runs`` runs (default 1000 x
1000) with a few random steps, and on the last 200 runs of each.

Usage: python benchmarks/history_validation.py [--reps 100] [--seed 0] [--noise normal]
       [--runs 30 60 100] [--max-p-value 0.001] [--min-segment 3] [--skip-cost]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pytest_roofline.stats.changepoint import (
    DEFAULT_MAX_P_VALUE,
    DEFAULT_MIN_SEGMENT,
    DEFAULT_WINDOW,
    ChangePoint,
    cumulative_drift,
    detect_change_points,
)

RUNS = (30, 60, 100)
SDS = (0.05, 0.10)
STEPS = (0.0, 0.02, 0.05, 0.10, 0.20)
DRIFT_PER_RUN = 0.01


@dataclass
class Tally:
    series: int = 0
    runs: int = 0
    detected: int = 0
    located: int = 0
    shown: int = 0
    by_drift_alarm: int = 0
    false_full: int = 0
    prefixes: int = 0
    false_alerts: int = 0
    drift_alarms: int = 0
    delays: list[int] = field(default_factory=list)


def make_series(
    rng: np.random.Generator, runs: int, sd: float, noise: str
) -> npt.NDArray[np.float64]:
    if noise == "normal":
        return rng.normal(0.0, sd, runs)
    # Student's t with 3 df has variance 3: scale to the same sd.
    return rng.standard_t(3, runs) * sd / math.sqrt(3.0)


def matches(cp: ChangePoint, onset: int | None, tolerance: int, *, drift: bool) -> bool:
    if onset is None or cp.ratio <= 1.0:
        return False
    if drift:  # a drift cut into steps: any upward step from (about) the onset on
        return cp.index >= onset - tolerance
    return abs(cp.index - onset) <= tolerance


def is_new(cp: ChangePoint, previous: Sequence[ChangePoint], tolerance: int) -> bool:
    # A change point that moves by a few runs as data arrives is not a new alert.
    return all(abs(cp.index - p.index) > tolerance for p in previous)


def analyse(
    z: npt.NDArray[np.float64],
    onset: int | None,
    tally: Tally,
    args: argparse.Namespace,
    *,
    drift: bool,
) -> None:
    opts = {"window": args.window, "max_p_value": args.max_p_value, "min_segment": args.min_segment}
    n = len(z)
    tally.series += 1
    tally.runs += n
    if not drift:
        cps = detect_change_points(z, **opts)
        hits = [cp for cp in cps if matches(cp, onset, args.tolerance, drift=False)]
        tally.detected += bool(hits)
        tally.located += any(abs(cp.index - onset) <= 1 for cp in hits) if onset is not None else 0
        tally.false_full += len(cps) - len(hits)
    previous: tuple[ChangePoint, ...] = ()
    alarm_on = False
    found_at: int | None = None
    for length in range(2 * args.min_segment, n + 1):
        prefix = z[:length]
        cps = detect_change_points(prefix, **opts)
        tally.prefixes += 1
        for cp in cps:
            if not matches(cp, onset, args.tolerance, drift=drift) and is_new(
                cp, previous, args.tolerance
            ):
                tally.false_alerts += 1
        # Drift alarms are timed only where the table shows them (no step, or the drift).
        d = cumulative_drift(prefix, cps) if drift or onset is None else None
        alarm = d is not None and d.exceeds(args.margin)
        if alarm and not alarm_on and (onset is None or length <= onset):
            tally.drift_alarms += 1
        alarm_on = alarm
        if found_at is None and onset is not None and length > onset:
            shown = any(matches(cp, onset, args.tolerance, drift=drift) for cp in cps)
            by_alarm = drift and not shown and alarm and d is not None and d.ratio > 1.0
            if shown or by_alarm:
                found_at = length
                tally.by_drift_alarm += by_alarm
        previous = cps
    if onset is not None and found_at is not None:
        tally.delays.append(found_at - onset)
        tally.shown += 1


def fmt_delay(delays: list[int]) -> str:
    if not delays:
        return "—"
    q = np.percentile(delays, [50, 90])
    return f"{statistics.median(delays):g} (p90 {q[1]:g})"


def validation(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    print(
        f"noise {args.noise}; {args.reps} series per row; window {args.window}, "
        f"max_p_value {args.max_p_value}, min_segment {args.min_segment}; "
        f"match tolerance ±{args.tolerance} runs; drift margin {args.margin:.0%}\n"
    )
    print("### Steps at run n/2\n")
    print(
        "| runs | noise sd | step | found in the whole series | located ±1 | shown by some prefix | median delay (p90), runs | false steps /100 runs (whole series) | false alerts /100 runs (as CI sees it) | drift alarms /100 runs (before any step) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    drift_rows: list[tuple[int, float, Tally]] = []
    started = time.process_time()
    for runs in args.runs:
        for sd in SDS:
            for step in STEPS:
                tally = Tally()
                onset = runs // 2 if step else None
                for _ in range(args.reps):
                    z = make_series(rng, runs, sd, args.noise)
                    if onset is not None:
                        z[onset:] += math.log1p(step)
                    analyse(z, onset, tally, args, drift=False)
                before = tally.prefixes if onset is None else None
                drift_per_100 = (
                    f"{100 * tally.drift_alarms / before:.2f}" if before else "—"
                )  # after a step a drift alarm is a true alarm, not a false one
                print(
                    f"| {runs} | {sd:.2f} | {'none' if not step else f'+{step:.0%}'} | "
                    f"{'—' if onset is None else f'{tally.detected / tally.series:.0%}'} | "
                    f"{'—' if not tally.detected else f'{tally.located / tally.detected:.0%}'} | "
                    f"{'—' if onset is None else f'{tally.shown / tally.series:.0%}'} | "
                    f"{'—' if onset is None else fmt_delay(tally.delays)} | "
                    f"{100 * tally.false_full / tally.runs:.2f} | "
                    f"{100 * tally.false_alerts / tally.prefixes:.2f} | {drift_per_100} |",
                    flush=True,
                )
            tally = Tally()
            onset = runs // 2
            for _ in range(args.reps):
                z = make_series(rng, runs, sd, args.noise)
                z[onset:] += DRIFT_PER_RUN * np.arange(1, runs - onset + 1)
                analyse(z, onset, tally, args, drift=True)
            drift_rows.append((runs, sd, tally))
    print(f"\n### Drift of +{DRIFT_PER_RUN:.0%} per run from run n/2\n")
    print(
        "| runs | noise sd | reported | first by the drift alarm | median delay (p90), runs = accumulated % | false alerts /100 runs |"
    )
    print("|---|---|---|---|---|---|")
    for runs, sd, tally in drift_rows:
        print(
            f"| {runs} | {sd:.2f} | {tally.shown / tally.series:.0%} | "
            f"{'—' if not tally.shown else f'{tally.by_drift_alarm / tally.shown:.0%}'} | {fmt_delay(tally.delays)} | "
            f"{100 * tally.false_alerts / tally.prefixes:.2f} |"
        )
    print(f"\nCPU time of the validation: {time.process_time() - started:.0f} s")


def cost(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed + 1)
    series = []
    for _ in range(args.cost_tests):
        z = rng.normal(0.0, 0.07, args.cost_runs)
        for at in rng.integers(50, args.cost_runs - 50, size=rng.integers(0, 4)):
            z[at:] += math.log(rng.choice([0.85, 0.9, 1.1, 1.2]))
        series.append(z)
    for label, tail in (("whole history", args.cost_runs), ("last 200 runs", 200)):
        found = 0
        t0 = time.perf_counter()
        c0 = time.process_time()
        for z in series:
            cps = detect_change_points(z[-tail:])
            cumulative_drift(z[-tail:], cps)
            found += len(cps)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"cost, {args.cost_tests} tests x {tail} runs ({label}): {wall:.1f} s wall, {cpu:.1f} s CPU "
            f"({1e3 * cpu / args.cost_tests:.1f} ms CPU per test; {found} change points)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100, help="series per row (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--runs", type=int, nargs="+", default=list(RUNS), help="series lengths (default 30 60 100)"
    )
    parser.add_argument("--noise", choices=("normal", "student-t"), default="normal")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW)
    parser.add_argument("--max-p-value", type=float, default=DEFAULT_MAX_P_VALUE)
    parser.add_argument("--min-segment", type=int, default=DEFAULT_MIN_SEGMENT)
    parser.add_argument(
        "--tolerance", type=int, default=5, help="runs between a found and the true step"
    )
    parser.add_argument(
        "--margin", type=float, default=0.05, help="drift alarm margin (default 0.05)"
    )
    parser.add_argument("--cost-tests", type=int, default=1000)
    parser.add_argument("--cost-runs", type=int, default=1000)
    parser.add_argument("--skip-validation", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_validation:
        validation(args)
    if not args.skip_cost:
        cost(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
