"""Measurement overhead and default run time: pytest-roofline vs pytest-benchmark, side by side.

Prints (not gated in CI):

1. the reported median time of an empty function and of a ~1 µs function, for each tool
   (what a tool reports for an empty function is its own per-call overhead);
2. the whole-run wall time of 20 trivial tests at each tool's default settings.

The two tools run alternately (ABAB...) in one job, so both see the same machine conditions;
figures are medians over the repetitions, and ratios are taken within a repetition.

Usage: python benchmarks/overhead.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

FUNCTIONS = """
def empty():
    pass

def one_us():
    # about a microsecond of pure-Python work on a 2-core CI VM
    total = 0
    for i in range(24):
        total += i
    return total
"""

ROOFLINE_TESTS = (
    FUNCTIONS
    + """
def test_empty(roofline):
    roofline(empty)

def test_one_us(roofline):
    roofline(one_us)
"""
)

BENCHMARK_TESTS = (
    FUNCTIONS
    + """
def test_empty(benchmark):
    benchmark(empty)

def test_one_us(benchmark):
    benchmark(one_us)
"""
)

TRIVIAL_ROOFLINE = "".join(
    f"\ndef test_t{i}(roofline):\n    roofline(len, 'abc')\n" for i in range(20)
)
TRIVIAL_BENCHMARK = "".join(
    f"\ndef test_t{i}(benchmark):\n    benchmark(len, 'abc')\n" for i in range(20)
)

# A config target, so the roofline runs measure tests rather than calibrating the host.
ROOFLINE_YAML = "target: bench\ntargets:\n  bench: {peak_flops_per_s: {fp64: 1.0e10}, peak_bytes_per_s: {dram: 1.0e10}}\n"


def run(directory: Path, *args: str) -> float:
    """Run pytest in ``directory``; return its wall time in seconds."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return elapsed


def medians_roofline(path: Path) -> dict[str, float]:
    document = json.loads(path.read_text())
    return {t["nodeid"].split("::")[1]: t["p50_s"] for t in document["tests"]}


def medians_benchmark(path: Path) -> dict[str, float]:
    document = json.loads(path.read_text())
    return {b["name"]: b["stats"]["median"] for b in document["benchmarks"]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        (root / "roofline.yaml").write_text(ROOFLINE_YAML)
        (root / "test_rf.py").write_text(textwrap.dedent(ROOFLINE_TESTS))
        (root / "test_bm.py").write_text(textwrap.dedent(BENCHMARK_TESTS))
        (root / "test_trivial_rf.py").write_text(TRIVIAL_ROOFLINE)
        (root / "test_trivial_bm.py").write_text(TRIVIAL_BENCHMARK)
        per_call: dict[str, dict[str, list[float]]] = {"roofline": {}, "benchmark": {}}
        wall: dict[str, list[float]] = {"roofline": [], "benchmark": []}
        for rep in range(options.reps):
            order = ("roofline", "benchmark") if rep % 2 == 0 else ("benchmark", "roofline")
            for tool in order:
                if tool == "roofline":
                    run(
                        root,
                        "test_rf.py",
                        "--roofline",
                        "--roofline-json=rf.json",
                    )
                    found = medians_roofline(root / "rf.json")
                    wall[tool].append(
                        run(
                            root,
                            "test_trivial_rf.py",
                            "--roofline",
                            "-p",
                            "no:benchmark",
                            "--roofline-no-summary",
                        )
                    )
                else:
                    # Both plugins are loaded for the per-call figures, so both processes hold
                    # the same code; the wall-time runs below load each tool alone.
                    run(root, "test_bm.py", "--benchmark-json=bm.json")
                    found = medians_benchmark(root / "bm.json")
                    wall[tool].append(run(root, "test_trivial_bm.py", "-p", "no:roofline"))
                for name, median in found.items():
                    per_call[tool].setdefault(name, []).append(median)

    print(f"pytest-roofline vs pytest-benchmark, {options.reps} alternating repetitions (medians)")
    print(f"{'quantity':<44}{'pytest-roofline':>17}{'pytest-benchmark':>18}{'ratio':>8}")
    for name, label in (
        ("test_empty", "reported median, empty function"),
        ("test_one_us", "reported median, ~1 µs function"),
    ):
        ours = statistics.median(per_call["roofline"][name])
        theirs = statistics.median(per_call["benchmark"][name])
        print(f"{label:<44}{ours * 1e9:>14.1f} ns{theirs * 1e9:>15.1f} ns{ours / theirs:>8.2f}")
    ours_wall = statistics.median(wall["roofline"])
    theirs_wall = statistics.median(wall["benchmark"])
    print(
        f"{'wall time, 20 trivial tests, defaults':<44}{ours_wall:>15.2f} s{theirs_wall:>16.2f} s{ours_wall / theirs_wall:>8.2f}"
    )
    print(f"{'  per test':<44}{ours_wall / 20:>15.3f} s{theirs_wall / 20:>16.3f} s")


if __name__ == "__main__":
    main()
