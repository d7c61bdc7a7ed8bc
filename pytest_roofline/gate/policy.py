"""The decision policy: evidence → ship / rollback / escalate, with reasons. The only place a verdict is made.

Pure (no pytest, no I/O). Per test (docs/gate.md):

* **rollback** — a p50, p95 or p99 regression (DIFFERENT) that the evidence establishes: the
  host canary quiet during the test, and confirmed by paired rounds against the baseline's
  commit where that was possible (else beyond both the history noise floor and
  ``gate.max_margin``, and reproduced on replay); a confident SLA breach, a quality drift
  beyond tolerance, or an efficiency collapse with a bound-class change; attributable to at
  most one changed layer. With explicit thresholds (``--roofline-fail=p50:10%``), also a real
  change above the threshold, reproduced on replay (:mod:`pytest_roofline.gate.thresholds`).
* **escalate** — evidence that points at a regression without establishing it or without
  attributing it: an UNKNOWN quantile once sampling is done (``suspect`` or ``not detected``),
  a test too noisy to gate (its history floor above ``gate.max_margin``), a regression seen on
  a disturbed host, one that did not reproduce or that paired rounds could not settle, drift
  within the run, several changed layers, a baseline from other hardware, a precision change
  without quality evidence, an SLA that is possibly breached or cannot be assessed, missing
  counters on a test whose SLA needs them, an ambiguous bound-class change, latency drift or
  throttling onset during a soak (``--roofline-soak``: the first failing window is named).
* **ship** — p50 and every tail quantile with enough samples SAME (or improved), SLAs hold,
  nothing else points at a regression. UNKNOWN never ships; a tail quantile without enough
  samples is not assessed and counts as escape risk.

Per run: any rollback → rollback; else any escalate, a large common-mode shift, a run-level
concern, or a baseline that no test of the run matched → escalate; else ship. Every run-level
reason to escalate comes with a next step (:class:`RunConcern`): a run that escalates without a
test to review must still say what to do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_roofline import stats
from pytest_roofline.gate.confirm import busy_host
from pytest_roofline.gate.evidence import (
    MIN_COUNTER_COMPLETENESS,
    Confirmation,
    ReplayOutcome,
    TestEvidence,
)
from pytest_roofline.gate.thresholds import exceeds_threshold, threshold_reasons
from pytest_roofline.stats import CommonMode, GateMargin, QuantileComparison
from pytest_roofline.stats.threeway import NEVER_SAME_RATIO
from pytest_roofline.units import format_seconds, si
from pytest_roofline.vocabulary import DECISIONS, Decision

MEASURED_FLOOR_RUNS = 3
"""Runs a label needs before its history noise floor is this test's own (with fewer it is the
documented default). Either way an unconfirmed two-run regression rolls back only beyond
``gate.max_margin`` as well (:func:`_unattributed`)."""

__all__ = [
    "AWAITING_FRESH_REPLAY",
    "DECISIONS",
    "MEASURED_FLOOR_RUNS",
    "Decision",
    "DriftBound",
    "RunConcern",
    "RunDecision",
    "TestDecision",
    "awaits_fresh_replay",
    "decide_run",
    "decide_test",
    "drift_inside_margins",
    "first_failing_layer",
]


@dataclass(frozen=True, slots=True)
class TestDecision:
    """A test's decision with the reasons a reviewer reads first."""

    __test__ = False

    decision: Decision
    reasons: tuple[str, ...]
    symptom: str | None
    mechanism: str | None
    competing_hypotheses: tuple[str, ...]
    missing_evidence: tuple[str, ...]
    first_failing_layer: str | None
    owners: tuple[str, ...]
    rollback_boundary: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "decision": self.decision,
            "reasons": list(self.reasons),
            "symptom": self.symptom,
            "mechanism": self.mechanism,
            "competing_hypotheses": list(self.competing_hypotheses),
            "missing_evidence": list(self.missing_evidence),
            "first_failing_layer": self.first_failing_layer,
            "owner": ", ".join(self.owners) if self.owners else None,
            "owners": list(self.owners),
            "rollback_boundary": self.rollback_boundary,
        }


@dataclass(frozen=True, slots=True)
class RunConcern:
    """A run-level problem that escalates the run: what was seen, and what to do next."""

    reason: str
    next_step: str


@dataclass(frozen=True, slots=True)
class RunDecision:
    """The run's decision, why, and the next step for each run-level reason."""

    decision: Decision
    reasons: tuple[str, ...]
    next_steps: tuple[str, ...] = ()


#: The next step of a run-level reason that came without one (e.g. a failing round of a paired run).
GENERIC_NEXT_STEP = (
    "Read the run-level reason above: it concerns the run, not one test. Fix its cause "
    "(see the run's log) and run the gate again; no test result is to be reverted for it."
)


def _no_test_compared(n_tests: int, baseline_label: str | None) -> RunConcern:
    label = baseline_label or "the baseline"
    quoted = f"'{baseline_label}'" if baseline_label else "the baseline"
    if n_tests:
        seen = f"0 of {n_tests} tests were compared: none of them is in the baseline {quoted}"
    else:
        seen = f"0 tests were compared with the baseline {quoted}: no test was measured"
    return RunConcern(
        f"{seen}, so this run shows nothing about regressions (node ids must match the baseline's)",
        f"Check that this run selected the baseline's tests under the same node ids and that the "
        f"baseline label is right (`pytest-roofline runs` lists the stored runs and their labels); "
        f"to start a new baseline, save a run on the main branch: "
        f"`pytest --roofline --roofline-save={label}`.",
    )


def _common_mode_concern(
    common_mode: CommonMode, threshold: float, baseline_ref: str | None
) -> RunConcern:
    ref = baseline_ref[:12] if baseline_ref else "REF"
    where = (
        "the baseline's commit" if baseline_ref else "REF: the git revision the baseline measured"
    )
    return RunConcern(
        f"the whole run moved together by x{common_mode.factor:.3f} over {common_mode.n_tests} tests "
        f"(more than +/-{threshold:.0%}): machine speed or a shared layer changed; "
        "confirm with a paired A/B run before acting on individual tests",
        f"Measure both sides in one job, in alternating rounds: `pytest-roofline ab "
        f"--baseline={ref} -- TESTS` ({where}; TESTS: this run's test paths). If the paired "
        "run ships, the shift was the machine, not the code.",
    )


def _ci(c: QuantileComparison) -> str:
    return f"x{c.ratio:.3f} {_interval(c)}"


def first_failing_layer(layers_changed: Sequence[str]) -> str | None:
    """The first changed layer in the configured order (data before model before runtime before hardware)."""
    return layers_changed[0] if layers_changed else None


def _mechanism(e: TestEvidence) -> tuple[str | None, tuple[str, ...]]:
    parts, competing = [], []
    point, base = e.point, e.baseline_point
    if point is not None:
        bound = point.bound if base is None else f"{base.bound} -> {point.bound}"
        text = f"bound {bound}"
        if point.efficiency is not None:
            eff = (
                f"{point.efficiency:.0%}"
                if base is None or base.efficiency is None
                else f"{base.efficiency:.0%} -> {point.efficiency:.0%}"
            )
            text += f", efficiency {eff} of the attainable roof"
        parts.append(text)
        if point.data_error:
            parts.append(f"data error: {point.data_error}")
    else:
        parts.append("no roofline placement (no declared work or target)")
    if e.cpu_share is not None:
        parts.append(f"CPU share {e.cpu_share:.2f}")
        if e.cpu_share < 0.8:
            competing.append(
                f"a disturbed measurement (CPU share {e.cpu_share:.2f} < 0.8: the test waited or was descheduled)"
            )
    if e.drift is not None and e.drift.drifting:
        competing.append(
            f"machine speed drifting within the run ({e.drift.window_change:+.1%} first to last window)"
        )
    if e.common_mode != 1.0:
        parts.append(f"compared after dividing out the run's shift so far (x{e.common_mode:.3f})")
    if e.layers_changed:
        competing.append(f"changed layers: {', '.join(e.layers_changed)}")
    if e.batched:
        competing.append("samples are batched: their tails are not per-call tails")
    if e.design == "paired":
        competing.append(
            "a disturbance that hit one side's rounds more than the other's (see the per-round ratios)"
        )
    else:
        competing.append(
            "shared-machine speed change between the runs (see the run's common-mode factor)"
        )
    return "; ".join(parts), tuple(competing)


