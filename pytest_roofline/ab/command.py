"""``pytest-roofline ab``: baseline and candidate measured in alternating rounds of one job.

Orchestration only; no pytest import (each round is a ``python -m pytest`` subprocess) and no
statistics of its own (:mod:`pytest_roofline.stats.paired` compares, :mod:`pytest_roofline.gate.policy`
decides). The steps:

1. Resolve ``--baseline=REF`` in the git repository of the current directory and check it out
   as a detached worktree in a temporary directory (removed at the end, also on failure).
2. Run ``--setup=CMD`` once in each tree (a build step, or an install into a per-side venv).
3. Run ``K`` rounds in ABBA order (:func:`paired.abba_order`). Each round runs the user's
   pytest arguments once per side, in that side's tree, as ``python -m pytest --roofline
   --roofline-budget=<budget / K> --roofline-gate=never ...`` with the side's import root
   first on ``PYTHONPATH``; the samples land in a scratch store. A probe plugin
   (:mod:`pytest_roofline.plugin.ab_imports`) records which files each round imported, and a side that
   imported the other side's tree (or an installed copy of the project) is refused
   (:func:`check_side`): it would compare a tree with itself.
4. Compare each gated quantile of each test (``gate.GATED_QUANTILES``) round by round
   (:func:`paired.compare_paired`), apply Benjamini-Hochberg over the run, gather the rest of
   the evidence with :func:`gate.evaluate` (SLAs, quality, revision-tag layers; the roofline
   placement re-done on the paired p50, :func:`_paired_roofline`) and decide with
   :mod:`policy`; build the run's
   view with :func:`analysis.build_run_view`. The result is the plugin's JSON document with
   ``run.design = "paired"``, saved in the user's store as one run (``design="paired"``) that
   keeps both sides' samples and the round of every sample (:func:`load_paired`).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from pytest_roofline.stats import paired
from pytest_roofline.gate.run import (
    MIN_TESTS_FOR_COMMON_MODE,
    build_run_view,
    hardware_difference,
    layers_changed,
)
from pytest_roofline.hardware.calibration import calibration_key
from pytest_roofline.config.settings import (
    CONFIG_FILENAME,
    DEFAULT_LAYERS,
    AbSettings,
    GateOn,
    GateSettings,
    build_config,
    load_yaml,
    parse_ab,
)
from pytest_roofline.errors import RooflineError, StoreError
from pytest_roofline.gate.evidence import (
    GATED_QUANTILES,
    MIN_COUNTER_COMPLETENESS,
    GateContext,
    TestEvidence,
    baseline_entry,
    bound_change_between,
    evaluate,
    is_positive_finite,
)
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.measure.measurement import decode_samples, encode_samples
from pytest_roofline.stats.paired import PairedComparison, Side
from pytest_roofline.gate.policy import Decision, decide_run, decide_test
from pytest_roofline.report.json_report import evidence_document, run_document
from pytest_roofline.report.model import RunView
from pytest_roofline.model.results import QUANTILES, TestResult
from pytest_roofline.roofline import DeclaredWork
from pytest_roofline.store.sqlite import Baseline, RunRecord, Store, StoredResult, StoredRun

__all__ = [
    "DESIGN",
    "AbError",
    "AbOptions",
    "AbOutcome",
    "PairedSamples",
    "RoundRecord",
    "analyse_rounds",
    "check_side",
    "load_paired",
    "run_ab",
]

DESIGN = "paired"
DEFAULT_STORE = ".roofline/store.sqlite"
PROBE_PLUGIN = "pytest_roofline.plugin.ab_imports"
# pytest-roofline options the command sets itself in every round; the user gives their
# counterparts to ``pytest-roofline ab`` (the value names the ab option to use instead).
_RESERVED_OPTIONS: Mapping[str, str] = {
    "--roofline-store": "--store",
    "--roofline-save": "--label",
    "--roofline-baseline": "--baseline",
    "--roofline-budget": "--budget",
    "--roofline-gate": "--gate",
    "--roofline-json": "--json",
    "--roofline-report": "--report",
    "--roofline-markdown": "--markdown",
}
_TAIL_CHARS = 3000


class AbError(RooflineError):
    """``pytest-roofline ab`` cannot run or must refuse: the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class AbOptions:
    """What ``pytest-roofline ab`` was asked to do; ``None`` takes ``roofline.yaml``'s ``ab:``
    value or the default (:class:`config.AbSettings`)."""

    baseline_ref: str
    pytest_args: tuple[str, ...] = ()
    rounds: int | None = None
    budget_s: float | None = None
    setup: str | None = None
    import_root: str | None = None
    baseline_python: str | None = None
    candidate_python: str | None = None
    store_path: Path | None = None
    label: str = "ab"
    gate_on: GateOn = "rollback"
    cwd: Path | None = None


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One pytest process of one round."""

    index: int
    side: Side
    position: int
    run_id: int
    returncode: int
    seconds: float
    tests: int


@dataclass(frozen=True, slots=True)
class _Tree:
    side: Side
    root: Path
    workdir: Path
    import_dir: Path
    commit: str
    dirty: bool
    python: str


@dataclass(frozen=True, slots=True, eq=False)
class PairedSamples:
    """One test's samples of a stored paired run: one array per round and side."""

    nodeid: str
    baseline: tuple[np.ndarray, ...]
    candidate: tuple[np.ndarray, ...]


