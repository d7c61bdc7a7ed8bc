"""Git for ``pytest-roofline ab``: the repository, the baseline's commit, and its worktree."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pytest_roofline.errors import AbError

__all__ = ["add_worktree", "git", "head", "remove_worktree", "repository", "resolve_ref"]


def git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
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


def repository(cwd: Path) -> Path:
    done = git(["rev-parse", "--show-toplevel"], cwd)
    if done.returncode != 0:
        raise AbError(
            f"{cwd} is not inside a git repository: pytest-roofline ab measures the current "
            "tree against a git worktree of --baseline=REF, so run it from the repository "
            "you are changing"
        )
    return Path(done.stdout.strip()).resolve()


def resolve_ref(toplevel: Path, ref: str) -> str:
    if not ref or ref.startswith("-"):
        raise AbError(f"--baseline: expected a git revision such as main or HEAD~1, got {ref!r}")
    done = git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], toplevel
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise AbError(
            f"--baseline={ref}: no commit named {ref!r} in {toplevel}. Give a branch, tag or "
            "commit that exists here; in CI fetch the base branch first, e.g. "
            "git fetch origin main && pytest-roofline ab --baseline=origin/main"
        )
    return done.stdout.strip()


def head(toplevel: Path) -> tuple[str, bool]:
    head = git(["rev-parse", "HEAD"], toplevel)
    commit = head.stdout.strip() if head.returncode == 0 else "(no commit yet)"
    status = git(["status", "--porcelain", "--untracked-files=no"], toplevel)
    return commit, bool(status.stdout.strip())


def add_worktree(toplevel: Path, commit: str, dest: Path) -> None:
    done = git(["worktree", "add", "--detach", "--quiet", str(dest), commit], toplevel)
    if done.returncode != 0:
        raise AbError(
            f"git worktree add for the baseline ({commit[:12]}) failed: "
            f"{(done.stderr or done.stdout).strip()}"
        )


def remove_worktree(toplevel: Path, dest: Path) -> str | None:
    """Remove the baseline worktree; return a warning when it could not be removed cleanly."""
    # Twice: removes the worktree even if it is locked (a `git worktree add` cut short).
    done = git(["worktree", "remove", "--force", "--force", str(dest)], toplevel)
    if done.returncode == 0:
        return None
    # The directory may be half gone (a killed setup); delete it and drop git's record of it.
    shutil.rmtree(dest, ignore_errors=True)
    pruned = git(["worktree", "prune"], toplevel)
    if pruned.returncode != 0:
        return (
            f"could not remove the baseline worktree {dest}: {(done.stderr or '').strip()}; "
            "run git worktree prune"
        )
    return None
