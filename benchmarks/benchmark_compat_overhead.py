"""Per-call overhead of the ``benchmark`` fixture: pytest-roofline's against pytest-benchmark's.

A variant of ``benchmarks/overhead.py`` for the pytest-benchmark-compatible fixture: the same
test file runs under pytest-benchmark (``-p no:roofline``) and under pytest-roofline
(``-p no:benchmark --roofline``), alternately (ABAB...) in one job. What a tool reports as the
median time of an empty function is its own per-call overhead; the ~1 µs function shows it on
top of real work. Call form and ``pedantic`` (one call per round, 100 calls per round, a
``setup`` per round) are measured separately.

Usage: python benchmarks/benchmark_compat_overhead.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = """
def empty():
    pass

def one_us():
    total = 0
    for i in range(24):
        total += i
    return total

def test_call_empty(benchmark):
    benchmark(empty)

def test_call_one_us(benchmark):
    benchmark(one_us)

def test_pedantic_empty(benchmark):
    benchmark.pedantic(empty, rounds=20000)

def test_pedantic_one_us(benchmark):
    benchmark.pedantic(one_us, rounds=20000)

def test_pedantic_empty_x100(benchmark):
    benchmark.pedantic(empty, rounds=2000, iterations=100)

def test_pedantic_setup_empty(benchmark):
    benchmark.pedantic(empty, setup=lambda: None, rounds=20000)
"""
ROOFLINE_YAML = "target: bench\ntargets:\n  bench: {peak_flops_per_s: {fp64: 1.0e10}, peak_bytes_per_s: {dram: 1.0e10}}\n"


def run(directory: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=directory, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    options = parser.parse_args()
    medians: dict[str, dict[str, list[float]]] = {"roofline": {}, "benchmark": {}}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        (root / "roofline.yaml").write_text(ROOFLINE_YAML)
        (root / "test_overhead.py").write_text(TESTS)
        for rep in range(options.reps):
            order = ("roofline", "benchmark") if rep % 2 == 0 else ("benchmark", "roofline")
            for tool in order:
                if tool == "roofline":
                    run(
                        root,
                        "-p",
                        "no:benchmark",
                        "--roofline",
                        "--roofline-json=rf.json",
                        "--roofline-gate=never",
                    )
                    found = {
                        t["nodeid"].split("::")[1]: t["p50_s"]
                        for t in json.loads((root / "rf.json").read_text())["tests"]
                    }
                else:
                    run(root, "-p", "no:roofline", "--benchmark-json=bm.json")
                    found = {
                        b["name"]: b["stats"]["median"]
                        for b in json.loads((root / "bm.json").read_text())["benchmarks"]
                    }
                for name, value in found.items():
                    medians[tool].setdefault(name, []).append(value)
    print(
        f"benchmark fixture, reported median per call, {options.reps} alternating repetitions (medians)"
    )
    print(f"{'test':<30}{'pytest-roofline':>17}{'pytest-benchmark':>18}{'ratio':>8}")
    for name in medians["roofline"]:
        ours = statistics.median(medians["roofline"][name])
        theirs = statistics.median(medians["benchmark"][name])
        print(f"{name:<30}{ours * 1e9:>14.1f} ns{theirs * 1e9:>15.1f} ns{ours / theirs:>8.2f}")


if __name__ == "__main__":
    main()
