"""Paired confirmation of a two-run session's first-look regressions (``--roofline-confirm``).

At session start the controller decides whether confirmation is possible
(:func:`plan_confirmation`): the baseline run recorded a clean git commit, nothing but the code
and the hardware differs from it (:func:`pytest_roofline.gate.confirm.confirmation_blocker`), and
the commit is in this repository. If so, a test whose first look finds a quantile DIFFERENT is
not failed when it is reported; at the end of the test loop the controller runs paired rounds
(``pytest-roofline ab``'s persistent workers) for those tests only, against a worktree of that
commit, and decides them again with the paired comparison as evidence
(:func:`confirm_tests`). If not, each such test is decided at once, with the reason the
confirmation was unavailable and the ``ab`` command that would settle it.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_roofline.ab.analysis import windows_confirmation
from pytest_roofline.ab.git import add_worktree, git, remove_worktree, repository
from pytest_roofline.ab.rounds import copy_calibrations
from pytest_roofline.ab.sides import side_env
from pytest_roofline.ab.stale import SCRATCH_PREFIX, WORKTREE_NAME, ScratchClaim
from pytest_roofline.ab.workers import PairedWorkers, SideSpec, WindowSettings
from pytest_roofline.config.settings import GateSettings, RooflineConfig
from pytest_roofline.errors import RooflineError
from pytest_roofline.gate.confirm import (
    ROLLBACK_WORKER_PAIRS,
    clears_process_floor,
    confirmation_blocker,
    replicated,
)
from pytest_roofline.gate.evidence import Confirmation
from pytest_roofline.gate.paired_looks import PairedStop, paired_plan
from pytest_roofline.gate.run import ab_command
from pytest_roofline.hardware.calibration import calibration_key
from pytest_roofline.stats.paired import Side, min_round_samples
from pytest_roofline.stats.threeway import GateMargin, gate_margin
from pytest_roofline.store import Store
from pytest_roofline.vocabulary import QUANTILES

__all__ = [
    "CONFIRM_WINDOWS",
    "ConfirmPlan",
    "RoundsBudget",
    "confirm_tests",
    "confirmation_alpha",
    "plan_confirmation",
    "seeded_store",
    "side_spec",
    "window_for",
    "worker_args",
]

CONFIRM_WINDOWS = WindowSettings(
    window_s=0.2, min_pairs=4, max_pairs=16, look_every=2, max_replacements=8
)
"""Window pairs of a confirmation: 0.2 s a window, 4 to 16 kept ABBA pairs, a look every 2
pairs (after whole ABBA blocks), and up to 8 more pairs to replace those dropped for a
disturbed host. About 2 s to 10 s of measuring per test and side. Replacements were off until
run 11 (docs/gate.md): on the quiet VM the canary flagged 10-12 of 16 pairs in some tests,
which left them on ``min_pairs`` and UNKNOWN (7 of 30 p95 and 10 of 30 p99 regressions
escalated so); the default time per test asked (``DEFAULTS.confirm_time_per_test_s``) covers
them, and a configured ``gate.confirm_time`` still bounds each kind (:class:`RoundsBudget`)."""
MAX_WINDOW_S = 2.0
"""A slow test's window grows until it holds the samples its tail quantiles need per window
(:func:`window_for`), up to this; a tail still short of them stays unsettled (inconclusive)."""


def window_for(quantiles: Sequence[str], call_s: float, default_s: float) -> float:
    """A window long enough for each asked quantile's per-window sample floor.

    ``1.25 x min_round_samples(q) x call_s`` (a quarter more for warm-up and batching), at
    least ``default_s``, at most :data:`MAX_WINDOW_S`.

    >>> window_for(["p50"], 0.002, 0.2), window_for(["p99"], 0.002, 0.2)
    (0.2, 0.25)
    """
    if not (call_s > 0 and math.isfinite(call_s)):
        return default_s
    floor = max((min_round_samples(QUANTILES[name]) for name in quantiles), default=1)
    return min(MAX_WINDOW_S, max(default_s, 1.25 * floor * call_s))


@dataclass(frozen=True, slots=True)
class ConfirmPlan:
    """Whether first-look regressions are confirmed, and against which commit.

    ``commit`` is set when they are; otherwise ``reason`` says why not (shown with each
    regression that then rests on the two-run evidence alone). ``baseline_commit`` is the
    commit the baseline recorded, if any: the ``ab`` command that settles a test by hand
    names it even where this session could not check it out.
    """

    commit: str | None
    reason: str | None
    baseline_commit: str | None = None

    @property
    def available(self) -> bool:
        return self.commit is not None

    def unavailable(self, nodeid: str) -> Confirmation | None:
        """The evidence a first look carries when no confirmation can be made (``None`` if one can)."""
        if self.commit is not None or self.reason is None:
            return None
        return Confirmation(state="unavailable", reason=self.reason, command=self.command(nodeid))

    def command(self, nodeid: str) -> str | None:
        """The ``pytest-roofline ab`` command that compares ``nodeid`` with the baseline's commit."""
        commit = self.commit or self.baseline_commit
        return ab_command(nodeid, commit) if commit else None

    def unsettled_note(self, escalated_unconfirmed: int) -> str | None:
        """The terminal's line when this session's paired rounds could settle nothing and
        ``escalated_unconfirmed`` escalated tests carry that ``unavailable`` confirmation
        (``None`` otherwise).

        Each test's reasons say it too, but a newcomer comparing a copy without git history
        (a downloaded archive, a checkout git refuses to read) sees only "not settled by
        paired rounds" on several unchanged tests; one line says why all of them at once.

        >>> ConfirmPlan(None, "the baseline run recorded no git commit").unsettled_note(5)[:60]
        '5 escalated test(s) were not settled by paired rounds, which'
        >>> ConfirmPlan("abc", None).unsettled_note(5) is None
        True
        """
        if self.available or self.reason is None or escalated_unconfirmed <= 0:
            return None
        return (
            f"{escalated_unconfirmed} escalated test(s) were not settled by paired rounds, which "
            f"need a worktree of the baseline's commit: {self.reason} (docs/gate.md, \"Paired "
            'confirmation of a first-look regression")'
        )

    def to_dict(self) -> dict[str, str | None]:
        return {
            "commit": self.commit,
            "reason": self.reason,
            "baseline_commit": self.baseline_commit,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ConfirmPlan:
        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        return cls(
            commit=text("commit"), reason=text("reason"), baseline_commit=text("baseline_commit")
        )


def plan_confirmation(
    settings: RooflineConfig,
    *,
    baseline_tags: Mapping[str, str] | None,
    tags: Mapping[str, str],
    reachable: Callable[[Path, str], str | None] | None = None,
) -> ConfirmPlan:
    """Decide once per session whether first-look regressions can be confirmed.

    :param baseline_tags: the baseline run's revision tags (``None``: no baseline).
    :param reachable: says why a commit cannot be checked out here (default: :func:`commit_problem`).
    """
    if baseline_tags is None:
        return ConfirmPlan(commit=None, reason=None)
    recorded = baseline_tags.get("git_commit")
    baseline_commit = recorded if recorded and not recorded.startswith("(") else None
    if settings.gate.confirm == "never":
        return ConfirmPlan(
            commit=None,
            reason="paired confirmation is off (--roofline-confirm=never)",
            baseline_commit=baseline_commit,
        )
    blocker = confirmation_blocker(baseline_tags, tags, settings.layers)
    if blocker is None and baseline_commit is not None:
        blocker = (reachable or commit_problem)(settings.rootdir, baseline_commit)
    if blocker is not None:
        return ConfirmPlan(commit=None, reason=blocker, baseline_commit=baseline_commit)
    return ConfirmPlan(commit=baseline_commit, reason=None, baseline_commit=baseline_commit)


def commit_problem(rootdir: Path, commit: str) -> str | None:
    """Why ``commit`` cannot be checked out as a worktree from ``rootdir``'s repository."""
    try:
        inside = git(["rev-parse", "--show-toplevel"], rootdir)
        if inside.returncode != 0:
            return f"{rootdir} is not inside a git repository"
        found = git(["cat-file", "-e", f"{commit}^{{commit}}"], rootdir)
    except RooflineError as exc:
        return str(exc)
    if found.returncode != 0:
        return (
            f"the baseline's commit {commit[:12]} is not in this repository (a shallow clone? "
            f"fetch it, e.g. git fetch --unshallow)"
        )
    return None


# Options of the user's command line that shape collection (kept for the paired workers);
# everything else (selection, --roofline-* outputs and labels, reporting) is left out: the
# workers measure the given node ids and neither save nor compare.
_KEPT_WITH_VALUE = ("-c", "--config-file", "--rootdir", "-p", "-o", "--override-ini", "--confcutdir",
                    "--import-mode", "--roofline-config", "--roofline-target", "--roofline-blas-threads",
                    "--roofline-benchmark")  # fmt: skip


def worker_args(invocation_args: Sequence[str], nodeids: Sequence[str]) -> tuple[str, ...]:
    """The paired workers' pytest arguments: the collection-shaping options, then the node ids."""
    kept: list[str] = []
    args = list(invocation_args)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, _ = arg.partition("=")
        if name in _KEPT_WITH_VALUE:
            if eq:
                kept.append(arg)
            elif i + 1 < len(args):
                kept += [arg, args[i + 1]]
                i += 1
        elif arg.startswith("-p") and len(arg) > 2:
            kept.append(arg)  # -pNAME
        i += 1
    return (*kept, *nodeids)


def side_spec(
    side: Side,
    workdir: Path,
    scratch: Path,
    invocation_args: Sequence[str],
    nodeids: Sequence[str],
    store_path: Path | None,
) -> SideSpec:
    """How to start a worker of this session's tests on ``workdir``: this interpreter, the
    tree first on the import path (ahead of an editable install), the collection-shaping
    arguments (:func:`worker_args`), and a scratch store in ``scratch`` seeded with the user's
    cached host calibration (no recalibration in the worker)."""
    store = seeded_store(scratch / f"{side}.sqlite", store_path)
    return SideSpec(
        side=side,
        python=sys.executable,
        workdir=workdir,
        sys_path=(workdir,),
        env=side_env(workdir, os.environ),
        pytest_args=worker_args(invocation_args, nodeids),
        store_path=store,
    )


def seeded_store(path: Path, store_path: Path | None) -> Path:
    """A worker's scratch store at ``path``, seeded with the user's cached host calibration
    (from ``store_path``) so that the worker does not calibrate again."""
    if store_path is not None:
        with Store.open(path, create=True) as seed:
            copy_calibrations(store_path, seed, calibration_key())
    return path


CONFIRM_ALPHA = 0.01
"""The one-sided level a confirmation's DIFFERENT spends at most, before the split over the
session's asked comparisons. A confirmation is what rolls back, so it is held to the stricter
level ``docs/sequential.md`` recommends for paired decisions: at 0.05 with no split, unchanged
tests were "confirmed" at x1.05 [1.002, 1.104] in the validation runs (``docs/gate.md``)."""


def confirmation_alpha(alpha: float, asked: Mapping[str, Sequence[str]]) -> float:
    """DIFFERENT's level for each confirmed comparison: ``min(alpha, CONFIRM_ALPHA)`` split
    (Bonferroni) over every quantile of every test awaiting confirmation in the session.

    >>> confirmation_alpha(0.05, {"a": ["p50"], "b": ["p50", "p95"]})
    0.0033333333333333335
    """
    comparisons = sum(len(names) for names in asked.values())
    return min(alpha, CONFIRM_ALPHA) / max(1, comparisons)


def confirmation_margin(
    gate: GateSettings, name: str, first_look: float | None = None
) -> GateMargin:
    """A paired comparison's margin in a two-run session: SAME rules out the ``first_look``
    margin the session gated the quantile with
    (:func:`pytest_roofline.gate.confirm.first_look_margins` says why), else the user's
    ``min_effect`` (capped); DIFFERENT needs a change beyond ``min_effect``
    (:meth:`~pytest_roofline.stats.threeway.GateMargin.for_paired_rounds`).

    Why DIFFERENT at ``min_effect``: the session's margin allows for between-run noise, which
    the alternation cancels. Held to it, paired rounds called a p95 of x1.496 [1.022, 1.552]
    SAME against a +60% margin on a fixture whose p95 was made twice as slow (run 11 of
    docs/gate.md). A rollback still needs three pairs of worker processes to find it.

    >>> from pytest_roofline.config.settings import GateSettings
    >>> m = confirmation_margin(GateSettings(), "p95", 0.6)
    >>> m.margin, m.different_at
    (0.6, 0.05)
    """
    floor = first_look if first_look is not None else 0.0
    margin = gate_margin(gate.min_effect.get(name, 0.0), floor, max_margin=gate.max_margin)
    return margin.for_paired_rounds()


def confirm_tests(
    asked: Mapping[str, Sequence[str]],
    *,
    call_s: Mapping[str, float],
    commit: str,
    rootdir: Path,
    invocation_args: Sequence[str],
    gate: GateSettings,
    store_path: Path | None = None,
    windows: WindowSettings = CONFIRM_WINDOWS,
    required: Collection[str] | None = None,
    settle_s: float = math.inf,
    confirm_s: float = math.inf,
    replica_s: Callable[[int], float] | None = None,
    first_look: Mapping[str, Mapping[str, float]] | None = None,
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] = lambda line: None,
) -> dict[str, Confirmation]:
    """Paired rounds against a worktree of ``commit`` for each test's first-look regression,
    and for its UNKNOWN first looks.

    :param asked: node id -> the quantiles its first look found DIFFERENT or UNKNOWN, in the
        order the tests are measured (regressions first).
    :param first_look: node id -> quantile -> the first look's margin
        (:func:`pytest_roofline.gate.confirm.first_look_margins`); a quantile without one is
        judged against ``min_effect``.
    :param required: the node ids of first-look regressions (default: all): each is measured
        while less than ``confirm_s`` seconds (by ``clock``) have passed since the rounds
        began, worker start-up included; any other while less than ``settle_s`` have passed
        since the regressions' rounds ended (:class:`RoundsBudget`). A test not reached is
        ``unavailable``, saying so. Each further pair of workers (``ROLLBACK_WORKER_PAIRS``
        in all), which measures again what the pairs before it confirmed, has time of its own.
    :param replica_s: the time of a further pair asked about that many tests (default:
        ``confirm_s`` whatever the count).
    :param call_s: node id -> its per-call time (the first look's p50), to size its windows.
    :param rootdir: pytest's rootdir; node ids are relative to it in both trees.
    :param store_path: the user's store, whose cached host calibration seeds the workers'.
    :returns: a :class:`Confirmation` per node id: ``confirmed`` / ``overturned`` /
        ``inconclusive`` from the rounds, or ``unavailable`` with the reason when the rounds
        could not run (the worktree, a worker, or the test on one side failed).
    """
    nodeids = list(asked)
    if not nodeids:
        return {}
    try:
        toplevel = repository(rootdir)
        relative = rootdir.resolve().relative_to(toplevel.resolve())
    except (RooflineError, ValueError) as exc:
        return _all_unavailable(nodeids, commit, f"no worktree of {commit[:12]}: {exc}")
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as scratch_text:
        scratch = Path(scratch_text)
        # Held until the worktree is gone: a later ab prunes it only once this process is dead.
        claim = ScratchClaim(scratch)
        worktree = scratch / WORKTREE_NAME
        try:
            add_worktree(toplevel, commit, worktree)
        except RooflineError as exc:
            claim.release()
            return _all_unavailable(nodeids, commit, str(exc))
        try:
            return _measure(
                asked,
                call_s=call_s,
                baseline_dir=worktree / relative,
                candidate_dir=rootdir,
                scratch=scratch,
                commit=commit,
                invocation_args=invocation_args,
                gate=gate,
                store_path=store_path,
                windows=windows,
                required=set(asked) if required is None else set(required),
                settle_s=settle_s,
                confirm_s=confirm_s,
                replica_s=replica_s or (lambda _tests: confirm_s),
                first_look=first_look or {},
                clock=clock,
                log=log,
            )
        finally:
            trouble = remove_worktree(toplevel, worktree)
            claim.release()
            if trouble:
                log(trouble)