def _unknown(name: str, c: QuantileComparison, margin: GateMargin | None) -> str:
    """Why an UNKNOWN comparison escalates (it never ships silently)."""
    if margin is not None and margin.too_noisy:
        return (
            f"{name} {_ci(c)}: too noisy to gate here: the label's history noise floor "
            f"+{margin.history_floor:.0%} exceeds gate.max_margin +{margin.max_margin:.0%} "
            "(see the test's history; a paired A/B run can still gate it)"
        )
    if c.verdict == "suspect":
        return f"{name} {_ci(c)} is above the margin +{c.delta:.0%} but not established: {c.reason}"
    detectable = f"+{c.mde:.0%}" if math.isfinite(c.mde) else "unknown"
    return (
        f"{name} {_ci(c)}: UNKNOWN: a change of +{c.delta:.0%} is neither seen nor ruled out "
        f"after the sampling cap; the smallest change detectable here is {detectable}"
    )


def _host_left_open(e: TestEvidence) -> str:
    """What the host canary saw while an UNKNOWN quantile was measured, when it saw the host
    busy: the reader should know that other work on the machine, as likely as the code, kept
    the comparison open (empty when the canary saw nothing of note, or when a paired
    confirmation's reason already names the busy host).

    A paired run counts as busy when the canary dropped a third or more of the test's window
    pairs (:func:`pytest_roofline.gate.confirm.busy_host`): under the bursty neighbour of
    ``benchmarks/neighbour.py`` nearly every test does, and the pairs left are the noisier."""
    confirmation = e.confirmation
    if confirmation is not None and confirmation.disputed and confirmation.dispute == "host":
        return ""
    if e.design == "paired" and busy_host(e.pairs_run, e.pairs_dropped):
        return (
            f"; the host was busy: the host canary dropped {e.pairs_dropped} of {e.pairs_run} "
            "window pairs as disturbed, so other work on this machine, as likely as the code, "
            "left it open: run it again when the machine is quiet"
        )
    # In a paired run the dropped pairs are the canary's verdict, not one window's reading.
    if e.design != "paired" and e.host is not None and e.host.state == "disturbed":
        return (
            f"; the host was disturbed during the test ({e.host.reason}): run it again when the "
            "machine is quiet"
        )
    return ""


def _regression(
    e: TestEvidence,
    name: str,
    c: QuantileComparison,
    margin: GateMargin | None,
    rollback: list[str],
    escalate: list[str],
    notes: list[str],
    missing: list[str],
) -> None:
    """Where a DIFFERENT comparison leads: rollback only when the evidence establishes it.

    Paired rounds against the baseline's commit decide when they were made (confirmed: roll
    back; overturned: a note; inconclusive: escalate). Without them, the host canary must have
    been quiet during the test and no slower than when the baseline was recorded (else the
    slowdown may be the host's), and a two-run regression must reproduce on replay and lie
    beyond both the label's history noise floor and ``gate.max_margin`` (:func:`_unattributed`).
    """
    change = f"{format_seconds(c.base_s)} -> {format_seconds(c.cand_s)}"
    text = f"{name} regressed {_ci(c)} (margin +{c.delta:.0%}, {change})"
    host, confirmation = e.host, e.confirmation
    settle = _settle(e)
    # Paired rounds against the baseline's commit are evidence of their own, measured after
    # the first look with both sides under the same host conditions: they decide when made.
    if _settled_by_paired_rounds(e, name, c, text, rollback, escalate, notes, missing):
        return
    if confirmation is not None and confirmation.out_of_time:
        # The baseline's commit was reachable: a rollback needs the paired rounds it did not get.
        escalate.append(f"{text}, but not confirmed: {confirmation.reason}{settle}")
        missing.append("a paired confirmation against the baseline's commit")
        return
    if name != "p50" and _contended(e):
        escalate.append(
            f"{text}, but other processes used {e.other_cpu_share:.0%} of the machine's CPU "
            f"time while the test was measured ({e.involuntary_switches} involuntary context "
            "switches): its slowest calls include waits for a CPU as likely as the code's" + settle
        )
        missing.append("a tail measured without other processes competing for the CPUs")
        return
    if name != "p50" and _descheduled(e):
        escalate.append(
            f"{text}, but the test was descheduled while it was measured (CPU share "
            f"{e.cpu_share:.2f}"
            + (
                f", {e.involuntary_switches} involuntary context switches"
                if e.involuntary_switches
                else ""
            )
            + "): the slowest calls of a test that waited for a CPU are the scheduler's as "
            "likely as the code's" + settle
        )
        missing.append("a tail measured without descheduling (a quieter host, or paired rounds)")
        return
    if host is not None and host.state == "disturbed":
        escalate.append(
            f"{text}, but the host was disturbed during the test ({host.reason}): a regression "
            "measured on a disturbed host cannot be rolled back on timing" + settle
        )
        missing.append("a measurement on a quiet host")
        return
    if host is not None and host.shift and e.design == "two-run":
        escalate.append(
            f"{text}, but the host runs slower than when the baseline was recorded "
            f"({host.shift}): the change between the two runs may be the host's" + settle
        )
        missing.append("a paired confirmation against the baseline's commit")
        return
    if e.replay is not None and e.replay.attempted and not e.replay.reproduced:
        escalate.append(f"{text}, but {_not_reproduced(e.replay, name, c)}")
        return
    if e.replay is not None and not e.replay.attempted:
        escalate.append(f"{text}, not yet confirmed by a replay")
        missing.append("replay")
        return
    floor = margin.history_floor if margin is not None else 0.0
    unattributed = _unattributed(e)
    # Against a baseline run faster than its label's level, the ratio overstates the change
    # by that much: the bar is cleared against the level (never a lower bound raised by it).
    level = e.baseline_level.get(name, 1.0) if unattributed is not None else 1.0
    level = level if 0.0 < level < 1.0 else 1.0
    unconfirmed_bar = (
        _unconfirmed_bar(e, floor, margin.max_margin)
        if unattributed is not None and margin is not None
        else None
    )
    if unconfirmed_bar is not None and not c.ci.low * level >= unconfirmed_bar:
        assert unattributed is not None
        reason, need = unattributed
        against = (
            f" against the baseline run, which read x{level:.3f} of its label's median of recent "
            f"runs: x{c.ci.low * level:.3f} against that median"
            if level < 1.0
            else ""
        )
        escalate.append(
            f"{text}, but {reason}: below x{unconfirmed_bar:g} (lower bound "
            f"x{c.ci.low:.3f}{against}) a shift between the two processes is as likely as any "
            "change" + ("" if e.same_code else settle)
            # On the same commit paired rounds would compare the code with itself.
        )
        missing.append(need)
        return
    if e.design == "two-run" and not c.ci.low >= 1.0 + floor:
        escalate.append(
            f"{text}: not established beyond the label's run-to-run noise floor +{floor:.0%} "
            f"(lower bound x{c.ci.low:.3f}), and no paired confirmation was possible"
            + (f" ({confirmation.reason})" if confirmation else "")
            + settle
        )
        missing.append("a paired confirmation against the baseline's commit")
        return
    bar = unconfirmed_bar if unconfirmed_bar is not None else 1.0 + floor
    waits = _cpu_waits(e, name, c)
    if waits is not None:
        factor, host_text = waits
        if not c.ci.low * level >= bar * factor:
            escalate.append(
                f"{text}, but {host_text}: waits for a CPU can account for about x{factor:.2f} "
                f"of its calls' time, so without paired rounds a rollback needs a lower bound of "
                f"x{bar * factor:.3f} or more"
                + (
                    f" against its label's median of recent runs (lower bound x{c.ci.low * level:.3f})"
                    if level < 1.0
                    else ""
                )
                + (f" ({confirmation.reason})" if confirmation else "")
                # On the same commit paired rounds would compare the code with itself.
                + ("" if e.same_code else settle)
            )
            missing.append(
                "a p50 measured without waiting for a CPU (a quieter host, or paired rounds)"
            )
            return
    replayed = _reproduced(e.replay, name)
    # Everything so far rests on one process: a fresh one must find it again, its estimate past
    # the process bar (not the CPU waits' share of it, which were the first look's).
    fresh = _fresh_replay_problem(
        e,
        name,
        lambda f: _reads_different(e, name, f) and f.ratio * level >= bar,
        f"DIFFERENT with an estimate of x{bar:.3f} or more"
        + (" against its label's median of recent runs" if level < 1.0 else ""),
        level=level,
    )
    if fresh is not None:
        problem, need = fresh
        escalate.append(f"{text}{replayed}, but {problem}" + ("" if e.same_code else settle))
        missing.append(need)
        return
    rollback.append(
        text
        + replayed
        + _fresh_replayed(e, name)
        + (f" (no paired confirmation: {confirmation.reason})" if confirmation else "")
    )


