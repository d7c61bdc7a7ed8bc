"""Whether a two-run first look can be confirmed by paired rounds, and what the rounds say.

A two-run comparison sets this run against a stored one, measured in another process, at
another time, maybe on another machine: a between-run shift of the host is indistinguishable
from a change of the code, and a same-process replay reproduces it every time. Paired rounds
against a worktree of the baseline's commit measure both sides now, here, alternating, so a
shift of the host falls on both (``docs/paired.md``). They can stand in for the baseline only
when the commit is all that differs: a tag of the data, model or runtime layers (an ``env_*``
variable, a numpy upgrade, a dataset) is not reproduced by checking out a commit, and a
baseline measured with uncommitted changes is not that commit. Tags of the hardware layer may
differ: confirming on this machine is the point.

Pure: tags and comparisons in, a reason or a :class:`~pytest_roofline.gate.evidence.Confirmation`
out; the git and worker parts live in the plugin.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Protocol

from pytest_roofline import stats
from pytest_roofline.gate.evidence import Confirmation, ConfirmationState
from pytest_roofline.gate.layers import layer_of, tag_diff

__all__ = [
    "PAIRED_PROCESS_FLOOR",
    "REPRODUCIBLE_TAGS",
    "ROLLBACK_WORKER_PAIRS",
    "FirstLook",
    "Judged",
    "autocorrelated",
    "beyond_process_floor",
    "busy_host",
    "clears_process_floor",
    "confirmation_blocker",
    "confirmation_from",
    "disturbed_note",
    "first_look_margins",
    "held_to_process_floor",
    "host_disturbed_dispute",
    "is_regression_check",
    "mostly_disturbed",
    "needs_confirmation",
    "replicated",
    "settling_order",
    "shifted_inside_margin",
]

REPRODUCIBLE_TAGS = ("git_commit", "git_dirty")
"""Tags a worktree of the baseline's commit reproduces (the candidate side is the current tree)."""
ROLLBACK_WORKER_PAIRS = 3
"""How many pairs of worker processes must each find a paired regression of a two-run session's
confirmation before it rolls back (:func:`replicated`): the first pair and two fresh ones.
(``pytest-roofline ab`` runs its pairs in turn instead, ``ab.worker_pairs``, default 3:
``gate.worker_agreement``.) Two were not enough: at 12 window
pairs a process-level bias of an unchanged elementwise test was found by both in 4 of 32 A/A
runs (``docs/paired.md``)."""
PAIRED_PROCESS_FLOOR: Mapping[str, float] = MappingProxyType(
    {"p50": 0.18, "p95": 0.22, "p99": 0.27}
)
"""How far one pair of worker processes puts unchanged code off 1, per quantile (ratio minus 1):
the 99th percentile of the first pair's paired ratio over the A/A blocks of runs 10-13
(``python benchmarks/paired_process_floor.py``: 249 p50, 194 p95 and 348 p99 comparisons; x1.179,
x1.217, x1.268). Paired rounds cancel the host's drift between runs, not the processes' own
layout (``docs/paired.md``), so this is what a label too noisy to gate on two-run evidence is
judged against there (:func:`first_look_margins`), as its history noise floor would be if it
were below the cap: the larger of it and ``min_effect``. Ruling out +22% at p95 claims less than
ruling out ``min_effect`` would, and far more than the x2 that two runs of such a label cannot
rule out."""
_HARDWARE_LAYER = "hardware"
_PAIRED_PREFIX = "paired rounds against the baseline's commit: "


def confirmation_blocker(
    baseline_tags: Mapping[str, str],
    tags: Mapping[str, str],
    layers: Mapping[str, Sequence[str]],
) -> str | None:
    """Why paired rounds against the baseline's commit cannot stand in for the baseline run.

    :returns: ``None`` when they can; otherwise the reason, naming the tag.
    """
    commit = baseline_tags.get("git_commit")
    if not commit or commit.startswith("("):
        return "the baseline run recorded no git commit"
    if baseline_tags.get("git_dirty") == "yes":
        return (
            f"the baseline run was measured with uncommitted changes on {commit[:12]}, which a "
            "worktree of that commit does not have"
        )
    differs = [
        f"{tag} ({before!r} -> {now!r})"
        for tag, (before, now) in tag_diff(baseline_tags, tags).items()
        if tag not in REPRODUCIBLE_TAGS and layer_of(tag, layers) != _HARDWARE_LAYER
    ]
    if differs:
        return (
            f"besides the code, {', '.join(differs)} changed since the baseline, and a worktree "
            "of its commit reproduces only the code"
        )
    return None


