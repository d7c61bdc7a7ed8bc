"""Helpers of a paired run's rounds: the replay command, quoting, the calibration seed.

The rounds themselves are window pairs on persistent workers (:mod:`~pytest_roofline.ab.workers`,
driven by :mod:`~pytest_roofline.ab.command`); a pytest process per half-round is gone.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_roofline.errors import StoreError
from pytest_roofline.store import Store

__all__ = ["copy_calibrations", "quote_args", "replay_prefix"]


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
