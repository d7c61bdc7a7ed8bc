"""A paired run's analysis: per-round comparisons of each test, the rest of the evidence, decisions.

No subprocess and no I/O. Each gated quantile of each test is compared round by round
(:func:`pytest_roofline.stats.paired.compare_paired`) with Benjamini-Hochberg over the run
(every comparison exists before any decision); the rest of the evidence (SLAs, quality,
revision-tag layers) comes from :func:`pytest_roofline.gate.evidence.evaluate`, with the roofline
placement re-done on the paired p50 (:func:`_paired_roofline`); the policy decides and
:func:`pytest_roofline.gate.run.analyse_run` builds the run document with ``run.design =
"paired"``. The stored run keeps both sides' samples and every sample's round (:func:`load_paired`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pytest_roofline.ab.workers import SIDES, CollectInfo, TestWindows, WindowSettings
from pytest_roofline.config.settings import DEFAULT_LAYERS, GateSettings
from pytest_roofline.errors import StoreError
from pytest_roofline.gate.confirm import (
    busy_host,
    confirmation_from,
    held_to_process_floor,
    host_disturbed_dispute,
)
from pytest_roofline.gate.evidence import (
    GATED_QUANTILES,
    BaselineEntry,
    Confirmation,
    TestEvidence,
    evaluate,
)
from pytest_roofline.gate.paired_looks import (
    paired_look_detail,
    paired_plan,
    rests_on_unsteady_pairs,
    steady_look,
    with_worker_spread,
)
from pytest_roofline.gate.policy import decide_test
from pytest_roofline.gate.record import relevant_presets, test_record
from pytest_roofline.gate.run import BaselineFacts, analyse_run, evidence_context, stored_result
from pytest_roofline.gate.worker_agreement import Agreement, worker_agreement
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.measure.canary import PairedWindow
from pytest_roofline.measure.measurement import decode_samples, encode_samples
from pytest_roofline.model.document import PairedTest, RunDocument
from pytest_roofline.model.results import TestResult
from pytest_roofline.roofline import DeclaredWork, bound_change_between, is_positive_finite
from pytest_roofline.stats import paired
from pytest_roofline.stats.paired import PairedComparison
from pytest_roofline.stats.sequential import SequentialPlan
from pytest_roofline.stats.threeway import GateMargin, gate_margin
from pytest_roofline.store import Store, StoredResult, StoredRun
from pytest_roofline.vocabulary import QUANTILES, FailOn

__all__ = [
    "DESIGN",
    "AssessedStop",
    "PairedSamples",
    "ab_plan",
    "agreed_regression",
    "agreement",
    "analyse_rounds",
    "analyse_windows",
    "load_paired",
    "paired_margin",
    "windows_confirmation",
]

DESIGN = "paired"


@dataclass(frozen=True, slots=True, eq=False)
class PairedSamples:
    """One test's samples of a stored paired run: one array per round and side."""

    nodeid: str
    baseline: tuple[np.ndarray, ...]
    candidate: tuple[np.ndarray, ...]


def paired_margin(gate: GateSettings, name: str) -> GateMargin:
    """A paired comparison's margin: the user's ``min_effect``; alternation cancels the
    run-to-run noise a two-run history floor stands for."""
    return gate_margin(gate.min_effect.get(name, 0.0), 0.0, max_margin=gate.max_margin)


def _pooled(arrays: Sequence[np.ndarray]) -> np.ndarray:
    present = [a for a in arrays if a.size]
    return np.concatenate(present) if present else np.empty(0)


def _last_payload(runs: Sequence[StoredRun], nodeid: str) -> Mapping[str, Any] | None:
    for run in reversed(runs):
        if nodeid in run.results:
            return run.results[nodeid].payload
    return None


def _batch_sizes(runs: Sequence[StoredRun], nodeid: str) -> tuple[int | None, ...]:
    return tuple(
        int(run.results[nodeid].payload["measurement"]["batch_size"])
        if nodeid in run.results
        else None
        for run in runs
    )


