"""Item 12: ``pytest-roofline ab`` killed with SIGKILL leaves its baseline worktree registered;
the next ``ab`` in that repository prunes it (and only worktrees of its own that no live ``ab``
holds)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import no_traceback, run_cli

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def worktrees(repo: Path) -> list[Path]:
    listing = git(repo, "worktree", "list", "--porcelain")
    return [
        Path(line.split(" ", 1)[1]) for line in listing.splitlines() if line.startswith("worktree ")
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "test_perf.py").write_text("def test_a(roofline):\n    roofline(sorted, [3, 1, 2])\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def _wait_for_worktree(repo: Path, process: subprocess.Popen[bytes]) -> Path:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        extra = [w for w in worktrees(repo) if w != repo.resolve()]
        if extra and (extra[0] / "test_perf.py").exists():
            return extra[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError("ab never added its baseline worktree")


def _start_ab(repo: Path, setup: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest_roofline.cli", "ab", "--baseline=HEAD", f"--setup={setup}",
         "--store", str(repo.parent / "s.sqlite")],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def _assert_the_next_ab_prunes(repo: Path, stale: Path) -> None:
    """The next ab fails its own setup at once; before that it has pruned the stale worktree."""
    ran = run_cli(
        repo, "ab", "--baseline=HEAD", "--setup=false", "--store", str(repo.parent / "s.sqlite")
    )
    assert ran.status == 2, ran.explain()
    no_traceback(ran)
    assert "pruned" in ran.err and str(stale) in ran.err, ran.explain()
    assert worktrees(repo) == [repo.resolve()]
    assert not stale.parent.exists()  # its scratch directory too


def test_a_worktree_left_by_a_killed_ab_is_pruned_by_the_next_ab(repo: Path) -> None:
    killed = _start_ab(repo, "sleep 120")
    stale = _wait_for_worktree(repo, killed)
    os.killpg(killed.pid, signal.SIGKILL)  # the ab process and its setup shell, at once
    killed.wait()
    assert killed.returncode == -signal.SIGKILL
    assert stale in worktrees(repo)  # left registered: nothing ran its clean-up

    _assert_the_next_ab_prunes(repo, stale)
    assert not stale.exists()


@pytest.mark.parametrize("directory_gone", [False, True])
def test_a_worktree_left_locked_by_an_ab_killed_inside_git_worktree_add_is_pruned(
    repo: Path, directory_gone: bool
) -> None:
    # `git worktree add` locks the new worktree ("initializing") until its checkout is done: an
    # ab killed in that moment leaves it locked, and `git worktree remove --force` and `git
    # worktree prune` both leave a locked worktree alone (seen once in CI under load).
    killed = _start_ab(repo, "sleep 120")
    stale = _wait_for_worktree(repo, killed)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    git(repo, "worktree", "lock", "--reason", "initializing", str(stale))
    if directory_gone:  # e.g. a tmp cleaner took the scratch directory since
        shutil.rmtree(stale.parent)
    _assert_the_next_ab_prunes(repo, stale)


def test_a_worktree_of_a_running_ab_is_left_alone(repo: Path) -> None:
    running = _start_ab(repo, "sleep 120")
    try:
        live = _wait_for_worktree(repo, running)
        ran = run_cli(
            repo, "ab", "--baseline=HEAD", "--setup=false", "--store", str(repo.parent / "s.sqlite")
        )
        assert ran.status == 2, ran.explain()
        assert live in worktrees(repo) and live.exists()
        assert "pruned" not in ran.err
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
    # Clean up what the killed ab left, as the next ab would (its scratch directory included).
    for tree in worktrees(repo)[1:]:
        git(repo, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(tree.parent, ignore_errors=True)
