"""The demo's own check of its table (example_suite/demo.py), on hand-made run documents."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest

from tests.example.test_example_suite import SUITE


@pytest.fixture
def demo(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    # demo.py sets BLAS thread variables with setdefault on import: set them here first so the
    # import leaves this process's environment as it was once the test ends.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
    spec = importlib.util.spec_from_file_location("roofline_demo", SUITE / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


def _gemm(decision: str, reason: str) -> dict[str, Any]:
    return {
        "nodeid": "test_gemm.py::test_gemm[fp32-n512]",
        "decision": decision,
        "reasons": [reason],
        "change": {"p50": {"ratio": 5.68, "verdict": "regression", "outcome": "different"}},
        "mean_s": 1.0,
    }


@pytest.mark.parametrize(
    "reason",
    [
        # The demo's sides are the same clean commit (a fresh clone): seen under load, 2026-12-03.
        "p50 regressed x5.681 [1.074, 13.473] (margin +35%, 2.79 ms -> 15.8 ms), but the baseline "
        "and this run are the same commit with no uncommitted changes: below x3 (lower bound "
        "x1.074) a shift between the two processes is as likely as any change",
        # A copy without git history: the label's one run leaves the floor unmeasured.
        "p50 regressed x2.300 [1.800, 2.900] (margin +35%, 1 ms -> 2.3 ms), but the label has 1 "
        "run(s), fewer than 3: its noise floor for this test is the default, not measured: below "
        "x2 (lower bound x1.800) a shift between the two processes is as likely as any change",
        "p50 regressed x4.294 [3.118, 5.063] (margin +35%, 4.8 ms -> 20.6 ms), but the test was "
        "descheduled while it was measured (CPU share 0.42 against 1.00 in the baseline run, 75 "
        "involuntary context switches, about 1.8 per call): waits for a CPU can account for about "
        "x2.39 of its calls' time, so without paired rounds a rollback needs a lower bound of "
        "x4.783 or more",
    ],
)
def test_a_required_rollback_escalated_for_the_host_or_the_young_label_is_excused(
    demo: ModuleType, reason: str
) -> None:
    outcomes = demo.check({"candidate": {"tests": [_gemm("escalate", reason)]}}, {})
    gemm = [o for o in outcomes if o.nodeid.startswith("test_gemm.py::")]
    assert [o.problem for o in gemm] == [None]
    assert gemm[0].evidence.startswith("escalated, not rolled back: ")


def test_a_required_rollback_escalated_for_another_reason_is_a_problem(demo: ModuleType) -> None:
    reason = "p50 x3.934 [0.834, 8.852] is above the margin +35% but not established"
    outcomes = demo.check({"candidate": {"tests": [_gemm("escalate", reason)]}}, {})
    gemm = [o for o in outcomes if o.nodeid.startswith("test_gemm.py::")]
    assert [o.problem for o in gemm] == ["decided escalate, expected rollback"]


def test_an_unchanged_test_rolled_back_fails_the_demo_and_an_escalated_one_does_not(
    demo: ModuleType,
) -> None:
    # Stop 46: an unchanged decode rolled back at p50 x3.395 printed "~~" and the demo exited 0.
    decode = "test_attention.py::test_decode[decode-b4-kv512]"

    def outcome(decision: str) -> Any:
        test = {"nodeid": decode, "decision": decision, "reasons": ["r"], "mean_s": 1.0}
        (found,) = [
            o for o in demo.check({"candidate": {"tests": [test]}}, {}) if o.nodeid == decode
        ]
        return found

    rolled_back, escalated = outcome("rollback"), outcome("escalate")
    assert rolled_back.problem == "decided rollback, expected ship"
    assert demo.is_required(rolled_back, busy=True)
    assert escalated.problem is not None and not demo.is_required(escalated, busy=False)