def _pooled_result(payload: Mapping[str, Any], samples: np.ndarray, why: str) -> TestResult:
    result = TestResult.from_dict(payload, samples_s=samples)
    measurement = result.measurement
    sample_set = replace(measurement.samples, stop_reason=why)
    return replace(result, measurement=replace(measurement, samples=sample_set))


def _paired_roofline(
    evidence: TestEvidence,
    declared: DeclaredWork | None,
    target: HardwareTarget | None,
    p50: PairedComparison | None,
) -> TestEvidence:
    """Roofline evidence that agrees with the pairing.

    :func:`gate.evidence.evaluate` places the candidate at the p50 of its pooled samples, which
    mixes rounds taken at different machine speeds: a kernel whose calls are sometimes 100 times
    slower on a busy machine (a multithreaded BLAS whose threads get descheduled) can have a
    pooled p50 on either side of that gap, and then shows a bound-class change with an
    efficiency collapse that no round supports. Here the candidate is placed at the baseline's
    p50 times the paired p50 ratio, and the efficiency ratio is the one the rounds establish:
    ``1 / lower bound`` of the paired p50 ratio (no collapse unless every plausible slowdown
    exceeds the margin). Without a usable paired p50 nothing about the class is established.
    """
    base_point, base_summary = evidence.baseline_point, evidence.baseline_summary
    if target is None or declared is None or base_point is None or base_summary is None:
        return evidence
    c = p50.comparison if p50 is not None else None
    if (
        c is None
        or c.verdict == "insufficient"
        or not is_positive_finite(c.ratio)
        or not base_summary.p50_s
    ):
        return replace(evidence, bound_change=None, efficiency_ratio=None)
    point = target.place(declared, base_summary.p50_s * c.ratio)
    low = c.ci.low
    return replace(
        evidence,
        point=point,
        bound_change=bound_change_between(base_point, point),
        efficiency_ratio=1.0 / low if is_positive_finite(low) else None,
    )


def _compare_all(
    rounds: Mapping[str, tuple[list[np.ndarray], list[np.ndarray]]],
    compared: Sequence[str],
    gate: GateSettings,
) -> dict[str, dict[str, PairedComparison]]:
    """Every gated quantile of every compared test, with BH over the whole run."""
    flat = [
        paired.compare_paired(
            *rounds[n], QUANTILES[name], delta=paired_margin(gate, name), alpha=gate.alpha
        )
        for n in compared
        for name in GATED_QUANTILES
    ]
    flat = paired.apply_bh_paired(flat, alpha=gate.alpha)
    width = len(GATED_QUANTILES)
    return {
        n: dict(zip(GATED_QUANTILES, flat[i * width : (i + 1) * width], strict=True))
        for i, n in enumerate(compared)
    }


@dataclass(frozen=True, slots=True, eq=False)
class _PairedInput:
    """One test's windows (or rounds) as the analysis uses them, whatever made them.

    ``base`` / ``cand``: one sample array per pair kept, in pair order; the payloads are each
    side's last result (declared work, quality, counters) without samples.
    """

    base: list[np.ndarray]
    cand: list[np.ndarray]
    base_payload: Mapping[str, Any] | None
    cand_payload: Mapping[str, Any] | None
    batch_size: Mapping[str, tuple[int | None, ...]]
    facts: PairedTest = field(default_factory=PairedTest)
    # Whether every pair of worker processes found the regression (``agreement``), if any.
    replication: Confirmation | None = None


@dataclass(frozen=True, slots=True)
class _SideRecord:
    """Where a side's measurements were made: revision tags, hardware target, machine."""

    tags: Mapping[str, str]
    target: Mapping[str, Any]
    machine: str


