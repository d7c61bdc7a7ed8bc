"""The two sides of a paired run: their trees, environments, and the check that each side
measured its own tree's code (:func:`check_side`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_roofline.errors import AbError
from pytest_roofline.stats.paired import Side

__all__ = [
    "WORKER_ENV_DEFAULTS", "Tree", "check_side", "resolve_python", "run_setup", "side_env",
    "side_facts", "tail", "worker_env_defaults",
]  # fmt: skip

_TAIL_CHARS = 3000


@dataclass(frozen=True, slots=True)
class Tree:
    side: Side
    root: Path
    workdir: Path
    import_dir: Path
    commit: str
    dirty: bool
    python: str


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


def resolve_python(text: str | None, workdir: Path, option: str) -> str:
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


# How long, in 2**n TSC cycles, an idle OpenBLAS thread spins before it sleeps (its default is
# 2**28, about 0.1 s). A worker's BLAS threads that still spin when the other worker's window
# starts take a vCPU from it: on 2 vCPUs, a 2-thread 160x160 GEMM's per-window p99 was 2.2-4.1 ms
# instead of 0.18 ms in every window that followed the other side's (30-31 of 60 windows; with
# 2**20, about 0.4 ms, 0-1 of 60) and its paired p99 interval spanned x0.00-x61. Back-to-back
# calls inside a window are microseconds apart, so they still find the threads spinning.
WORKER_ENV_DEFAULTS: Mapping[str, str] = {"OPENBLAS_THREAD_TIMEOUT": "20"}


def worker_env_defaults(base: Mapping[str, str]) -> dict[str, str]:
    """What paired workers get on top of ``base``: :data:`WORKER_ENV_DEFAULTS` the user left unset."""
    return {name: value for name, value in WORKER_ENV_DEFAULTS.items() if name not in base}


def side_env(import_dir: Path, base: Mapping[str, str]) -> dict[str, str]:
    """A paired worker's environment: ``base``, the idle-thread defaults, the side's import root."""
    env = {**worker_env_defaults(base), **base}
    # The side's own import root first: ahead of the user's PYTHONPATH and of site-packages
    # (where an editable install of one tree would otherwise win for both sides).
    parts = [str(import_dir)]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def tail(done: subprocess.CompletedProcess[str]) -> str:
    text = ((done.stdout or "") + (done.stderr or "")).strip()
    return text[-_TAIL_CHARS:] if text else "(no output)"


def run_setup(command: str, tree: Tree, env: Mapping[str, str]) -> None:
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
            f"{command}\n{tail(done)}"
        )


def side_facts(tree: Tree, probe: Mapping[str, Any]) -> dict[str, Any]:
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