AWAITING_FRESH_REPLAY = "a replay in a fresh process"
"""The missing evidence of a regression that would roll back once a fresh process reproduces it:
the session measures such a test again in a fresh pytest process before reporting it
(``plugin.fresh_replay``) and decides it again (:func:`awaits_fresh_replay`)."""


def awaits_fresh_replay(missing_evidence: Sequence[str]) -> bool:
    """Whether a decision waits for a replay in a fresh process (its missing evidence says so)."""
    return AWAITING_FRESH_REPLAY in missing_evidence


def _fresh_replay_problem(
    e: TestEvidence,
    name: str,
    reproduces: Callable[[QuantileComparison], bool],
    needed: str,
    *,
    level: float = 1.0,
) -> tuple[str, str] | None:
    """Why a two-run regression that one process established may not roll back yet: it must be
    found again when the test is measured in a fresh pytest process (``e.fresh_replay``), by
    ``reproduces`` (described by ``needed``): DIFFERENT, its estimate past the bar the first
    look's lower bound cleared (``level``: the baseline run over its label's median, as there),
    or past the user's explicit threshold. The estimate, not the lower bound: the first look
    established the change; the fresh process must show a change of that size, and a process
    draw rarely reaches the bar (an unchanged decode read 301-537 us in 24 fresh processes, x1.8
    at most). On the lower bound, ten demo runs escalated a real x4 GEMM whose fresh process read
    p95 x4.039 [2.715, 5.036] against the x3 bar.

    A same-process replay reproduces whatever that process drew: stops 45 and 46 rolled back
    unchanged tests at p50 x1.776 and x3.395, each "reproduced on replay", while the same tests
    read x1.8 apart between fresh processes (``docs/gate.md``).

    :returns: ``(reason, missing evidence)``, or ``None`` when no such replay is due (replays
        off, an offline comparison) or it reproduced the regression.
    """
    if not e.fresh_replay_due:
        return None
    # On the same commit paired rounds would compare the code with itself.
    need = (
        "a change of the code to attribute the slowdown to"
        if e.same_code
        else "a paired confirmation against the baseline's commit"
    )
    fresh = e.fresh_replay
    if fresh is None:
        return (
            "it is not yet measured again in a fresh process (the session does so before "
            "reporting the test)",
            AWAITING_FRESH_REPLAY,
        )
    if not fresh.made:
        return (
            f"it could not be measured again in a fresh process ({fresh.reason}), and one "
            "process's evidence cannot tell a slower process from slower code",
            need,
        )
    if fresh.host is not None:
        return (
            f"the host was disturbed while a fresh process measured it again ({fresh.host})",
            "a replay in a fresh process on a quiet host",
        )
    seen = fresh.comparisons.get(name)
    if seen is None or not math.isfinite(seen.ratio):
        return (
            f"a fresh process measured it again but could not compare {name} with the "
            "baseline, and one process's evidence cannot tell a slower process from slower code",
            need,
        )
    if reproduces(seen):
        return None
    shown = _ci(seen) + (
        f", x{seen.ratio * level:.3f} against its label's median of recent runs"
        if level < 1.0
        else ""
    )
    if seen.outcome == "unknown" and name not in fresh.corroborated:
        return (
            f"a fresh process measured it again and could not decide {name} ({name} {shown}, UNKNOWN: "
            "too few or too autocorrelated samples), and one process's evidence cannot tell a "
            "slower process from slower code",
            need,
        )
    return (
        f"it did not reproduce at that size when a fresh process measured it again ({name} "
        f"{shown}; needed: {needed}): a shift between two processes is as likely as any change",
        need,
    )


def _fresh_sla_problem(e: TestEvidence, key: str) -> tuple[str, str] | None:
    """Why a confident SLA breach may not roll back yet: an SLA is timing, and one process can
    draw a test x1.3-1.8 slower for its whole life, so the breach must be found again by a fresh
    process (``e.fresh_replay``); ``None`` when it was, or no such replay is due."""
    if not e.fresh_replay_due:
        return None
    fresh = e.fresh_replay
    if fresh is None or not fresh.made or fresh.host is not None:
        return _fresh_replay_problem(e, key, lambda _: True, "")
    seen = next((check for check in fresh.sla if check.key == key), None)
    if seen is not None and seen.status == "breach":
        return None
    return (
        "a fresh process that measured it again did not establish the breach ("
        + (seen.detail if seen is not None else f"{key} not checked")
        + "): a slower process is as likely as slower code",
        "the breach measured again in another process, or on a quiet host",
    )


def _fresh_sla_seen(e: TestEvidence, key: str) -> str:
    """``", reproduced in a fresh process (...)"`` for an SLA breach found there too."""
    fresh = e.fresh_replay
    if not e.fresh_replay_due or fresh is None:
        return ""
    seen = next((check for check in fresh.sla if check.key == key), None)
    return f", reproduced in a fresh process ({seen.detail})" if seen is not None else ""


def _reads_different(e: TestEvidence, name: str, found: QuantileComparison) -> bool:
    """A fresh replay's comparison reads DIFFERENT, or corroborates the first look's: too
    autocorrelated to decide alone, it reads DIFFERENT at the replay's level. In ten demo runs
    (stop 47) a real GEMM slowdown's fresh process read p95 x6.427 [5.567, 7.383] on samples of
    an effective size of 52, under the 59 a p95 needs (UNKNOWN); another's, p95 x7.567 [6.678,
    9.191], was not DIFFERENT either, and it escalated."""
    fresh = e.fresh_replay
    return found.outcome == "different" or (fresh is not None and name in fresh.corroborated)


def _fresh_replayed(e: TestEvidence, name: str) -> str:
    """``", reproduced in a fresh process (...)"`` where one was due and did."""
    fresh = e.fresh_replay
    seen = fresh.comparisons.get(name) if fresh is not None and e.fresh_replay_due else None
    return f", reproduced in a fresh process ({name} {_ci(seen)})" if seen is not None else ""


_WORK_UNITS = {"flops": ("FLOPs", "FLOP"), "bytes_moved": ("bytes moved", "B")}


def _work_changed(e: TestEvidence) -> str:
    """Why a test whose declared work changed since the baseline is not judged on timing.

    Seen in CI: a recalibration chose 600 MiB DRAM arrays where the baseline's had 128 MiB, and
    the example's unchanged copy test, sized from them, read x4.59 slower and reproduced on
    replay: the same code on a larger problem.
    """
    changes = ", ".join(
        f"{_WORK_UNITS[name][0]} {si(base, _WORK_UNITS[name][1])} -> "
        f"{si(cand, _WORK_UNITS[name][1])}" + (f" (x{cand / base:.2f})" if base else "")
        for name, (base, cand) in e.work_change.items()
    )
    p50 = e.comparisons.get("p50")
    seen = f"; p50 {_ci(p50)}" if p50 is not None and math.isfinite(p50.ratio) else ""
    efficiency = (
        f", x{e.efficiency_ratio:.2f} the baseline's efficiency per unit of work"
        if e.efficiency_ratio is not None
        else ""
    )
    return (
        f"the declared work of one call changed since the baseline ({changes}): the baseline "
        f"timed another workload, so its timings do not judge this code{seen}{efficiency}. If "
        "the new size is intended, save a new baseline"
    )


SAME_COMMIT_ROLLBACK_RATIO = 3.0
"""The least lower bound (x3) at which a two-run regression between two runs of the same clean
commit rolls back without paired rounds (with the label's floor and ``1 + gate.max_margin`` if
higher). Nothing in the tracked code changed, so only a change the revision tags do not record
(an environment variable, as in the demo) could be rolled back, and a shift between two
processes of the same code is the likelier cause. Stop 46: in README command 1 (the demo, a
label of one run) an unchanged attention decode read p50 x3.395 [2.066, 4.497], reproduced on
replay in the same process, and was rolled back on the x2 bar (1 of 140 unchanged test-runs in
ten demo runs); run alone in 24 fresh processes it read p50 301-537 us."""


