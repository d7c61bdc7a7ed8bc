"""``pytest-roofline ab``: baseline and candidate measured in alternating rounds of one job.

Orchestration only; no pytest import (each round is a ``python -m pytest`` subprocess,
:mod:`~pytest_roofline.ab.rounds`) and no statistics of its own
(:mod:`~pytest_roofline.ab.analysis` compares, :mod:`pytest_roofline.gate.policy` decides). The
steps:

1. Resolve ``--baseline=REF`` in the git repository of the current directory and check it out
   as a detached worktree in a temporary directory (removed at the end, also on failure;
   :mod:`~pytest_roofline.ab.git`).
2. Run ``--setup=CMD`` once in each tree (a build step, or an install into a per-side venv).
3. Run ``K`` rounds in ABBA order (:func:`pytest_roofline.stats.paired.abba_order`).
4. Analyse the rounds into the run document (``run.design = "paired"``), saved in the user's
   store as one run (``design="paired"``) that keeps both sides' samples and every sample's round.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_roofline.ab.analysis import DESIGN, analyse_rounds
from pytest_roofline.ab.git import add_worktree, remove_worktree
from pytest_roofline.ab.plan import SIDES, AbOptions, make_plan, side_trees
from pytest_roofline.ab.rounds import (
    Round,
    RoundRecord,
    copy_calibrations,
    replay_prefix,
    run_round,
)
from pytest_roofline.ab.sides import resolve_python, run_setup, side_env, side_facts
from pytest_roofline.ab.stale import (
    SCRATCH_PREFIX,
    WORKTREE_NAME,
    ScratchClaim,
    prune_stale_worktrees,
)
from pytest_roofline.hardware.calibration import calibration_key
from pytest_roofline.model.document import PairedRun, PairedSide, RoundTiming, RunDocument
from pytest_roofline.stats import paired
from pytest_roofline.store import RunRecord, Store

__all__ = ["AbOutcome", "run_ab"]


@dataclass(frozen=True, slots=True)
class AbOutcome:
    """What ``run_ab`` produced: the run document and where the run was saved."""

    document: RunDocument
    run_id: int | None
    store_path: Path
    rounds: tuple[RoundRecord, ...]
    wall_s: float
    warnings: tuple[str, ...] = field(default_factory=tuple)


def run_ab(options: AbOptions, *, log: Callable[[str], None] = lambda line: None) -> AbOutcome:
    """Run ``pytest-roofline ab`` (see the module docstring); return the paired run's document.

    :param log: receives one line per step (the CLI prints them to stderr).
    :raises AbError: not a git repository, an unknown ``REF``, a failing setup or round, a
        misconfigured side; the baseline worktree is removed in every case.
    :raises RooflineError: a bad ``roofline.yaml``, an unusable store.
    """
    wall_start = time.perf_counter()
    started = time.time()
    plan = make_plan(options)
    for stale in prune_stale_worktrees(plan.toplevel):
        log(f"pytest-roofline ab: pruned a stale baseline worktree left by a killed ab: {stale}")
    # Open the user's store first: one that cannot be written fails before minutes of rounds.
    Store.open(plan.store_path, create=True).close()
    order = paired.abba_order(plan.rounds)
    user_args = list(options.pytest_args)
    log(
        f"pytest-roofline ab: baseline {options.baseline_ref} ({plan.base_commit[:12]}) against "
        f"the current tree ({plan.cand_commit[:12]}"
        f"{', with uncommitted changes' if plan.dirty else ''}); {plan.rounds} rounds (ABBA), "
        f"{plan.budget_s:g} s per test and side ({plan.per_round_s:.3g} s a round)"
    )
    warnings: list[str] = []
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as scratch_text:
        scratch = Path(scratch_text)
        # Held until the worktree is gone: another ab prunes it only once this process is dead.
        claim = ScratchClaim(scratch)
        worktree = scratch / WORKTREE_NAME
        add_worktree(plan.toplevel, plan.base_commit, worktree)
        try:
            trees = side_trees(plan, options, worktree)
            envs = {side: side_env(tree, os.environ) for side, tree in trees.items()}
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
            with Store.open(scratch / "rounds.sqlite", create=True) as scratch_store:
                copy_calibrations(plan.store_path, scratch_store, calibration_key())
            last_id = dict.fromkeys(SIDES, 0)
            for index, pair in enumerate(order):
                for position, side in enumerate(pair):
                    done = run_round(
                        plan,
                        trees,
                        envs[side],
                        index=index,
                        position=position,
                        side=side,
                        scratch=scratch,
                        user_args=user_args,
                        previous_id=last_id[side],
                    )
                    last_id[side] = done.record.run_id
                    rounds.append(done)
                    log(
                        f"round {index + 1}/{plan.rounds} {side}: {done.record.tests} tests "
                        f"in {done.record.seconds:.1f} s"
                    )
        finally:
            trouble = remove_worktree(plan.toplevel, worktree)
            claim.release()
            if trouble:
                warnings.append(trouble)
        with Store.open(scratch / "rounds.sqlite", create=False) as scratch_store:
            runs = {r.record.run_id: scratch_store.load_run(r.record.run_id) for r in rounds}
            fresh_calibration = scratch_store.get_calibration(calibration_key())

    by_side = {
        side: [runs[r.record.run_id] for r in rounds if r.record.side == side] for side in SIDES
    }
    finished = time.time()
    document, stored = analyse_rounds(
        by_side["baseline"],
        by_side["candidate"],
        gate=plan.gate,
        gate_on=options.gate_on,
        layers=plan.layers,
        label=options.label,
        baseline_label=options.baseline_ref,
        replay_command=replay_prefix(
            baseline_ref=options.baseline_ref, rounds=plan.rounds, import_root=options.import_root
        ),
        run_reasons=list(dict.fromkeys(r.reason for r in rounds if r.reason)),
        started=started,
        finished=finished,
    )
    probes = {r.record.side: r.probe for r in rounds}
    wall_s = time.perf_counter() - wall_start
    facts = PairedRun(
        baseline_ref=options.baseline_ref,
        baseline_commit=plan.base_commit,
        candidate_commit=plan.cand_commit,
        candidate_dirty=plan.dirty,
        rounds=plan.rounds,
        order=tuple("AB" if pair[0] == "baseline" else "BA" for pair in order),
        budget_s=plan.budget_s,
        budget_per_round_s=plan.per_round_s,
        setup=plan.setup,
        pytest_args=tuple(user_args),
        sides={
            side: PairedSide.from_json(side_facts(trees[side], probes.get(side, {})))
            for side in SIDES
        },
        round_seconds=tuple(
            RoundTiming(r.record.index + 1, r.record.side, r.record.seconds, r.record.returncode)
            for r in rounds
        ),
        wall_s=wall_s,
    )
    document = replace(document, run=replace(document.run, paired=facts))
    cand_record = by_side["candidate"][-1].record
    record = RunRecord(
        label=options.label,
        started=started,
        finished=finished,
        tags=cand_record.tags,
        target=cand_record.target,
        machine=cand_record.machine,
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
        # A calibration the rounds made is kept for the next run (the plugin's own cache).
        if fresh_calibration is not None and store.get_calibration(calibration_key()) is None:
            store.put_calibration(calibration_key(), fresh_calibration)
    return AbOutcome(
        document, run_id, plan.store_path, tuple(r.record for r in rounds), wall_s, tuple(warnings)
    )
