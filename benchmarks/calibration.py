"""Host calibration: how long it takes and how much its roofs move between processes.

Runs ``calibrate_host()`` in N fresh Python processes, one after another (a process each, so
every run pays its own allocation and BLAS start-up, as a pytest session does), and prints
per roof the value of each run, the median and the run-to-run spread (max - min) / median,
plus the calibration time and whether the host looked busy. Not run by CI.

    python benchmarks/calibration.py [--runs 3] [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

_CHILD = """
import json, sys
from pytest_roofline.hardware.calibration import calibrate_host
cal = calibrate_host(quick={quick}, threads={threads})
json.dump(cal.to_dict(), sys.stdout)
"""

# (label, where in the payload, scale, unit)
_ROWS = [
    ("DRAM bandwidth", ("peak_bytes_per_s", "dram"), 1e9, "GB/s"),
    ("LLC bandwidth", ("peak_bytes_per_s", "llc"), 1e9, "GB/s"),
    ("fp64 GEMM", ("peak_flops_per_s", "fp64"), 1e9, "GFLOP/s"),
    ("fp32 GEMM", ("peak_flops_per_s", "fp32"), 1e9, "GFLOP/s"),
    ("dispatch floor", ("dispatch_floor_s", None), 1e-6, "us"),
    ("calibration time", ("seconds_taken", None), 1.0, "s"),
]


def _value(payload: dict[str, object], where: tuple[str, str | None]) -> float | None:
    field, key = where
    value = payload.get(field)
    if key is not None:
        value = value.get(key) if isinstance(value, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="calibrate_host(quick=True)")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)

    code = _CHILD.format(quick=args.quick, threads=args.threads)
    payloads: list[dict[str, object]] = []
    process_seconds: list[float] = []
    for _ in range(args.runs):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        )
        process_seconds.append(time.perf_counter() - start)
        payloads.append(json.loads(done.stdout))

    first = payloads[0]
    print(f"host calibration, {args.runs} separate processes, quick={args.quick}")
    print(f"key: {first['key']}")
    header = ["roof", *[f"run {i + 1}" for i in range(args.runs)], "median", "spread", "unit"]
    rows: list[list[str]] = [header]
    for label, where, scale, unit in _ROWS:
        values = [_value(p, where) for p in payloads]
        if any(v is None for v in values):
            continue
        scaled = [v / scale for v in values if v is not None]
        median = statistics.median(scaled)
        spread = (max(scaled) - min(scaled)) / median if median else float("nan")
        rows.append([label, *[f"{v:.3g}" for v in scaled], f"{median:.3g}", f"{spread:.0%}", unit])
    for tag, fn in (
        ("ridge fp64 (FLOP/B)", lambda p: _ridge(p, "fp64")),
        ("ridge fp32 (FLOP/B)", lambda p: _ridge(p, "fp32")),
    ):
        values = [fn(p) for p in payloads]
        median = statistics.median(values)
        rows.append(
            [
                tag,
                *[f"{v:.3g}" for v in values],
                f"{median:.3g}",
                f"{(max(values) - min(values)) / median:.0%}",
                "",
            ]
        )
    rows.append(
        ["process wall time", *[f"{s:.2f}" for s in process_seconds], "", "", "s"],
    )
    rows.append(["busy", *[str(p["busy"]) for p in payloads], "", "", ""])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print(
            "  ".join(
                cell.rjust(w) if i else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    for i, payload in enumerate(payloads, 1):
        if payload["busy"]:
            print(f"run {i} busy: {payload['busy_reason']}")
    return 0


def _ridge(payload: dict[str, object], precision: str) -> float:
    flops = _value(payload, ("peak_flops_per_s", precision)) or float("nan")
    dram = _value(payload, ("peak_bytes_per_s", "dram")) or float("nan")
    return flops / dram


if __name__ == "__main__":
    sys.exit(main())