def _unconfirmed_bar(e: TestEvidence, floor: float, max_margin: float) -> float:
    """The ratio an unconfirmed two-run regression's lower bound must reach to roll back: the
    label's floor and ``1 + gate.max_margin`` (x2 by default), and :data:`SAME_COMMIT_ROLLBACK_RATIO`
    between two runs of the same clean commit.

    >>> from types import SimpleNamespace as E
    >>> _unconfirmed_bar(E(same_code=False), 0.35, 1.0), _unconfirmed_bar(E(same_code=True), 0.35, 1.0)
    (2.0, 3.0)
    >>> _unconfirmed_bar(E(same_code=True), 2.5, 1.0)
    3.5
    """
    bar = 1.0 + max(floor, max_margin)
    return max(bar, SAME_COMMIT_ROLLBACK_RATIO) if e.same_code else bar


def _unattributed(e: TestEvidence) -> tuple[str, str] | None:
    """Why an unconfirmed two-run regression below ``gate.max_margin`` cannot be rolled back.

    A whole process runs up to 1.8x slower than the next here, and a replay in the same
    process reproduces that (``docs/gate.md``). Only paired rounds against the baseline's
    commit tell such a shift from the code; without them a two-run regression rolls back only
    past ``gate.max_margin`` (and the history floor). The label's history noise floor does not
    stand guard on its own: a few runs do not bound a process's draw, and the robust floor
    ignores a one-off slow run by design. Stop 45: with a label of 3 runs and confirmation off,
    an unchanged 17 µs GEMM read p50 x1.776 [1.585, 1.893] against a floor of +29% and
    reproduced on replay (1 of 288 A/A test-runs, ``docs/validation/aa_confirm_never_stop45.txt``).
    The caller clears that bar against the label's level where the latest run, the one compared
    with, sat below it (``TestEvidence.baseline_level``): on the x2 bar an unchanged decode still
    read p50 x4.59 [2.305, 6.781] against a latest run at x0.808 of its label's median run.
    The reason names the first that applies: the same clean commit (nothing in the tracked
    code changed, so any shift is the host's or the process's); a label of fewer than
    :data:`MEASURED_FLOOR_RUNS` runs (its floor is the documented default, not this test's own
    noise: an unchanged µs test's p95 moved x2.06 [1.76, 2.25] between two runs here, past the
    default +37%); or no paired rounds. An explicit threshold (``--roofline-fail``) exempts
    nothing here: between two runs an unchanged test's p50 moved past +10% and stayed there in
    a fresh process (8 of 240 A/A test-runs, ``docs/validation/aa_threshold_never_stop47.txt``),
    so a two-run change is attributed to the code by paired rounds or by the bar, whatever the
    threshold (:mod:`pytest_roofline.gate.thresholds`).

    :returns: ``(reason, missing evidence)``, or ``None`` when no bar beyond the floor applies
        (a paired design, whose rounds are the comparison).
    """
    if e.design != "two-run":
        return None
    if e.same_code:
        return (
            "the baseline and this run are the same commit with no uncommitted changes",
            "a change of the code to attribute the slowdown to",
        )
    if e.history_runs < MEASURED_FLOOR_RUNS:
        return (
            f"the label has {e.history_runs} run(s), fewer than {MEASURED_FLOOR_RUNS}: its "
            "noise floor for this test is the default, not measured",
            "a paired confirmation against the baseline's commit",
        )
    return _no_paired_rounds(e), "a paired confirmation against the baseline's commit"


def _no_paired_rounds(e: TestEvidence) -> str:
    """That no paired rounds compared a two-run change with the baseline's commit, and why."""
    confirmation = e.confirmation
    return "no paired rounds compared it with the baseline's commit" + (
        f" ({confirmation.reason})" if confirmation is not None and confirmation.reason else ""
    )


def _threshold_unattributed(e: TestEvidence) -> str:
    """Why a two-run change past an explicit threshold is not attributed to the code, ending
    with the command that would settle it (:func:`pytest_roofline.gate.thresholds.threshold_reasons`)."""
    if e.same_code:
        return (
            "the baseline and this run are the same commit with no uncommitted changes: the "
            "change is the host's or the process's"
        )
    confirmation = e.confirmation
    unsettled = (
        f"paired rounds against the baseline's commit did not compare it ({confirmation.reason})"
        if confirmation is not None and confirmation.state != "unavailable"
        else _no_paired_rounds(e)
    )
    return (
        f"{unsettled}: between two runs a shift of the host or the process is as likely as a "
        "change of the code at that size" + _settle(e)
    )


def _settled_by_paired_rounds(
    e: TestEvidence,
    name: str,
    c: QuantileComparison,
    text: str,
    rollback: list[str],
    escalate: list[str],
    notes: list[str],
    missing: list[str],
) -> bool:
    """Decide a first look's DIFFERENT or UNKNOWN quantile by its paired rounds, if made.

    The paired comparison of that quantile decides: DIFFERENT rolls back (confirmed), SAME rules
    the first look's change out (a note), anything else escalates, unless another quantile's
    regression stopped the rounds first (the test's regression is established; this quantile is
    noted as not decided). On the same clean commit both worktrees hold the same code in the
    same environment, so a paired DIFFERENT of any size is a difference between the two worker
    processes (or the host), not a change: it escalates. So does a regression two pairs of
    worker processes disagree on (``disputed``), whatever the second pair found. In a paired run
    (``ab``) the confirmation is that second pair's measurement of the run's own regression.

    :param c: the first look's comparison (DIFFERENT or UNKNOWN, or a SAME one paired rounds
        found DIFFERENT: :func:`_overruled_by_paired_rounds`).
    :param text: the first look, as a reason line.
    :returns: whether paired rounds were made (and the reason lines were added).
    """
    confirmation = e.confirmation
    if confirmation is None or confirmation.state == "unavailable":
        return False
    paired = confirmation.comparisons.get(name)
    seen = f"paired x{paired.ratio:.3f} {_interval(paired)}" if paired is not None else "n/a"
    outcome = paired.outcome if paired is not None else None
    if confirmation.disputed:
        escalate.append(f"{text}; {confirmation.reason}")
        missing.append(
            "a regression that stands on window pairs the host left quiet and steady"
            if confirmation.dispute == "host"
            else "a regression that both pairs of worker processes find"
        )
    elif paired is not None and outcome == "different":
        if e.same_code:
            # Both worktrees hold the same code and run in the same environment, so no size of
            # difference can be the code's: rolling back to the commit being measured undoes
            # nothing. The first look stays open for a person to look at.
            escalate.append(
                f"{text}; paired rounds find {seen}, but both sides are the same commit with no "
                "uncommitted changes: that is a difference between the two worker processes "
                "(or the host), not a change of the code"
            )
            missing.append("a change of the code to attribute the slowdown to")
        elif e.design == "paired":
            # ab's own windows found it; the reason says whether a second pair of workers did.
            rollback.append(f"{text}; {confirmation.reason}")
        else:
            rollback.append(f"{text}, confirmed by paired rounds against the baseline ({seen})")
    elif paired is not None and outcome == "same":
        settled = "(UNKNOWN) is settled" if c.outcome == "unknown" else "was not confirmed"
        why = (
            " (a label too noisy to gate on two runs is judged there against the larger of "
            "gate.min_effect and what one pair of worker processes puts unchanged code off by)"
            if c.margin_source == "cap"
            else ""
        )
        notes.append(
            f"{name}: a first look of x{c.ratio:.3f} {settled}: paired rounds against the "
            f"baseline's commit rule out +{paired.delta:.0%} ({seen}){why}"
        )
    elif confirmation.state == "confirmed":
        notes.append(
            f"{name}: not decided by the paired rounds ({seen}), which stopped once another "
            "quantile's regression was established"
        )
    else:
        escalate.append(
            f"{text}, but paired rounds against the baseline neither confirm nor rule it out "
            f"({seen}: {confirmation.reason})"
        )
        missing.append("a decisive paired comparison")
    return True


def _undisputed_paired_rounds(e: TestEvidence) -> Confirmation | None:
    """The paired rounds that settled a two-run session's first look, where they can overrule it:
    they ran (not ``unavailable``) and every pair of worker processes agreed (not ``disputed``).
    ``ab``'s own second pair (``design == "paired"``) is a replica of the run, not a
    confirmation against the baseline's commit, so it never overrules a first look."""
    confirmation = e.confirmation
    if (
        confirmation is None
        or confirmation.state == "unavailable"
        or confirmation.disputed
        or e.design == "paired"
    ):
        return None
    return confirmation