class Judged(Protocol):
    """A first look's comparison of one quantile, as measured or as recorded in the document."""

    @property
    def outcome(self) -> str | None: ...

    @property
    def verdict(self) -> str | None: ...

    @property
    def delta(self) -> float | None: ...

    @property
    def margin_source(self) -> str | None: ...


class FirstLook(Judged, Protocol):
    """A first look's comparison as recorded in the document (with its interval's lower bound
    and each side's sample count)."""

    @property
    def quantile(self) -> float | None: ...

    @property
    def ci_low(self) -> float | None: ...

    @property
    def n_base(self) -> int | None: ...

    @property
    def n_cand(self) -> int | None: ...


def autocorrelated(c: FirstLook) -> bool:
    """Whether a first look could not assess a quantile although both sides had the samples its
    floor needs (p50 5, p95 59, p99 299) and it has an interval: the samples were too
    autocorrelated (effective sample size below the floor), as a drift through the run or a
    slow periodic disturbance makes them. Short alternating windows break the correlation up,
    so paired rounds can assess it where the first look could not.

    >>> from types import SimpleNamespace as C
    >>> autocorrelated(C(verdict="insufficient", quantile=0.99, ci_low=0.8, n_base=600, n_cand=600))
    True
    >>> autocorrelated(C(verdict="insufficient", quantile=0.99, ci_low=0.8, n_base=600, n_cand=150))
    False
    """
    floor = stats.N_FLOOR.get(c.quantile) if c.quantile is not None else None
    return (
        c.verdict == "insufficient"
        and floor is not None
        and c.ci_low is not None
        and math.isfinite(c.ci_low)
        and c.n_base is not None
        and c.n_cand is not None
        and min(c.n_base, c.n_cand) >= floor
    )


def shifted_inside_margin(c: FirstLook, min_effect: float) -> bool:
    """Whether a SAME first look still establishes a change beyond ``min_effect``: its whole
    interval lies above ``1 + min_effect``, and only the label's run-to-run noise floor (a
    margin from its history) let it pass.

    Between two runs such a shift is as likely the host's or the process's as the code's, which
    is what the floor allows for; paired rounds tell them apart. Measured in run 12 of
    docs/gate.md: p95 x1.33 [1.28, 1.37] of a test whose p95 was made twice as slow shipped
    against a +38% floor.

    >>> from types import SimpleNamespace as C
    >>> shifted_inside_margin(C(outcome="same", margin_source="history", ci_low=1.28), 0.05)
    True
    >>> shifted_inside_margin(C(outcome="same", margin_source="history", ci_low=1.04), 0.05)
    False
    >>> shifted_inside_margin(C(outcome="same", margin_source="min_effect", ci_low=1.06), 0.05)
    False
    """
    return (
        c.outcome == "same"
        and c.margin_source == "history"
        and c.ci_low is not None
        and math.isfinite(c.ci_low)
        and c.ci_low > 1.0 + min_effect
    )


