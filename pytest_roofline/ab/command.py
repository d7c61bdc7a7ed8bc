"""``pytest-roofline ab``: baseline and candidate measured in alternating windows of one job.

Orchestration only; no pytest import (each side is a persistent pytest worker driven over
execnet, :mod:`~pytest_roofline.ab.workers`) and no statistics of its own
(:mod:`~pytest_roofline.ab.analysis` compares, :mod:`pytest_roofline.gate.policy` decides). The
steps:

1. Resolve ``--baseline=REF`` in the git repository of the current directory and check it out
   as a detached worktree in a temporary directory (removed at the end, also on failure;
   :mod:`~pytest_roofline.ab.git`).
2. Run ``--setup=CMD`` once in each tree (a build step, or an install into a per-side venv).
3. Start one pytest worker per tree (each collects once) and refuse a side that imported the
   other side's tree (:func:`~pytest_roofline.ab.sides.check_side`, at collection and again
   after the windows).
4. For each test both sides measure, alternate windows in ABBA order (baseline-candidate,
   candidate-baseline, ...) from ``min_pairs`` to ``max_pairs`` pairs, stopping as soon as the
   group-sequential looks decide it (:class:`~pytest_roofline.ab.analysis.AssessedStop`); pairs
   with a host-disturbed window on either side are dropped (:mod:`~pytest_roofline.ab.pairs`).
   ``--rounds=K`` is ``max_pairs`` (``min_pairs = min(4, K)``) and each window samples for
   ``--budget / K`` (a marker's ``budget=`` takes the place of ``--budget`` for its test), so a
   test that runs to the maximum spends the budget per side that ``--budget`` (or its marker)
   names. ``--worker-pairs=N`` pairs of workers (default 3) take the window pairs in turn: one
   process could run a test 10-30% off for its whole life (the heap shift of every window now
   removes most of that; memory allocated once stays each process's), so a regression rolls
   back only when every worker pair's own window pairs find it
   (:func:`~pytest_roofline.ab.analysis.agreed_regression`); else it escalates.
5. Analyse the windows into the run document (``run.design = "paired"``), saved in the user's
   store as one run (``design="paired"``) that keeps both sides' samples and every sample's pair.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_roofline.ab.analysis import (
    DESIGN,
    AssessedStop,
    ab_plan,
    analyse_windows,
    paired_margin,
)
from pytest_roofline.ab.git import add_worktree, remove_worktree
from pytest_roofline.ab.plan import SIDES, AbOptions, Plan, make_plan, side_trees
from pytest_roofline.ab.rounds import copy_calibrations, quote_args, replay_prefix
from pytest_roofline.ab.sides import (
    Tree,
    check_side,
    resolve_python,
    run_setup,
    side_env,
    side_facts,
    worker_env_defaults,
)
from pytest_roofline.ab.stale import (
    SCRATCH_PREFIX,
    WORKTREE_NAME,
    ScratchClaim,
    prune_stale_worktrees,
)
from pytest_roofline.ab.workers import (
    PairedWorkers,
    SideSpec,
    TestWindows,
    WindowSettings,
    WorkerError,
    pair_order,
    pair_orders,
    usable_cpus,
)
from pytest_roofline.errors import AbError
from pytest_roofline.gate.evidence import GATED_QUANTILES
from pytest_roofline.hardware.calibration import calibration_key
from pytest_roofline.model.document import PairedRun, PairedSide, RoundTiming, RunDocument
from pytest_roofline.stats.paired import Side
from pytest_roofline.store import RunRecord, Store

__all__ = ["MIN_PAIRS", "AbOutcome", "ab_windows", "run_ab"]

MIN_PAIRS = 4
"""Window pairs every test gets before the first look (fewer when ``--rounds`` is smaller):
two whole ABBA blocks, and three degrees of freedom for the first interval."""


@dataclass(frozen=True, slots=True)
class AbOutcome:
    """What ``run_ab`` produced: the run document, where the run was saved, each test's windows."""

    document: RunDocument
    run_id: int | None
    store_path: Path
    tests: Mapping[str, TestWindows]
    wall_s: float
    warnings: tuple[str, ...] = field(default_factory=tuple)