def _assessed_by_paired_rounds(
    e: TestEvidence,
    name: str,
    c: QuantileComparison,
    rollback: list[str],
    notes: list[str],
) -> bool:
    """Decide a quantile the first look could not assess (its samples too autocorrelated,
    :func:`pytest_roofline.gate.confirm.autocorrelated`) by its paired rounds, where short
    alternating windows break the correlation up. A paired DIFFERENT that every pair of worker
    processes finds rolls back, as the shifted path does (:func:`_overruled_by_paired_rounds`);
    a paired SAME is noted. Anything else leaves it as it was: a tail not assessed (escape risk),
    a p50 that could not be compared (escalated: p50 must be SAME to ship). Measured in run 14b
    (docs/gate.md): 2 of 30 p99 x3 regressions shipped with the p99 not assessed (effective
    sample size 169 and 200 < 299).

    :returns: whether the paired rounds decided it (the reason line was added).
    """
    confirmation = _undisputed_paired_rounds(e)
    if confirmation is None:
        return False
    paired = confirmation.comparisons.get(name)
    if paired is None:
        return False
    seen = f"paired x{paired.ratio:.3f} {_interval(paired)}"
    if paired.outcome == "different" and confirmation.state == "confirmed" and not e.same_code:
        rollback.append(
            f"{name} could not be assessed on two-run evidence ({c.reason}), but paired rounds "
            f"against the baseline establish a regression ({seen}): {confirmation.reason}"
        )
        return True
    if paired.outcome == "same":
        notes.append(
            f"{name} could not be assessed on two-run evidence ({c.reason}); paired rounds "
            f"against the baseline's commit rule out +{paired.delta:.0%} ({seen})"
        )
        return True
    return False


def _past_threshold_settled_by_paired_rounds(
    e: TestEvidence,
    name: str,
    c: QuantileComparison,
    rollback: list[str],
    escalate: list[str],
    notes: list[str],
    missing: list[str],
) -> bool:
    """Decide a SAME first look past the user's explicit threshold (``--roofline-fail``) by its
    paired rounds, where made. The session asks paired rounds about it and has them judge it
    against the threshold (:func:`pytest_roofline.gate.confirm.first_look_margins`), so a paired
    DIFFERENT is a change past the threshold that every pair of worker processes found: it rolls
    back, as the user asked; a paired SAME rules it out (a note); anything else escalates. Two
    runs alone never roll it back (:mod:`pytest_roofline.gate.thresholds`).

    :returns: whether paired rounds decided it (the reason lines were added).
    """
    threshold = e.fail_thresholds.get(name)
    confirmation = e.confirmation
    if (
        threshold is None
        or e.design != "two-run"
        or confirmation is None
        or name not in confirmation.comparisons
        or not exceeds_threshold(c, threshold)
    ):
        return False
    text = f"{name} {_ci(c)} is above the explicit threshold +{threshold:.0%} (--roofline-fail)"
    paired = confirmation.comparisons[name]
    seen = f"paired x{paired.ratio:.3f} {_interval(paired)}"
    if confirmation.disputed:
        # Pairs of worker processes disagreed: the comparisons are the one that did not find it,
        # which says nothing against the one that did (it escalates, naming both).
        return _settled_by_paired_rounds(e, name, c, text, rollback, escalate, notes, missing)
    if paired.outcome == "different" and not paired.ratio >= 1.0 + threshold:
        margin = e.margins.get(name)
        if (
            margin is not None
            and c.margin_source == "history"
            and c.ci.low > 1.0 + margin.min_effect
        ):
            # A shifted SAME, which paired rounds are asked about without a threshold too: the
            # gate's own rule (DIFFERENT beyond min_effect rolls back) decides it.
            return False
        # Asked only for the threshold: a change the rounds put below it is what the user allows.
        notes.append(
            f"{name}: a first look of x{c.ratio:.3f} past the explicit threshold "
            f"+{threshold:.0%}: paired rounds against the baseline's commit find {seen}, below it"
        )
        return True
    if paired.outcome != "different" and paired.ci.high < 1.0 + threshold:
        # Ruled out at the threshold, whatever the rounds' own margin made of it: a shifted SAME
        # is judged there against min_effect, and paired x1.015 [0.928, 1.051] is UNKNOWN
        # against +5% but no change past +10% (the example suite, stop 48).
        notes.append(
            f"{name}: a first look of x{c.ratio:.3f} past the explicit threshold "
            f"+{threshold:.0%} was not confirmed: paired rounds against the baseline's commit "
            f"rule it out ({seen})"
        )
        return True
    if paired.outcome == "same":
        # Judged against the process floor (a label too noisy to gate), which is wider.
        escalate.append(
            f"{text}; paired rounds against the baseline's commit rule out "
            f"+{paired.delta:.0%} ({seen}), not the threshold"
        )
        missing.append("a decisive paired comparison")
        return True
    return _settled_by_paired_rounds(e, name, c, text, rollback, escalate, notes, missing)


def _overruled_by_paired_rounds(
    e: TestEvidence,
    name: str,
    c: QuantileComparison,
    rollback: list[str],
    escalate: list[str],
    notes: list[str],
    missing: list[str],
) -> bool:
    """Roll back a SAME (or improved) first look that paired rounds find DIFFERENT.

    Paired rounds are asked about such a first look in two cases
    (:func:`pytest_roofline.gate.confirm.needs_confirmation`):

    - its interval lies beyond ``min_effect`` inside the label's wide run-to-run margin
      (``shifted_inside_margin``; run 12 of docs/gate.md: a p95 made twice as slow read x1.33
      [1.28, 1.37] against a +38% floor);
    - the baseline run measured the test on a host slowed x3 or more, against which a slower
      code reads SAME or even improved (CI, stop 45: a x4.5 GEMM read p50 x0.875 against a
      baseline slowed x14).

    When they establish the change (DIFFERENT beyond the first look's margin, in a confirmation
    every pair of worker processes agreed on: each found the same quantile DIFFERENT,
    :func:`pytest_roofline.gate.confirm.replicated`), it is the
    code's and rolls back, as a confirmed first-look regression does. Anything else leaves the
    first look as it was: paired rounds that do not establish the change are no reason to doubt
    what two runs ruled out (a disturbed baseline is escalated by :func:`_disturbed_baseline`
    unless the rounds ruled a change out).

    :returns: whether it rolled back (the reason lines were added).
    """
    confirmation = _undisputed_paired_rounds(e)
    if confirmation is None:
        return False
    paired = confirmation.comparisons.get(name)
    if paired is None or paired.outcome != "different" or e.same_code:
        return False
    if e.baseline_disturbed is not None:
        if confirmation.state != "confirmed":
            return False
        rollback.append(
            f"{name} regressed: paired rounds against the baseline's commit find "
            f"x{paired.ratio:.3f} {_interval(paired)} ({confirmation.reason}); the first look "
            f"({_ci(c)}) was against a baseline run measured on a disturbed host "
            f"({e.baseline_disturbed})"
        )
        return True
    if c.improvement:
        return False
    else:
        text = (
            f"{name} {_ci(c)} was inside the label's run-to-run margin +{c.delta:.0%} but beyond "
            f"min_effect"
        )
    return _settled_by_paired_rounds(e, name, c, text, rollback, escalate, notes, missing)


@dataclass(frozen=True, slots=True)
class DriftBound:
    """One quantile's first look as the drift rule reads it (from the evidence or the record)."""

    outcome: str | None
    verdict: str | None
    ci_high: float | None
    delta: float | None


def drift_inside_margins(window_change: float | None, quantiles: Sequence[DriftBound]) -> bool:
    """Whether a within-run drift cannot hide a regression: every assessed quantile is SAME and
    its upper bound, scaled by the drift's rise (first to last window), is still below
    ``1 + margin``. An improvement x0.25 that slows by 76% through the run (the demo, on a quiet
    host) is still far faster than the baseline at its slowest.

    >>> drift_inside_margins(0.76, [DriftBound("same", "improved", 0.3, 0.05)])
    True
    >>> drift_inside_margins(0.40, [DriftBound("same", "ok", 1.1, 0.37)])
    False
    """
    rise = max(1.0, 1.0 + (window_change or 0.0))
    assessed = [q for q in quantiles if q.verdict != "insufficient"]
    return bool(assessed) and all(
        q.outcome == "same"
        and q.ci_high is not None
        and q.delta is not None
        and math.isfinite(q.ci_high)
        and q.ci_high * rise < 1.0 + q.delta
        for q in assessed
    )