def needs_confirmation(
    comparisons: Mapping[str, FirstLook],
    min_effect: Mapping[str, float] | None = None,
    *,
    drifting: bool = False,
    baseline_disturbed: bool = False,
    past_threshold: Mapping[str, float] | None = None,
) -> tuple[str, ...]:
    """The quantiles paired rounds are asked to settle: those a first look found DIFFERENT
    (a regression to confirm) or UNKNOWN with an interval (too noisy between runs, or not
    established either way), and, given the gate's ``min_effect``, SAME ones whose interval
    lies beyond it inside the label's wide margin (:func:`shifted_inside_margin`). With
    ``drifting`` (latency drifts within the run beyond what the margins absorb,
    :func:`pytest_roofline.gate.policy.drift_inside_margins`), every quantile with an interval:
    a drift makes the whole first look unreliable, and paired rounds, whose alternating windows
    the host's drift slows alike, say whether it hides a regression. With ``baseline_disturbed``
    (the baseline run measured the test on a host slowed x3 or more,
    ``BaselineEntry.host_disturbed``), every quantile with an interval too: against a slowed
    baseline, SAME and "improved" say nothing (CI, stop 45: a x4.5 GEMM read p50 x0.875, SAME,
    against a baseline slowed x14), and paired rounds measure the baseline's side anew.

    UNKNOWN is a reason to measure more (Pinpoint's loop; DESIGN.md section 6): a test whose
    label is too noisy between runs to gate on two-run evidence, or whose sampling cap ran out,
    is measured again with both sides alternating, where the between-run noise cancels. A
    quantile short of samples is not asked: its windows would be short of samples too. One whose
    samples were too autocorrelated is (:func:`autocorrelated`): p50 must be SAME for the test
    to ship, and a tail the first look could not assess is escape risk that the windows can
    assess.

    ``past_threshold`` (quantile -> the user's explicit threshold, ``--roofline-fail``, for the
    quantiles whose first look is a real change past it,
    :func:`pytest_roofline.gate.thresholds.recorded_threshold_hits`): those are asked too, SAME
    or not: two runs alone do not attribute a change of that size to the code
    (:mod:`pytest_roofline.gate.thresholds`), paired rounds do.
    """
    past = past_threshold or {}
    return tuple(
        name
        for name, c in comparisons.items()
        if c.outcome == "different"
        or (
            c.verdict != "insufficient"
            and (
                c.outcome == "unknown" or ((drifting or baseline_disturbed) and c.outcome == "same")
            )
        )
        or autocorrelated(c)
        or (min_effect is not None and shifted_inside_margin(c, min_effect.get(name, 0.0)))
        or name in past
    )


