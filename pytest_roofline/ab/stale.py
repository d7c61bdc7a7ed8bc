"""Baseline worktrees left behind by a ``pytest-roofline ab`` that was killed (SIGKILL, OOM).

``ab`` checks the baseline out as a git worktree in a scratch directory named ``roofline-ab-*``
and removes both when it ends, also on failure; a SIGKILL leaves the worktree registered in the
repository (``git worktree list``) and the directory on disk. The next ``ab`` prunes them.

Only worktrees of ``ab``'s own are touched: the scratch directory's name starts with
:data:`SCRATCH_PREFIX`, the worktree in it is named ``baseline``, and it holds the lock file
:data:`LOCK_NAME`. A live ``ab`` holds an exclusive ``flock`` on that file from before it adds
its worktree until it has removed it; the kernel drops the lock when the process dies, however
it dies. So a worktree whose lock can be taken belongs to no live ``ab`` and is removed; one whose
lock is held is left alone. Where ``flock`` does not exist (Windows) nothing is pruned but what
``git worktree prune`` drops itself (worktrees whose directory is gone).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pytest_roofline.ab.git import git

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "SCRATCH_PREFIX", "WORKTREE_NAME", "ScratchClaim", "prune_stale_worktrees"]

SCRATCH_PREFIX = "roofline-ab-"
WORKTREE_NAME = "baseline"
LOCK_NAME = "ab.lock"


def _try_lock(path: Path, *, create: bool) -> int | None:
    """An fd holding an exclusive lock on ``path``, or ``None`` if another process holds it."""
    if fcntl is None:
        return None
    flags = os.O_RDWR | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class ScratchClaim:
    """This process's claim on its scratch directory, held for the life of the ``ab`` run."""

    def __init__(self, scratch: Path) -> None:
        self.path = scratch / LOCK_NAME
        self._fd = _try_lock(self.path, create=True)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = None


def _worktrees(toplevel: Path) -> list[Path]:
    done = git(["worktree", "list", "--porcelain"], toplevel)
    if done.returncode != 0:
        return []
    return [
        Path(line.split(" ", 1)[1])
        for line in done.stdout.splitlines()
        if line.startswith("worktree ")
    ]


def prune_stale_worktrees(toplevel: Path) -> list[Path]:
    """Remove the baseline worktrees of ``ab`` runs that are no longer alive; return their paths."""
    pruned: list[Path] = []
    for tree in _worktrees(toplevel):
        scratch = tree.parent
        if tree.name != WORKTREE_NAME or not scratch.name.startswith(SCRATCH_PREFIX):
            continue
        if not scratch.exists():
            # The directory is gone: git worktree prune drops the record, unless it is locked.
            git(["worktree", "unlock", str(tree)], toplevel)
            pruned.append(tree)
            continue
        fd = _try_lock(scratch / LOCK_NAME, create=False)
        if fd is None:
            continue  # a live ab holds it (or it is not ours: no lock file)
        try:
            # Twice: an ab killed inside `git worktree add` leaves the worktree locked
            # ("initializing"), and a single --force, like prune, leaves a locked one alone.
            git(["worktree", "remove", "--force", "--force", str(tree)], toplevel)
            shutil.rmtree(scratch, ignore_errors=True)
        finally:
            os.close(fd)
        pruned.append(tree)
    if pruned:
        git(["worktree", "prune"], toplevel)
    return pruned