def ab_windows(
    rounds: int, budget_s: float, worker_pairs: int = 1, *, pin_cpus: bool = True
) -> WindowSettings:
    """The alternation of ``--rounds=K --budget=B --worker-pairs=N [--pin-cpus]``: ``K`` pairs
    at most, ``min(4, K)`` at least, a look every 2 pairs (after whole ABBA blocks), windows of
    ``B / K`` seconds, ``N`` pairs of workers taking the window pairs in turn, each pair's two
    windows held on one CPU with ``pin_cpus``.

    >>> w = ab_windows(8, 1.0, 3)
    >>> (w.min_pairs, w.max_pairs, w.look_every, w.window_s, w.worker_pairs)
    (4, 8, 2, 0.125, 3)
    """
    return WindowSettings(
        window_s=budget_s / rounds,
        min_pairs=min(MIN_PAIRS, rounds),
        max_pairs=rounds,
        look_every=2,
        worker_pairs=worker_pairs,
        pin_cpus=pin_cpus,
    )


def _check(side: Side, probe: Mapping[str, Any], trees: Mapping[Side, Tree], when: str) -> None:
    tree = trees[side]
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
        raise AbError(f"{side} side ({when}): refused: {problem}")


def _worker_failure(exc: WorkerError, trees: Mapping[Side, Tree]) -> AbError:
    hint = ""
    if "pytest_roofline" in str(exc) and "No module named" in str(exc):
        hint = (
            f"\n(every side's interpreter needs pytest-roofline: is it installed for "
            f"{trees[exc.side].python}?)"
        )
    return AbError(f"{exc}{hint}")


def _measure(
    plan: Plan,
    trees: Mapping[Side, Tree],
    envs: Mapping[Side, Mapping[str, str]],
    settings: WindowSettings,
    *,
    scratch: Path,
    user_args: tuple[str, ...],
    log: Callable[[str], None],
) -> tuple[dict[str, TestWindows], PairedWorkers, list[str]]:
    """Start every worker, check them, measure every common test; the workers are stopped."""
    specs = {}
    for side in SIDES:
        store = scratch / f"store-{side}.sqlite"
        with Store.open(store, create=True) as seed:
            copy_calibrations(plan.store_path, seed, calibration_key())
        tree = trees[side]
        specs[side] = SideSpec(
            side=side,
            python=tree.python,
            workdir=tree.workdir,
            sys_path=(tree.import_dir,),
            env=dict(envs[side]),
            pytest_args=user_args,
            store_path=store,
        )
    reasons: list[str] = []
    tests: dict[str, TestWindows] = {}
    workers = PairedWorkers(specs["baseline"], specs["candidate"], settings, log=log)
    try:
        with workers:
            for collected in workers.collected_pairs:
                for side in SIDES:
                    _check(side, collected[side].probe, trees, "at collection")
            both, only_base, only_cand, _ = workers.common_tests()
            if not both:
                raise AbError(
                    "no performance test was measured (none both sides collect uses the "
                    "roofline fixture); select performance tests with the arguments after -- "
                    f"({quote_args(user_args) or 'none'}), used in both trees"
                )
            if only_base or only_cand:
                reasons.append(
                    f"{len(only_base)} test(s) exist only in the baseline and "
                    f"{len(only_cand)} only in the candidate: they are not compared"
                )
            margins = {name: paired_margin(plan.gate, name) for name in GATED_QUANTILES}
            rule = AssessedStop(
                margins,
                ab_plan(plan.gate, settings, len(both)),
                alpha=plan.gate.alpha,
                worker_pairs=settings.worker_pairs,
            )
            budgets = workers.collected["candidate"].budgets_s
            # A marker's budget= is the test's budget per side, as --budget is: spread over
            # the most pairs it may get.
            window_s = {n: budgets.get(n, plan.budget_s) / settings.max_pairs for n in both}
            ended = 0

            def finished(nodeid: str, test: TestWindows) -> None:
                nonlocal ended
                ended += 1
                dropped = f", {len(test.dropped)} dropped (host disturbed)" if test.dropped else ""
                log(
                    f"[{ended}/{len(both)}] {nodeid}: {test.pairs} window pairs "
                    f"({test.stop}{dropped}) in {test.wall_s:.1f} s"
                )

            # The tests of each module interleaved, round by round (measure_tests).
            tests = workers.measure_tests(both, rule, window_s=window_s, finished=finished)
            for test in tests.values():
                # A test skipped on a side (a platform condition) is not compared, as in a
                # pytest run; one that fails or measures nothing on a side escalates the run.
                if test.error is not None and test.error_outcome != "skipped":
                    reasons.append(f"{test.error.splitlines()[0]}: the test is not compared")
    except WorkerError as exc:
        raise _worker_failure(exc, trees) from None
    # What the tests imported while they ran counts too (lazy imports inside a test).
    for probes in workers.final_probe_pairs:
        for side, probe in probes.items():
            _check(side, probe, trees, "after the windows")
    return tests, workers, reasons