def analyse_rounds(
    base_runs: Sequence[StoredRun],
    cand_runs: Sequence[StoredRun],
    *,
    gate: GateSettings,
    gate_on: FailOn = "rollback",
    layers: Mapping[str, Sequence[str]] = DEFAULT_LAYERS,
    label: str | None = "ab",
    baseline_label: str = "baseline",
    replay_command: Callable[[str], str] = lambda nodeid: nodeid,
    run_reasons: Sequence[str] = (),
    started: float | None = None,
    finished: float | None = None,
) -> tuple[RunDocument, list[StoredResult]]:
    """Compare, decide and build the document of a paired run from whole rounds (one stored
    run per round and side, e.g. a ``pytest --roofline`` process per half-round).

    Every comparison exists before any decision, so Benjamini-Hochberg applies over the run.
    ``pytest-roofline ab`` itself measures on persistent workers and uses
    :func:`analyse_windows`.

    :param base_runs: the baseline's stored run of each round, in round order.
    :param cand_runs: the candidate's, same order and length.
    :param replay_command: the command that re-runs one test (for the memo).
    :param run_reasons: run-level problems (e.g. failing tests in a round): they escalate.
    :returns: the run document (``run.design = "paired"``) and the results to store: the
        candidate's pooled samples as each result's samples, the baseline's pooled samples and
        every round's sample counts under ``payload["paired"]``.
    """
    if len(base_runs) != len(cand_runs) or not base_runs:
        raise ValueError(
            f"analyse_rounds needs one baseline and one candidate run per round; "
            f"got {len(base_runs)} and {len(cand_runs)}"
        )
    k = len(base_runs)
    started = started if started is not None else min(r.record.started for r in base_runs)
    finished = finished if finished is not None else max(r.record.finished for r in cand_runs)
    cand_record, base_record = cand_runs[-1].record, base_runs[-1].record
    empty = np.empty(0)
    nodeids = sorted({n for run in (*base_runs, *cand_runs) for n in run.results})
    inputs = {
        n: _PairedInput(
            base=[r.results[n].samples_s if n in r.results else empty for r in base_runs],
            cand=[r.results[n].samples_s if n in r.results else empty for r in cand_runs],
            base_payload=_last_payload(base_runs, n),
            cand_payload=_last_payload(cand_runs, n),
            batch_size={
                "baseline": _batch_sizes(base_runs, n),
                "candidate": _batch_sizes(cand_runs, n),
            },
            facts=PairedTest(rounds=k),
        )
        for n in nodeids
    }
    compared = [n for n in nodeids if inputs[n].base_payload is not None and inputs[n].cand_payload]
    document, stored = _analyse(
        inputs,
        _compare_all({n: (inputs[n].base, inputs[n].cand) for n in compared}, compared, gate),
        base=_SideRecord(base_record.tags, base_record.target, base_record.machine),
        cand=_SideRecord(cand_record.tags, cand_record.target, cand_record.machine),
        gate=gate,
        gate_on=gate_on,
        layers=layers,
        label=label,
        baseline_label=baseline_label,
        replay_command=replay_command,
        run_reasons=run_reasons,
        started=started,
        finished=finished,
        stop_reason=f"paired: {k} rounds",
    )
    return replace(document, run=replace(document.run, rounds=k)), stored


