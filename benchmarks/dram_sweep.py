"""The host calibration's DRAM size sweep, read afresh N times: rates, the verdict, the time.

Each reading makes a new ``NumpyKernels`` (2 threads by default) and runs its sweep with the
reference size the calibration would use (``reference_bytes``), printing the reference and the
swept sizes' best ``add`` rates, the largest swept rate over the reference, and what
``past_the_caches`` makes of it (the array size, or ``None``: the caches' rule stands).

Usage: python benchmarks/dram_sweep.py [--readings 12] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

from pytest_roofline.hardware.kernels import NumpyKernels, past_the_caches, reference_bytes
from pytest_roofline.hardware.machine import last_level_caches

MIB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--readings", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    options = parser.parse_args()
    llc = last_level_caches()[0] or 32 * MIB
    reference = reference_bytes(options.threads, llc)
    if reference is None:
        raise SystemExit(f"no sweep for {options.threads} threads and a {llc // MIB} MiB LLC")
    accepted = 0
    for _ in range(options.readings):
        kernels = NumpyKernels(threads=options.threads)
        started = time.perf_counter()
        rate, swept = kernels._sweep(reference)
        seconds = time.perf_counter() - started
        found = past_the_caches(rate, swept)
        accepted += found is not None
        rates = {size // MIB: round(value / 1e9, 1) for size, value in swept.items()}
        print(
            f"{seconds:.2f} s  reference {rate / 1e9:.1f} GB/s  {rates} GB/s  "
            f"max/reference {max(swept.values()) / rate:.2f}  -> {found}"
        )
    print(f"accepted {accepted} of {options.readings}")


if __name__ == "__main__":
    main()
