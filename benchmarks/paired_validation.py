"""Validate paired A/B mode on real runs: two git revisions, two separate runs vs paired rounds.

A small fixture project (two copies of ``gate_validation.py``'s five-kernel suite: 10 tests) is
committed as ``base``; each scenario is a second commit that hard-codes the gate validation's
injected change (``SCENARIO = "uniform10"`` ...; the A/A commit changes only a comment). For
each trial and scenario, at equal measurement time per test and side (``--budget``):

* **two-run**: one pytest run of ``base`` (saved as ``main`` in a per-scenario store, so earlier
  trials form the label's history, as on a main branch in CI) and one of the candidate commit
  compared with it (``--roofline-baseline=main``), each with ``--roofline-budget=BUDGET``;
* **paired K**: ``pytest-roofline ab --baseline=base --rounds=K --budget=BUDGET``.

Per test-trial it records the decision; per design the wall time of producing one decision
(both runs for two-run, the whole ``ab`` command for paired). It also times pytest-benchmark's
default run of the same tests. Rates carry 95% Wilson intervals. The designs run in a rotating
order within a trial so that none always meets the same part of the machine's load.

Usage: python benchmarks/paired_validation.py [--trials 3] [--extra-trials 1] [--out FILE]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate_validation import BENCH_SUITE, SUITE, wilson

from pytest_roofline.ab.workers import SideSpec
from pytest_roofline.config.settings import AbSettings

SCENARIO_LINE = 'SCENARIO = os.environ.get("ROOFLINE_SCENARIO", "none")'
# Designs compared on every scenario in FULL; the other scenarios run the default K and two-run.
FULL = ("none", "uniform10")
OTHERS = ("uniform5", "tail95", "tail99", "improve")
YAML = """
target: ci-runner
targets:
  ci-runner: {peak_flops_per_s: {fp64: 4.0e10, fp32: 8.0e10}, peak_bytes_per_s: {dram: 2.0e10}}