class AssessedStop:
    """``should_continue`` of ``pytest-roofline ab``: more pairs while a gated quantile that the
    windows can assess is UNKNOWN, or while a regression is not yet found by every pair of
    worker processes.

    A quantile is assessed once every window so far holds its per-window sample floor
    (:func:`pytest_roofline.stats.paired.min_round_samples`: p95 20, p99 100) on both sides;
    one that is not would stay UNKNOWN (insufficient) whatever the pairs, and waiting for it
    would run every test to the maximum. p50 is always watched. The alternation stops at the
    first look where every assessed quantile is SAME, or where one is DIFFERENT, every worker
    pair agrees and it stands with the spread between them (:func:`agreement`) and on the
    window pairs the host left steady
    (:func:`pytest_roofline.gate.paired_looks.rests_on_unsteady_pairs`); a DIFFERENT that one
    worker pair does not see, or that only unsteady pairs carry, goes on (going on after a
    crossed boundary only lowers the chance of a final DIFFERENT). So does one that a busy host
    holds to the process floor (:func:`pytest_roofline.gate.confirm.held_to_process_floor`: the
    canary dropped a third or more of the pairs run, ``dropped``), which would escalate if it
    stopped: there a later look may roll it back, once its interval clears the floor or the host
    calms below a third, each look within the plan's error spending. With one pair of worker
    processes it stops once the host is busy at the cap whatever comes (nothing can roll back).
    """

    def __init__(
        self,
        margins: Mapping[str, GateMargin],
        plan: SequentialPlan,
        *,
        alpha: float,
        worker_pairs: int = 1,
    ) -> None:
        self._margins = dict(margins)
        self._plan = plan
        self._alpha = alpha
        self._worker_pairs = worker_pairs

    def assessed(
        self, base_windows: Sequence[np.ndarray], cand_windows: Sequence[np.ndarray]
    ) -> dict[str, GateMargin]:
        fewest = min((a.size for a in (*base_windows, *cand_windows)), default=0)
        return {
            name: margin
            for name, margin in self._margins.items()
            if name == "p50" or paired.min_round_samples(QUANTILES[name]) <= fewest
        }

    def __call__(
        self,
        nodeid: str,
        base_windows: Sequence[np.ndarray],
        cand_windows: Sequence[np.ndarray],
        worker_pairs: Sequence[int] = (),
        dropped: int = 0,
    ) -> bool:
        margins = self.assessed(base_windows, cand_windows)
        look = paired_look_detail(
            base_windows, cand_windows, margins, self._plan, alpha=self._alpha, final=False
        )
        outcomes = [c.comparison.outcome for c in look.values()]
        if "different" in outcomes:
            agreed = agreement(
                look,
                worker_pairs,
                self._worker_pairs,
                margins,
                plan=self._plan,
                final=False,
            )
            if not agreed.confirmed or rests_on_unsteady_pairs(
                base_windows, cand_windows, look, margins, self._plan, alpha=self._alpha
            ):
                return True
            replicated = self._worker_pairs > 1
            if not replicated and self._busy_at_any_cap(dropped):
                # One pair settles nothing on a busy host, and with this many dropped the host
                # is busy at the cap however the rest go: more pairs cannot change the outcome.
                return False
            return held_to_process_floor(
                {name: c.comparison for name, c in look.items()},
                agreed.agreed,
                pairs=len(base_windows) + dropped,
                dropped=dropped,
                replicated=replicated,
            )
        return not (outcomes and all(o == "same" for o in outcomes))

    def _busy_at_any_cap(self, dropped: int) -> bool:
        """Whether the host is busy at ``max_pairs`` kept whatever is dropped from now on:
        ``dropped / (max_pairs + dropped)`` is already a third (drops only grow)."""
        sizes = self._plan.sizes or ()
        return bool(sizes) and busy_host(sizes[-1] + dropped, dropped)


def agreement(
    look: Mapping[str, PairedComparison],
    worker_pairs: Sequence[int],
    count: int,
    margins: Mapping[str, GateMargin],
    *,
    plan: SequentialPlan,
    final: bool,
) -> Agreement:
    """:func:`~pytest_roofline.gate.worker_agreement.worker_agreement` of a look's DIFFERENT
    quantiles, each agreed one kept only if it stays DIFFERENT with the worker pairs' spread in
    its interval (:func:`~pytest_roofline.gate.paired_looks.with_worker_spread`, at the look's
    boundary: ``plan``, ``final``). With one worker pair, its pooled comparison is that pair's:
    always agreed."""
    different = [name for name, c in look.items() if c.comparison.outcome == "different"]
    if count < 2:
        return Agreement({}, {}, tuple(different))
    ratios = {name: look[name].round_ratios for name in different}
    agreed = worker_agreement(ratios, different, worker_pairs, count, margins)
    if not agreed.agreed:
        return agreed
    spread = with_worker_spread(
        look,
        worker_pairs,
        count,
        {name: margins[name] for name in agreed.agreed},
        plan,
        final=final,
    )
    return agreed.standing(
        {name: spread.describe(name) for name in agreed.agreed if not spread.stands(name)}
    )