class RoundsBudget:
    """Whether a test's paired rounds may still start: first-look regressions while less than
    ``confirm_s`` have passed since ``began`` (worker start-up included), UNKNOWN first looks
    while less than ``settle_s`` have passed since the regressions' rounds ended (since
    ``began`` when there were none).

    Settling has a clock of its own because the regressions come first: on a shared clock
    they ate the time the log promised the UNKNOWN first looks ("settling 5 ... for up to 10
    s" reached 3 of them in the README's compare, after worker start-up and one regression).
    """

    def __init__(
        self, began: float, confirm_s: float, settle_s: float, clock: Callable[[], float]
    ) -> None:
        self._began = began
        self._confirm_s = confirm_s
        self._settle_s = settle_s
        self._clock = clock
        self._settle_began: float | None = None
        self._regressions_seen = False

    def late(self, regression: bool) -> str:
        """Why a test's rounds may not start now ('' if they may).

        :raises ValueError: for a regression after settling began: the regressions come first,
            or their rounds would spend the settling time again.
        """
        now = self._clock()
        if regression:
            if self._settle_began is not None:
                raise ValueError("first-look regressions must be measured before settling")
            self._regressions_seen = True
            return _out_of_time(True, now - self._began, self._confirm_s, self._settle_s)
        if self._settle_began is None:
            self._settle_began = now if self._regressions_seen else self._began
        return _out_of_time(False, now - self._settle_began, self._confirm_s, self._settle_s)


