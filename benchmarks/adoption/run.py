"""Run real pytest-benchmark suites unchanged: under pytest-benchmark, and under pytest-roofline twice.

For each project in ``projects.toml`` (next to this file) the driver

1. makes a throwaway venv under ``--root`` (default ``/tmp/adoption``) and installs the project's
   released package from PyPI, pytest-benchmark, and pytest-roofline from this checkout;
2. copies the project's benchmark tests (and pytest config) from its PyPI sdist or from a public
   snapshot of its repository into a work folder (nothing is vendored into this repository);
3. gives the B runs a fixed hardware target (``--roofline-config`` pointing at a YAML file
   outside the project, as ``benchmarks/overhead.py`` does), so no run pays for host
   calibration: with the default ``--roofline-target=auto`` a CPU-only host is calibrated once
   (~1.3 s quiet) and cached, but on a busy host the result is not cached and every run pays
   again (measured here: ~3.4 s per run at load average 5);
4. runs, interleaved A B A B ...: **A** pytest-benchmark at its defaults (``-p no:roofline``),
   **B** ``pytest --roofline --roofline-benchmark=roofline`` (pytest-benchmark installed, so the
   project's ``--benchmark-*`` addopts stay valid; the first B saves the run under ``aa``, every
   later B compares with it: an A/A comparison, nothing changed between the runs);
5. reports per project: tests collected, measured, errors (with their messages), wall times of A
   and B side by side, and the A/A decisions with the reasons of every test that does not ship.

Both tools see the same tests, the same venv and the same machine conditions (interleaved).
B runs with ``--roofline-gate=never`` so pytest's outcome counts only the tests' own errors; the
decisions come from the JSON document.

Usage::

    python benchmarks/adoption/run.py [--projects cattrs,dacite,pint] [--reps 1] [--json out.json]

``--reps R`` runs R A/B pairs after the first (saving) pair; wall times are medians over the pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
MIRRORS = Path(os.environ.get("ADOPTION_MIRRORS", "/work/.mirror"))
# A fixed target for the B runs (see step 3); its roofs matter only for roofline placement,
# which these tests (no declared work) do not have.
TARGET_YAML = "target: adoption\ntargets:\n  adoption: {peak_flops_per_s: {fp64: 1.0e10}, peak_bytes_per_s: {dram: 1.0e10}}\n"
_SESSION = re.compile(r" in ([0-9.]+)s")


def sh(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def must(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise SystemExit(
            f"{what} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )


# --------------------------------------------------------------------------- setup
def setup(name: str, spec: dict[str, Any], root: Path, *, fresh: bool) -> tuple[Path, Path]:
    """Venv and work folder for one project; returns (python, work)."""
    base = root / name
    venv, work = base / "venv", base / "work"
    if fresh and base.exists():
        shutil.rmtree(base)
    python = venv / "bin" / "python"
    if not python.exists():
        must(sh(sys.executable, "-m", "venv", venv), f"{name}: venv")
        must(sh(python, "-m", "pip", "install", "-q", "--upgrade", "pip"), f"{name}: pip upgrade")
        must(
            sh(
                python,
                "-m",
                "pip",
                "install",
                "-q",
                spec["package"],
                "pytest",
                "pytest-benchmark",
                *spec.get("install", []),
                str(CHECKOUT),
            ),
            f"{name}: install",
        )
    if not work.exists():
        source = base / "source"
        source.mkdir(parents=True, exist_ok=True)
        if "sdist" in spec:
            must(
                sh(
                    python,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    spec["sdist"],
                    "-d",
                    source,
                ),
                f"{name}: sdist",
            )
            (archive,) = source.glob("*.tar.gz")
            with tarfile.open(archive) as tar:
                tar.extractall(source, filter="data")
            (tree,) = (p for p in source.iterdir() if p.is_dir())
        else:
            mirror = MIRRORS / spec["mirror"].replace("/", "+") / "repo"
            if not mirror.exists():
                raise SystemExit(
                    f"{name}: no snapshot at {mirror}; fetch github:{spec['mirror']} first"
                )
            tree = source / "tree"
            tree.mkdir(exist_ok=True)
            archive = sh(
                "git",
                f"--git-dir={mirror}",
                "archive",
                "--format=tar",
                "-o",
                source / "tree.tar",
                spec["ref"],
                *spec["copy"],
            )
            must(archive, f"{name}: git archive")
            with tarfile.open(source / "tree.tar") as tar:
                tar.extractall(tree, filter="data")
        work.mkdir()
        for path in spec["copy"]:
            src = tree / path
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, work / path)
    return python, work


# --------------------------------------------------------------------------- runs
@dataclass
class Run:
    tool: str
    wall_s: float
    session_s: float
    load_1min: float
    returncode: int
    counts: dict[str, int]
    failures: list[str] = field(default_factory=list)


def junit(path: Path) -> tuple[dict[str, int], list[str]]:
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "errors", "failures", "skipped")}
    failures = []
    for case in suite.iter("testcase"):
        for kind in ("error", "failure"):
            found = case.find(kind)
            if found is not None:
                message = (found.get("message") or found.text or "").strip().splitlines()
                failures.append(
                    f"{case.get('classname')}::{case.get('name')} ({kind}): {message[0] if message else '?'}"[
                        :300
                    ]
                )
    return counts, failures


def pytest_run(
    python: Path, work: Path, args: list[str], tool: str, extra: list[str], tag: str
) -> Run:
    xml = work / f"junit-{tag}.xml"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = sh(
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        *args,
        *extra,
        f"--junitxml={xml}",
        cwd=work,
        env=env,
    )
    wall = time.perf_counter() - start
    if not xml.exists():
        raise SystemExit(
            f"{tool} run wrote no junit xml ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    counts, failures = junit(xml)
    (work / f"log-{tag}.txt").write_text(done.stdout + done.stderr)
    # pytest's own "N passed in X s": the session without interpreter start-up and imports.
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    found = _SESSION.findall(last)
    session = float(found[-1]) if found else float("nan")
    return Run(tool, wall, session, load, done.returncode, counts, failures)


def collected(python: Path, work: Path, args: list[str]) -> int:
    done = sh(
        python,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:roofline",
        *args,
        cwd=work,
    )
    return sum("::" in line for line in done.stdout.splitlines())


def decisions(path: Path) -> dict[str, Any]:
    document = json.loads(path.read_text())
    tests = document.get("tests", [])
    counts: dict[str, int] = {}
    for test in tests:
        counts[str(test.get("decision"))] = counts.get(str(test.get("decision")), 0) + 1
    compared = sum(bool(test.get("change")) for test in tests)
    return {
        "measured": len(tests),
        "compared": compared,
        "decision": document.get("decision"),
        "counts": counts,
        "run_reasons": document.get("reasons", []),
        "not_shipped": {
            t["nodeid"]: t.get("reasons", [])[:2] for t in tests if t.get("decision") != "ship"
        },
        "hardware_escalations": sum(
            any("other hardware" in r for r in t.get("reasons", [])) for t in tests
        ),
    }


def project(name: str, spec: dict[str, Any], root: Path, reps: int, fresh: bool) -> dict[str, Any]:
    python, work = setup(name, spec, root, fresh=fresh)
    args = list(spec["args"])
    store = work / ".roofline" / "store.sqlite"
    for stale in store.parent.glob("*.json"):
        stale.unlink()
    config = root / "roofline-target.yaml"
    config.write_text(TARGET_YAML)
    roofline = [
        f"--roofline-config={config}",
        "--roofline",
        "--roofline-benchmark=roofline",
        f"--roofline-store={store}",
        "--roofline-gate=never",
    ]
    runs: list[Run] = []
    documents: list[dict[str, Any]] = []
    for pair in range(1 + reps):
        order = ("A", "B") if pair % 2 == 0 else ("B", "A")
        for side in order:
            if side == "A":
                # --benchmark-json (the last one given wins over a project's addopts): its
                # medians tell how far pytest-benchmark's own A/A runs moved apart.
                extra = ["-p", "no:roofline", f"--benchmark-json={work / f'pb-{pair}.json'}"]
                runs.append(pytest_run(python, work, args, "pytest-benchmark", extra, f"a{pair}"))
            else:
                out = work / f"roofline-{pair}.json"
                label = ["--roofline-save=aa"] if pair == 0 else ["--roofline-baseline=aa"]
                runs.append(
                    pytest_run(
                        python,
                        work,
                        args,
                        "pytest-roofline",
                        [*roofline, *label, f"--roofline-json={out}"],
                        f"b{pair}",
                    )
                )
                documents.append(decisions(out))
        print(f"  {name}: pair {pair + 1}/{1 + reps} done", file=sys.stderr, flush=True)
    a = [r for r in runs if r.tool == "pytest-benchmark"]
    b = [r for r in runs if r.tool == "pytest-roofline"]
    medians = [
        {
            x["fullname"]: x["stats"]["median"]
            for x in json.loads((work / f"pb-{i}.json").read_text())["benchmarks"]
        }
        for i in range(1 + reps)
    ]
    shifts = [
        abs(math.log(later[k] / medians[0][k]))
        for later in medians[1:]
        for k in later
        if k in medians[0]
    ]
    return {
        "project": name,
        "package": spec["package"],
        "note": spec.get("note", ""),
        "args": args,
        "collected": collected(python, work, args),
        "pytest_benchmark": {
            "wall_s": [r.wall_s for r in a],
            "session_s": [r.session_s for r in a],
            "load_1min": [r.load_1min for r in a],
            # pytest-benchmark's own A/A: how far each test's median moved between its runs.
            "aa_median_abs_shift": statistics.median(shifts) if shifts else None,
            "aa_moved_over_10pct": sum(s > math.log(1.10) for s in shifts),
            "aa_moved_over_35pct": sum(s > math.log(1.35) for s in shifts),
            "aa_compared": len(shifts),
            "counts": a[-1].counts,
            "failures": a[-1].failures,
        },
        "pytest_roofline": {
            "wall_s": [r.wall_s for r in b],
            "session_s": [r.session_s for r in b],
            "load_1min": [r.load_1min for r in b],
            "counts": b[-1].counts,
            "failures": sorted({f for r in b for f in r.failures}),
        },
        "first_run": documents[0],
        "aa": documents[1:],
    }


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| project | collected | measured | errors (A / B) | wall A: pytest-benchmark | wall B: --roofline | B/A "
        "| in-session A / B | A/A decisions (B vs first B) | pytest-benchmark's own A/A: medians moved > 10% / > 35% "
        "| load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        a, b = r["pytest_benchmark"], r["pytest_roofline"]
        wall_a, wall_b = statistics.median(a["wall_s"]), statistics.median(b["wall_s"])
        session_a, session_b = statistics.median(a["session_s"]), statistics.median(b["session_s"])
        aa = "; ".join(
            f"{d['decision']} ({', '.join(f'{n} {k}' for k, n in sorted(d['counts'].items()))}; "
            f"{d['compared']} compared)"
            for d in r["aa"]
        )
        errors = f"{a['counts']['errors'] + a['counts']['failures']} / {b['counts']['errors'] + b['counts']['failures']}"
        theirs = f"{a['aa_moved_over_10pct']} / {a['aa_moved_over_35pct']} of {a['aa_compared']}"
        loads = [*a["load_1min"], *b["load_1min"]]
        lines.append(
            f"| {r['project']} ({r['package']}) | {r['collected']} | {r['first_run']['measured']} | {errors} "
            f"| {wall_a:.1f} s | {wall_b:.1f} s | {wall_b / wall_a:.2f} | {session_a:.1f} s / {session_b:.1f} s "
            f"| {aa} | {theirs} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--projects", default=None, help="comma-separated names from projects.toml (default: all)"
    )
    parser.add_argument("--root", type=Path, default=Path("/tmp/adoption"))
    parser.add_argument(
        "--reps", type=int, default=1, help="A/B pairs after the first, saving pair"
    )
    parser.add_argument("--fresh", action="store_true", help="remake venvs and work folders")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    options = parser.parse_args()
    specs = tomllib.loads((HERE / "projects.toml").read_text())
    names = options.projects.split(",") if options.projects else list(specs)
    results = []
    for name in names:
        print(f"{name}: setting up and running", file=sys.stderr, flush=True)
        results.append(project(name, specs[name], options.root, options.reps, options.fresh))
        if options.json:
            options.json.write_text(json.dumps(results, indent=2))
    print(table(results))
    for r in results:
        print(f"\n{r['project']}: {r['note']}\n  pytest {' '.join(r['args'])}")
        for side in ("pytest_benchmark", "pytest_roofline"):
            for failure in r[side]["failures"]:
                print(f"  {side} error: {failure}")
        for index, d in enumerate(r["aa"]):
            for nodeid, reasons in d["not_shipped"].items():
                print(f"  A/A {index + 1}: {nodeid}: {' | '.join(reasons)}")
            for reason in d["run_reasons"]:
                print(f"  A/A {index + 1} run: {reason}")


if __name__ == "__main__":
    main()
