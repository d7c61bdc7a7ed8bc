"""The rounds of a paired run: one side's pytest process per half-round, in ABBA order.

Each half-round runs the user's pytest arguments once in that side's tree, as ``python -m pytest
--roofline --roofline-budget=<budget / K> --roofline-gate=never ...`` with the side's import
root first on ``PYTHONPATH``; the samples land in a scratch store. The import probe plugin
(:mod:`pytest_roofline.plugin.ab_imports`) records which files each round imported, and a side
that imported the other side's tree (or an installed copy of the project) is refused
(:func:`pytest_roofline.ab.sides.check_side`): it would compare a tree with itself.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_roofline.ab.plan import Plan
from pytest_roofline.ab.sides import Tree, check_side, tail
from pytest_roofline.errors import AbError, StoreError
from pytest_roofline.stats.paired import Side
from pytest_roofline.store import Store

__all__ = [
    "PROBE_PLUGIN",
    "Round",
    "RoundRecord",
    "copy_calibrations",
    "quote_args",
    "replay_prefix",
    "run_round",
]

PROBE_PLUGIN = "pytest_roofline.plugin.ab_imports"


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


def quote_args(args: Sequence[str]) -> str:
    """A command line for a POSIX shell: every word quoted as needed (``shlex.join``)."""
    return shlex.join(args)


def replay_prefix(
    *, baseline_ref: str, rounds: int, import_root: str | None
) -> Callable[[str], str]:
    """The paired replay command of a node id: ``pytest-roofline ab --baseline=REF ... -- NODEID``.

    The node id alone selects the test (the run's other pytest arguments may select more).
    """
    prefix = ["pytest-roofline", "ab", f"--baseline={baseline_ref}", f"--rounds={rounds}"]
    if import_root is not None:
        prefix.append(f"--import-root={import_root}")
    return lambda nodeid: quote_args([*prefix, "--", nodeid])


def copy_calibrations(source: Path, dest: Store, key: str) -> None:
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


@dataclass(frozen=True, slots=True)
class Round:
    record: RoundRecord
    probe: Mapping[str, Any]
    reason: str | None


def run_round(
    plan: Plan,
    trees: Mapping[Side, Tree],
    env: Mapping[str, str],
    *,
    index: int,
    position: int,
    side: Side,
    scratch: Path,
    user_args: Sequence[str],
    previous_id: int,
) -> Round:
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
            f"({quote_args(user_args) or 'none'}) are used in both trees"
        )
    if done.returncode not in (0, 1):
        hint = ""
        if PROBE_PLUGIN in tail(done):
            hint = f"\n(every side's interpreter needs pytest-roofline: is it installed for {tree.python}?)"
        raise AbError(
            f"{where}: pytest exited {done.returncode}: {quote_args(command)}\n{tail(done)}{hint}"
        )
    try:
        probe = json.loads(probe_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise AbError(
            f"{where}: the probe plugin wrote no record ({probe_path}); pytest output:\n{tail(done)}"
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
            f"select performance tests with the arguments after --\n{tail(done)}"
        )
    reason = None
    if done.returncode == 1:
        reason = (
            f"tests failed on the {side} side in round {index + 1} (pytest exit 1): their "
            "samples of that round are missing"
        )
    record = RoundRecord(index, side, position, newest, done.returncode, seconds, tests)
    return Round(record, probe, reason)
