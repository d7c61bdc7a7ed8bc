"""A replay in a fresh process, in real pytest sessions: a regression that would roll back
without paired rounds must reproduce when a fresh pytest process measures the test again
(before the test is reported, so a rollback fails the test itself).

The conftest of ``test_confirm`` (a fake clock advanced by the kernel's declared cost) plus one
hook: with ``SLOW_FIRST_PROCESS=PATH``, the first process of a session to load the conftest (the
one that takes the first look and its same-process replay) runs the kernel four times slower,
and every later process (the fresh replay's worker) at its own speed. That is the between-process
draw stops 45 and 46 rolled back unchanged tests on ("reproduced on replay").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .test_confirm import CONFTEST, NODEID, git, make_repo, run

FIRST_PROCESS_SLOW = (
    CONFTEST
    + """
_flag = os.environ.get("SLOW_FIRST_PROCESS")
if _flag and not os.path.exists(_flag):
    open(_flag, "w").close()
    kernel.MS *= 4  # this process only: a fresh process imports kernel.MS as committed
elif _flag and os.environ.get("FAIL_LATER_PROCESSES"):
    kernel.MS = None  # the test fails in every later process
"""
)


@pytest.fixture
def repo(pytester: pytest.Pytester) -> Path:
    return make_repo(pytester, FIRST_PROCESS_SLOW)


def compare(repo: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    """A session compared with ``main``, paired confirmation off, writing ``out.json``."""
    return run(
        repo,
        "--roofline-baseline=main",
        "--roofline-json=out.json",
        "--roofline-confirm=never",
        *args,
        env=env,
    )


def record_of(root: Path) -> dict[str, Any]:
    document = json.loads((root / "out.json").read_text())
    (test,) = [t for t in document["tests"] if t["nodeid"] == NODEID]
    return test


def test_a_slow_first_process_is_not_rolled_back_when_a_fresh_process_does_not_reproduce_it(
    repo: Path,
) -> None:
    # Commit B changes nothing the kernel does: only the first process runs slow.
    (repo / "notes.txt").write_text("B\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "B: no change to the kernel")
    done = compare(repo, env={"SLOW_FIRST_PROCESS": str(repo.parent / f"{repo.name}.flag")})
    test = record_of(repo)
    # The first look and its same-process replay both read the x4.
    assert test["change"]["p50"]["ratio"] > 3.5
    assert test["replay"]["reproduced"] is True
    fresh = test["fresh_replay"]
    assert fresh["made"] is True and fresh["samples"] > 0
    assert 0.9 < fresh["change"]["p50"]["ratio"] < 1.1
    assert test["decision"] == "escalate", test["reasons"]
    assert any(
        "did not reproduce at that size when a fresh process measured it again (p50 x" in r
        for r in test["reasons"]
    ), test["reasons"]
    assert f"{NODEID}: measuring it again in a fresh process before deciding" in done.stdout
    assert "a replay in a fresh process" not in test["missing_evidence"]


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_slower_commit_without_paired_rounds_rolls_back_once_a_fresh_process_reproduces_it(
    repo: Path, xdist: tuple[str, ...]
) -> None:
    (repo / "kernel.py").write_text("MS = 8\n")
    git(repo, "commit", "-q", "-am", "B: four times the work")
    done = compare(repo, *xdist)
    test = record_of(repo)
    assert 3.5 < test["fresh_replay"]["change"]["p50"]["ratio"] < 4.5
    assert test["decision"] == "rollback", test["reasons"]
    assert any("reproduced in a fresh process (p50 x" in r for r in test["reasons"]), test[
        "reasons"
    ]
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout  # the test itself fails, as it is reported


def test_a_regression_the_fresh_process_cannot_measure_escalates_saying_why(repo: Path) -> None:
    done = compare(
        repo,
        env={
            "SLOW_FIRST_PROCESS": str(repo.parent / f"{repo.name}.flag"),
            "FAIL_LATER_PROCESSES": "1",
        },
    )
    test = record_of(repo)
    assert test["fresh_replay"]["made"] is False
    assert "the test did not pass in the fresh process" in test["fresh_replay"]["reason"]
    assert test["decision"] == "escalate", test["reasons"]
    assert any("it could not be measured again in a fresh process" in r for r in test["reasons"])
    assert "ROLLBACK" not in done.stdout