def _drift_stays_inside_margins(e: TestEvidence) -> bool:
    drift = e.drift
    if drift is None or "p50" not in e.comparisons:
        return False
    return drift_inside_margins(
        drift.window_change,
        [DriftBound(c.outcome, c.verdict, c.ci.high, c.delta) for c in e.comparisons.values()],
    )


def _disturbed_baseline(
    e: TestEvidence, escalate: list[str], notes: list[str], missing: list[str]
) -> None:
    """A test the baseline run measured while the host canary read the host disturbed ships on
    no comparison with that measurement: against a baseline slowed by the host, a slower code
    reads SAME (CI, stop 45: the demo's baseline measured a 4 ms GEMM at 19.7 ms with the GEMM
    canary at x14 and a CPU share of 0.27, and the x4.5 candidate read p50 x0.875 [0.419, 1.278],
    SAME, and shipped). Paired rounds against the baseline's commit, which measure that side
    anew, settle it when they ruled a change out: every asked quantile (each one with an
    interval) SAME, and none they compared DIFFERENT (a tail the first look had too few samples
    to ask about is compared there too). Rounds that confirmed a change rolled the test back
    (:func:`_overruled_by_paired_rounds`) unless the code is the same: that stays escalated.
    ``ab`` never gets here: its windows run without a host watch, so no entry of its is marked.
    """
    confirmation = e.confirmation
    paired = confirmation.comparisons if confirmation is not None else {}
    different = sorted(name for name, c in paired.items() if c.outcome == "different")
    if (
        confirmation is not None
        and confirmation.state == "overturned"
        and not confirmation.disputed
        and not different
    ):
        notes.append(
            f"the baseline run measured it while the host was disturbed ({e.baseline_disturbed}); "
            f"settled by {confirmation.reason}"
        )
        return
    if different and confirmation is not None:
        escalate.append(
            f"paired rounds against the baseline's commit find {', '.join(different)} DIFFERENT "
            f"({confirmation.reason}), but that does not establish a regression here"
        )
    escalate.append(
        f"the baseline run measured it while the host was disturbed ({e.baseline_disturbed}): "
        "a comparison with that measurement cannot show the code unchanged; save the baseline "
        "again on a quiet host" + _settle(e)
    )
    missing.append("a baseline measured on a quiet host")


def _slowdown_ruled_out_by_paired_rounds(e: TestEvidence) -> str | None:
    """The paired rounds' reason when they found a two-run session's p50 SAME, ruling out the
    slowdown an efficiency collapse stands for: the efficiency is the declared work over the
    first look's time, so a first look's slow draw moves the class with no change of the code
    (stop 46, a fresh clone of the README's commands: an unchanged triad read p50 x2.131, an
    efficiency x0.44 and memory -> overhead; the rounds read p50 x1.053, SAME). ``None`` when
    they did not, or were disputed; ``ab`` places the test on its paired p50 already."""
    confirmation = e.confirmation
    if e.design == "paired" or confirmation is None or confirmation.disputed:
        return None
    p50 = confirmation.comparisons.get("p50")
    if p50 is None or p50.outcome != "same":
        return None
    return f"paired p50 SAME x{p50.ratio:.3f} {_interval(p50)}"


def _drift_settled_by_paired_rounds(e: TestEvidence) -> bool:
    """Whether paired rounds against the baseline's commit found every assessed quantile SAME:
    their windows alternate, so the host's drift through the run slows both sides alike, and
    what the drift made unreliable in the first look is settled there (asked by
    :func:`pytest_roofline.gate.confirm.needs_confirmation` with ``drifting``). Drift within
    the run was in 23 of the 81 A/A escalations of runs 13a, 13c and 13d (docs/gate.md)."""
    confirmation = e.confirmation
    if (
        e.design == "paired"
        or confirmation is None
        or confirmation.state != "overturned"
        or confirmation.disputed
    ):
        return False
    assessed = [name for name, c in e.comparisons.items() if c.verdict != "insufficient"]
    paired = confirmation.comparisons
    if not assessed:
        # The first look assessed nothing (stop 45's fresh clones: a 4 ms conv drifting -16%,
        # 52 and 100 samples): what the rounds assessed decides, and it must include p50, which
        # a test needs SAME to ship.
        assessed = [name for name, c in paired.items() if c.verdict != "insufficient"]
        if "p50" not in assessed:
            return False
    return all(name in paired and paired[name].outcome == "same" for name in assessed)


DESCHEDULED_CPU_SHARE = 0.8
"""Below this share of a CPU, with the scheduler preempting the process, a test's slowest calls
include waits for a CPU: on a shared 2-vCPU runner an unchanged 80 µs test's p99 read 3.7 ms
(x26) at a CPU share of 0.51 with 63 preemptions, and reproduced on replay (the demo, under the
test suite's load)."""


def _descheduled(e: TestEvidence) -> bool:
    """Whether the test waited for a CPU while measured: a CPU share below
    :data:`DESCHEDULED_CPU_SHARE` with involuntary context switches (or with no count to tell a
    voluntary wait, such as a device sync that sleeps, from a preemption)."""
    if e.cpu_share is None or not e.cpu_share < DESCHEDULED_CPU_SHARE:
        return False
    return e.involuntary_switches is None or e.involuntary_switches > 0


CONTENDED_OTHER_SHARE = 0.25
"""From this share of the machine's CPU time used by other processes while a test was measured
(half a CPU on 2 vCPUs), with the test preempted, its unconfirmed tail regression escalates: in
the demo under the test suite's load an unchanged 62 µs test's p95 read x9.68 [2.32, 20.2] and
reproduced on replay, its own CPU share 0.92, other processes 50%, 50 preemptions, the host
canary quiet (2026-12-02). Quiet runs of the validation fixture read at most 4.4% (run 13,
252 test-trials)."""


def _contended(e: TestEvidence) -> bool:
    """Whether other processes competed for the CPUs while the test was measured: their share of
    the machine at least :data:`CONTENDED_OTHER_SHARE` and the test preempted."""
    if e.other_cpu_share is None or not e.other_cpu_share >= CONTENDED_OTHER_SHARE:
        return False
    return bool(e.involuntary_switches)


def _reproduced(replay: ReplayOutcome | None, name: str) -> str:
    """``", reproduced on replay"`` where it did, saying so when the replay's own samples were
    too autocorrelated to decide alone and only corroborated the first look."""
    if replay is None or not replay.reproduced:
        return ""
    if name in replay.autocorrelated:
        return (
            f", reproduced on replay{_replayed(replay, name)}: its samples too autocorrelated "
            "to decide alone, but its interval lies past the margin"
        )
    return ", reproduced on replay"


def _not_reproduced(replay: ReplayOutcome, name: str, c: QuantileComparison) -> str:
    """Why a replay left a first-look regression standing: it moved back, or every replay read
    as slow (past the margin) yet its own samples did not establish it, even as corroboration
    (too few samples, or an interval that reaches back to 1)."""
    ratios = [r for r in replay.ratios.get(name, ()) if math.isfinite(r)]
    if ratios and min(ratios) >= 1.0 + c.delta:
        return f"its replay, though as slow{_replayed(replay, name)}, did not establish it on its own samples"
    return f"it did not reproduce on replay{_replayed(replay, name)}"


def _replayed(replay: ReplayOutcome, name: str) -> str:
    """The replays' ratios of one quantile, for a reader to tell a replay that moved back from
    one that moved as far but could not establish it."""
    ratios = [r for r in replay.ratios.get(name, ()) if math.isfinite(r)]
    return f" (replay {name} " + ", ".join(f"x{r:.3f}" for r in ratios) + ")" if ratios else ""


WAITED_CALLS = 0.5
"""Preemptions per call from which a test's median call is taken to include a wait for a CPU
(conservatively below ln 2, where a Poisson count has its median call preempted)."""