def ab_plan(gate: GateSettings, settings: WindowSettings, tests: int) -> SequentialPlan:
    """The group-sequential plan of each comparison of an ``ab`` run of ``tests`` tests.

    As in a two-run session (:func:`pytest_roofline.gate.looks.session_plan`), tests are decided
    as they finish, so the DIFFERENT side is Bonferroni-split over every gated quantile of every
    test (``alpha / (tests x quantiles)``); SAME keeps ``alpha`` (a false SAME ships one test,
    and each has its own margin).
    """
    comparisons = max(1, tests) * len(GATED_QUANTILES)
    return paired_plan(
        settings.min_pairs,
        settings.max_pairs,
        settings.look_every,
        alpha=gate.alpha / comparisons,
        alpha_same=gate.alpha,
    )


def _look(
    test: TestWindows, margins: Mapping[str, GateMargin], plan: SequentialPlan, alpha: float
) -> dict[str, PairedComparison] | None:
    """A test's kept window pairs compared at the look its alternation stopped at (a decided
    stop keeps its look's boundary; one that ran to the maximum spends the error left), or
    ``None`` when no complete pair was kept."""
    base, cand = test.kept
    if not (base and cand):
        return None
    return paired_look_detail(base, cand, margins, plan, alpha=alpha, final=_final(test))


def _final(test: TestWindows) -> bool:
    """Whether the test's alternation ran out of pairs undecided: its last look spends the
    error left (a decided stop keeps its look's boundary)."""
    return test.stop != "decided"


def windows_confirmation(
    asked: Sequence[str],
    test: TestWindows,
    margins: Mapping[str, GateMargin],
    plan: SequentialPlan,
    *,
    alpha: float,
    command: str,
) -> Confirmation:
    """What a test's paired windows establish about the ``asked`` quantiles
    (:func:`pytest_roofline.gate.confirm.confirmation_from`), pairs dropped for a disturbed
    host left out; ``unavailable`` when a side failed or no complete pair was kept. A
    regression that does not stand on the steady pairs, or that is short of the process floor
    on a host the canary read busy (a third or more of the pairs dropped)
    (:func:`pytest_roofline.gate.confirm.host_disturbed_dispute`), is ``inconclusive``."""
    look = _look(test, margins, plan, alpha) if test.error is None else None
    if look is None:
        reason = (test.error or "no complete window pair").splitlines()[0]
        return Confirmation(state="unavailable", reason=reason, command=command)
    dropped = len(test.dropped)
    found = confirmation_from(
        asked,
        {name: c.comparison for name, c in look.items()},
        command=command,
        pairs=test.pairs,
        pairs_dropped=dropped,
        stop=test.stop,
        note=f"{dropped} of {test.pairs} pairs dropped: host disturbed" if dropped else None,
    )
    if found.state != "confirmed":
        return found
    base, cand = test.kept
    steady = steady_look(base, cand, look, margins, plan, alpha=alpha, final=_final(test))
    regressed = [n for n in asked if n in look and look[n].comparison.outcome == "different"]
    if steady is not None and not steady.stands(regressed):
        return steady.disputes(found, regressed)
    return host_disturbed_dispute(found, regressed) or found


