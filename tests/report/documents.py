"""Realistic JSON report documents (DESIGN 2.5) for the renderer tests and the render benchmark.

:func:`make_document` builds a run of ``n_tests`` tests from a seeded generator. The first
tests are fixed so every decision, verdict, bound class, a missing baseline, missing counters
and several owner layouts appear in any document of 12 tests or more; the rest are random with
a realistic mix (mostly ship).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from pytest_roofline.gate.record import platform_cells, platform_targets, relevant_presets
from pytest_roofline.hardware.presets import load_presets
from pytest_roofline.roofline import DeclaredWork

DECISIONS = ("rollback", "escalate", "ship")
VERDICTS = ("insufficient", "regression", "suspect", "ok", "not detected")
BOUNDS = ("compute", "memory", "overhead", "ambiguous", "unknown")
OWNER_SETS: tuple[tuple[str, ...], ...] = (
    ("kernels-team",),
    ("performance engineer", "compiler owner", "accelerator architect"),
    (),
    ("runtime-team", "release manager"),
)
TARGET = "h100-sxm"

# (decision, p95 verdict, p99 verdict, bound, bound_before, has_baseline, has_counters)
_FIXED: tuple[tuple[str, str, str, str, str, bool, bool], ...] = (
    ("rollback", "regression", "regression", "memory", "compute", True, True),
    ("escalate", "suspect", "not detected", "ambiguous", "ambiguous", True, False),
    ("ship", "ok", "ok", "compute", "compute", True, True),
    ("ship", "not detected", "insufficient", "overhead", "overhead", True, True),
    ("escalate", "insufficient", "insufficient", "unknown", "unknown", False, False),
    ("rollback", "ok", "regression", "compute", "compute", True, True),
    ("ship", "ok", "ok", "memory", "memory", True, True),
    ("escalate", "regression", "suspect", "overhead", "memory", True, True),
    ("ship", "not detected", "not detected", "compute", "compute", True, False),
    ("ship", "insufficient", "insufficient", "memory", "memory", False, True),
    ("rollback", "regression", "not detected", "ambiguous", "compute", True, True),
    ("ship", "ok", "insufficient", "compute", "compute", True, True),
)
_PRECISIONS = ("fp32", "bf16", "fp64", "fp8")
_GROUPS = ("gemm", "attention", "layernorm", "decode", "conv")
_SLICES = ("small", "medium", "large", "decode-trace")


def _target() -> dict[str, Any]:
    return dict(load_presets()[TARGET].to_dict())


def _samples(rng: np.random.Generator, n: int, median_s: float) -> np.ndarray:
    """Lognormal call times with a 1% stall tail: the shape measured latencies have."""
    x = median_s * np.exp(0.08 * rng.standard_normal(n))
    stall = rng.random(n) < 0.01
    return np.where(stall, x * (1.5 + rng.pareto(3.0, n)), x)


def _quantiles(x: np.ndarray) -> dict[str, float]:
    p50, p95, p99 = (float(v) for v in np.quantile(x, [0.5, 0.95, 0.99]))
    return {"p50_s": p50, "p95_s": p95, "p99_s": p99}


def _change(
    rng: np.random.Generator, verdict: str, ratio: float, improvement: bool = False
) -> dict[str, Any]:
    half = rng.uniform(0.03, 0.12)
    return {
        "ratio": ratio,
        "ci_low": ratio * math.exp(-half),
        "ci_high": ratio * math.exp(half),
        "p_value": float(
            rng.uniform(1e-6, 0.02) if verdict == "regression" else rng.uniform(0.05, 0.9)
        ),
        "p_adjusted": float(
            rng.uniform(1e-4, 0.04) if verdict == "regression" else rng.uniform(0.1, 1.0)
        ),
        "verdict": verdict,
        "delta": 0.3,
        "mde": float(rng.uniform(0.04, 0.4)),
        "improvement": improvement,
        "reason": f"{verdict}: ratio {ratio:.3f} against margin 30%",
    }


def _ratio_for(rng: np.random.Generator, verdict: str) -> float:
    return float(
        {
            "regression": rng.uniform(1.35, 1.9),
            "suspect": rng.uniform(1.3, 1.45),
            "ok": rng.uniform(0.9, 1.08),
            "not detected": rng.uniform(1.0, 1.2),
            "insufficient": rng.uniform(0.95, 1.3),
        }[verdict]
    )


def _roofline(
    rng: np.random.Generator,
    bound: str,
    before: str,
    precision: str,
    p50_s: float,
    base_p50_s: float | None,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    target = load_presets()[TARGET]
    if bound == "unknown":
        return None, {
            "intensity": None,
            "achieved_flops_per_s": None,
            "achieved_bytes_per_s": None,
            "attainable_flops_per_s": None,
            "efficiency": None,
            "bound": "unknown",
            "ridge": None,
            "precision": precision,
            "memory_level": "dram",
            "data_error": None,
            "note": "no work declared (roofline.declare(flops=..., bytes_moved=...))",
            "baseline_bound": "unknown",
            "bound_changed": False,
            "baseline_intensity": None,
            "baseline_achieved_flops_per_s": None,
        }
    ridge = target.ridge(precision)
    intensity = {
        "compute": ridge * rng.uniform(2.0, 20.0),
        "memory": ridge / rng.uniform(4.0, 60.0),
        "ambiguous": ridge * rng.uniform(0.9, 1.1),
        "overhead": ridge * rng.uniform(0.05, 5.0),
    }[bound]
    attainable = target.attainable(intensity, precision)
    efficiency = rng.uniform(0.02, 0.15) if bound == "overhead" else rng.uniform(0.3, 0.9)
    achieved = attainable * efficiency
    flops = achieved * p50_s
    bytes_moved = flops / intensity
    base_intensity = intensity if before == bound else intensity * rng.uniform(3.0, 8.0)
    base_achieved = flops / base_p50_s if base_p50_s else None
    declared = {"flops": flops, "bytes_moved": bytes_moved, "precision": precision}
    return declared, {
        "intensity": intensity,
        "achieved_flops_per_s": achieved,
        "achieved_bytes_per_s": achieved / intensity,
        "attainable_flops_per_s": attainable,
        "efficiency": efficiency,
        "bound": bound,
        "ridge": ridge,
        "precision": precision,
        "memory_level": "dram",
        "data_error": None,
        "note": None,
        "baseline_bound": before if base_p50_s else None,
        "bound_changed": before != bound and base_p50_s is not None,
        "baseline_intensity": base_intensity if base_p50_s else None,
        "baseline_achieved_flops_per_s": base_achieved,
    }


def _platforms(declared: Mapping[str, Any] | None) -> dict[str, Any]:
    """The declared work projected onto the target's presets, as the gate records it."""
    work = DeclaredWork(**declared) if declared else None
    presets = relevant_presets(load_presets()[TARGET])
    return {name: cell.to_json() for name, cell in platform_cells(work, presets).items()}