def _cpu_waits(e: TestEvidence, name: str, c: QuantileComparison) -> tuple[float, str] | None:
    """How much of a two-run test's p50 change waits for a CPU can account for, if any.

    A preempted test loses ``1 - cpu_share`` of its sampling time to waits. Short calls mostly
    run between preemptions (an 80 µs test's p50 held at a CPU share of 0.51 while its p99 read
    x26), but once there is about a preemption per call or more the median call includes waits,
    and the p50 moves with the CPU share: in the demo under the test suite's load an unchanged
    9 ms prefill read p50 x2.24 [1.69, 2.59] at a share of 0.50 against 0.93 in the baseline run
    (111 preemptions in its window), and in CI an unchanged softmax was rolled back at p50 x2.50
    by the same load (2026-12-02). The factor is the baseline run's share over this run's (1 for
    a baseline without one): an estimate, not a bound, so it raises the bar rather than explain
    the change away. Tails have their own rule (escalate when descheduled or contended); paired
    rounds time both sides under the same conditions. Preemptions count every thread of the
    process (``ru_nivcsw``), so a multi-threaded test's rate per call reads high: conservative.

    :returns: ``(factor, what the host did)``, or ``None`` when waits cannot account for it
        (not preempted often enough per call, no CPU share or count to tell, or no lower share
        than the baseline's).
    """
    if name != "p50" or e.design != "two-run" or not (_descheduled(e) or _contended(e)):
        return None
    share, switches, window = e.cpu_share, e.involuntary_switches, e.host_wall_s
    if share is None or not 0.0 < share < 1.0 or switches is None or not window:
        return None
    per_call = switches * c.cand_s / window
    if not per_call >= WAITED_CALLS:  # NaN too
        return None
    recorded = e.baseline_cpu_share
    base = min(1.0, recorded) if recorded is not None and recorded > 0.0 else None
    if not (base or 1.0) / share > 1.0:
        return None
    figures = (
        f"CPU share {share:.2f} against "
        + (f"{base:.2f} in the baseline run" if base else "an unrecorded one in the baseline run")
        + f", {switches} involuntary context switches, about {per_call:.1f} per call"
    )
    host_text = (
        f"the test was descheduled while it was measured ({figures})"
        if _descheduled(e)
        else f"other processes used {e.other_cpu_share:.0%} of the machine's CPU time while the "
        f"test was measured ({figures})"
    )
    return (base or 1.0) / share, host_text


def _interval(c: QuantileComparison) -> str:
    low, high = c.ci.low, c.ci.high
    return f"[{low:.3f}, {high:.3f}]" if math.isfinite(low) and math.isfinite(high) else "[n/a]"


def _reads_far_past_same(c: QuantileComparison) -> bool:
    """Whether a tail left unassessed by autocorrelation still reads far slower: its samples
    reach the floor (only the effective sample size falls short), so its point estimate is a
    reading of the quantile, and at ``NEVER_SAME_RATIO`` or more it is never SAME either. Stop
    44's demo shipped a p99 that read x12 this way (every 80th call rebuilt a cache: periodic
    samples, effective size below 299). With fewer samples than the floor the top calls are no
    reading of the tail (an unchanged 16 ms parse read x3.6 on 33 samples), so that stays
    escape risk."""
    floor = stats.n_floor(c.quantile, c.alpha)
    return (
        min(c.n_base, c.n_cand) >= floor and math.isfinite(c.ratio) and c.ratio >= NEVER_SAME_RATIO
    )


def _settle(e: TestEvidence) -> str:
    """``"; settle it with <the ab command>"`` where the evidence names one."""
    confirmation = e.confirmation
    return (
        f"; settle it with {confirmation.command}" if confirmation and confirmation.command else ""
    )