@dataclass(frozen=True, slots=True)
class AbOutcome:
    """What ``run_ab`` produced: the JSON document and where the run was saved."""

    document: Mapping[str, Any]
    run_id: int | None
    store_path: Path
    rounds: tuple[RoundRecord, ...]
    wall_s: float
    warnings: tuple[str, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------- git
def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
        )
    except FileNotFoundError:
        raise AbError(
            "git is not installed or not on PATH; pytest-roofline ab checks out --baseline=REF "
            "with git worktree"
        ) from None
    except subprocess.TimeoutExpired:
        raise AbError(f"git {' '.join(args)} did not finish within 300 s in {cwd}") from None


def _repository(cwd: Path) -> Path:
    done = _git(["rev-parse", "--show-toplevel"], cwd)
    if done.returncode != 0:
        raise AbError(
            f"{cwd} is not inside a git repository: pytest-roofline ab measures the current "
            "tree against a git worktree of --baseline=REF, so run it from the repository "
            "you are changing"
        )
    return Path(done.stdout.strip()).resolve()


def _resolve_ref(toplevel: Path, ref: str) -> str:
    if not ref or ref.startswith("-"):
        raise AbError(f"--baseline: expected a git revision such as main or HEAD~1, got {ref!r}")
    done = _git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], toplevel
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise AbError(
            f"--baseline={ref}: no commit named {ref!r} in {toplevel}. Give a branch, tag or "
            "commit that exists here; in CI fetch the base branch first, e.g. "
            "git fetch origin main && pytest-roofline ab --baseline=origin/main"
        )
    return done.stdout.strip()


def _head(toplevel: Path) -> tuple[str, bool]:
    head = _git(["rev-parse", "HEAD"], toplevel)
    commit = head.stdout.strip() if head.returncode == 0 else "(no commit yet)"
    status = _git(["status", "--porcelain", "--untracked-files=no"], toplevel)
    return commit, bool(status.stdout.strip())


def _add_worktree(toplevel: Path, commit: str, dest: Path) -> None:
    done = _git(["worktree", "add", "--detach", "--quiet", str(dest), commit], toplevel)
    if done.returncode != 0:
        raise AbError(
            f"git worktree add for the baseline ({commit[:12]}) failed: "
            f"{(done.stderr or done.stdout).strip()}"
        )


def _remove_worktree(toplevel: Path, dest: Path) -> str | None:
    """Remove the baseline worktree; return a warning when it could not be removed cleanly."""
    done = _git(["worktree", "remove", "--force", str(dest)], toplevel)
    if done.returncode == 0:
        return None
    # The directory may be half gone (a killed setup); delete it and drop git's record of it.
    shutil.rmtree(dest, ignore_errors=True)
    pruned = _git(["worktree", "prune"], toplevel)
    if pruned.returncode != 0:
        return (
            f"could not remove the baseline worktree {dest}: {(done.stderr or '').strip()}; "
            "run git worktree prune"
        )
    return None


# --------------------------------------------------------------------------- sides
def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _top_level_names(directory: Path) -> set[str]:
    """Importable top-level names directly in ``directory``: ``x.py`` files and packages."""
    names: set[str] = set()
    try:
        entries = list(directory.iterdir())
    except OSError:
        return names
    for entry in entries:
        if entry.suffix == ".py" and entry.is_file() and entry.stem.isidentifier():
            names.add(entry.stem)
        elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name.isidentifier():
            names.add(entry.name)
    return names


def _import_root_hint(
    module: str, file: Path, other_root: Path, own_root: Path, own_workdir: Path
) -> str:
    """Which ``--import-root`` would have made ``module`` resolve inside its own tree."""
    try:
        rel = file.relative_to(other_root)
    except ValueError:
        return ""
    parts = module.split(".")
    package_dir = rel.parent if rel.name == "__init__.py" else rel.with_suffix("")
    base = package_dir
    for _ in parts:
        base = base.parent
    own_copy = own_root / base / Path(*parts)
    if not (own_copy.exists() or own_copy.with_suffix(".py").exists()):
        return ""
    suggestion = os.path.relpath(own_root / base, own_workdir)
    return (
        f" This tree has its own copy at {base / Path(*parts)}: pass --import-root={suggestion} "
        "(each side's import root goes first on PYTHONPATH)."
    )


