"""A worker's reply to a window that passed, for controller tests with scripted workers."""

from __future__ import annotations

import json
from typing import Any

import numpy as np


def passed_window(
    nodeid: str, seconds: float, *, samples: int, cpu_share: float, index: int = 0
) -> dict[str, Any]:
    """What ``plugin.ab_worker`` sends for a passed window: ``samples`` calls of 1 ms each."""
    return {
        "nodeid": nodeid,
        "outcome": "passed",
        "samples_f64": np.full(samples, 1e-3, dtype="<f8").tobytes(),
        "batch_size": 1,
        "stop_reason": "budget",
        "sampling_s": seconds,
        "warmup_s": 0.0,
        "started_ns": index,
        "finished_ns": index + 1,
        "cpu_share": cpu_share,
        "result": json.dumps({}),
    }