def _out_of_time(regression: bool, spent_s: float, confirm_s: float, settle_s: float) -> str:
    """Why a test's rounds may not start after ``spent_s`` seconds of them ('' if they may)."""
    if regression and spent_s >= confirm_s:
        return (
            f"the paired rounds had spent the session's {confirm_s:.0f} s for confirming "
            "first-look regressions (gate.confirm_time) before reaching it"
        )
    if not regression and spent_s >= settle_s:
        return (
            f"the paired rounds had spent the session's {settle_s:.0f} s for settling UNKNOWN "
            "first looks (gate.confirm_time)"
        )
    return ""


def _all_unavailable(nodeids: Sequence[str], commit: str, reason: str) -> dict[str, Confirmation]:
    return {
        n: Confirmation(state="unavailable", reason=reason, command=ab_command(n, commit))
        for n in nodeids
    }


def _measure(
    asked: Mapping[str, Sequence[str]],
    *,
    call_s: Mapping[str, float],
    baseline_dir: Path,
    candidate_dir: Path,
    scratch: Path,
    commit: str,
    invocation_args: Sequence[str],
    gate: GateSettings,
    store_path: Path | None,
    windows: WindowSettings,
    required: Collection[str],
    settle_s: float,
    confirm_s: float,
    replica_s: Callable[[int], float],
    first_look: Mapping[str, Mapping[str, float]],
    clock: Callable[[], float],
    log: Callable[[str], None],
) -> dict[str, Confirmation]:
    nodeids = list(asked)
    began = clock()
    sides: tuple[tuple[Side, Path], ...] = (
        ("baseline", baseline_dir),
        ("candidate", candidate_dir),
    )
    specs = [
        side_spec(side, workdir, scratch, invocation_args, nodeids, store_path)
        for side, workdir in sides
    ]
    plan = paired_plan(
        windows.min_pairs,
        windows.max_pairs,
        windows.look_every,
        alpha=confirmation_alpha(gate.alpha, asked),
        alpha_same=gate.alpha,
    )
    found: dict[str, Confirmation] = {}

    def confirm(
        workers: PairedWorkers, nodeid: str, quantiles: Sequence[str] | None = None
    ) -> Confirmation:
        """``nodeid``'s paired rounds on ``workers``, asking ``quantiles`` (default: all asked)."""
        names = asked[nodeid] if quantiles is None else quantiles
        own = first_look.get(nodeid, {})
        margins = {name: confirmation_margin(gate, name, own.get(name)) for name in names}
        window_s = window_for(names, call_s.get(nodeid, 0.0), windows.window_s)
        test = workers.measure_test(
            nodeid, PairedStop(margins, plan, alpha=gate.alpha), window_s=window_s
        )
        # Pairs with a host-disturbed window on either side are left out (ab.pairs).
        found = windows_confirmation(
            names,
            test,
            margins,
            plan,
            alpha=gate.alpha,
            command=ab_command(nodeid, commit),
        )
        log(
            f"{nodeid}: {test.pairs} window pairs ({test.stop}), {len(test.dropped)} dropped; "
            f"asked {', '.join(names)}; DIFFERENT: {', '.join(_regressed(found)) or 'none'}"
        )
        return found

    try:
        with PairedWorkers(specs[0], specs[1], windows, log=log) as workers:
            budget = RoundsBudget(began, confirm_s, settle_s, clock)
            for nodeid in nodeids:
                late = budget.late(nodeid in required)
                if late:
                    found[nodeid] = Confirmation(
                        state="unavailable",
                        reason=late,
                        command=ab_command(nodeid, commit),
                        out_of_time=True,
                    )
                    continue
                found[nodeid] = confirm(workers, nodeid)
        # A rollback must not rest on one pair of processes (gate.confirm.replicated): what the
        # pairs before confirmed, a fresh pair measures again, ROLLBACK_WORKER_PAIRS in all,
        # unless the first pair's interval is beyond any process draw (clears_process_floor).
        settled = {
            nodeid: cleared
            for nodeid in nodeids
            if (cleared := clears_process_floor(found[nodeid])) is not None
        }
        found.update(settled)
        for number in range(2, ROLLBACK_WORKER_PAIRS + 1):
            again = [
                nodeid
                for nodeid in nodeids
                if found[nodeid].state == "confirmed" and nodeid not in settled
            ]
            if not again:
                break
            pair_s = replica_s(len(again))
            log(
                f"measuring {len(again)} confirmed regression(s) again on worker pair {number} "
                f"for up to {pair_s:.0f} s"
            )
            # A fresh pair is asked only what the pairs before found DIFFERENT: it must find the
            # same regression (gate.confirm.replicated), and its rounds would otherwise stop at
            # whichever quantile crossed first, leaving the one to reproduce undecided.
            replicas = _replica_pair(
                again,
                specs,
                windows,
                number,
                pair_s,
                measure=lambda workers, nodeid: confirm(
                    workers, nodeid, _regressed(found[nodeid]) or None
                ),
                clock=clock,
                log=log,
            )
            for nodeid in again:
                found[nodeid] = replicated(found[nodeid], replicas[nodeid], start=number)
    except RooflineError as exc:
        reason = f"the paired workers failed: {exc}"
        for nodeid in nodeids:
            found.setdefault(
                nodeid,
                Confirmation(
                    state="unavailable", reason=reason, command=ab_command(nodeid, commit)
                ),
            )
    return found