def check_side(
    side: Side,
    probe: Mapping[str, Any],
    *,
    own_root: Path,
    own_workdir: Path,
    other_root: Path,
    import_dirs: Sequence[Path],
) -> str | None:
    """Why the round that wrote ``probe`` did not measure its own tree, or ``None`` if it did.

    Refused: pytest's rootdir or a collected test file inside the other side's tree; a module
    loaded from the other side's tree (e.g. an editable install or an absolute ``PYTHONPATH``
    entry that points at one tree); a top-level package that the side's tree defines (in its
    import root or working directory) but that was loaded from somewhere else (an installed
    copy that shadows both trees). A tree nested inside the other counts as its own.
    """
    other: Side = "candidate" if side == "baseline" else "baseline"
    own_root, other_root = own_root.resolve(), other_root.resolve()

    def foreign(path: Path) -> bool:
        return _within(path, other_root) and not _within(path, own_root)

    advice = (
        " Causes: an absolute PYTHONPATH entry, an editable install (pip install -e) or a .pth "
        "file that points at one tree, or absolute test paths. Give test paths relative to the "
        "current directory, set --import-root to the directory that holds the package (e.g. "
        "src), or give each side its own environment with --setup and "
        "--baseline-python/--candidate-python."
    )
    rootdir = Path(str(probe.get("rootdir", "")))
    if str(rootdir) and foreign(rootdir):
        return (
            f"the {side} side ran pytest with rootdir {rootdir}, inside the {other}'s tree: "
            f"both sides would run the {other}'s tests.{advice}"
        )
    tests = [Path(t) for t in probe.get("test_files") or () if isinstance(t, str)]
    bad_tests = [t for t in tests if foreign(t)]
    if bad_tests:
        return (
            f"the {side} side collected tests from the {other}'s tree ({bad_tests[0]}): both "
            f"sides would run the {other}'s tests.{advice}"
        )
    modules = {
        str(k): Path(v) for k, v in (probe.get("modules") or {}).items() if isinstance(v, str)
    }
    bad = sorted((name, path) for name, path in modules.items() if foreign(path))
    if bad:
        name, path = min(bad, key=lambda item: (item[0].count("."), item[0]))
        shown = ", ".join(n for n, _ in bad[:3]) + (
            f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        )
        hint = _import_root_hint(name, path, other_root, own_root, own_workdir)
        return (
            f"the {side} side imported {shown} from the {other}'s tree ({path}), so it would "
            f"measure the {other}'s code and the comparison would be meaningless.{hint}{advice}"
        )
    environment = {
        str(k): Path(v)
        for k, v in (probe.get("environment_modules") or {}).items()
        if isinstance(v, str)
    }
    defined = set().union(*(_top_level_names(d) for d in import_dirs)) - set(
        sys.stdlib_module_names
    )
    for name in sorted(defined):
        loaded = modules.get(name) or environment.get(name)
        if loaded is not None and not _within(loaded, own_root):
            return (
                f"the {side} side imported {name} from {loaded}, not from its own tree's copy: "
                f"an installed {name} shadows the tree, so both sides would measure the same "
                f"installed code.{advice}"
            )
    return None


def _resolve_python(text: str | None, workdir: Path, option: str) -> str:
    """``--*-python``: a path with a separator is relative to the side's working directory."""
    if text is None:
        return sys.executable
    if os.sep in text or (os.altsep and os.altsep in text):
        path = Path(text)
        path = path if path.is_absolute() else workdir / path
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise AbError(
                f"{option}={text}: {path} is not an executable file (a relative path is taken "
                f"from that side's working directory {workdir}; --setup runs before this check)"
            )
        return str(path)
    found = shutil.which(text)
    if found is None:
        raise AbError(f"{option}={text}: no such interpreter on PATH; give a path to python")
    return found


def _side_env(tree: _Tree, base: Mapping[str, str]) -> dict[str, str]:
    env = dict(base)
    # The side's own import root first: ahead of the user's PYTHONPATH and of site-packages
    # (where an editable install of one tree would otherwise win for both sides).
    parts = [str(tree.import_dir)]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def _tail(done: subprocess.CompletedProcess[str]) -> str:
    text = ((done.stdout or "") + (done.stderr or "")).strip()
    return text[-_TAIL_CHARS:] if text else "(no output)"