def agreed_regression(
    test: TestWindows,
    look: Mapping[str, PairedComparison],
    count: int,
    margins: Mapping[str, GateMargin],
    command: str,
    *,
    plan: SequentialPlan,
    alpha: float,
) -> Confirmation | None:
    """A regression the pooled window pairs found (some gated quantile DIFFERENT), confirmed
    only if every one of the ``count`` worker pairs found it too, it stands with the spread
    between them in its interval (:func:`agreement`) and it still stands on the window pairs
    the host left steady
    (:func:`pytest_roofline.gate.paired_looks.steady_look`); ``None`` when nothing regressed,
    or when one worker pair measured everything and the regression stands (the pooled look
    decides).

    A worker pair that does not reach its share of the margin, or worker pairs that read apart
    beyond their window pairs' spread, leave the test ``inconclusive`` (escalated,
    ``disputed``): the processes differ, not necessarily the code. So does a
    regression that rests on unsteady pairs, or one short of the process floor on a host the
    canary read busy (a third or more of the pairs dropped)
    (:func:`pytest_roofline.gate.confirm.host_disturbed_dispute`): the host, not necessarily
    the code.
    """
    first = {name: c.comparison for name, c in look.items()}
    different = [name for name, c in first.items() if c.outcome == "different"]
    if not different:
        return None
    base, cand = test.kept
    steady = steady_look(base, cand, look, margins, plan, alpha=alpha, final=_final(test))
    unsteady = steady is not None and not steady.stands(different)
    found = confirmation_from(
        different,
        first,
        command=command,
        pairs=test.pairs,
        pairs_dropped=len(test.dropped),
        stop=test.stop,
    )
    if count < 2 and not unsteady:
        return host_disturbed_dispute(found, different, replicated=False)
    agreed = agreement(
        look,
        test.kept_worker_pairs,
        count,
        margins,
        plan=plan,
        final=_final(test),
    )
    if agreed.confirmed and steady is not None and unsteady:
        return steady.disputes(found, different)
    if agreed.confirmed:
        by_pairs = (
            f"; found by each of the {count} pairs of worker processes ({agreed.describe()})"
            if count > 1
            else ""
        )
        found = replace(found, reason=f"{found.reason}{by_pairs}")
        return host_disturbed_dispute(found, agreed.agreed, replicated=count > 1) or found
    # Where some quantile reached every pair's share, the spread between the pairs is what
    # left it open: name that (the per-pair estimates of the others are in describe() too).
    short_of = "not beyond the spread between" if agreed.spread else "not by every one of"
    nor_steady = (
        f"; nor on the steady window pairs alone ({steady.describe(different)})"
        if steady is not None and unsteady
        else ""
    )
    return replace(
        found,
        state="inconclusive",
        reason=f"{found.reason}, but {short_of} the {count} pairs of worker processes "
        f"({agreed.describe()}): the processes differ, not necessarily the code{nor_steady}",
        disputed=True,
    )


