"""A bursty noisy neighbour: the load a shared CI runner's other tenants put on the machine.

It alternates bursts of 0.2-1.5 s of one kind of work with idle gaps, drawn from a seeded
generator so that a validation run can be repeated:

* ``stream``: numpy streams over arrays far larger than the caches (copy, add, scaled add), so
  memory bandwidth and the shared last-level cache are contended;
* ``gemm``: fp64 GEMMs with two BLAS threads (OpenBLAS/MKL/BLIS thread variables set before
  numpy is imported), so both vCPUs of a small runner are asked for at once;
* ``python``: a pure-Python loop (interpreter work, one core);

with gaps of 0.1-1.0 s (``--idle``) in which it sleeps. The kinds are drawn with equal weight.
This is the neighbour described in issue 10 ("a process alternating 0.2-1.5 s bursts of numpy
streams, 2-thread GEMMs and Python loops with idle gaps"); ``research/noise-protocols.md``
measured paired windows under a neighbour of this kind.

It runs until killed (SIGTERM or SIGINT end it cleanly) or for ``--seconds``. With ``--log``
it writes one JSON line per burst (kind, start and end as ``time.monotonic()``, the clock
the paired workers' windows are stamped with), so a disturbed window can be matched to a
burst afterwards.

Usage::

    python benchmarks/neighbour.py --seed 1 [--seconds 300] [--log bursts.jsonl]
    python benchmarks/neighbour.py --seed 1 & NEIGHBOUR=$!; ...; kill $NEIGHBOUR
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

# Two BLAS threads for the GEMM bursts; must be set before numpy loads its BLAS.
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_name] = "2"

import numpy as np  # noqa: E402

KINDS = ("stream", "gemm", "python")
BURST_S = (0.2, 1.5)
IDLE_S = (0.1, 1.0)
STREAM_ELEMENTS = 8_000_000  # 64 MB per fp64 array: well past any last-level cache here
GEMM_N = 384


class Neighbour:
    """The burst generator; :meth:`run` loops until ``deadline`` (monotonic) or a signal."""

    def __init__(self, rng: np.random.Generator, *, idle_s: tuple[float, float] = IDLE_S) -> None:
        self.rng = rng
        self.idle_s = idle_s
        self.stopped = False
        self._a = np.ones(STREAM_ELEMENTS)
        self._b = np.full(STREAM_ELEMENTS, 2.0)
        self._c = np.empty(STREAM_ELEMENTS)
        self._x = rng.standard_normal((GEMM_N, GEMM_N))
        self._y = rng.standard_normal((GEMM_N, GEMM_N))

    def stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopped = True

    def _stream(self, until: float) -> None:
        while time.monotonic() < until and not self.stopped:
            np.copyto(self._c, self._a)
            np.add(self._a, self._b, out=self._c)
            np.multiply(self._b, 3.0, out=self._c)
            self._c += self._a

    def _gemm(self, until: float) -> None:
        while time.monotonic() < until and not self.stopped:
            self._x @ self._y

    def _python(self, until: float) -> None:
        while time.monotonic() < until and not self.stopped:
            total = 0
            for i in range(20_000):
                total += i * i

    def run(self, deadline: float, log: Path | None) -> int:
        bursts = 0
        out = log.open("a", encoding="utf-8") if log is not None else None
        try:
            while not self.stopped and time.monotonic() < deadline:
                kind = KINDS[int(self.rng.integers(len(KINDS)))]
                length = float(self.rng.uniform(*BURST_S))
                start = time.monotonic()
                until = min(deadline, start + length)
                getattr(self, f"_{kind}")(until)
                end = time.monotonic()
                bursts += 1
                if out is not None:
                    out.write(json.dumps({"kind": kind, "start": start, "end": end}) + "\n")
                    out.flush()
                gap = float(self.rng.uniform(*self.idle_s))
                time.sleep(max(0.0, min(gap, deadline - time.monotonic())))
        finally:
            if out is not None:
                out.close()
        return bursts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the burst sequence")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    parser.add_argument("--log", type=Path, default=None, help="append one JSON line per burst")
    parser.add_argument(
        "--idle",
        type=float,
        nargs=2,
        default=IDLE_S,
        metavar=("MIN", "MAX"),
        help="idle gap between bursts, seconds (default 0.1 1.0)",
    )
    args = parser.parse_args(argv)
    neighbour = Neighbour(np.random.default_rng(args.seed), idle_s=tuple(args.idle))
    signal.signal(signal.SIGTERM, neighbour.stop)
    signal.signal(signal.SIGINT, neighbour.stop)
    deadline = time.monotonic() + args.seconds if args.seconds is not None else float("inf")
    bursts = neighbour.run(deadline, args.log)
    print(f"neighbour: {bursts} bursts", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
