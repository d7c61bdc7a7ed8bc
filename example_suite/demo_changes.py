"""The demo's injected changes: which candidate change a kernel should make, from the environment.

``ROOFLINE_DEMO_CHANGE`` is a comma-separated list of change names (``example_suite/demo.py``
sets it for its candidate run). The kernels ask :func:`injected` and, when their change is
named, behave like the changed code would. Unset, every kernel is the baseline. A real suite has
no such switch: its candidate is the code under review.
"""

from __future__ import annotations

import os

__all__ = ["CHANGES", "ENV", "injected"]

ENV = "ROOFLINE_DEMO_CHANGE"

#: Every change a kernel knows, with what it does (the demo's decision table says what the gate
#: should make of each).
CHANGES = {
    "gemm-layout": "GEMM: B is stored as a list of columns and multiplied column by column "
    "(a GEMV per column: BLAS-3 becomes BLAS-2, off the compute roof)",
    "attention-tail": "long-context attention decode: every 80th step rebuilds its key/value "
    "cache (16 times the work on 1.25% of calls: p99 grows many-fold, p95 holds, the mean "
    "moves by about a fifth)",
    "layernorm-fp32": "layer norm: computed in fp32 instead of fp64, and the quality record "
    "dropped (a precision change without quality evidence)",
    "parse-fast": "record parser: each line scanned once instead of one regular-expression "
    "search per field (an improvement)",
}


def injected(change: str) -> bool:
    """Whether the candidate change ``change`` is switched on for this run."""
    if change not in CHANGES:
        raise KeyError(f"unknown demo change {change!r}; known: {', '.join(CHANGES)}")
    names = {name.strip() for name in os.environ.get(ENV, "").split(",")}
    return change in names