def analyse_windows(
    tests: Mapping[str, TestWindows],
    *,
    baseline: CollectInfo,
    candidate: CollectInfo,
    plan: SequentialPlan,
    gate: GateSettings,
    gate_on: FailOn = "rollback",
    layers: Mapping[str, Sequence[str]] = DEFAULT_LAYERS,
    label: str | None = "ab",
    baseline_label: str = "baseline",
    replay_command: Callable[[str], str] = lambda nodeid: nodeid,
    run_reasons: Sequence[str] = (),
    started: float,
    finished: float,
    max_pairs: int | None = None,
    worker_pairs: int = 1,
) -> tuple[RunDocument, list[StoredResult]]:
    """Compare, decide and build the document of a paired run measured on persistent workers.

    Each test's window pairs are its rounds: the pairs kept (those not dropped for a disturbed
    host, :mod:`~pytest_roofline.ab.pairs`) are compared per gated quantile at the look the
    alternation stopped at (:func:`pytest_roofline.gate.paired_looks.paired_look_detail` with
    ``plan``, :func:`ab_plan`): a test decided early keeps its look's boundary, one that ran
    to the maximum spends the error left.

    :param tests: each test's windows (:meth:`PairedWorkers.measure_test`).
    :param baseline: the baseline worker's collection (tags, target, machine).
    :param candidate: the candidate's.
    :param max_pairs: ``run.rounds`` (default: the most pairs any test ran).
    :param run_reasons: run-level problems (e.g. a test failing on one side): they escalate.
    :param worker_pairs: the pairs of worker processes that took the window pairs in turn
        (``WindowSettings.worker_pairs``); a regression rolls back only if every one of them
        finds it (:func:`agreed_regression`). 1: the one pair decides.
    :returns: as :func:`analyse_rounds`: the candidate's pooled samples as each result's
        samples, the baseline's and every kept pair's sample counts under ``payload["paired"]``
        (with ``pairs`` run, ``pairs_dropped`` and ``stop``).
    """
    inputs: dict[str, _PairedInput] = {}
    comparisons: dict[str, dict[str, PairedComparison]] = {}
    margins = {name: paired_margin(gate, name) for name in GATED_QUANTILES}
    for nodeid, test in tests.items():
        base, cand = test.kept
        gone = set(test.dropped)
        payloads = {side: [w.result for w in test.windows if w.side == side] for side in SIDES}
        batch: dict[str, tuple[int | None, ...]] = {
            side: tuple(
                w.batch_size
                for w in test.windows
                if w.side == side and w.index < test.complete_pairs and w.index not in gone
            )
            for side in SIDES
        }
        inputs[nodeid] = _PairedInput(
            base=base,
            cand=cand,
            base_payload=payloads["baseline"][-1] if payloads["baseline"] else None,
            cand_payload=payloads["candidate"][-1] if payloads["candidate"] else None,
            batch_size=batch,
            facts=PairedTest(
                rounds=len(base),
                pairs=test.pairs,
                pairs_dropped=len(test.dropped),
                stop=test.stop,
                canary=PairedWindow.counts(test.paired_canary),
                order=test.kept_order,
                worker_pair=test.kept_worker_pairs,
            ),
        )
        look = _look(test, margins, plan, gate.alpha)
        if look is not None:
            comparisons[nodeid] = look
        if look is not None and test.error is None:
            found = agreed_regression(
                test,
                look,
                worker_pairs,
                margins,
                replay_command(nodeid),
                plan=plan,
                alpha=gate.alpha,
            )
            if found is not None:
                inputs[nodeid] = replace(inputs[nodeid], replication=found)
    k = max_pairs if max_pairs is not None else max((t.pairs for t in tests.values()), default=0)
    document, stored = _analyse(
        inputs,
        comparisons,
        base=_SideRecord(baseline.tags, baseline.target, baseline.machine),
        cand=_SideRecord(candidate.tags, candidate.target, candidate.machine),
        gate=gate,
        gate_on=gate_on,
        layers=layers,
        label=label,
        baseline_label=baseline_label,
        replay_command=replay_command,
        run_reasons=run_reasons,
        started=started,
        finished=finished,
        stop_reason=None,
    )
    return replace(document, run=replace(document.run, rounds=k)), stored