def _regressed(confirmation: Confirmation) -> tuple[str, ...]:
    """The quantiles ``confirmation``'s paired comparisons found DIFFERENT."""
    return tuple(n for n, c in confirmation.comparisons.items() if c.outcome == "different")


def _replica_pair(
    nodeids: Sequence[str],
    specs: Sequence[SideSpec],
    windows: WindowSettings,
    number: int,
    confirm_s: float,
    *,
    measure: Callable[[PairedWorkers, str], Confirmation],
    clock: Callable[[], float],
    log: Callable[[str], None],
) -> dict[str, Confirmation]:
    """What fresh worker pair ``number`` finds for ``nodeids``, with ``confirm_s`` of its own;
    a test it does not reach in time, or a pair that fails, is ``unavailable``, saying so."""
    found: dict[str, Confirmation] = {}
    try:
        with PairedWorkers(specs[0], specs[1], windows, log=log) as workers:
            began = clock()
            for nodeid in nodeids:
                late = _out_of_time(True, clock() - began, confirm_s, math.inf)
                found[nodeid] = (
                    Confirmation(
                        state="unavailable",
                        reason=f"worker pair {number}: {late}",
                        out_of_time=True,
                    )
                    if late
                    else measure(workers, nodeid)
                )
    except RooflineError as exc:
        failed = Confirmation(state="unavailable", reason=f"worker pair {number} failed: {exc}")
        for nodeid in nodeids:
            found.setdefault(nodeid, failed)
    return found