def _counters(rng: np.random.Generator, present: bool) -> dict[str, Any] | None:
    if not present:
        return None
    status = {
        "wall_s": "ok",
        "perf.task_clock_s": "ok",
        "perf.page_faults": "ok",
        "perf.cycles": "unsupported",
        "perf.instructions": "denied",
    }
    return {
        "completeness": 3 / 5,
        "status": status,
        "values": {
            "wall_s": float(rng.uniform(0.1, 2.0)),
            "perf.task_clock_s": float(rng.uniform(0.1, 2.0)),
            "perf.page_faults": float(rng.integers(0, 500)),
        },
        "cpu_share": float(rng.uniform(0.7, 1.0)),
        "notes": ["hardware events not exposed (no PMU in this VM)"],
    }


def _test(
    rng: np.random.Generator, index: int, spec: tuple[str, str, str, str, str, bool, bool]
) -> dict[str, Any]:
    decision, v95, v99, bound, before, has_base, has_counters = spec
    group = _GROUPS[index % len(_GROUPS)]
    slice_name = _SLICES[index % len(_SLICES)]
    owners = OWNER_SETS[index % len(OWNER_SETS)]
    precision = _PRECISIONS[index % len(_PRECISIONS)]
    n = 400 if v99 != "insufficient" else 120
    median = float(10 ** rng.uniform(-5, -2))
    r95, r99 = _ratio_for(rng, v95), _ratio_for(rng, v99)
    base = _samples(rng, n, median) if has_base else None
    cand = _samples(rng, n, median * r95)
    cq = _quantiles(cand)
    bq = _quantiles(base) if base is not None else None
    declared, point = _roofline(
        rng, bound, before, precision, cq["p50_s"], bq["p50_s"] if bq else None
    )
    nodeid = f"tests/perf/test_{group}.py::test_{group}_{index}[{slice_name}]"
    non_ship = decision != "ship"
    reasons = {
        "rollback": [
            f"p95 regression ×{r95:.2f} reproduced on replay",
            "bound class changed compute → memory",
        ],
        "escalate": [
            "p95 suspect: the interval does not exclude 1",
            "2 revision layers changed (model, runtime)",
        ],
        "ship": ["no regression detected"],
    }[decision]
    return {
        "nodeid": nodeid,
        "slice": slice_name,
        "slice_group": group,
        "source": "production" if slice_name == "decode-trace" else "synthetic",
        "owner": ", ".join(owners) if owners else None,
        "owners": list(owners),
        "rollback_boundary": "revert the tiling change (flag GEMM_TILE)" if index % 3 else None,
        "decision": decision,
        "reasons": reasons,
        "symptom": f"p95 ×{r95:.2f}, p99 ×{r99:.2f} on slice {slice_name}" if non_ship else None,
        "mechanism": f"{before} → {bound}: tile no longer fits in shared memory"
        if non_ship
        else None,
        "competing_hypotheses": ["host noise (common mode ×1.04)", "allocator change in runtime"]
        if non_ship
        else [],
        "missing_evidence": ["hardware counters (no PMU)"] if not has_counters else [],
        "first_failing_layer": "model" if non_ship else None,
        "replay_command": f"pytest '{nodeid}' --roofline --roofline-baseline=main --roofline-budget=5",
        "samples": int(n),
        "batch_size": 1 if median > 2e-5 else 16,
        "batched": median <= 2e-5,
        "stop_reason": "budget",
        "elapsed_s": float(n * median),
        **cq,
        "mean_s": float(cand.mean()),
        "min_s": float(cand.min()),
        "max_s": float(cand.max()),
        "baseline": {**bq, "samples": int(n)} if bq else None,
        "change": (
            {
                "p95": _change(rng, v95, r95, improvement=v95 == "ok" and r95 < 0.95),
                "p99": _change(rng, v99, r99),
            }
            if has_base
            else None
        ),
        "declared": declared,
        "platforms": _platforms(declared),
        "roofline": point,
        "counters": _counters(rng, has_counters),
        "sla": {
            "ok": decision != "rollback" if index % 2 else None,
            "violations": ["p99 4.1 ms > 4 ms"] if decision == "rollback" and index % 2 else [],
            "checks": [
                {
                    "key": "p99",
                    "threshold_s": 4e-3,
                    "estimate_s": cq["p99_s"],
                    "status": "met" if decision != "rollback" else "breach",
                }
            ]
            if index % 2
            else [],
        },
        "quality": {
            "max_abs_err": {
                "value": 1e-6,
                "baseline": 1e-6,
                "higher_is_better": False,
                "tolerance": 1e-5,
                "ok": True,
            }
        }
        if index % 4 == 0
        else {},
        "replay": {
            "attempted": decision == "rollback",
            "count": 1 if decision == "rollback" else 0,
            "reproduced": True if decision == "rollback" else None,
        }
        if has_base
        else None,
        "drift": {
            "tau": float(rng.uniform(-0.1, 0.4)),
            "p_value": float(rng.uniform(0, 0.5)),
            "window_change": float(rng.uniform(-0.05, 0.2)),
            "drifting": index % 7 == 1,
        },
        "series": {
            "candidate": [float(v) for v in cand],
            "baseline": [float(v) for v in base] if base is not None else None,
        },
    }