def first_look_margins(
    comparisons: Mapping[str, FirstLook],
    min_effect: Mapping[str, float],
    past_threshold: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The margin each quantile that paired rounds are asked about is judged against there: the
    first look's own (``max(min_effect, history floor)``, ratio minus 1).

    Paired rounds in a two-run session answer the session's question, whether the change is
    beyond the margin the session gates this test with: a test whose two-run interval fell
    inside it ships on that, and one beyond it rolls back, so paired rounds, which are better
    evidence, are held to the same bar, not to ``min_effect`` alone. Measured on the example
    suite, 2026-12-01, with ``min_effect``: a first-look p95 of x1.44 [1.17, 1.61] on unchanged
    code met paired rounds of x1.036 [0.939, 1.082] and escalated, since +5% was not ruled out
    in 16 pairs; a +37% UNKNOWN first look whose paired p95 read x1.028 [0.899, 1.089] stayed
    UNKNOWN and spent the session's settling time on one test. A SAME first look asked because
    the run drifted keeps its margin for the same reason.

    A first look too noisy to gate (its margin is the cap, ``gate.max_margin``) gets the paired
    process floor (:data:`PAIRED_PROCESS_FLOOR`): what one pair of worker processes cannot tell
    from no change. Judged against ``min_effect`` instead, 49 of the 81 A/A escalations of runs
    13a, 13c and 13d (420 test-trials, docs/gate.md) had such a label, its paired rounds unable
    to rule out +5% (p95 x1.026 [0.963, 1.056]), while a label just under the cap shipped on
    ruling out +99%. A SAME first look
    asked because its interval lies beyond ``min_effect`` (:func:`shifted_inside_margin`) gets
    no margin: paired rounds judge it against ``min_effect``, as the session's margin is already
    ruled out and the question is whether the shift is beyond ``min_effect``. Held to the
    session's margin, paired rounds stopped at their first look on SAME (p50 x1.25 [0.46, 1.33]
    against +95%, four pairs) and never reached DIFFERENT.

    A quantile past the user's explicit threshold (``past_threshold``, as in
    :func:`needs_confirmation`) is judged against the smaller of that margin and the threshold:
    the user asked for a rollback above it, and paired rounds are what attribute the change to
    the code (:mod:`pytest_roofline.gate.thresholds`); a shifted SAME past it too (its rounds
    stop once they rule out the threshold, which is all the session asks of them then: they
    still call DIFFERENT beyond ``min_effect``). A label too noisy to gate keeps the process
    floor: below it one pair of worker processes cannot tell a threshold's change from its own
    draw.

    >>> from types import SimpleNamespace as C
    >>> same = C(delta=0.37, verdict="different", outcome="same", margin_source="history", ci_low=1.02)
    >>> first_look_margins({"p50": same}, {"p50": 0.05}, {"p50": 0.10})
    {'p50': 0.1}
    """
    past = past_threshold or {}
    out: dict[str, float] = {}
    for name, c in comparisons.items():
        if c.delta is None or not math.isfinite(c.delta):
            continue
        if c.verdict == "insufficient" and not autocorrelated(c):
            continue
        if c.margin_source == "cap":
            out[name] = PAIRED_PROCESS_FLOOR.get(name, 0.0)
        elif c.margin_source in ("history", "min_effect"):
            shifted = shifted_inside_margin(c, min_effect.get(name, 0.0))
            margin = (
                past.get(name, math.inf)
                if shifted
                else min(float(c.delta), past.get(name, math.inf))
            )
            if math.isfinite(margin):
                out[name] = margin
    return out


def settling_order(first_looks: Mapping[str, str | None]) -> list[str]:
    """Node ids of pending tests that are not regression checks, in the order paired rounds
    settle them: those whose first look escalates unless settled (UNKNOWN, a drift, a p50 that
    could not be compared) before those that ship as they are (a shifted SAME, a tail not
    assessed), each group in run order, in case the settling time runs out.

    :param first_looks: node id -> its first-look decision (before paired rounds), in run order.

    >>> settling_order({"a": "ship", "b": "escalate", "c": None, "d": "escalate"})
    ['b', 'd', 'a', 'c']
    """
    return sorted(first_looks, key=lambda n: first_looks[n] != "escalate")


def is_regression_check(comparisons: Mapping[str, Judged]) -> bool:
    """Whether a test's pending confirmation checks a first-look regression (any quantile
    DIFFERENT) rather than only settling UNKNOWN ones: regressions are confirmed first, and
    each kind is bounded by ``gate.confirm_time``."""
    return any(c.outcome == "different" for c in comparisons.values())


def confirmation_from(
    asked: Iterable[str],
    paired: Mapping[str, stats.QuantileComparison],
    *,
    command: str,
    pairs: int | None = None,
    pairs_dropped: int | None = None,
    stop: str | None = None,
    note: str | None = None,
) -> Confirmation:
    """What paired rounds established about the quantiles a first look asked them to settle.

    ``confirmed`` when any of them is DIFFERENT in the paired comparison too; ``overturned``
    when every one of them is SAME there (the change of the first look is ruled out);
    ``inconclusive`` otherwise (UNKNOWN, too few samples, or not compared).

    :param note: why the rounds may be weaker than usual (e.g. pairs dropped for a disturbed host).
    """
    asked = tuple(asked)
    outcomes = {name: paired[name].outcome if name in paired else None for name in asked}
    state: ConfirmationState
    if any(outcome == "different" for outcome in outcomes.values()):
        state = "confirmed"
    elif asked and all(outcome == "same" for outcome in outcomes.values()):
        state = "overturned"
    else:
        state = "inconclusive"
    seen = ", ".join(
        f"{name} {outcome.upper() if outcome else 'not compared'}{_figures(paired.get(name))}"
        for name, outcome in outcomes.items()
    )
    reason = f"{_PAIRED_PREFIX}{seen or 'nothing to settle'}"
    if note:
        reason += f" ({note})"
    return Confirmation(
        state=state,
        reason=reason,
        comparisons=dict(paired),
        command=command,
        pairs=pairs,
        pairs_dropped=pairs_dropped,
        stop=stop,
    )


def _figures(c: stats.QuantileComparison | None) -> str:
    """`` x1.480 [1.302, 1.620]`` for a comparison with an interval, else nothing."""
    if c is None or not (math.isfinite(c.ratio) and math.isfinite(c.ci.low)):
        return ""
    return f" x{c.ratio:.3f} [{c.ci.low:.3f}, {c.ci.high:.3f}]"


def replicated(first: Confirmation, *again: Confirmation, start: int = 2) -> Confirmation:
    """A confirmation that rests on several pairs of worker processes, not one.

    One pair of workers is one process per side, and a process carries a "personality" of its
    own (where its arrays landed): measured here, an unchanged elementwise test ran 10-30% off
    in one side's process for its whole life in about half of A/A runs, and at 12 window pairs
    a second fresh pair agreed with the first in 4 of 32 runs (``docs/paired.md``, "Where a
    process's arrays land"). The workers now shift the heap before every window
    (``plugin.ab_worker.layout_shift``), which draws that layout again per window for what a
    test allocates inside it; memory allocated once is still each process's own. So a
    regression the first pair of workers confirms is measured again by fresh pairs, ``again``
    in order (the second pair, the third, ...), and stays confirmed only while every one of
    them finds it too; the first that does not (or could not
    measure it) makes the test ``inconclusive`` (escalated), the reason naming what each found.
    "Finds it" means the same quantile: a later pair that finds only another quantile DIFFERENT
    (the first pair's p50, its own p99) disagrees, as each pair's process draw may shift any of
    three quantiles; a quantile the first pair found and a later one did not is left to what the
    later one read, so the regression stands on the quantiles every pair found.
    Anything the first pair did not confirm is returned as it is, and later pairs are ignored
    once one disagreed.

    :param start: the number of ``again``'s first pair (3 when ``first`` is already what two
        pairs found), for the reasons' wording.
    """
    result = first
    for number, second in enumerate(again, start=start):
        result = _one_more_pair(result, second, number)
    return result


def beyond_process_floor(
    comparisons: Mapping[str, stats.QuantileComparison], names: Sequence[str]
) -> str | None:
    """The first of ``names`` DIFFERENT in ``comparisons`` with its interval's lower bound beyond
    :data:`PAIRED_PROCESS_FLOOR` (past anything one pair of processes put unchanged code off
    by), or ``None``."""
    for name in names:
        c = comparisons.get(name)
        floor = PAIRED_PROCESS_FLOOR.get(name)
        if (
            c is not None
            and floor is not None
            and c.outcome == "different"
            and c.ci.low > 1.0 + floor
        ):
            return name
    return None


def clears_process_floor(first: Confirmation) -> Confirmation | None:
    """``first`` (one pair of workers' confirmation of a two-run first look) settled without
    further pairs, when a quantile DIFFERENT in its paired rounds has its interval wholly beyond
    :data:`PAIRED_PROCESS_FLOOR` and the host canary left at least half of its window pairs;
    else ``None`` (:func:`replicated` asks fresh pairs).

    Further pairs guard against one pair's processes, whose layout puts unchanged code off by
    up to the floor (99% of first pairs on unchanged code); a lower bound beyond it is past
    anything a layout did there. A rollback then rests on that pair's paired interval (and, for
    a first-look regression, on the two-run first look too). Measured on the stored validation
    runs (``docs/gate.md``, "Unless the first pair's interval is beyond any process draw"): of
    the first pairs that measured unchanged tests in 1,170 A/A test-trials (runs 10-14c, about
    70% of them asked of paired rounds, for a first-look regression, an UNKNOWN, shifted or
    drifting first look), none had a DIFFERENT
    quantile's lower bound beyond the floor, and none in run 15b's 150; while 5 of the 7 tail
    regressions that a later pair left escalated in run 14d had. ``ab`` keeps asking fresh
    pairs: it measures every test, not those a first look picked, and the A/A evidence for this
    shortcut comes from two-run sessions.
    """
    if first.state != "confirmed" or first.disputed:
        return None
    if mostly_disturbed(first.pairs, first.pairs_dropped):
        return None
    name = beyond_process_floor(first.comparisons, tuple(first.comparisons))
    if name is not None:
        c = first.comparisons[name]
        floor = PAIRED_PROCESS_FLOOR[name]
        return replace(
            first,
            reason=f"{first.reason}; no further pair of worker processes is needed: the {name} "
            f"interval's lower bound x{c.ci.low:.3f} is beyond x{1.0 + floor:.2f}, what one pair "
            "of processes puts unchanged code off by",
        )
    return None


def mostly_disturbed(pairs: int | None, dropped: int | None) -> bool:
    """Whether the host canary dropped at least half of the ``pairs`` window pairs run.

    The process floor is what worker *processes* put unchanged code off by on a host the canary
    reads quiet; it says nothing about the few pairs left when the host was disturbed through
    most of the rounds. Seen on 2026-12-03, the example compared with itself beside the test
    suite's own load: one pair kept 5 of 24 window pairs and read an unchanged decode's p95
    x6.02 [2.54, 6.51], past the floor, and it was rolled back. The quiet tails validation of
    that day dropped at most 38% of a first pair's window pairs (run 19a, 83 settled by the floor).
    """
    return bool(pairs and dropped and 2 * dropped >= pairs)


def host_disturbed_dispute(
    found: Confirmation, regressed: Sequence[str], *, replicated: bool = True
) -> Confirmation | None:
    """``found`` (paired rounds' regression of ``regressed``) left ``inconclusive`` when the
    host canary dropped a third or more of its window pairs as disturbed (:func:`busy_host`),
    unless a quantile of ``regressed`` has its interval wholly beyond
    :data:`PAIRED_PROCESS_FLOOR` and ``replicated``; ``None`` when the regression stands as found.

    On such a host the pairs kept are the ones the canary's drops could not replace, and a
    disturbance inside a window goes unseen. Seen on 2026-12-05 (stop 39) under the bursty
    neighbour: an unchanged pure-Python loop kept 24 of 48 window pairs, read p50 x1.059
    [1.001, 1.091], all three worker pairs found it (x1.088, x1.035, x1.058), and it was rolled
    back; in the next block another kept 24 of 41 and read p50 x1.070 [1.002, 1.107]
    (``benchmarks/disturbed_host_replay.py`` on those blocks' stored runs). A change past
    the floor (x1.18 at p50: what one pair of worker processes puts unchanged code off by) still
    rolls back, so a gross slowdown is not left to an escalation there; but the floor alone is
    no proof on such a host (on 2026-12-03 a single pair that kept 5 of 24 window pairs read an
    unchanged decode's p95 x6.02 [2.54, 6.51]), so it counts only for quantiles every pair of
    worker processes found.

    :param regressed: the quantiles to judge: in ``ab``, those every worker pair agreed on
        (:func:`pytest_roofline.ab.analysis.agreed_regression`); in a two-run confirmation, the
        pair's DIFFERENT ones (fresh pairs must find it afterwards: :func:`replicated`, and
        :func:`clears_process_floor` does not settle a mostly disturbed first pair alone).
    :param replicated: whether more than one pair of worker processes measured it, or will;
        ``False`` (``ab --worker-pairs 1``): nothing rolls back on such a host.
    """
    if found.state != "confirmed" or not held_to_process_floor(
        found.comparisons,
        regressed,
        pairs=found.pairs,
        dropped=found.pairs_dropped,
        replicated=replicated,
    ):
        return None
    floors = ", ".join(
        f"x{1.0 + PAIRED_PROCESS_FLOOR[name]:.2f} at {name}"
        for name in regressed
        if name in PAIRED_PROCESS_FLOOR
    )
    where = (
        f"where only a change whose interval clears {floors or 'the process floor'}, found by "
        "every pair of worker processes, rolls back"
        if replicated
        else "where one pair of worker processes settles no regression"
    )
    return replace(
        found,
        state="inconclusive",
        reason=f"{found.reason}, but on a busy host (the canary dropped {found.pairs_dropped} of "
        f"{found.pairs} window pairs as disturbed), {where}: the host, not "
        "necessarily the code; measure it again on a quiet host",
        disputed=True,
        dispute="host",
    )


def held_to_process_floor(
    comparisons: Mapping[str, stats.QuantileComparison],
    regressed: Sequence[str],
    *,
    pairs: int | None,
    dropped: int | None,
    replicated: bool,
) -> bool:
    """Whether a regression of ``regressed`` is held back by a busy host: the canary dropped a
    third or more of the ``pairs`` window pairs run (:func:`busy_host`) and no quantile of
    ``regressed`` is :func:`beyond_process_floor` (or, not ``replicated``, nothing counts).

    The one test behind both the decision (:func:`host_disturbed_dispute` leaves such a
    regression ``inconclusive``) and the stop rules, which measure on while it holds
    (:class:`pytest_roofline.gate.paired_looks.PairedStop`,
    :class:`pytest_roofline.ab.analysis.AssessedStop`): stopping at the first agreed DIFFERENT
    left a sort made x5 slower escalated at p50 x6.519 [1.105, 10.494] under the bursty
    neighbour (stop 39), its interval still reaching below the floor.
    """
    if not busy_host(pairs, dropped):
        return False
    return not replicated or beyond_process_floor(comparisons, regressed) is None


def busy_host(pairs: int | None, dropped: int | None) -> bool:
    """Whether the host canary dropped a third or more of the ``pairs`` window pairs run: the
    share past which a paired regression rolls back only beyond the process floor
    (:func:`host_disturbed_dispute`).

    Why a third, not :func:`mostly_disturbed`'s half: under the bursty neighbour of
    ``benchmarks/neighbour.py`` (stop 39, ``benchmarks/disturbed_host_replay.py`` on two A/A
    blocks of 150 and 120 test-runs) 263 of the 270 test-runs had a third or more dropped, and
    the two unchanged tests rolled back had 24 of 48 and 17 of 41; in stop 38's disturbed hour
    without the neighbour 8 of 300 had (none half), so a real regression measured there is rarely
    held to the floor, and on the quiet host hardly ever (about 4 pairs dropped a run of ten
    tests at stop 37).

    >>> busy_host(48, 16), busy_host(41, 13), busy_host(None, 3)
    (True, False, False)
    """
    return bool(pairs and dropped and 3 * dropped >= pairs)


def disturbed_note(escalated: int) -> str | None:
    """The terminal's line when ``escalated`` tests escalated because paired rounds on a host the
    canary read disturbed through a third or more of their window pairs could not settle them
    (``None`` when there are none).

    Each reason ends with "(20 of 24 pairs dropped: host disturbed)"; a newcomer running the
    example beside other work (the test suite's own load escalated 14 and 7 of 24 unchanged
    tests that way on 2026-12-03) is told once that the machine, not the code, left them open.

    >>> disturbed_note(3)[:58]
    '3 escalated test(s) were left open by paired rounds on a b'
    >>> disturbed_note(0) is None
    True
    """
    if escalated <= 0:
        return None
    return (
        f"{escalated} escalated test(s) were left open by paired rounds on a busy host: the host "
        "canary dropped a third or more of their window pairs as disturbed, so other work on this "
        "machine, not the code, kept them from being settled; run the comparison again when the "
        'machine is quiet (docs/gate.md, "Paired confirmation of a first-look regression")'
    )


def _one_more_pair(first: Confirmation, second: Confirmation, number: int) -> Confirmation:
    """``first`` (what pairs 1..number-1 found) measured again by pair ``number``."""
    if first.state != "confirmed":
        return first
    nth = f"a {_ordinal(number)} pair of worker processes"
    pairs = (first.pairs or 0) + (second.pairs or 0)
    dropped = (first.pairs_dropped or 0) + (second.pairs_dropped or 0)
    regressed = [n for n, c in first.comparisons.items() if c.outcome == "different"]
    agreed = [n for n in regressed if _different(second.comparisons.get(n))]
    if second.state == "confirmed" and agreed:
        # A quantile the earlier pairs found and this one did not is left to what this one read,
        # or dropped where it did not compare it: only the quantiles every pair found stand as
        # the regression.
        return replace(
            first,
            reason=f"{first.reason}; reproduced by {nth} "
            f"({second.reason.removeprefix(_PAIRED_PREFIX)})",
            comparisons={
                n: second.comparisons[n] if n in regressed and n not in agreed else c
                for n, c in first.comparisons.items()
                if n in agreed or n not in regressed or n in second.comparisons
            },
            pairs=pairs,
            pairs_dropped=dropped,
        )
    if second.state == "confirmed":
        why = (
            f"{first.reason}, but {nth} found another quantile DIFFERENT, not "
            f"{', '.join(regressed)} ({second.reason.removeprefix(_PAIRED_PREFIX)}): the "
            "processes differ, not necessarily the code"
        )
    elif second.state == "unavailable":
        why = (
            f"{first.reason}, but {nth} could not measure it again ({second.reason}): "
            f"a rollback needs {number} pairs of processes to find it"
        )
    elif second.disputed and second.dispute == "host":
        why = (
            f"{first.reason}, but {nth} found it only with window pairs the host disturbed "
            f"({second.reason.removeprefix(_PAIRED_PREFIX)})"
        )
    else:
        why = (
            f"{first.reason}, but {nth} did not find it "
            f"({second.reason}): the processes differ, not necessarily the code"
        )
    return replace(
        first,
        state="inconclusive",
        reason=why,
        comparisons=dict(second.comparisons) or dict(first.comparisons),
        pairs=pairs,
        pairs_dropped=dropped,
        disputed=True,
        dispute=second.dispute if second.disputed else "processes",
    )


def _different(c: stats.QuantileComparison | None) -> bool:
    return c is not None and c.outcome == "different"


def _ordinal(number: int) -> str:
    return {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(number, f"{number}th")
