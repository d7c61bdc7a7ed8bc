"""Wall time and outcome of ``pytest-roofline ab`` on unchanged code (A/A), one version or two.

Builds a throw-away git repository with a small suite (``np.sin`` on 20k elements, a
pure-Python loop, a 128x128 fp64 GEMM), whose second commit changes only a README, and runs
``pytest-roofline ab --baseline=HEAD~1 --json=...`` with the defaults (8 rounds, 1 s per test
and side) ``--trials`` times for each ``--python`` given, alternating between them trial by
trial (so that both see the same stretch of the machine's load). Each is an interpreter with
its own pytest-roofline installed (e.g. a venv with an older commit installed, next to this
one). Prints per trial and interpreter: wall seconds, the decision, per test its decision, its
p50/p95/p99 outcomes, the rounds or pairs it used and the pairs dropped, and the load average
before; then the median wall time per interpreter.

Usage: python benchmarks/ab_aa_wall.py --python OLD/bin/python --python NEW/bin/python
       [--trials 3] [--rounds 8] [--budget 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

TESTS = """
import numpy as np

X = np.linspace(0.0, 1.0, 20_000)
A = np.random.default_rng(0).random((128, 128))


def test_sin(roofline):
    roofline(np.sin, X)


def loop():
    total = 0
    for i in range(2_000):
        total += i * i
    return total


def test_python_loop(roofline):
    roofline(loop)


def test_gemm(roofline):
    roofline(np.matmul, A, A)
"""
YAML = """
target: ci-runner
targets:
  ci-runner: {peak_flops_per_s: {fp64: 4.0e10, fp32: 8.0e10}, peak_bytes_per_s: {dram: 2.0e10}}
"""
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def make_repo(root: Path) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_perf.py").write_text(TESTS)
    (root / "roofline.yaml").write_text(YAML)
    (root / ".gitignore").write_text(".roofline/\nout*.json\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "A"]):
        subprocess.run([*GIT, *args], cwd=root, check=True)
    (root / "README").write_text("docs only\n")
    for args in (["add", "-A"], ["commit", "-qm", "A'"]):
        subprocess.run([*GIT, *args], cwd=root, check=True)


def run_once(repo: Path, python: str, out: Path, rounds: int, budget: float) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [
        python, "-m", "pytest_roofline.cli", "ab", "--baseline=HEAD~1",
        f"--rounds={rounds}", f"--budget={budget}", f"--json={out}",
        "--", "-p", "no:hypothesispytest", "-p", "no:xdist", "tests",
    ]  # fmt: skip
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    began = time.perf_counter()
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    document = json.loads(out.read_text()) if out.exists() else {}
    tests = {
        t["nodeid"].split("::")[-1]: (
            t["decision"],
            "/".join(
                f"{q}:{(t.get('change') or {}).get(q, {}).get('outcome', '-')}"
                for q in ("p50", "p95", "p99")
            ),
            (t.get("paired") or {}).get("pairs", (t.get("paired") or {}).get("rounds")),
            (t.get("paired") or {}).get("pairs_dropped"),
        )
        for t in document.get("tests", [])
    }
    paired = (document.get("run") or {}).get("paired") or {}
    windows_s = sum(r.get("seconds") or 0.0 for r in paired.get("round_seconds") or ())
    return {
        "canary": (
            f"canary {paired['canary_s']:.2f} s over {windows_s:.1f} s of windows "
            f"({paired['canary_s'] / windows_s:.1%}), workers' start-up {paired['startup_s']:.1f} s"
            if paired.get("canary_s") is not None and windows_s
            else ""
        ),
        "exit": done.returncode,
        "wall_s": wall,
        "decision": document.get("decision"),
        "tests": tests,
        "load": load,
        "tail": "" if done.returncode in (0, 1) else done.stderr[-2000:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", required=True)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--budget", type=float, default=1.0)
    args = parser.parse_args()
    walls: dict[str, list[float]] = {p: [] for p in args.python}
    with tempfile.TemporaryDirectory(prefix="ab-aa-") as scratch:
        repo = Path(scratch) / "repo"
        make_repo(repo)
        for trial in range(args.trials):
            for i, root in enumerate(args.python):
                found = run_once(repo, root, repo / f"out{i}.json", args.rounds, args.budget)
                walls[root].append(float(found["wall_s"]))  # type: ignore[arg-type]
                print(
                    f"trial {trial + 1} {root}: exit {found['exit']} wall {found['wall_s']:.1f} s "
                    f"decision {found['decision']} (load {found['load']})",
                    flush=True,
                )
                if found["canary"]:
                    print(f"    {found['canary']}", flush=True)
                for name, facts in found["tests"].items():  # type: ignore[attr-defined]
                    print(f"    {name}: {facts}", flush=True)
                if found["tail"]:
                    print(found["tail"], flush=True)
    for root, values in walls.items():
        print(f"{root}: median wall {statistics.median(values):.1f} s over {len(values)} trials")


if __name__ == "__main__":
    main()