def _held(pin_cpus: bool) -> str:
    """The log's words for ``--pin-cpus`` (nothing when off or with one CPU to use)."""
    cpus = len(usable_cpus()) if pin_cpus else 0
    return f"each window pair held on one of {cpus} CPUs in turn, " if cpus >= 2 else ""


def _worker_count(worker_pairs: int) -> str:
    """``one worker per side`` or ``3 pairs of workers taking the pairs in turn``."""
    if worker_pairs == 1:
        return "one worker per side"
    return f"{worker_pairs} workers per side taking the window pairs in turn"


def _round_seconds(tests: Mapping[str, TestWindows]) -> tuple[RoundTiming, ...]:
    """Per window pair and side, the seconds that side's windows took over every test."""
    seconds: dict[tuple[int, str], float] = {}
    for test in tests.values():
        for w in test.windows:
            seconds[(w.pair, w.side)] = seconds.get((w.pair, w.side), 0.0) + w.wall_s
    return tuple(
        RoundTiming(pair + 1, side, seconds[(pair, side)], 0)
        for pair in sorted({p for p, _ in seconds})
        for side in pair_order(pair)
        if (pair, side) in seconds
    )


def run_ab(options: AbOptions, *, log: Callable[[str], None] = lambda line: None) -> AbOutcome:
    """Run ``pytest-roofline ab`` (see the module docstring); return the paired run's document.

    :param log: receives one line per step (the CLI prints them to stderr).
    :raises AbError: not a git repository, an unknown ``REF``, a failing setup or worker, a
        misconfigured side; the baseline worktree is removed in every case.
    :raises RooflineError: a bad ``roofline.yaml``, an unusable store.
    """
    wall_start = time.perf_counter()
    started = time.time()
    plan = make_plan(options)
    for stale in prune_stale_worktrees(plan.toplevel):
        log(f"pytest-roofline ab: pruned a stale baseline worktree left by a killed ab: {stale}")
    # Open the user's store first: one that cannot be written fails before minutes of windows.
    Store.open(plan.store_path, create=True).close()
    settings = ab_windows(plan.rounds, plan.budget_s, plan.worker_pairs, pin_cpus=plan.pin_cpus)
    user_args = tuple(options.pytest_args)
    log(
        f"pytest-roofline ab: baseline {options.baseline_ref} ({plan.base_commit[:12]}) against "
        f"the current tree ({plan.cand_commit[:12]}"
        f"{', with uncommitted changes' if plan.dirty else ''}); "
        f"{_worker_count(settings.worker_pairs)}, "
        f"{_held(settings.pin_cpus)}"
        f"{settings.min_pairs}-{settings.max_pairs} window pairs per test (ABBA) of "
        f"{settings.window_s:.3g} s, up to {plan.budget_s:g} s per test and side"
    )
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as scratch_text:
        scratch = Path(scratch_text)
        # Held until the worktree is gone: another ab prunes it only once this process is dead.
        claim = ScratchClaim(scratch)
        worktree = scratch / WORKTREE_NAME
        add_worktree(plan.toplevel, plan.base_commit, worktree)
        try:
            trees = side_trees(plan, options, worktree)
            envs = {side: side_env(tree.import_dir, os.environ) for side, tree in trees.items()}
            if plan.setup:
                for side in SIDES:
                    log(f"setup ({side}): {plan.setup}")
                    run_setup(plan.setup, trees[side], envs[side])
            # Interpreters are resolved after the setup, which may have created them.
            for side, given in zip(
                SIDES, (options.baseline_python, options.candidate_python), strict=True
            ):
                python = resolve_python(given, trees[side].workdir, f"--{side}-python")
                trees[side] = replace(trees[side], python=python)
            tests, workers, run_reasons = _measure(
                plan, trees, envs, settings, scratch=scratch, user_args=user_args, log=log
            )
        finally:
            trouble = remove_worktree(plan.toplevel, worktree)
            claim.release()
            if trouble:
                warnings.append(trouble)
        fresh_calibration = None
        for side in SIDES:
            with Store.open(scratch / f"store-{side}.sqlite", create=False) as scratch_store:
                fresh_calibration = fresh_calibration or scratch_store.get_calibration(
                    calibration_key()
                )

    finished = time.time()
    collected = workers.collected
    document, stored = analyse_windows(
        tests,
        baseline=collected["baseline"],
        candidate=collected["candidate"],
        plan=ab_plan(plan.gate, settings, len(tests)),
        gate=plan.gate,
        gate_on=options.gate_on,
        layers=plan.layers,
        label=options.label,
        baseline_label=options.baseline_ref,
        replay_command=replay_prefix(
            baseline_ref=options.baseline_ref, rounds=plan.rounds, import_root=options.import_root
        ),
        run_reasons=run_reasons,
        started=started,
        finished=finished,
        max_pairs=plan.rounds,
        worker_pairs=settings.worker_pairs,
    )
    wall_s = time.perf_counter() - wall_start
    probes = {side: workers.final_probes.get(side) or collected[side].probe for side in SIDES}
    longest = max(tests.values(), key=lambda t: t.pairs, default=None)
    facts = PairedRun(
        baseline_ref=options.baseline_ref,
        baseline_commit=plan.base_commit,
        candidate_commit=plan.cand_commit,
        candidate_dirty=plan.dirty,
        rounds=plan.rounds,
        order=tuple(pair_orders(longest.windows)) if longest is not None else (),
        budget_s=plan.budget_s,
        budget_per_round_s=settings.window_s,
        setup=plan.setup,
        pytest_args=user_args,
        sides={side: PairedSide.from_json(side_facts(trees[side], probes[side])) for side in SIDES},
        round_seconds=_round_seconds(tests),
        wall_s=wall_s,
        windows={
            "window_s": settings.window_s,
            "min_pairs": settings.min_pairs,
            "max_pairs": settings.max_pairs,
            "look_every": settings.look_every,
            "layout_shift_bytes": settings.layout_shift_bytes,
            "worker_pairs": settings.worker_pairs,
            # CPUs window pairs were held on (0: none; left to the scheduler).
            "pin_cpus": len(
                {w.cpu for t in tests.values() for w in t.windows if w.cpu is not None}
            ),
        },
        pairs_dropped=sum(len(t.dropped) for t in tests.values()),
        startup_s=workers.startup_s,
        canary_s=sum(t.canary_s for t in tests.values()),
        worker_env=worker_env_defaults(os.environ),
    )
    document = replace(document, run=replace(document.run, paired=facts))
    cand = collected["candidate"]
    record = RunRecord(
        label=options.label,
        started=started,
        finished=finished,
        tags=dict(cand.tags),
        target=dict(cand.target),
        machine=cand.machine,
        design=DESIGN,
        summary={
            "tests": len(document.tests),
            "decision": document.decision,
            "rounds": plan.rounds,
            "baseline_ref": options.baseline_ref,
            "baseline_commit": plan.base_commit,
            "document": document.to_json(),
        },
    )
    run_id: int | None = None
    with Store.open(plan.store_path, create=True) as store:
        if stored:
            run_id = store.save_run(record, stored)
        else:
            warnings.append("no test was measured on the candidate side: no run was saved")
        # A calibration the workers made is kept for the next run (the plugin's own cache).
        if fresh_calibration is not None and store.get_calibration(calibration_key()) is None:
            store.put_calibration(calibration_key(), fresh_calibration)
    return AbOutcome(document, run_id, plan.store_path, tests, wall_s, tuple(warnings))
