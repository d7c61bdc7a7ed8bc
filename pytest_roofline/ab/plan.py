"""What ``pytest-roofline ab`` was asked to do, resolved: the revisions, settings and trees."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_roofline.ab.git import head, repository, resolve_ref
from pytest_roofline.ab.sides import Tree
from pytest_roofline.config.defaults import DEFAULTS
from pytest_roofline.config.settings import (
    CONFIG_FILENAME,
    DEFAULT_LAYERS,
    MAX_WORKER_PAIRS,
    AbSettings,
    GateSettings,
    build_config,
    load_yaml,
    parse_ab,
)
from pytest_roofline.errors import AbError
from pytest_roofline.stats import paired
from pytest_roofline.stats.paired import Side
from pytest_roofline.vocabulary import FailOn

__all__ = ["SIDES", "AbOptions", "Plan", "make_plan", "side_trees"]

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


@dataclass(frozen=True, slots=True)
class AbOptions:
    """What ``pytest-roofline ab`` was asked to do; ``None`` takes ``roofline.yaml``'s ``ab:``
    value or the default (:class:`config.AbSettings`)."""

    baseline_ref: str
    pytest_args: tuple[str, ...] = ()
    rounds: int | None = None
    budget_s: float | None = None
    worker_pairs: int | None = None
    pin_cpus: bool | None = None
    setup: str | None = None
    import_root: str | None = None
    baseline_python: str | None = None
    candidate_python: str | None = None
    store_path: Path | None = None
    label: str = "ab"
    gate_on: FailOn = "rollback"
    cwd: Path | None = None


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


SIDES: tuple[Side, Side] = ("baseline", "candidate")


@dataclass(frozen=True, slots=True)
class Plan:
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
    worker_pairs: int = 1
    pin_cpus: bool = True

    @property
    def per_round_s(self) -> float:
        return self.budget_s / self.rounds


def make_plan(options: AbOptions) -> Plan:
    cwd = (options.cwd or Path.cwd()).resolve()
    _check_pytest_args(options.pytest_args)
    toplevel = repository(cwd)
    base_commit = resolve_ref(toplevel, options.baseline_ref)
    cand_commit, dirty = head(toplevel)
    gate, layers, section = _settings(options, cwd, toplevel)
    rounds = options.rounds if options.rounds is not None else section.rounds
    if rounds < paired.MIN_ROUNDS:
        raise AbError(
            f"--rounds={rounds}: at least {paired.MIN_ROUNDS} rounds are needed (rounds are the "
            f"unit of replication, and an interval needs two degrees of freedom); default {AbSettings().rounds}"
        )
    budget_s = options.budget_s if options.budget_s is not None else section.budget_s
    if not (math.isfinite(budget_s) and budget_s > 0):
        raise AbError(f"--budget={budget_s}: expected a positive number of seconds, e.g. 1 or 2s")
    worker_pairs = (
        options.worker_pairs if options.worker_pairs is not None else section.worker_pairs
    )
    if not 1 <= worker_pairs <= MAX_WORKER_PAIRS:
        raise AbError(
            f"--worker-pairs={worker_pairs}: expected 1 to {MAX_WORKER_PAIRS} pairs of worker "
            f"processes (each pair is two more pytest processes); default {AbSettings().worker_pairs}"
        )
    store_path = options.store_path or Path(DEFAULTS.store)
    return Plan(
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
        worker_pairs=worker_pairs,
        pin_cpus=options.pin_cpus if options.pin_cpus is not None else section.pin_cpus,
    )


def side_trees(plan: Plan, options: AbOptions, worktree: Path) -> dict[Side, Tree]:
    relative = plan.cwd.relative_to(plan.toplevel)
    base_root = worktree.resolve()
    if not (base_root / relative).is_dir():
        raise AbError(
            f"the current directory {relative} does not exist at --baseline="
            f"{options.baseline_ref}; run pytest-roofline ab from a directory both revisions "
            "have (e.g. the repository root)"
        )
    trees: dict[Side, Tree] = {}
    sides: tuple[tuple[Side, Path, Path, str, bool], ...] = (
        ("baseline", base_root, base_root / relative, plan.base_commit, False),
        ("candidate", plan.toplevel, plan.cwd, plan.cand_commit, plan.dirty),
    )
    for side, root, workdir, commit, dirty in sides:
        # Relative import roots are taken in each tree; an absolute one is the same for both
        # (a shared vendored directory), and the probe refuses it if it holds either tree's code.
        import_dir = Path(plan.import_root)
        import_dir = (import_dir if import_dir.is_absolute() else workdir / import_dir).resolve()
        trees[side] = Tree(side, root, workdir, import_dir, commit, dirty, "")
    return trees