def _analyse(
    inputs: Mapping[str, _PairedInput],
    comparisons: Mapping[str, Mapping[str, PairedComparison]],
    *,
    base: _SideRecord,
    cand: _SideRecord,
    gate: GateSettings,
    gate_on: FailOn,
    layers: Mapping[str, Sequence[str]],
    label: str | None,
    baseline_label: str,
    replay_command: Callable[[str], str],
    run_reasons: Sequence[str],
    started: float,
    finished: float,
    stop_reason: str | None,
) -> tuple[RunDocument, list[StoredResult]]:
    """The evidence, decisions, document and stored results from compared paired inputs."""
    target = HardwareTarget.from_dict(cand.target) if cand.target else None
    results: dict[str, TestResult] = {}
    base_results: dict[str, StoredResult] = {}
    for n, given in inputs.items():
        rounds = given.facts.rounds or 0
        why = stop_reason or (
            f"paired: {rounds} window pairs ({given.facts.stop}"
            f"{f', {given.facts.pairs_dropped} dropped' if given.facts.pairs_dropped else ''})"
        )
        if given.cand_payload is not None:
            results[n] = _pooled_result(given.cand_payload, _pooled(given.cand), why)
        if given.base_payload is not None:
            base_results[n] = StoredResult(n, given.base_payload, _pooled(given.base))
    gate = replace(gate, replay=0)
    facts = BaselineFacts(
        label=baseline_label,
        run_id=None,
        tags=base.tags,
        target=str(base.target.get("name", "")) or None,
        machine=base.machine,
        samples={n: r.samples_s for n, r in base_results.items()},
    )
    context = evidence_context(
        gate,
        family_size=max(1, len(results)),
        baseline=facts,
        tags=cand.tags,
        layers=layers,
        target=target,
        machine=cand.machine,
    )
    presets = relevant_presets(target)
    records = {}
    stored: list[StoredResult] = []
    for n, result in results.items():
        given = inputs[n]
        base_rounds, cand_rounds = given.base, given.cand
        entry = BaselineEntry.of(stored_result(base_results[n])) if n in base_results else None
        evidence = evaluate(result, entry, context, target=target)
        found = comparisons.get(n, {})
        if found:
            # The paired comparisons replace the two-run ones; drift across the pooled rounds is
            # the machine's, which the pairing cancels, so it is not held against the test.
            evidence = replace(
                evidence,
                comparisons={name: c.comparison for name, c in found.items()},
                margins={name: paired_margin(gate, name) for name in found},
                mde={
                    name: c.comparison.mde
                    for name, c in found.items()
                    if math.isfinite(c.comparison.mde)
                },
                drift=None,
                replay=None,
                design="paired",
                pairs_run=given.facts.pairs,
                pairs_dropped=given.facts.pairs_dropped or 0,
            )
            # The roofline placement follows the paired p50 whether or not p50 is gated.
            p50 = found.get("p50") or paired.compare_paired(
                base_rounds, cand_rounds, 0.5, delta=paired_margin(gate, "p50"), alpha=gate.alpha
            )
            evidence = _paired_roofline(evidence, result.measurement.declared, target, p50)
            if given.replication is not None:
                evidence = replace(evidence, confirmation=given.replication)
        counts = {
            "baseline": tuple(a.size for a in base_rounds),
            "candidate": tuple(a.size for a in cand_rounds),
        }
        record = test_record(
            result,
            evidence,
            decide_test(evidence),
            replay_command=replay_command(n),
            baseline_samples=base_results[n].samples_s if n in base_results else None,
            presets=presets,
        )
        records[n] = replace(
            record,
            paired=replace(
                given.facts,
                rounds_used={name: c.rounds_used for name, c in found.items()},
                ratios={name: c.round_ratios for name, c in found.items()},
                samples=counts,
                batch_size=given.batch_size,
            ),
        )
        payload = result.to_dict(include_samples=False)
        payload["paired"] = {
            "rounds": given.facts.rounds,
            "candidate_counts": list(counts["candidate"]),
            "baseline_counts": list(counts["baseline"]),
            "baseline_samples_f64_b64": encode_samples(_pooled(base_rounds)),
        }
        if given.facts.pairs is not None:
            payload["paired"].update(
                pairs=given.facts.pairs,
                pairs_dropped=given.facts.pairs_dropped,
                stop=given.facts.stop,
            )
        stored.append(StoredResult(n, payload, result.measurement.samples_s))

    document = analyse_run(
        results,
        records,
        baseline=facts,
        gate=gate,
        gate_on=gate_on,
        label=label,
        tags=cand.tags,
        layers=layers,
        target=target,
        machine=cand.machine,
        started=started,
        finished=finished,
        paired=True,
        run_reasons=run_reasons,
    )
    return document, stored


def load_paired(store: Store, run_id: int) -> dict[str, PairedSamples]:
    """Both sides' samples of a stored paired run, split back into rounds.

    :raises StoreError: the run is not a paired run.
    """
    run = store.load_run(run_id)
    if run.record.design != DESIGN:
        raise StoreError(
            f"{store.path}: run {run_id} is a {run.record.design!r} run, not a paired run "
            "(saved by pytest-roofline ab)"
        )
    out = {}
    for nodeid, result in run.results.items():
        info = result.payload.get("paired") or {}
        base = decode_samples(str(info.get("baseline_samples_f64_b64", "")))
        base_counts = [int(c) for c in info.get("baseline_counts") or ()]
        cand_counts = [int(c) for c in info.get("candidate_counts") or ()]
        out[nodeid] = PairedSamples(
            nodeid,
            tuple(np.split(base, np.cumsum(base_counts)[:-1])) if base_counts else (),
            tuple(np.split(result.samples_s, np.cumsum(cand_counts)[:-1])) if cand_counts else (),
        )
    return out