def _run_setup(command: str, tree: _Tree, env: Mapping[str, str]) -> None:
    setup_env = {**env, "ROOFLINE_AB_SIDE": tree.side, "ROOFLINE_AB_TREE": str(tree.root)}
    done = subprocess.run(
        command,
        shell=True,
        cwd=tree.workdir,
        env=setup_env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise AbError(
            f"--setup failed on the {tree.side} side (exit {done.returncode}) in {tree.workdir}: "
            f"{command}\n{_tail(done)}"
        )


def _check_pytest_args(args: Sequence[str]) -> None:
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in _RESERVED_OPTIONS:
            raise AbError(
                f"{name} is set by pytest-roofline ab in every round; pass "
                f"{_RESERVED_OPTIONS[name]}=... to pytest-roofline ab instead (before --)"
            )


def _config_path(cwd: Path, toplevel: Path, args: Sequence[str]) -> Path | None:
    for i, arg in enumerate(args):
        value = None
        if arg.startswith("--roofline-config="):
            value = arg.split("=", 1)[1]
        elif arg == "--roofline-config" and i + 1 < len(args):
            value = args[i + 1]
        if value:
            path = Path(value)
            return path if path.is_absolute() else cwd / path
    for directory in (cwd, toplevel):
        if (directory / CONFIG_FILENAME).is_file():
            return directory / CONFIG_FILENAME
    return None


def _settings(
    options: AbOptions, cwd: Path, toplevel: Path
) -> tuple[GateSettings, Mapping[str, Sequence[str]], AbSettings]:
    path = _config_path(cwd, toplevel, options.pytest_args)
    if path is None:
        return GateSettings(), DEFAULT_LAYERS, AbSettings()
    config = build_config(rootdir=path.parent, cli={"config": str(path)}, ini={})
    section = parse_ab(load_yaml(path).get("ab"), where=f"{path}: ab")
    return config.gate, config.layers, section


# --------------------------------------------------------------------------- analysis
def _pooled(arrays: Sequence[np.ndarray]) -> np.ndarray:
    present = [a for a in arrays if a.size]
    return np.concatenate(present) if present else np.empty(0)


def _last_payload(runs: Sequence[StoredRun], nodeid: str) -> Mapping[str, Any] | None:
    for run in reversed(runs):
        if nodeid in run.results:
            return run.results[nodeid].payload
    return None


def _batch_sizes(runs: Sequence[StoredRun], nodeid: str) -> list[int | None]:
    out: list[int | None] = []
    for run in runs:
        stored = run.results.get(nodeid)
        out.append(int(stored.payload["measurement"]["batch_size"]) if stored else None)
    return out


def _pooled_result(payload: Mapping[str, Any], samples: np.ndarray, rounds: int) -> TestResult:
    result = TestResult.from_dict(payload, samples_s=samples)
    measurement = result.measurement
    sample_set = replace(
        measurement.samples,
        stop_reason=f"paired: {rounds} rounds",
        elapsed_s=measurement.samples.elapsed_s,
    )
    return replace(result, measurement=replace(measurement, samples=sample_set))


def _paired_roofline(
    evidence: TestEvidence,
    declared: DeclaredWork | None,
    target: HardwareTarget | None,
    p50: PairedComparison | None,
) -> TestEvidence:
    """Roofline evidence that agrees with the pairing.

    :func:`gate.evaluate` places the candidate at the p50 of its pooled samples, which mixes
    rounds taken at different machine speeds: a kernel whose calls are sometimes 100 times
    slower on a busy machine (a multithreaded BLAS whose threads get descheduled) can have a
    pooled p50 on either side of that gap, and then shows a bound-class change with an
    efficiency collapse that no round supports. Here the candidate is placed at the baseline's
    p50 times the paired p50 ratio, and the efficiency ratio is the one the rounds establish:
    ``1 / lower bound`` of the paired p50 ratio (no collapse unless every plausible slowdown
    exceeds the margin). Without a usable paired p50 nothing about the class is established.
    """
    base_point, base_summary = evidence.baseline_point, evidence.baseline_summary
    if target is None or declared is None or base_point is None or base_summary is None:
        return evidence
    c = p50.comparison if p50 is not None else None
    if (
        c is None
        or c.verdict == "insufficient"
        or not is_positive_finite(c.ratio)
        or not base_summary.p50_s
    ):
        return replace(evidence, bound_change=None, efficiency_ratio=None)
    point = target.place(declared, base_summary.p50_s * c.ratio)
    bound = bound_change_between(base_point, point)
    low = c.ci.low
    return replace(
        evidence,
        point=point,
        bound_change=bound,
        efficiency_ratio=1.0 / low if is_positive_finite(low) else None,
    )


def _bh_reasons(view: RunView, alpha: float) -> list[str]:
    """Tests Benjamini-Hochberg flags although the test itself ships (as the plugin reports)."""
    reasons = []
    for test in view.tests:
        if test.outcome.get("decision") != "ship":
            continue
        for name, change in (test.outcome.get("change") or {}).items():
            p_bh, ratio, delta = change.get("p_bh"), change.get("ratio"), change.get("delta")
            if None in (p_bh, ratio, delta) or not p_bh < alpha or ratio < 1 + delta:
                continue
            reasons.append(
                f"{test.nodeid}: {name} x{ratio:.3f} is significant across the run "
                f"(BH p = {p_bh:.3g}) though not by the per-test bound"
            )
    return reasons


def analyse_rounds(
    base_runs: Sequence[StoredRun],
    cand_runs: Sequence[StoredRun],
    *,
    gate: GateSettings,
    gate_on: str = "rollback",
    layers: Mapping[str, Sequence[str]] = DEFAULT_LAYERS,
    label: str | None = "ab",
    baseline_label: str = "baseline",
    replay_command: Callable[[str], str] = lambda nodeid: nodeid,
    run_reasons: Sequence[str] = (),
    started: float | None = None,
    finished: float | None = None,
) -> tuple[RunView, dict[str, Any], list[StoredResult]]:
    """Compare, decide and render a paired run from its rounds (no subprocess, no I/O).

    :param base_runs: the baseline's stored run of each round, in round order.
    :param cand_runs: the candidate's, same order and length.
    :param replay_command: the command that re-runs one test (for the memo).
    :param run_reasons: run-level problems (e.g. failing tests in a round): they escalate.
    :returns: the view, the JSON document (``run.design = "paired"``) and the results to
        store: the candidate's pooled samples as each result's samples, the baseline's pooled
        samples and every round's sample counts under ``payload["paired"]``.
    """
    if len(base_runs) != len(cand_runs) or not base_runs:
        raise ValueError(
            f"analyse_rounds needs one baseline and one candidate run per round; "
            f"got {len(base_runs)} and {len(cand_runs)}"
        )
    k = len(base_runs)
    started = started if started is not None else min(r.record.started for r in base_runs)
    finished = finished if finished is not None else max(r.record.finished for r in cand_runs)
    cand_record, base_record = cand_runs[-1].record, base_runs[-1].record
    target = HardwareTarget.from_dict(cand_record.target) if cand_record.target else None
    empty = np.empty(0)
    nodeids = sorted({n for run in (*base_runs, *cand_runs) for n in run.results})
    rounds: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {
        n: (
            [r.results[n].samples_s if n in r.results else empty for r in base_runs],
            [r.results[n].samples_s if n in r.results else empty for r in cand_runs],
        )
        for n in nodeids
    }
    results: dict[str, TestResult] = {}
    base_results: dict[str, StoredResult] = {}
    for n in nodeids:
        base, cand = rounds[n]
        cand_payload, base_payload = _last_payload(cand_runs, n), _last_payload(base_runs, n)
        if cand_payload is not None:
            results[n] = _pooled_result(cand_payload, _pooled(cand), k)
        if base_payload is not None:
            base_results[n] = StoredResult(n, base_payload, _pooled(base))

    # Every comparison exists before any decision: BH over the whole run (paired.apply_bh_paired).
    compared = [n for n in nodeids if n in results and n in base_results]
    flat: list[PairedComparison] = []
    for n in compared:
        base, cand = rounds[n]
        for name in GATED_QUANTILES:
            flat.append(
                paired.compare_paired(
                    base,
                    cand,
                    QUANTILES[name],
                    delta=gate.min_effect.get(name, 0.0),
                    alpha=gate.alpha,
                )
            )
    flat = paired.apply_bh_paired(flat, alpha=gate.alpha)
    width = len(GATED_QUANTILES)
    comparisons = {
        n: dict(zip(GATED_QUANTILES, flat[i * width : (i + 1) * width], strict=True))
        for i, n in enumerate(compared)
    }

    base_stored = StoredRun(0, replace(base_record, design=DESIGN), base_results)
    machine = cand_record.machine
    context = GateContext(
        alpha=gate.alpha,
        min_effect=gate.min_effect,
        replay=0,
        family_size=max(1, len(results)),
        layers_changed=layers_changed(base_record.tags, cand_record.tags, layers),
        hardware_differs=hardware_difference(base_stored, target, machine),
        baseline_label=baseline_label,
    )
    outcomes: dict[str, dict[str, Any]] = {}
    stored: list[StoredResult] = []
    for n, result in results.items():
        base, cand = rounds[n]
        entry = None
        if n in base_results:
            entry = baseline_entry(base_results[n].payload, base_results[n].samples_s)
        evidence = evaluate(result, entry, context, target=target)
        found = comparisons.get(n, {})
        if found:
            # The paired comparisons replace the two-run ones; drift across the pooled rounds is
            # the machine's, which the pairing cancels, so it is not held against the test.
            evidence = replace(
                evidence,
                comparisons={name: c.comparison for name, c in found.items()},
                margins={name: c.comparison.delta for name, c in found.items()},
                mde={
                    name: c.comparison.mde
                    for name, c in found.items()
                    if math.isfinite(c.comparison.mde)
                },
                drift=None,
                replay=None,
                design="paired",
            )
            # The roofline placement follows the paired p50 whether or not p50 is gated.
            p50 = found.get("p50") or paired.compare_paired(
                base, cand, 0.5, delta=gate.min_effect.get("p50", 0.05), alpha=gate.alpha
            )
            evidence = _paired_roofline(evidence, result.measurement.declared, target, p50)
        decision = decide_test(evidence)
        document = evidence_document(
            evidence,
            decision,
            replay_command=replay_command(n),
            candidate_samples=result.measurement.samples_s,
            baseline_samples=base_results[n].samples_s if n in base_results else None,
        )
        counts = {"baseline": [int(a.size) for a in base], "candidate": [int(a.size) for a in cand]}
        document["paired"] = {
            "rounds": k,
            "rounds_used": {name: c.rounds_used for name, c in found.items()},
            "ratios": {name: list(c.round_ratios) for name, c in found.items()},
            "samples": counts,
            "batch_size": {
                "baseline": _batch_sizes(base_runs, n),
                "candidate": _batch_sizes(cand_runs, n),
            },
        }
        outcomes[n] = document
        payload = result.to_dict(include_samples=False)
        payload["paired"] = {
            "rounds": k,
            "candidate_counts": counts["candidate"],
            "baseline_counts": counts["baseline"],
            "baseline_samples_f64_b64": encode_samples(_pooled(base)),
        }
        stored.append(StoredResult(n, payload, result.measurement.samples_s))

    gate_settings = replace(gate, replay=0)
    view = build_run_view(
        results=results,
        outcomes=outcomes,
        baseline=Baseline(label=baseline_label, latest=base_stored, history=()),
        gate=gate_settings,
        gate_on=gate_on,
        label=label,
        tags=cand_record.tags,
        layers=layers,
        target=target,
        machine=machine,
        started=started,
        finished=finished,
    )
    # The run decision without the two-run common-mode escalation: in a paired run a shift that
    # every test shares was measured under the same machine conditions on both sides, so it is
    # the code (or a shared layer the tag diff names), not the machine. It is still reported.
    counters_low = [
        n
        for n, r in results.items()
        if r.measurement.counters is not None
        and r.measurement.counters.completeness < MIN_COUNTER_COMPLETENESS
    ]
    run_decision = decide_run(
        {t.nodeid: cast("Decision", t.outcome.get("decision", "ship")) for t in view.tests},
        common_mode=None,
        common_mode_threshold=math.inf,
        run_reasons=[*_bh_reasons(view, gate.alpha), *run_reasons],
    )
    reasons = run_decision.reasons + tuple(
        f"{len(counters_low)} test(s) with counter completeness below {MIN_COUNTER_COMPLETENESS:.0%}"
        for _ in [0]
        if counters_low
    )
    changed = context.layers_changed
    common = dict(view.common_mode) if view.common_mode is not None else None
    if common is not None:
        common.update(threshold=None, applied=False)
    view = replace(
        view,
        baseline_run_id=None,
        decision=run_decision.decision,
        reasons=reasons,
        first_failing_layer=changed[0] if changed and run_decision.decision != "ship" else None,
        common_mode=common if len(compared) >= MIN_TESTS_FOR_COMMON_MODE else None,
    )
    document = run_document(view)
    document["run"]["design"] = DESIGN
    document["run"]["rounds"] = k
    return view, document, stored


# --------------------------------------------------------------------------- store
def load_paired(store: Store, run_id: int) -> dict[str, PairedSamples]:
    """Both sides' samples of a stored paired run, split back into rounds.

    :raises StoreError: the run is not a paired run.
    """
    run = store.load_run(run_id)
    if run.record.design != DESIGN:
        raise StoreError(
            f"{store.path}: run {run_id} is a {run.record.design!r} run, not a paired run "
            "(saved by pytest-roofline ab)"
        )
    out = {}
    for nodeid, result in run.results.items():
        info = result.payload.get("paired") or {}
        base = decode_samples(str(info.get("baseline_samples_f64_b64", "")))
        base_counts = [int(c) for c in info.get("baseline_counts") or ()]
        cand_counts = [int(c) for c in info.get("candidate_counts") or ()]
        out[nodeid] = PairedSamples(
            nodeid,
            tuple(np.split(base, np.cumsum(base_counts)[:-1])) if base_counts else (),
            tuple(np.split(result.samples_s, np.cumsum(cand_counts)[:-1])) if cand_counts else (),
        )
    return out


def _copy_calibrations(source: Path, dest: Store, key: str) -> None:
    """Seed the scratch store with the user's cached host calibration (saves seconds a round)."""
    if not source.is_file():
        return
    try:
        with Store.open(source, create=False) as user:
            payload = user.get_calibration(key)
    except StoreError:
        return
    if payload is not None:
        dest.put_calibration(key, payload)


# --------------------------------------------------------------------------- the command
SIDES: tuple[Side, Side] = ("baseline", "candidate")


def _quote_args(args: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


@dataclass(frozen=True, slots=True)
class _Plan:
    """The resolved options of one ``pytest-roofline ab`` run."""

    cwd: Path
    toplevel: Path
    base_commit: str
    cand_commit: str
    dirty: bool
    gate: GateSettings
    layers: Mapping[str, Sequence[str]]
    rounds: int
    budget_s: float
    setup: str | None
    import_root: str
    store_path: Path

    @property
    def per_round_s(self) -> float:
        return self.budget_s / self.rounds


def _plan(options: AbOptions) -> _Plan:
    cwd = (options.cwd or Path.cwd()).resolve()
    _check_pytest_args(options.pytest_args)
    toplevel = _repository(cwd)
    base_commit = _resolve_ref(toplevel, options.baseline_ref)
    cand_commit, dirty = _head(toplevel)
    gate, layers, section = _settings(options, cwd, toplevel)
    rounds = options.rounds if options.rounds is not None else section.rounds
    if rounds < paired.MIN_ROUNDS:
        raise AbError(
            f"--rounds={rounds}: at least {paired.MIN_ROUNDS} rounds are needed (rounds are the "
            "unit of replication, and an interval needs two degrees of freedom); default 8"
        )
    budget_s = options.budget_s if options.budget_s is not None else section.budget_s
    if not (math.isfinite(budget_s) and budget_s > 0):
        raise AbError(f"--budget={budget_s}: expected a positive number of seconds, e.g. 1 or 2s")
    store_path = options.store_path or Path(DEFAULT_STORE)
    return _Plan(
        cwd=cwd,
        toplevel=toplevel,
        base_commit=base_commit,
        cand_commit=cand_commit,
        dirty=dirty,
        gate=gate,
        layers=layers,
        rounds=rounds,
        budget_s=budget_s,
        setup=options.setup if options.setup is not None else section.setup,
        import_root=options.import_root if options.import_root is not None else section.import_root,
        store_path=store_path if store_path.is_absolute() else cwd / store_path,
    )


def _trees(plan: _Plan, options: AbOptions, worktree: Path) -> dict[Side, _Tree]:
    relative = plan.cwd.relative_to(plan.toplevel)
    base_root = worktree.resolve()
    if not (base_root / relative).is_dir():
        raise AbError(
            f"the current directory {relative} does not exist at --baseline="
            f"{options.baseline_ref}; run pytest-roofline ab from a directory both revisions "
            "have (e.g. the repository root)"
        )
    trees: dict[Side, _Tree] = {}
    sides: tuple[tuple[Side, Path, Path, str, bool], ...] = (
        ("baseline", base_root, base_root / relative, plan.base_commit, False),
        ("candidate", plan.toplevel, plan.cwd, plan.cand_commit, plan.dirty),
    )
    for side, root, workdir, commit, dirty in sides:
        # Relative import roots are taken in each tree; an absolute one is the same for both
        # (a shared vendored directory), and the probe refuses it if it holds either tree's code.
        import_dir = Path(plan.import_root)
        import_dir = (import_dir if import_dir.is_absolute() else workdir / import_dir).resolve()
        trees[side] = _Tree(side, root, workdir, import_dir, commit, dirty, "")
    return trees


@dataclass(frozen=True, slots=True)
class _Round:
    record: RoundRecord
    probe: Mapping[str, Any]
    reason: str | None


def _run_round(
    plan: _Plan,
    trees: Mapping[Side, _Tree],
    env: Mapping[str, str],
    *,
    index: int,
    position: int,
    side: Side,
    scratch: Path,
    user_args: Sequence[str],
    previous_id: int,
) -> _Round:
    """One side's pytest process of round ``index``; refuses a side that measured the wrong tree."""
    tree = trees[side]
    scratch_store = scratch / "rounds.sqlite"
    probe_path = scratch / f"probe-{index}-{side}.json"
    command = [
        tree.python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "-p", PROBE_PLUGIN, f"--roofline-ab-probe={probe_path}",
        "--roofline", f"--roofline-store={scratch_store}", f"--roofline-save=ab-{side}",
        f"--roofline-budget={plan.per_round_s!r}", "--roofline-gate=never",
        "--roofline-no-summary", *user_args,
    ]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(
        command, cwd=tree.workdir, env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - began
    where = f"round {index + 1} of {plan.rounds}, {side} side"
    if done.returncode == 5:
        raise AbError(
            f"{where}: pytest collected no tests in {tree.workdir}; the arguments after -- "
            f"({_quote_args(user_args) or 'none'}) are used in both trees"
        )
    if done.returncode not in (0, 1):
        hint = ""
        if PROBE_PLUGIN in _tail(done):
            hint = f"\n(every side's interpreter needs pytest-roofline: is it installed for {tree.python}?)"
        raise AbError(
            f"{where}: pytest exited {done.returncode}: {_quote_args(command)}\n{_tail(done)}{hint}"
        )
    try:
        probe = json.loads(probe_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise AbError(
            f"{where}: the probe plugin wrote no record ({probe_path}); pytest output:\n{_tail(done)}"
        ) from None
    other = trees["candidate" if side == "baseline" else "baseline"]
    problem = check_side(
        side,
        probe,
        own_root=tree.root,
        own_workdir=tree.workdir,
        other_root=other.root,
        import_dirs=[tree.import_dir, tree.workdir],
    )
    if problem is not None:
        raise AbError(f"{where}: refused: {problem}")
    with Store.open(scratch_store, create=False) as store:
        ids = store.run_ids(f"ab-{side}")
        newest = ids[0] if ids else 0
        tests = len(store.load_run(newest).results) if newest > previous_id else 0
    if newest <= previous_id:
        raise AbError(
            f"{where}: no performance test was measured (none used the roofline fixture); "
            f"select performance tests with the arguments after --\n{_tail(done)}"
        )
    reason = None
    if done.returncode == 1:
        reason = (
            f"tests failed on the {side} side in round {index + 1} (pytest exit 1): their "
            "samples of that round are missing"
        )
    record = RoundRecord(index, side, position, newest, done.returncode, seconds, tests)
    return _Round(record, probe, reason)


def _side_facts(tree: _Tree, probe: Mapping[str, Any]) -> dict[str, Any]:
    """Where a side's code came from, for the document (what the probe saw)."""
    modules = probe.get("modules") or {}
    return {
        "tree": str(tree.root),
        "workdir": str(tree.workdir),
        "import_root": str(tree.import_dir),
        "commit": tree.commit,
        "dirty": tree.dirty,
        "python": tree.python,
        "test_files": list(probe.get("test_files") or ()),
        "resolved": {
            name: path
            for name, path in modules.items()
            if "." not in name and _within(Path(path), tree.root)
        },
    }


def run_ab(options: AbOptions, *, log: Callable[[str], None] = lambda line: None) -> AbOutcome:
    """Run ``pytest-roofline ab`` (see the module docstring); return the paired run's document.

    :param log: receives one line per step (the CLI prints them to stderr).
    :raises AbError: not a git repository, an unknown ``REF``, a failing setup or round, a
        misconfigured side; the baseline worktree is removed in every case.
    :raises RooflineError: a bad ``roofline.yaml``, an unusable store.
    """
    wall_start = time.perf_counter()
    started = time.time()
    plan = _plan(options)
    # Open the user's store first: one that cannot be written fails before minutes of rounds.
    Store.open(plan.store_path, create=True).close()
    order = paired.abba_order(plan.rounds)
    user_args = list(options.pytest_args)
    log(
        f"pytest-roofline ab: baseline {options.baseline_ref} ({plan.base_commit[:12]}) against "
        f"the current tree ({plan.cand_commit[:12]}"
        f"{', with uncommitted changes' if plan.dirty else ''}); {plan.rounds} rounds (ABBA), "
        f"{plan.budget_s:g} s per test and side ({plan.per_round_s:.3g} s a round)"
    )
    warnings: list[str] = []
    rounds: list[_Round] = []
    with tempfile.TemporaryDirectory(prefix="roofline-ab-") as scratch_text:
        scratch = Path(scratch_text)
        worktree = scratch / "baseline"
        _add_worktree(plan.toplevel, plan.base_commit, worktree)
        try:
            trees = _trees(plan, options, worktree)
            envs = {side: _side_env(tree, os.environ) for side, tree in trees.items()}
            if plan.setup:
                for side in SIDES:
                    log(f"setup ({side}): {plan.setup}")
                    _run_setup(plan.setup, trees[side], envs[side])
            # Interpreters are resolved after the setup, which may have created them.
            for side, given in zip(
                SIDES, (options.baseline_python, options.candidate_python), strict=True
            ):
                python = _resolve_python(given, trees[side].workdir, f"--{side}-python")
                trees[side] = replace(trees[side], python=python)
            with Store.open(scratch / "rounds.sqlite", create=True) as scratch_store:
                _copy_calibrations(plan.store_path, scratch_store, calibration_key())
            last_id = dict.fromkeys(SIDES, 0)
            for index, pair in enumerate(order):
                for position, side in enumerate(pair):
                    done = _run_round(
                        plan,
                        trees,
                        envs[side],
                        index=index,
                        position=position,
                        side=side,
                        scratch=scratch,
                        user_args=user_args,
                        previous_id=last_id[side],
                    )
                    last_id[side] = done.record.run_id
                    rounds.append(done)
                    log(
                        f"round {index + 1}/{plan.rounds} {side}: {done.record.tests} tests "
                        f"in {done.record.seconds:.1f} s"
                    )
        finally:
            trouble = _remove_worktree(plan.toplevel, worktree)
            if trouble:
                warnings.append(trouble)
        with Store.open(scratch / "rounds.sqlite", create=False) as scratch_store:
            runs = {r.record.run_id: scratch_store.load_run(r.record.run_id) for r in rounds}
            fresh_calibration = scratch_store.get_calibration(calibration_key())

    by_side = {
        side: [runs[r.record.run_id] for r in rounds if r.record.side == side] for side in SIDES
    }
    prefix = [
        "pytest-roofline",
        "ab",
        f"--baseline={options.baseline_ref}",
        f"--rounds={plan.rounds}",
    ]
    if options.import_root is not None:
        prefix.append(f"--import-root={options.import_root}")
    finished = time.time()
    view, document, stored = analyse_rounds(
        by_side["baseline"],
        by_side["candidate"],
        gate=plan.gate,
        gate_on=options.gate_on,
        layers=plan.layers,
        label=options.label,
        baseline_label=options.baseline_ref,
        # The node id alone selects the test; the other pytest arguments may select more.
        replay_command=lambda nodeid: _quote_args([*prefix, "--", nodeid]),
        run_reasons=list(dict.fromkeys(r.reason for r in rounds if r.reason)),
        started=started,
        finished=finished,
    )
    probes = {r.record.side: r.probe for r in rounds}
    wall_s = time.perf_counter() - wall_start
    document["run"]["paired"] = {
        "baseline_ref": options.baseline_ref,
        "baseline_commit": plan.base_commit,
        "candidate_commit": plan.cand_commit,
        "candidate_dirty": plan.dirty,
        "rounds": plan.rounds,
        "order": ["AB" if pair[0] == "baseline" else "BA" for pair in order],
        "budget_s": plan.budget_s,
        "budget_per_round_s": plan.per_round_s,
        "setup": plan.setup,
        "pytest_args": user_args,
        "sides": {side: _side_facts(trees[side], probes.get(side, {})) for side in SIDES},
        "round_seconds": [
            {
                "round": r.record.index + 1,
                "side": r.record.side,
                "seconds": r.record.seconds,
                "exit": r.record.returncode,
            }
            for r in rounds
        ],
        "wall_s": wall_s,
    }
    record = RunRecord(
        label=options.label,
        started=started,
        finished=finished,
        tags=view.tags,
        target=view.target or {},
        machine=view.machine,
        design=DESIGN,
        summary={
            "tests": len(view.tests),
            "decision": view.decision,
            "rounds": plan.rounds,
            "baseline_ref": options.baseline_ref,
            "baseline_commit": plan.base_commit,
            "document": document,
        },
    )
    run_id: int | None = None
    with Store.open(plan.store_path, create=True) as store:
        if stored:
            run_id = store.save_run(record, stored)
        else:
            warnings.append("no test was measured on the candidate side: no run was saved")
        # A calibration the rounds made is kept for the next run (the plugin's own cache).
        if fresh_calibration is not None and store.get_calibration(calibration_key()) is None:
            store.put_calibration(calibration_key(), fresh_calibration)
    return AbOutcome(
        document, run_id, plan.store_path, tuple(r.record for r in rounds), wall_s, tuple(warnings)
    )
