"""Validate the gate on real runs: known injected changes, separate baseline and candidate runs.

For each scenario, T trials; each trial runs the suite once on the baseline code (saved under
``main`` in a per-scenario store, so earlier trials form the label's history, as on a main branch
in CI) and once on the candidate code (compared with ``main``), as two separate pytest processes.
Per test-trial it records the gate's decision, and applies the peers' rules to the same raw
samples: pytest-benchmark ``--benchmark-compare-fail=mean:5%`` and ``median:5%``, and asv's
(Mann-Whitney U p < 0.002 and median ratio >= 1.1). Finally it times the candidate run against
pytest-benchmark's default run of the same tests, alternating.

Scenarios (applied by the candidate only, through ROOFLINE_SCENARIO):
  none          A/A: unchanged code
  uniform5/10   every call does 5% / 10% more work
  tail95        8% of calls take 2x (moves p95, barely the median)
  tail99        2% of calls take 3x (moves p99 only)
  improve       every call does 20% less work
  collapse      the GEMM test takes a non-BLAS path (efficiency collapse); other tests unchanged

Usage: python benchmarks/gate_validation.py [--trials 8] [--scenarios none,uniform10] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

SUITE = r'''
import os, time, numpy as np, pytest

SCENARIO = os.environ.get("ROOFLINE_SCENARIO", "none")
_rng = np.random.default_rng()
_NOMINAL = {}


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def injected(name, fn, *args):
    """Wrap fn with the scenario's extra work, sized from fn's own nominal time."""
    if name not in _NOMINAL:
        times = []
        for _ in range(30):
            t = time.perf_counter(); fn(*args); times.append(time.perf_counter() - t)
        _NOMINAL[name] = sorted(times)[len(times) // 2]
    nominal = _NOMINAL[name]
    if SCENARIO == "uniform5":
        return lambda: (fn(*args), _spin(0.05 * nominal))
    if SCENARIO == "uniform10":
        return lambda: (fn(*args), _spin(0.10 * nominal))
    if SCENARIO == "tail95":
        return lambda: (fn(*args), _spin(nominal) if _rng.random() < 0.08 else None)
    if SCENARIO == "tail99":
        return lambda: (fn(*args), _spin(2 * nominal) if _rng.random() < 0.02 else None)
    return lambda: fn(*args)


SCALE = 0.8 if SCENARIO == "improve" else 1.0


@pytest.mark.roofline(owner="validation")
def test_elementwise(roofline):
    n = int(200_000 * SCALE)
    a, b, out = np.ones(n), np.ones(n), np.empty(n)
    roofline.declare(flops=n, bytes_moved=24 * n, precision="fp64")
    roofline(injected("elementwise", np.add, a, b, out))


@pytest.mark.roofline(owner="validation")
def test_gemm(roofline):
    n = int(160 * SCALE)
    a = np.ones((n, n))
    roofline.declare(flops=2 * n**3, bytes_moved=3 * 8 * n * n, precision="fp64")
    if SCENARIO == "collapse":
        roofline(lambda: np.einsum("ij,jk->ik", a, a, optimize=False))
    else:
        roofline(injected("gemm", np.matmul, a, a))


@pytest.mark.roofline(owner="validation")
def test_reduction(roofline):
    x = np.ones(int(400_000 * SCALE))
    roofline.declare(flops=x.size, bytes_moved=x.nbytes, precision="fp64")
    roofline(injected("reduction", np.sum, x))


@pytest.mark.roofline(owner="validation")
def test_python_loop(roofline):
    n = int(3000 * SCALE)
    roofline(injected("loop", lambda: sum(range(n))))


@pytest.mark.roofline(owner="validation")
def test_sort(roofline):
    x = np.random.default_rng(1).random(int(40_000 * SCALE))
    roofline(injected("sort", np.sort, x))
'''

BENCH_SUITE = (
    SUITE.replace('@pytest.mark.roofline(owner="validation")\n', "")
    .replace("(roofline)", "(benchmark)")
    .replace("roofline.declare", "(lambda **k: None)")
    .replace("roofline(", "benchmark(")
)

SCENARIOS = ("none", "uniform5", "uniform10", "tail95", "tail99", "improve", "collapse")
YAML = "target: host\n"


def pytest_run(directory: Path, *args: str, scenario: str = "none") -> tuple[float, int]:
    env = {**__import__("os").environ, "ROOFLINE_SCENARIO": scenario}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"pytest {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return time.perf_counter() - start, done.returncode


def peer_flags(base: np.ndarray, cand: np.ndarray) -> dict[str, bool]:
    mean_ratio = cand.mean() / base.mean()
    median_ratio = float(np.median(cand) / np.median(base))
    p = scipy_stats.mannwhitneyu(cand, base, alternative="two-sided").pvalue
    return {
        "benchmark mean:5%": mean_ratio > 1.05,
        "benchmark median:5%": median_ratio > 1.05,
        "asv (U p<0.002, x1.1)": bool(p < 0.002 and median_ratio >= 1.1),
    }


def load_samples(store: Path, run_id: int) -> dict[str, np.ndarray]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pytest_roofline.store import Store

    with Store.open(store, create=False) as s:
        return {n: r.samples_s for n, r in s.load_run(run_id).results.items()}


def wilson(k: int, n: int) -> str:
    if n == 0:
        return "n/a"
    z = 1.96
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{max(0.0, centre - half):.0%}-{min(1.0, centre + half):.0%}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", type=Path, help="keep the per-scenario stores here (for offline re-analysis)")
    options = parser.parse_args()
    lines: list[str] = []

    def emit(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        (root / "roofline.yaml").write_text(YAML)
        (root / "test_suite.py").write_text(SUITE)
        bench_dir = root / "bench"
        bench_dir.mkdir()
        (bench_dir / "pytest.ini").write_text("[pytest]\n")
        (bench_dir / "test_suite.py").write_text(BENCH_SUITE)
        ours_wall, bench_wall = [], []
        for scenario in options.scenarios.split(","):
            store = (options.keep or root) / f"{scenario}.sqlite"
            counts = {"ship": 0, "rollback": 0, "escalate": 0}
            peers: dict[str, int] = {}
            n = 0
            for trial in range(options.trials):
                pytest_run(
                    root,
                    "test_suite.py",
                    "--roofline",
                    f"--roofline-store={store}",
                    "--roofline-save=main",
                    "-p",
                    "no:benchmark",
                )
                wall, _ = pytest_run(
                    root,
                    "test_suite.py",
                    "--roofline",
                    f"--roofline-store={store}",
                    "--roofline-baseline=main",
                    "--roofline-save=cand",
                    "--roofline-json=cand.json",
                    "-p",
                    "no:benchmark",
                    scenario=scenario,
                )
                ours_wall.append(wall)
                document = json.loads((root / "cand.json").read_text())
                base_id = document["run"]["baseline_run_id"]
                cand_id = base_id + 1
                base_samples, cand_samples = (
                    load_samples(store, base_id),
                    load_samples(store, cand_id),
                )
                for test in document["tests"]:
                    name = test["nodeid"].split("::")[1]
                    if scenario == "collapse" and name != "test_gemm":
                        continue
                    n += 1
                    counts[test["decision"]] += 1
                    if scenario == "none" and test["decision"] != "ship":
                        emit(f"    A/A {test['decision']}: {test['nodeid']}: {test['reasons'][0]}")
                    for rule, flagged in peer_flags(
                        base_samples[test["nodeid"]], cand_samples[test["nodeid"]]
                    ).items():
                        peers[rule] = peers.get(rule, 0) + int(flagged)
                if trial % 2 == 0:
                    wall_b, _ = pytest_run(bench_dir, "-p", "no:roofline", scenario=scenario)
                    bench_wall.append(wall_b)
                emit(
                    f"  {scenario} trial {trial + 1}/{options.trials}: {counts} run={document['decision']}"
                )
            rows.append((scenario, n, counts, peers))
        emit("")
        emit(
            f"gate validation: {options.trials} trials per scenario (baseline run + candidate run, separate processes)"
        )
        header = f"{'scenario':<10}{'test-trials':>12}{'ship':>8}{'rollback':>10}{'escalate':>10}   {'rollback 95% CI':<16}"
        peer_names = list(rows[0][3]) if rows else []
        emit(header + "".join(f"{p:>24}" for p in peer_names))
        for scenario, n, counts, peers in rows:
            line = f"{scenario:<10}{n:>12}" + "".join(
                f"{counts[d] / n:>8.0%}" if d == "ship" else f"{counts[d] / n:>10.0%}"
                for d in ("ship", "rollback", "escalate")
            )
            line += f"   {wilson(counts['rollback'], n):<16}" + "".join(
                f"{peers.get(p, 0) / n:>24.0%}" for p in peer_names
            )
            emit(line)
        emit("")
        emit(
            f"run time of one candidate run (5 tests, default budget): median {statistics.median(ours_wall):.2f} s; "
            f"pytest-benchmark default run of the same tests: median {statistics.median(bench_wall):.2f} s "
            f"(ratio {statistics.median(ours_wall) / statistics.median(bench_wall):.2f})"
        )
    if options.out:
        options.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