"""
# Plugins installed in this development environment that neither design needs: they only slow
# every process start (the same for every design and for pytest-benchmark's run).
QUIET = ["-p", "no:hypothesispytest", "-p", "no:xdist"]
GIT = ["git", "-c", "user.name=v", "-c", "user.email=v@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


def run(command: list[str], cwd: Path, *, ok: tuple[int, ...] = (0, 1)) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise SystemExit(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return time.perf_counter() - start


def suite_for(scenario: str) -> str:
    if SCENARIO_LINE not in SUITE:
        raise SystemExit("gate_validation.SUITE changed: update SCENARIO_LINE in this script")
    return SUITE.replace(SCENARIO_LINE, f'SCENARIO = "{scenario}"')


def make_project(root: Path, scenarios: list[str]) -> tuple[Path, Path]:
    """The fixture repository (base + one commit per scenario) and a worktree of ``base``."""
    repo = root / "repo"
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\n")
    (repo / "roofline.yaml").write_text(YAML)
    (repo / ".gitignore").write_text(".roofline/\n*.json\n")
    for name in ("test_suite_a.py", "test_suite_b.py"):
        (repo / name).write_text(suite_for("none"))
    git(repo, "init", "-q", "-b", "base")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    for scenario in scenarios:
        git(repo, "checkout", "-q", "-b", f"cand-{scenario}", "base")
        for name in ("test_suite_a.py", "test_suite_b.py"):
            text = suite_for(scenario)
            if scenario == "none":
                text = "# A/A candidate: the same code as base\n" + text
            (repo / name).write_text(text)
        git(repo, "commit", "-qam", f"candidate {scenario}")
    git(repo, "checkout", "-q", "base")
    base = root / "base-tree"
    git(repo, "worktree", "add", "-q", "--detach", str(base), "base")
    return repo, base


def fixture_workers(root: Path, base: Path, repo: Path) -> list[SideSpec]:
    """Worker specs for driving ``ab``'s workers directly on the fixture: the baseline in the
    ``base`` worktree, the candidate in ``repo``, each with a store under ``root``."""
    return [
        SideSpec(
            side=side,
            python=sys.executable,
            workdir=tree,
            sys_path=(tree,),
            pytest_args=("-p", "no:benchmark", *QUIET),
            store_path=root / f"{side}.sqlite",
        )
        for side, tree in (("baseline", base), ("candidate", repo))
    ]


def decision_cells(cell: dict[str, int]) -> str:
    """A table row's decision columns: test-trials, rollback, escalate, ship, and the Wilson
    intervals of rollback and escalate."""
    n = sum(cell.values())
    return (
        f"{n} | {cell['rollback'] / n:.0%} | {cell['escalate'] / n:.0%} | {cell['ship'] / n:.0%} | "
        f"{wilson(cell['rollback'], n)} | {wilson(cell['escalate'], n)}"
    )


def decisions(document_path: Path) -> list[str]:
    document = json.loads(document_path.read_text())
    return [str(t["decision"]) for t in document["tests"]]


def p95_log_ratios(document_path: Path) -> list[float]:
    document = json.loads(document_path.read_text())
    out = []
    for test in document["tests"]:
        ratio = ((test.get("change") or {}).get("p95") or {}).get("ratio")
        if ratio:
            out.append(math.log(ratio))
    return out


def two_run(repo: Path, base: Path, store: Path, budget: float) -> tuple[float, Path]:
    out = repo / "two-run.json"
    common = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *QUIET,
        "-p",
        "no:benchmark",
    ]
    common += ["--roofline", f"--roofline-store={store}", f"--roofline-budget={budget}"]
    wall = run([*common, "--roofline-save=main"], base)
    wall += run([*common, "--roofline-baseline=main", f"--roofline-json={out}"], repo)
    return wall, out


def paired(repo: Path, store: Path, budget: float, rounds: int) -> tuple[float, Path]:
    out = repo / f"ab-{rounds}.json"
    command = [
        sys.executable, "-m", "pytest_roofline.cli", "ab", "--baseline=base", f"--rounds={rounds}",
        f"--budget={budget}", f"--store={store}", f"--json={out}", "--gate=never",
        "--", "-p", "no:benchmark", *QUIET,
    ]  # fmt: skip
    return run(command, repo, ok=(0,)), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--trials", type=int, default=3, help="trials of the none/uniform10 scenarios"
    )
    parser.add_argument("--extra-trials", type=int, default=1, help="trials of the other scenarios")
    parser.add_argument("--rounds", default="4,8,12")
    parser.add_argument("--default-rounds", type=int, default=AbSettings().rounds)
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per test and side")
    parser.add_argument("--bench-runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    ks = [int(k) for k in options.rounds.split(",")]
    lines: list[str] = []

    def emit(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    cells: dict[tuple[str, str], dict[str, int]] = {}
    walls: dict[str, list[float]] = {}
    spread: dict[str, list[float]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paired-validation-") as tmp:
        root = Path(tmp)
        repo, base = make_project(root, [*FULL, *OTHERS])
        bench = root / "bench"
        bench.mkdir()
        (bench / "pytest.ini").write_text("[pytest]\n")
        for name in ("test_suite_a.py", "test_suite_b.py"):
            (bench / name).write_text(BENCH_SUITE)
        plan = [(s, options.trials, ["two-run", *(f"K={k}" for k in ks)]) for s in FULL]
        plan += [
            (s, options.extra_trials, ["two-run", f"K={options.default_rounds}"]) for s in OTHERS
        ]
        bench_wall: list[float] = []
        for scenario, trials, designs in plan:
            git(repo, "checkout", "-q", f"cand-{scenario}")
            store = root / f"two-run-{scenario}.sqlite"
            for trial in range(trials):
                rotation = designs[trial % len(designs) :] + designs[: trial % len(designs)]
                for design in rotation:
                    if design == "two-run":
                        wall, out = two_run(repo, base, store, options.budget)
                    else:
                        wall, out = paired(
                            repo, root / "ab.sqlite", options.budget, int(design[2:])
                        )
                    walls.setdefault(design, []).append(wall)
                    cell = cells.setdefault(
                        (scenario, design), {"ship": 0, "rollback": 0, "escalate": 0}
                    )
                    for decision in decisions(out):
                        cell[decision] += 1
                    if scenario == "none":
                        spread.setdefault(design, []).extend(p95_log_ratios(out))
                    emit(f"  {scenario} trial {trial + 1}/{trials} {design}: {cell} ({wall:.1f} s)")
                if scenario == "none" and len(bench_wall) < options.bench_runs:
                    bench_wall.append(
                        run(
                            [
                                sys.executable,
                                "-m",
                                "pytest",
                                "-q",
                                "-p",
                                "no:cacheprovider",
                                *QUIET,
                                "-p",
                                "no:roofline",
                            ],
                            bench,
                        )
                    )
                    emit(f"  pytest-benchmark default run: {bench_wall[-1]:.1f} s")
        git(repo, "checkout", "-q", "base")

    bench_median = statistics.median(bench_wall) if bench_wall else math.nan
    emit("")
    emit(
        f"paired validation: 10 tests, {options.budget:g} s of measurement per test and side in every design; "
        f"{options.trials} trial(s) of {', '.join(FULL)}, {options.extra_trials} of the others; "
        f"total {time.perf_counter() - started:.0f} s"
    )
    emit("")
    emit(
        "| scenario | design | test-trials | rollback | escalate | ship | rollback 95% CI | escalate 95% CI |"
    )
    emit("|---|---|---|---|---|---|---|---|")
    for (scenario, design), cell in cells.items():
        emit(f"| {scenario} | {design} | {decision_cells(cell)} |")
    emit("")
    emit(
        "| design | median wall time (s) | × pytest-benchmark default run | A/A p95 log-ratio spread (robust sd) |"
    )
    emit("|---|---|---|---|")
    for design, values in walls.items():
        median = statistics.median(values)
        # Robust (1.4826 x MAD): one disturbed round can make a single ratio an outlier.
        values_aa = spread.get(design, [])
        centre = statistics.median(values_aa) if values_aa else math.nan
        sd = (
            1.4826 * statistics.median(abs(v - centre) for v in values_aa)
            if values_aa
            else math.nan
        )
        # Two decimals: the target (3x) sits where one decimal rounds 2.96 and 3.04 alike.
        emit(f"| {design} | {median:.2f} | {median / bench_median:.2f} | {sd:.3f} |")
    emit(f"| pytest-benchmark (default options) | {bench_median:.2f} | 1.00 | — |")
    if options.out:
        options.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