def decide_test(e: TestEvidence) -> TestDecision:
    """Decide one test from its evidence."""
    rollback: list[str] = []
    escalate: list[str] = []
    notes: list[str] = []
    missing: list[str] = []

    timing_rollbacks = 0
    decided_by_rounds: set[str] = set()  # SAME first looks that paired rounds decided
    unassessed: list[str] = []  # tails too autocorrelated to assess that read x3 or more
    # A baseline that timed another workload says nothing about this code's speed: its timing
    # comparisons are reported, and none of them decides.
    timed = {} if e.work_change else e.comparisons
    if e.work_change:
        escalate.append(_work_changed(e))
        missing.append("a baseline that declared the same work")
    for name, c in timed.items():
        margin = e.margins.get(name)
        if c.outcome == "different":
            before = len(rollback)
            _regression(e, name, c, margin, rollback, escalate, notes, missing)
            timing_rollbacks += len(rollback) - before
        elif c.verdict == "insufficient":
            if _assessed_by_paired_rounds(e, name, c, rollback, notes):
                continue
            if name != "p50" and _reads_far_past_same(c):
                # After the loop: where another quantile decides the test, its reason leads.
                unassessed.append(
                    f"{name} reads x{c.ratio:.2f} {_interval(c)}, but it could not be assessed "
                    f"({c.reason}): a tail that reads x{NEVER_SAME_RATIO:g} or more never ships "
                    "unassessed" + _settle(e)
                )
                missing.append(f"{name} samples independent enough to assess it")
            elif name != "p50":
                notes.append(f"{name}: not assessed ({c.reason}): counted as escape risk")
            else:
                # The typical call must be SAME for a test to ship.
                escalate.append(f"p50 could not be compared: {c.reason}")
                missing.append("samples for the p50 comparison")
        elif c.outcome == "unknown":
            # The host is named once a test, on its first UNKNOWN.
            host = "" if any("the host was" in r for r in escalate) else _host_left_open(e)
            text = _unknown(name, c, margin) + host
            if not _settled_by_paired_rounds(e, name, c, text, rollback, escalate, notes, missing):
                confirmation = e.confirmation
                escalate.append(
                    text
                    + (
                        f" (not settled by paired rounds: {confirmation.reason})"
                        if confirmation is not None and confirmation.reason
                        else ""
                    )
                )
        elif _past_threshold_settled_by_paired_rounds(
            e, name, c, rollback, escalate, notes, missing
        ) or _overruled_by_paired_rounds(e, name, c, rollback, escalate, notes, missing):
            decided_by_rounds.add(name)
        elif c.improvement:
            notes.append(f"{name} improved {_ci(c)}")
        else:
            notes.append(f"{name} {_ci(c)}: a regression of +{c.delta:.0%} is ruled out")
    escalate.extend(unassessed)
    if e.history_drift is not None and not rollback and timed:  # slow drift across merged runs
        (escalate if e.history_drift.escalates else notes).append(e.history_drift.reason)

    # Timing measured while the host canary read the host disturbed decides no rollback.
    disturbed = e.host.reason if e.host is not None and e.host.state == "disturbed" else None
    # Explicit thresholds (--roofline-fail; pytest-benchmark's --benchmark-compare-fail) on the
    # SAME first looks paired rounds did not decide: the others are the gate's own.
    explicit = threshold_reasons(
        {
            name: c
            for name, c in timed.items()
            if c.outcome == "same" and name not in decided_by_rounds
        },
        e.fail_thresholds,
        attributed=e.design == "paired",
        unattributed=_threshold_unattributed(e),
        host_disturbed=disturbed,
    )
    rollback += explicit.rollback
    escalate += explicit.escalate
    missing += explicit.missing

    for check in e.sla:
        if check.status == "breach" and disturbed:
            # An SLA is timing too: a breach on a disturbed host (here: a triad's call at 2.7 s
            # against a 2 s max, the stream canary at x198 its level) is the host's as likely.
            escalate.append(
                f"SLA breach: {check.detail}, but the host was disturbed during the test "
                f"({disturbed}): not rolled back on timing; measure it again on a quiet host"
            )
            missing.append("an SLA measured on a quiet host")
        elif check.status == "breach":
            problem = _fresh_sla_problem(e, check.key)
            if problem is not None:
                escalate.append(f"SLA breach: {check.detail}, but {problem[0]}")
                missing.append(problem[1])
            else:
                rollback.append(f"SLA breach: {check.detail}" + _fresh_sla_seen(e, check.key))
        elif check.status == "possible breach":
            escalate.append(f"possible SLA breach: {check.detail}")
        elif check.status == "unassessable":
            escalate.append(f"SLA cannot be assessed: {check.detail}")
            missing.append(f"samples for the {check.key} SLA")

    for q in e.quality:
        if q.ok is False:
            tolerance = (
                f"tolerance {q.tolerance:g}" if q.tolerance is not None else "no tolerance set"
            )
            rollback.append(
                f"quality {q.name} worsened {q.baseline:g} -> {q.value:g} ({tolerance})"
            )
    for name in e.missing_quality:
        escalate.append(f"quality {name} was recorded in the baseline but not in this run")
        missing.append(f"quality {name}")

    if e.bound_change is not None:
        p95 = e.margins.get("p95")
        p95_margin = p95.margin if p95 is not None else 0.05
        if e.bound_change.changed:
            # Efficiencies compare only for the same declared work: a precision change (fp64 ->
            # fp32 halves the bytes and moves the roof) changes the efficiency with no change in
            # the code's speed, and is judged as a precision change below. And a test that got
            # faster has not collapsed, whatever its efficiency says.
            p50 = e.comparisons.get("p50")
            faster = p50 is not None and math.isfinite(p50.ratio) and p50.ratio <= 1.0
            collapsed = (
                e.efficiency_ratio is not None
                and e.efficiency_ratio < 1 / (1 + p95_margin)
                and not faster
                and e.precision_change is None
            )
            text = f"bound class changed {e.bound_change.base} -> {e.bound_change.cand}"
            if collapsed and timing_rollbacks:
                rollback.append(f"{text} with an efficiency collapse (x{e.efficiency_ratio:.2f})")
            elif collapsed and (ruled_out := _slowdown_ruled_out_by_paired_rounds(e)):
                notes.append(
                    f"{text} with an efficiency collapse (x{e.efficiency_ratio:.2f}) in the first "
                    "look, but paired rounds against the baseline's commit find no slowdown "
                    f"behind it ({ruled_out}): the first look's slow draw moved the class"
                )
            elif collapsed:
                # The efficiency is the declared work over the measured time: a collapse is a
                # slowdown, and rolls back only on the evidence a slowdown needs (a quiet host,
                # paired rounds, or a replay beyond the noise floor and x2). On a shared runner a
                # descheduled 2-thread GEMM runs 30-370x slower and "collapses" with no change.
                escalate.append(
                    f"{text} with an efficiency collapse (x{e.efficiency_ratio:.2f}), but the "
                    "slowdown behind it is not established by the timing evidence"
                )
                missing.append("an established slowdown behind the efficiency collapse")
            else:
                notes.append(text)
        elif e.bound_change.ambiguous and e.bound_change.base != e.bound_change.cand:
            escalate.append(
                f"bound class may have changed {e.bound_change.base} -> {e.bound_change.cand}: {e.bound_change.reason}"
            )

    if e.baseline_disturbed is not None and e.comparisons and not rollback:
        _disturbed_baseline(e, escalate, notes, missing)
    if e.drift is not None and e.drift.drifting:
        text = (
            f"latency drifts within the run (Kendall tau {e.drift.tau:.2f}, p={e.drift.p_value:.2g}, "
            f"{e.drift.window_change:+.1%} first to last window)"
        )
        # Drift makes a comparison with the baseline unreliable; with no baseline nothing is
        # compared, so a first run reports it and ships (a first run with no SLA problem is quiet).
        if not e.comparisons:
            notes.append(f"{text}; no baseline to compare, so it gates nothing")
        elif _drift_stays_inside_margins(e):
            notes.append(
                f"{text}: even the slowest level it allows stays inside every margin (each "
                "quantile's upper bound times the drift)"
            )
        elif _drift_settled_by_paired_rounds(e):
            assert e.confirmation is not None
            notes.append(
                f"{text}; settled by {e.confirmation.reason}, where the host's drift slows both "
                "sides alike"
            )
        else:
            # Say why paired rounds did not settle it (e.g. gate.confirm_time ran out first),
            # as an UNKNOWN first look does: otherwise the reader cannot tell.
            confirmation = e.confirmation
            escalate.append(
                f"{text}: the quantiles are not stable"
                + (
                    f" (not settled by paired rounds: {confirmation.reason})"
                    if confirmation is not None and confirmation.reason
                    else ""
                )
                # A drift measured while the canary saw the host busy is the host's as likely
                # as the code's: say so, as an UNKNOWN's reason does.
                + _host_left_open(e)
            )
    if e.soak is not None:
        # A soak's drift or throttling onset escalates, never rolls back: it is measured within
        # one run against its own first windows, where host speed moves too (docs/noise.md), and
        # a rollback needs an established regression against the baseline (docs/gate.md).
        if e.soak.finding is not None:
            escalate.append(e.soak.finding.reason)
            if e.soak.finding.canary_slow:
                missing.append("a soak on a quiet host")
        else:
            notes.append(e.soak.summary)
        notes.extend(e.soak.notes)
    if e.needs_counters and (
        e.counter_completeness is None or e.counter_completeness < MIN_COUNTER_COMPLETENESS
    ):
        completeness = "none" if e.counter_completeness is None else f"{e.counter_completeness:.0%}"
        escalate.append(f"counter completeness {completeness} on a test whose SLA needs counters")
        missing.append("counters")
    if e.precision_change is not None and not e.quality:
        base, cand = e.precision_change
        escalate.append(
            f"declared precision changed {base} -> {cand} without quality evidence (record_quality)"
        )
        missing.append("quality evidence for the precision change")
    if e.hardware_differs and (rollback or escalate or e.comparisons):
        escalate.append(f"baseline measured on other hardware: {e.hardware_differs}")

    if rollback and len(e.layers_changed) > 1:
        escalate.extend(rollback)
        escalate.append(
            f"{len(e.layers_changed)} layers changed since the baseline ({', '.join(e.layers_changed)}): "
            "the root cause cannot be attributed to one"
        )
        rollback = []

    decision: str = "rollback" if rollback else "escalate" if escalate else "ship"
    reasons = (
        tuple(rollback + escalate)
        if decision != "ship"
        else tuple(notes) or ("no regression seen",)
    )
    mechanism, competing = _mechanism(e)
    if decision != "ship" and not e.owners:
        reasons = (
            *reasons,
            "no owner is defined for this test (set owner= on the marker or owners: in roofline.yaml)",
        )
    if e.point is None:
        missing.append("roofline placement (declare the work and a target)")
    return TestDecision(
        decision=decision,  # type: ignore[arg-type]
        reasons=reasons,
        symptom=(rollback + escalate)[0] if decision != "ship" else None,
        mechanism=mechanism,
        competing_hypotheses=competing if decision != "ship" else (),
        missing_evidence=tuple(dict.fromkeys(missing)),
        first_failing_layer=first_failing_layer(e.layers_changed) if decision != "ship" else None,
        owners=e.owners,
        rollback_boundary=e.rollback,
    )


def decide_run(
    decisions: Mapping[str, Decision],
    *,
    common_mode: CommonMode | None,
    common_mode_threshold: float,
    run_reasons: Sequence[str | RunConcern] = (),
    compared: int | None = None,
    baseline_label: str | None = None,
    baseline_ref: str | None = None,
) -> RunDecision:
    """Any rollback → rollback; else any escalate, a large common-mode shift, a run-level concern
    or a baseline no test matched → escalate; else ship.

    :param run_reasons: run-level problems found elsewhere; a plain string gets
        :data:`GENERIC_NEXT_STEP`.
    :param compared: how many tests were compared with a baseline; ``None`` when the run has no
        baseline. Zero escalates: a comparison of nothing cannot say "no regression".
    :param baseline_label: the baseline's label, named in the next steps.
    :param baseline_ref: the git commit the baseline measured, for the paired re-run's command.
    """
    reasons = []
    rolled = sorted(n for n, d in decisions.items() if d == "rollback")
    escalated = sorted(n for n, d in decisions.items() if d == "escalate")
    if rolled:
        reasons.append(
            f"{len(rolled)} test(s) rolled back: {', '.join(rolled[:5])}{' ...' if len(rolled) > 5 else ''}"
        )
    if escalated:
        reasons.append(
            f"{len(escalated)} test(s) escalated: {', '.join(escalated[:5])}{' ...' if len(escalated) > 5 else ''}"
        )
    concerns: list[RunConcern] = []
    if compared == 0:
        concerns.append(_no_test_compared(len(decisions), baseline_label))
    large_shift = (
        common_mode is not None
        and math.isfinite(common_mode.log_factor)
        and abs(common_mode.factor - 1) > common_mode_threshold
    )
    if large_shift and common_mode is not None:
        concerns.append(_common_mode_concern(common_mode, common_mode_threshold, baseline_ref))
    concerns.extend(
        r if isinstance(r, RunConcern) else RunConcern(r, GENERIC_NEXT_STEP) for r in run_reasons
    )
    reasons.extend(c.reason for c in concerns)
    if rolled:
        decision: Decision = "rollback"
    elif escalated or concerns:
        decision = "escalate"
    else:
        decision = "ship"
        if not reasons:
            reasons.append("no regression seen and every SLA holds")
    return RunDecision(
        decision, tuple(reasons), tuple(dict.fromkeys(c.next_step for c in concerns))
    )
