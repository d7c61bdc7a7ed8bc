"""Validate the two-run gate on real runs: a git fixture project, injected changes, confirmation.

A small fixture project (two copies of the five-workload suite below: 10 tests) is committed as
``base``; each scenario is a second commit that hard-codes the injected change
(``SCENARIO = "uniform10"`` ...; the A/A commit changes only a comment). Each trial is what a
CI job on a pull request does at default settings:

* a **baseline run** of a worktree of ``base``, saved under ``main`` (so the baseline runs of
  earlier trials form the label's history, as on a main branch in CI; ``--history-runs`` such
  runs are made before the first counted trial, so every counted comparison has a label with
  at least that many runs);
* a **candidate run** of the scenario commit with ``--roofline-baseline=main``. Paired
  confirmation is at its default (``auto``): a first-look regression is measured again in
  paired rounds against a git worktree of the baseline run's commit.

Per test-trial it records the decision, the escalation reasons (tallied as host disturbed /
not confirmed / too noisy to gate / UNKNOWN / drift within the run / other; a test counts once per class its
reasons name) and the confirmation state; per candidate run its wall time;
per block the load average before and after. Rates carry exact Clopper-Pearson 95% intervals.
``--neighbour`` runs ``neighbour.py`` (bursts of numpy streams, 2-thread GEMMs and Python loops
with idle gaps) for the whole experiment. ``--peers`` also applies pytest-benchmark's
``mean:5%`` / ``median:5%`` and asv's rule to the same raw samples and times pytest-benchmark's
default run (off by default: it costs a run per trial). ``--records DIR`` writes the ``tests[]``
entry of every notable outcome (an unchanged or improved test rolled back, a 5x slowdown
shipped) as JSON.

Scenarios (the candidate commit only):
  none          A/A: unchanged code (a comment added)
  uniform5/10   every call does 5% / 10% more work
  tail95        8% of calls take 2x (p95 x2, barely the median)
  tail99        2% of calls take 3x (p99 x3 only)
  gross5        the GEMM and sort kernels take 5x (a gross kernel change; only those tests count)
  gross5all     every call of every test takes 5x (a suite-wide change)
  improve       every call does 20% less work for the same declared work (a faster
                implementation: the declarations keep the nominal sizes, since a test whose
                declared work changed is escalated for a new baseline, not judged on timing)
  collapse      the GEMM test takes a non-BLAS path (efficiency collapse); other tests unchanged

Usage: python benchmarks/gate_validation.py [--trials 5] [--scenarios none,uniform10]
       [--neighbour] [--store FILE] [--history-runs 3] [--out FILE] [--records DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    if SCENARIO == "gross5all" or (SCENARIO == "gross5" and name in ("gemm", "sort")):
        return lambda: (fn(*args), _spin(4 * nominal))
    return lambda: fn(*args)


SCALE = 0.8 if SCENARIO == "improve" else 1.0


@pytest.mark.roofline(owner="validation")
def test_elementwise(roofline):
    n = int(200_000 * SCALE)
    a, b, out = np.ones(n), np.ones(n), np.empty(n)
    roofline.declare(flops=200_000, bytes_moved=24 * 200_000, precision="fp64")
    roofline(injected("elementwise", np.add, a, b, out))


@pytest.mark.roofline(owner="validation")
def test_gemm(roofline):
    n = int(160 * SCALE)
    a = np.ones((n, n))
    roofline.declare(flops=2 * 160**3, bytes_moved=3 * 8 * 160 * 160, precision="fp64")
    if SCENARIO == "collapse":
        roofline(lambda: np.einsum("ij,jk->ik", a, a, optimize=False))
    else:
        roofline(injected("gemm", np.matmul, a, a))


@pytest.mark.roofline(owner="validation")
def test_reduction(roofline):
    x = np.ones(int(400_000 * SCALE))
    roofline.declare(flops=400_000, bytes_moved=8 * 400_000, precision="fp64")
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


SCENARIOS = (
    "none",
    "uniform5",
    "uniform10",
    "tail95",
    "tail99",
    "gross5",
    "gross5all",
    "improve",
    "collapse",
)
SCENARIO_LINE = 'SCENARIO = os.environ.get("ROOFLINE_SCENARIO", "none")'
SUITE_FILES = ("test_suite_a.py", "test_suite_b.py")
YAML = "target: host\n"
# Plugins of this development environment that the runs do not need: they only slow every start.
QUIET = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist"]
GIT = ["git", "-c", "user.name=v", "-c", "user.email=v@example.com", "-c", "commit.gpgsign=false"]
# Scenarios whose tests must never roll back, and those that must never ship.
NEVER_ROLLBACK = ("none", "improve")
NEVER_SHIP = ("gross5", "gross5all")
# Scenarios that change only some tests: only those are counted.
CHANGED = {"collapse": ("::test_gemm",), "gross5": ("::test_gemm", "::test_sort")}
REASON_KINDS = ("host disturbed", "not confirmed", "too noisy", "UNKNOWN", "drift", "other")


def wilson(k: int, n: int) -> str:
    """95% Wilson interval of k/n (kept for ``paired_validation.py``)."""
    if n == 0:
        return "n/a"
    z = 1.96
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{max(0.0, centre - half):.0%}-{min(1.0, centre + half):.0%}"


def clopper_pearson(k: int, n: int) -> str:
    """Exact (Clopper-Pearson) 95% interval of k/n, in percent.

    References: Clopper, C. J. and Pearson, E. S. (1934), Biometrika 26(4), 404-413.
    """
    if n == 0:
        return "n/a"
    ci = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{100 * ci.low:.1f}–{100 * ci.high:.1f}%"


def peer_flags(base: np.ndarray, cand: np.ndarray) -> dict[str, bool]:
    """pytest-benchmark's and asv's regression rules applied to the same raw samples."""
    mean_ratio = cand.mean() / base.mean()
    median_ratio = float(np.median(cand) / np.median(base))
    p = scipy_stats.mannwhitneyu(cand, base, alternative="two-sided").pvalue
    return {
        "benchmark mean:5%": mean_ratio > 1.05,
        "benchmark median:5%": median_ratio > 1.05,
        "asv (U p<0.002, x1.1)": bool(p < 0.002 and median_ratio >= 1.1),
    }


def reason_kind(reason: str) -> str:
    """Tally class of one escalation reason (the texts of ``gate/policy.py``)."""
    if (
        "host was disturbed" in reason
        or "host runs slower" in reason
        or "disturbed measurement" in reason
    ):
        return "host disturbed"
    if (
        "neither confirm nor rule it out" in reason
        or "did not reproduce" in reason
        or "did not establish it on its own samples" in reason
        or "no paired rounds compared it" in reason
    ):
        return "not confirmed"
    if "too noisy to gate" in reason:
        return "too noisy"
    if "UNKNOWN" in reason or "but not established" in reason:
        return "UNKNOWN"
    if "drifts within the run" in reason:
        return "drift"
    return "other"


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


def run_pytest(directory: Path, *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *QUIET, *args],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"pytest {' '.join(args)} in {directory} exited {done.returncode}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return time.perf_counter() - start


def suite_for(scenario: str) -> str:
    if SCENARIO_LINE not in SUITE:
        raise SystemExit("SUITE changed: update SCENARIO_LINE")
    return SUITE.replace(SCENARIO_LINE, f'SCENARIO = "{scenario}"')


def make_project(
    root: Path,
    scenarios: list[str],
    *,
    confirm_time: str | None = None,
    min_effect: str | None = None,
) -> tuple[Path, Path]:
    """The fixture repository (``base`` + a branch ``cand-<scenario>`` each) and a worktree of base.

    :param confirm_time: ``gate.confirm_time`` in its roofline.yaml (default: the gate's).
    :param min_effect: ``gate.min_effect`` there, a YAML flow mapping (default: the gate's).
    """
    repo = root / "repo"
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\n")
    keys = [f"confirm_time: {confirm_time}"] if confirm_time else []
    keys += [f"min_effect: {min_effect}"] if min_effect else []
    gate = f"gate: {{{', '.join(keys)}}}\n" if keys else ""
    (repo / "roofline.yaml").write_text(YAML + gate)
    (repo / ".gitignore").write_text(".roofline/\n*.json\n__pycache__/\n")
    for name in SUITE_FILES:
        (repo / name).write_text(suite_for("none"))
    git(repo, "init", "-q", "-b", "base")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    for scenario in scenarios:
        git(repo, "checkout", "-q", "-b", f"cand-{scenario}", "base")
        for name in SUITE_FILES:
            text = suite_for(scenario)
            if scenario == "none":
                text = "# A/A candidate: the same code as base\n" + text
            (repo / name).write_text(text)
        git(repo, "commit", "-qam", f"candidate {scenario}")
    git(repo, "checkout", "-q", "base")
    base = root / "base-tree"
    git(repo, "worktree", "add", "-q", "--detach", str(base), "base")
    return repo, base


def load_samples(store: Path, run_id: int) -> dict[str, np.ndarray]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pytest_roofline.store import Store

    with Store.open(store, create=False) as s:
        return {n: r.samples_s for n, r in s.load_run(run_id).results.items()}


def compact(test: dict[str, Any], condition: str, scenario: str, trial: int) -> dict[str, Any]:
    """One test-trial's outcome for the raw JSON-lines file."""
    confirmation = test.get("confirmation") or {}
    return {
        "condition": condition,
        "scenario": scenario,
        "trial": trial + 1,
        "nodeid": test["nodeid"],
        "decision": test["decision"],
        "reasons": test.get("reasons", []),
        "outcomes": {q: c.get("outcome") for q, c in (test.get("change") or {}).items()},
        "ratios": {q: c.get("ratio") for q, c in (test.get("change") or {}).items()},
        "margins": test.get("margins"),
        "host": test.get("host"),
        "confirmation": {k: confirmation.get(k) for k in ("state", "reason", "pairs", "stop")},
        "stop_reason": test.get("stop_reason"),
        "common_mode_applied": test.get("common_mode_applied"),
        "mechanism": test.get("mechanism"),
    }


@dataclass
class Cell:
    """Tallies of one scenario under one condition."""

    decisions: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    confirmation: Counter[str] = field(default_factory=Counter)
    peers: Counter[str] = field(default_factory=Counter)
    walls_s: list[float] = field(default_factory=list)
    load: list[str] = field(default_factory=list)
    runs: Counter[str] = field(default_factory=Counter)

    @property
    def n(self) -> int:
        return sum(self.decisions.values())


def tables(cells: dict[tuple[str, str], Cell]) -> list[str]:
    """The decision table (rates with exact 95% intervals) and the escalation / confirmation tallies."""
    out = [
        "",
        "| scenario | condition | test-trials | ship | rollback | escalate | ship 95% CI | "
        "rollback 95% CI | escalate 95% CI | median wall / candidate run | load avg before → after |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (condition, scenario), cell in cells.items():
        n, d = cell.n, cell.decisions
        wall = f"{statistics.median(cell.walls_s):.1f} s" if cell.walls_s else "—"
        load = f"{cell.load[0]} → {cell.load[-1]}" if cell.load else "—"
        out.append(
            f"| {scenario} | {condition} | {n} | {d['ship']} ({d['ship'] / n:.1%}) | "
            f"{d['rollback']} ({d['rollback'] / n:.1%}) | {d['escalate']} ({d['escalate'] / n:.1%}) | "
            f"{clopper_pearson(d['ship'], n)} | {clopper_pearson(d['rollback'], n)} | "
            f"{clopper_pearson(d['escalate'], n)} | {wall} | {load} |"
        )
    out += [
        "",
        "| scenario | condition | escalations | "
        + " | ".join(REASON_KINDS)
        + " | confirmation states | run decisions |",
        "|---|---|---|" + "---|" * len(REASON_KINDS) + "---|---|",
    ]
    for (condition, scenario), cell in cells.items():
        states = ", ".join(f"{k} {v}" for k, v in sorted(cell.confirmation.items()))
        runs = ", ".join(f"{k} {v}" for k, v in sorted(cell.runs.items())) or "—"
        out.append(
            f"| {scenario} | {condition} | {cell.decisions['escalate']} | "
            + " | ".join(str(cell.reasons[k]) for k in REASON_KINDS)
            + f" | {states} | {runs} |"
        )
    return out


def summarise(raw: Path) -> list[str]:
    """The tables again from ``--raw`` JSON lines (of one or several invocations; no wall times)."""
    cells: dict[tuple[str, str], Cell] = {}
    for line in raw.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        cell = cells.setdefault((str(row["condition"]), str(row["scenario"])), Cell())
        cell.decisions[str(row["decision"])] += 1
        cell.confirmation[str((row.get("confirmation") or {}).get("state") or "none")] += 1
        if row["decision"] == "escalate":
            for kind in {reason_kind(str(r)) for r in row.get("reasons", [])} or {"other"}:
                cell.reasons[kind] += 1
    return tables(cells)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}/{five:.2f}/{fifteen:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5, help="counted trials per scenario")
    parser.add_argument("--scenarios", default="none,uniform10,tail95,tail99,gross5,improve")
    parser.add_argument("--neighbour", action="store_true", help="run neighbour.py throughout")
    parser.add_argument("--seed", type=int, default=1, help="the neighbour's seed")
    parser.add_argument("--store", type=Path, help="the store (kept; default: a temporary one)")
    parser.add_argument(
        "--history-runs", type=int, default=3, help="baseline runs saved before the first trial"
    )
    parser.add_argument("--peers", action="store_true", help="pytest-benchmark / asv rules too")
    parser.add_argument(
        "--confirm-time",
        help="gate.confirm_time of the fixture project, e.g. 120s (default: the gate's)",
    )
    parser.add_argument(
        "--min-effect",
        help="gate.min_effect of the fixture project, e.g. '{p95: 20%%, p99: 30%%}' "
        "(default: the gate's)",
    )
    parser.add_argument("--out", type=Path, help="write the log and tables here")
    parser.add_argument("--records", type=Path, help="write notable tests[] entries here")
    parser.add_argument("--raw", type=Path, help="append one JSON line per counted test-trial")
    parser.add_argument("--summarise", type=Path, help="only print the tables of a --raw file")
    options = parser.parse_args()
    if options.summarise:
        print("\n".join(summarise(options.summarise)))
        return
    scenarios = options.scenarios.split(",")
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenarios: {unknown}")
    condition = "with neighbour" if options.neighbour else "without our neighbour"
    lines: list[str] = []

    def emit(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    def uptime() -> str:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False
        ).stdout.strip()

    emit(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    emit(f"condition: {condition}; uptime before: {uptime()}")
    cells: dict[str, Cell] = {}
    notable = 0
    started = time.perf_counter()
    neighbour: subprocess.Popen[bytes] | None = None
    with tempfile.TemporaryDirectory(prefix="gate-validation-") as tmp:
        root = Path(tmp)
        store = options.store or root / "store.sqlite"
        repo, base = make_project(
            root, scenarios, confirm_time=options.confirm_time, min_effect=options.min_effect
        )
        bench = root / "bench"
        bench.mkdir()
        (bench / "pytest.ini").write_text("[pytest]\n")
        for name in SUITE_FILES:
            (bench / name).write_text(BENCH_SUITE)
        if options.neighbour:
            neighbour = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("neighbour.py")),
                 f"--seed={options.seed}", f"--log={root / 'bursts.jsonl'}"],
            )  # fmt: skip
        try:
            common = ["--roofline", f"--roofline-store={store}", "-p", "no:benchmark"]
            for i in range(options.history_runs):
                wall = run_pytest(base, *common, "--roofline-save=main")
                emit(
                    f"  history run {i + 1}/{options.history_runs} of base saved as main ({wall:.0f} s)"
                )
            for scenario in scenarios:
                git(repo, "checkout", "-q", f"cand-{scenario}")
                cell = cells.setdefault(scenario, Cell())
                cell.load.append(load_average())
                for trial in range(options.trials):
                    run_pytest(base, *common, "--roofline-save=main")
                    out = repo / "cand.json"
                    extra = ["--roofline-save=cand"] if options.peers else []
                    wall = run_pytest(
                        repo, *common, "--roofline-baseline=main", f"--roofline-json={out}", *extra
                    )
                    cell.walls_s.append(wall)
                    document = json.loads(out.read_text())
                    cell.runs[str(document["decision"])] += 1
                    samples: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None
                    if options.peers:
                        base_id = int(document["run"]["baseline_run_id"])
                        cand_id = base_id + 1  # saved as "cand" right after its baseline
                        samples = load_samples(store, base_id), load_samples(store, cand_id)
                    for test in document["tests"]:
                        nodeid = str(test["nodeid"])
                        if scenario in CHANGED and not nodeid.endswith(CHANGED[scenario]):
                            continue
                        if options.raw:
                            with options.raw.open("a", encoding="utf-8") as raw:
                                raw.write(
                                    json.dumps(compact(test, condition, scenario, trial)) + "\n"
                                )
                        decision = str(test["decision"])
                        cell.decisions[decision] += 1
                        confirmation = test.get("confirmation") or {}
                        cell.confirmation[str(confirmation.get("state", "none"))] += 1
                        if decision == "escalate":
                            kinds = {reason_kind(str(r)) for r in test.get("reasons", [])}
                            for kind in kinds or {"other"}:
                                cell.reasons[kind] += 1
                        bad = (scenario in NEVER_ROLLBACK and decision == "rollback") or (
                            scenario in NEVER_SHIP and decision == "ship"
                        )
                        if (decision != "ship" and scenario in NEVER_ROLLBACK) or bad:
                            emit(
                                f"    {scenario} {decision}: {nodeid}: {(test.get('reasons') or ['-'])[0]}"
                            )
                        if bad and options.records:
                            notable += 1
                            options.records.mkdir(parents=True, exist_ok=True)
                            name = (
                                f"{'neighbour' if options.neighbour else 'plain'}-{scenario}-"
                                f"trial{trial + 1}-base{document['run']['baseline_run_id']}-"
                                f"{nodeid.replace('/', '_').replace('::', '-')}.json"
                            )
                            (options.records / name).write_text(json.dumps(test, indent=1) + "\n")
                        if samples is not None:
                            flags = peer_flags(samples[0][nodeid], samples[1][nodeid])
                            for rule, flagged in flags.items():
                                cell.peers[rule] += int(flagged)
                    if document["decision"] != "ship":
                        # A run-level reason (a common-mode shift, a concern) is not any test's.
                        emit(f"    run {document['decision']}: {'; '.join(document['reasons'])}")
                    emit(
                        f"  {scenario} trial {trial + 1}/{options.trials}: {dict(cell.decisions)} "
                        f"confirm={dict(cell.confirmation)} run={document['decision']} ({wall:.0f} s, "
                        f"load {load_average()})"
                    )
                cell.load.append(load_average())
            bench_walls = (
                [run_pytest(bench, "-p", "no:roofline") for _ in range(3)] if options.peers else []
            )
        finally:
            if neighbour is not None:
                neighbour.terminate()
                neighbour.wait(timeout=30)
            git(repo, "checkout", "-q", "base")

    emit("")
    emit(
        f"gate validation (two-run, confirmation auto), {condition}: 10 tests per run, "
        f"{options.trials} trial(s) per scenario, {options.history_runs} history run(s) first; "
        f"total {time.perf_counter() - started:.0f} s; uptime after: {uptime()}"
    )
    for line in tables({(condition, scenario): cell for scenario, cell in cells.items()}):
        emit(line)
    if options.peers:
        emit("")
        emit("| scenario | benchmark mean:5% | benchmark median:5% | asv (U p<0.002, x1.1) |")
        emit("|---|---|---|---|")
        for scenario, cell in cells.items():
            emit(
                f"| {scenario} | "
                + " | ".join(f"{cell.peers[r] / cell.n:.0%}" for r in (
                    "benchmark mean:5%", "benchmark median:5%", "asv (U p<0.002, x1.1)"))
                + " |"
            )  # fmt: skip
        walls = [w for c in cells.values() for w in c.walls_s]
        emit(
            f"candidate run median {statistics.median(walls):.1f} s; pytest-benchmark default run "
            f"of the same tests median {statistics.median(bench_walls):.1f} s"
        )
    emit("")
    emit(f"notable records written: {notable}")
    if options.out:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