def _random_spec(rng: np.random.Generator) -> tuple[str, str, str, str, str, bool, bool]:
    decision = str(rng.choice(DECISIONS, p=[0.03, 0.07, 0.90]))
    v95 = {"rollback": "regression", "escalate": "suspect"}.get(decision) or str(
        rng.choice(["ok", "not detected"])
    )
    v99 = str(
        rng.choice(VERDICTS[2:] if decision != "ship" else ["ok", "not detected", "insufficient"])
    )
    bound = str(rng.choice(BOUNDS[:4]))
    return decision, v95, v99, bound, bound, True, bool(rng.random() < 0.8)


def make_document(n_tests: int = 24, *, seed: int = 0, inject: str | None = None) -> dict[str, Any]:
    """A run document of ``n_tests`` tests (at least 12 give full coverage).

    :param inject: when given, planted in the first test's node id, owner, rollback boundary,
        reasons and symptom, a tag key and value, and the run label (for escaping tests).
    """
    rng = np.random.default_rng(seed)
    specs = [_FIXED[i] if i < len(_FIXED) else _random_spec(rng) for i in range(n_tests)]
    tests = [_test(rng, i, spec) for i, spec in enumerate(specs)]
    decisions = {t["decision"] for t in tests}
    decision = (
        "rollback" if "rollback" in decisions else "escalate" if "escalate" in decisions else "ship"
    )
    label = "pr-1234"
    tags: dict[str, str] = {
        "git_commit": "9f1c2ab",
        "python": "3.11.9",
        "numpy": "2.1.0",
        "dataset": "imagenet-val-2024",
    }
    tag_diff: dict[str, Mapping[str, Any]] = {
        "git_commit": {"baseline": "77d0e41", "candidate": "9f1c2ab", "layer": "model"},
        "numpy": {"baseline": "2.0.2", "candidate": "2.1.0", "layer": "runtime"},
    }
    if inject is not None:
        first = tests[0]
        first["nodeid"] = f"tests/perf/test_x.py::test_{inject}[{inject}]"
        first["owner"] = inject
        first["owners"] = [inject, "kernels-team"]
        first["rollback_boundary"] = inject
        first["reasons"] = [inject, *first["reasons"]]
        first["symptom"] = inject
        first["slice"] = inject
        tags[inject] = inject
        tag_diff["model"] = {"baseline": inject, "candidate": inject + "2", "layer": inject}
        label = inject
    return {
        "schema_version": 1,
        "decision": decision,
        "reasons": [
            f"{sum(t['decision'] == 'rollback' for t in tests)} test(s) roll back",
            "first failing layer: model (git_commit changed)",
        ],
        "run": {
            "label": label,
            "baseline_label": "main",
            "baseline_run_id": 41,
            "tags": tags,
            "tag_diff": tag_diff,
            "first_failing_layer": "model",
            "target": _target(),
            "machine": "x86_64 · 2 cpus · linux",
            "started": "2025-01-07T10:12:03+00:00",
            "finished": "2025-01-07T10:19:47+00:00",
            "design": "two-run",
            "common_mode": {
                "factor": 1.04,
                "log_factor": math.log(1.04),
                "n_tests": n_tests,
                "spread": 0.06,
                "threshold": 0.2,
                "applied": True,
            },
            "gate": {
                "alpha": 0.05,
                "min_effect": {"p95": 0.05, "p99": 0.10},
                "replay": 1,
                "gate_on": "rollback",
            },
            "missing_from_baseline": ["tests/perf/test_new.py::test_new_kernel[small]"],
            "missing_from_candidate": ["tests/perf/test_old.py::test_removed[large]"],
            "platforms": [p.to_json() for p in platform_targets(load_presets()[TARGET])],
        },
        "observability": {
            "counter_completeness": 0.6,
            "trigger_coverage": 0.75,
            "replay_success_rate": 1.0,
            "sample_adequacy": {"p95": 1.0, "p99": 0.8},
            "escape_risk": 0.25,
            "slice_coverage": {"multi_shape": 0.8, "production": 0.4},
        },
        "versions": {
            "pytest_roofline": "0.1.0",
            "python": "3.11.9",
            "pytest": "9.0.3",
            "numpy": "2.1.0",
            "scipy": "1.14.1",
        },
        "tests": tests,
    }


def minimal_document() -> dict[str, Any]:
    """The sparsest document a renderer must handle: one test, no baseline, nothing optional."""
    return {
        "schema_version": 1,
        "decision": None,
        "reasons": [],
        "run": {"label": None, "baseline_label": None, "tags": {}, "tag_diff": {}, "target": None},
        "observability": {},
        "tests": [
            {
                "nodeid": "test_a.py::test_one",
                "decision": None,
                "samples": 10,
                "p50_s": 1e-3,
                "p95_s": 2e-3,
                "p99_s": None,
                "baseline": None,
                "change": None,
                "roofline": None,
                "counters": None,
            }
        ],
    }
