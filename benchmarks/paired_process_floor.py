"""How far one pair of worker processes puts unchanged code off 1: the paired process floor.

Paired rounds alternate windows of the two sides in time, so the host's drift between runs
falls on both; what they do not cancel is the pair of processes itself (where each process's
arrays landed, ``docs/paired.md``, "Where a process's arrays land"). This reads the A/A blocks of
``benchmarks/gate_validation.py`` (``--raw`` JSON lines: unchanged code, baseline and candidate
the same commit), takes every paired comparison the *first* pair of worker processes made when
a two-run session settled a first look, and prints, per quantile, how far its point estimate
strays from 1: the quantiles of the ratio, and the one-sided 99% point, which is what
``gate.confirm.PAIRED_PROCESS_FLOOR`` holds (the history noise floor is a one-sided 99% bound
too, ``stats.noise_floor``).

The comparisons were asked for tests whose first look was UNKNOWN, DIFFERENT or shifted, so
they lean towards the noisier tests and runs: the floor is, if anything, wide.

Usage: python benchmarks/paired_process_floor.py [FILES...]
(default: docs/validation/gate_validation_run1[0-3]*_aa_tests.jsonl)
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

_FIRST_PAIR = re.compile(r"(p50|p95|p99) (SAME|DIFFERENT|UNKNOWN) x([\d.]+) \[([\d.]+), ([\d.]+)\]")
_LATER_PAIRS = ", but a second pair"
DEFAULT_GLOB = "docs/validation/gate_validation_run1[0-3]*_aa_tests.jsonl"


def first_pair_ratios(lines: list[str]) -> dict[str, list[float]]:
    """Quantile -> the first worker pair's paired ratios, from ``--raw`` JSON lines."""
    found: dict[str, list[float]] = defaultdict(list)
    for line in lines:
        row = json.loads(line)
        if row.get("scenario") != "none":
            continue
        reason = ((row.get("confirmation") or {}).get("reason") or "").split(_LATER_PAIRS)[0]
        seen: set[str] = set()
        for match in _FIRST_PAIR.finditer(reason):
            name = match.group(1)
            if name not in seen:
                seen.add(name)
                found[name].append(float(match.group(3)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    files = args.files or sorted(glob.glob(DEFAULT_GLOB))
    if not files:
        print(f"no A/A raw outputs found ({DEFAULT_GLOB})", file=sys.stderr)
        return 2
    lines = [line for f in files for line in Path(f).read_text().splitlines() if line.strip()]
    print(f"{len(lines)} test-trials from {len(files)} files: {', '.join(files)}")
    print("quantile  comparisons  median  q05    q95    q99 (floor)  max    sd(log)")
    for name, ratios in sorted(first_pair_ratios(lines).items()):
        r = np.asarray(ratios)
        q05, q50, q95, q99 = np.quantile(r, [0.05, 0.5, 0.95, 0.99])
        sd = float(np.std(np.log(r), ddof=1))
        print(
            f"{name:<8}  {r.size:>11}  {q50:.3f}   {q05:.3f}  {q95:.3f}  {q99:.3f} "
            f"(+{q99 - 1:.0%})  {r.max():.3f}  {sd:.3f}"
        )
    print("(ratios: the first pair's point estimates on unchanged code; sd of their logs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
