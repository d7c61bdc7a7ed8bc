"""A replay in a fresh process: a two-run regression measured again by a pytest process that
did not take the first look.

A same-process replay reproduces whatever that process drew: where a whole process of the same
code runs x1.8 slower than the next (``docs/gate.md``, "A replay in a fresh process"), its
replay reads x1.8 too, and stops 45 and 46 rolled back unchanged tests "reproduced on replay".
So a regression that would roll back without paired rounds (no reachable baseline commit, the
same commit, ``--roofline-confirm=never``) is measured again, before it is reported, in one
fresh persistent worker on this session's own tree and environment
(:class:`pytest_roofline.ab.workers.SoloWorker`, started at the session's first such test), one
window as long as its first look's sampling, and decided again with that window as evidence
(:func:`pytest_roofline.gate.evidence.evaluate`, ``fresh_replay``). The policy rolls it back only
if the fresh process finds it past the same bar (:mod:`pytest_roofline.gate.policy`).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_roofline.ab.pairs import pair_severity
from pytest_roofline.ab.workers import SideSpec, SoloWorker, Window, WindowSettings
from pytest_roofline.errors import RooflineError
from pytest_roofline.gate.evidence import FreshReplay
from pytest_roofline.plugin.confirm import seeded_store, worker_args

__all__ = ["MAX_ATTEMPTS", "MAX_WINDOW_S", "MIN_WINDOW_S", "FreshReplayer", "window_s"]

MIN_WINDOW_S = 0.2
MAX_WINDOW_S = 5.0
"""A replay's window is as long as the first look's sampling, within these bounds (seconds):
long enough for the quantile that regressed to be compared, and a session with several
regressions does not wait minutes for them."""
MAX_ATTEMPTS = 2
"""Windows a replay may take in all: one the host canary saw disturbed is measured again once
(a host that stays disturbed escalates the test, saying so)."""

REPLAY_WINDOWS = WindowSettings(
    min_pairs=1,
    max_pairs=1,
    drop_disturbed=False,
    pin_cpus=False,
    # As the first look measured: the plugin's warm-up, no heap block moving the test's memory.
    first_warmup_s=None,
    layout_shift_bytes=0,
)


def window_s(first_look_s: float) -> float:
    """The replay window of a test whose first look sampled for ``first_look_s`` seconds.

    >>> window_s(0.05), window_s(0.8), window_s(60.0)
    (0.2, 0.8, 5.0)
    """
    return min(MAX_WINDOW_S, max(MIN_WINDOW_S, first_look_s))


class FreshReplayer:
    """Replays in a fresh process for one session: a :class:`SoloWorker` on ``rootdir``, started
    at the first replay asked for (most sessions never ask) and kept until :meth:`close`, so a
    session with several regressions pays for one start-up and collection (about 2 s here).

    :param nodeids: every test this session may ask about (the worker collects them).
    :param invocation_args: the session's pytest arguments (the collection-shaping ones are kept).
    :param store_path: the user's store, whose cached host calibration seeds the worker's.
    """

    def __init__(
        self,
        nodeids: Sequence[str],
        *,
        rootdir: Path,
        invocation_args: Sequence[str],
        store_path: Path | None,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self._nodeids = tuple(nodeids)
        self._rootdir = rootdir
        self._invocation_args = tuple(invocation_args)
        self._store_path = store_path
        self._log = log
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._worker: SoloWorker | None = None
        self._failed: str | None = None

    def replay(self, nodeid: str, seconds: float) -> FreshReplay:
        """``nodeid`` measured for about ``seconds`` (:func:`window_s`) in the fresh process; why
        not, when the worker or the test failed (a failed worker is not started again)."""
        if self._failed is not None:
            return FreshReplay(reason=self._failed)
        try:
            found = _replay(self._started(), nodeid, seconds)
        except BaseException as exc:
            self.close(kill=True)
            if not isinstance(exc, Exception):
                raise  # KeyboardInterrupt, SystemExit: the worker is killed, not waited for
            # A worker's failure, or an unexpected reply: the test escalates, saying so, rather
            # than the session ending in an internal error.
            shown = str(exc) if isinstance(exc, RooflineError) else f"{type(exc).__name__}: {exc}"
            self._failed = f"the fresh process failed: {shown}"
            return FreshReplay(reason=self._failed)
        self._log(f"{nodeid}: {_described(found)}")
        return found

    def _started(self) -> SoloWorker:
        if self._worker is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="roofline-replay-")
            scratch = Path(self._scratch.name)
            # As the first look's process was started: this interpreter and environment, no
            # tree put ahead on the import path (paired workers put each side's first, which
            # here could import a source tree where the session imported an installed build).
            spec = SideSpec(
                side="candidate",
                python=sys.executable,
                workdir=self._rootdir,
                pytest_args=worker_args(self._invocation_args, self._nodeids),
                store_path=seeded_store(scratch / "candidate.sqlite", self._store_path),
            )
            worker = SoloWorker(spec, REPLAY_WINDOWS, log=self._log)
            try:
                worker.start()
            except BaseException:
                worker.close(kill=True)
                raise
            self._worker = worker
        return self._worker

    def close(self, *, kill: bool = False) -> None:
        """Stop the worker, if one was started, and remove its scratch directory."""
        try:
            if self._worker is not None:
                self._worker.close(kill=kill)
        finally:
            self._worker = None
            if self._scratch is not None:
                self._scratch.cleanup()
                self._scratch = None


def _replay(worker: SoloWorker, nodeid: str, seconds: float) -> FreshReplay:
    """The test's window; measured again while the host canary reads it disturbed (the drop
    rule of paired rounds, :func:`pytest_roofline.ab.pairs.pair_severity`), up to
    :data:`MAX_ATTEMPTS` windows."""
    last: Window | None = None
    for _ in range(MAX_ATTEMPTS):
        window = worker.window(nodeid, seconds)
        if isinstance(window, str):
            return FreshReplay(reason=f"the test did not pass in the fresh process: {window}")
        last = window
        if pair_severity(None, window.canary) is None:
            return FreshReplay(samples_s=window.samples_s)
    assert last is not None and last.canary is not None
    return FreshReplay(samples_s=last.samples_s, host=last.canary.reason())


def _described(replay: FreshReplay) -> str:
    if not replay.made:
        return f"no replay in a fresh process ({replay.reason})"
    assert replay.samples_s is not None
    host = f", host disturbed: {replay.host}" if replay.host else ""
    return f"replayed in a fresh process ({replay.samples_s.size} samples{host})"
