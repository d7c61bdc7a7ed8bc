"""Evidence gathering (gate.py) and run-level analysis (analysis.py), without pytest in the loop."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline.config.settings import DEFAULT_LAYERS, GateSettings
from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.gate.compare import compare_stored_runs
from pytest_roofline.gate.confirm import confirmation_from
from pytest_roofline.gate.evidence import (
    BaselineEntry,
    EvidenceContext,
    FreshReplay,
    evaluate,
    margins,
    should_replay,
)
from pytest_roofline.gate.layers import hardware_difference, layers_changed
from pytest_roofline.gate.policy import awaits_fresh_replay, decide_test
from pytest_roofline.gate.record import test_record as record_of_test
from pytest_roofline.gate.run import _with_bh, evidence_context, replay_command
from pytest_roofline.hardware.target import target_from_mapping
from pytest_roofline.measure.canary import WindowJudgement
from pytest_roofline.measure.counters import CounterReading
from pytest_roofline.measure.host import HOST_FIELDS, HostEvidence
from pytest_roofline.measure.hostwatch import HostRecord
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.document import ConfirmationRecord, QuantileChange, TestRecord
from pytest_roofline.model.results import TestResult
from pytest_roofline.roofline import DeclaredWork
from pytest_roofline.store import RunRecord, Store, StoredResult
from pytest_roofline.vocabulary import QUANTILES

from .test_policy import comparison

TARGET = target_from_mapping(
    "ci", {"peak_flops_per_s": {"fp32": 1e11}, "peak_bytes_per_s": {"dram": 1e10}}, where="test"
)


def samples(rng: np.random.Generator, scale: float = 1e-3, n: int = 1000) -> np.ndarray:
    return scale * rng.lognormal(0.0, 0.05, size=n)


def result(
    nodeid: str,
    data: np.ndarray,
    *,
    declared: DeclaredWork | None = None,
    sla: SlaSpec | None = None,
) -> TestResult:
    sample_set = SampleSet(data, 1, 1, 0.0, "budget", float(data.sum()), False)
    return TestResult(
        nodeid,
        None,
        ("team",),
        "revert",
        sla or SlaSpec(),
        None,
        Measurement(sample_set, declared, (), None),
    )


def measured_on(data: np.ndarray, host: HostRecord | None) -> TestResult:
    """A baseline result whose test was measured while the host canary read ``host``."""
    plain = result("t::a", data)
    return replace(plain, measurement=replace(plain.measurement, host=host))


def test_the_margin_is_the_default_noise_floor_without_history_and_follows_a_quiet_history_down() -> (
    None
):
    rng = np.random.default_rng(0)
    context = EvidenceContext(min_effect={"p95": 0.05, "p99": 0.1})
    alone = margins(BaselineEntry(samples(rng), None, {}), context)
    assert {k: m.margin for k, m in alone.items()} == {
        "p50": pytest.approx(0.35),
        "p95": pytest.approx(0.37),
        "p99": pytest.approx(0.60),
    }
    assert {m.source for m in alone.values()} == {"history"}
    quiet = BaselineEntry(
        samples(rng), None, {}, history_samples=tuple(samples(rng) for _ in range(30))
    )
    assert margins(quiet, context)["p95"].margin < 0.2


def test_a_user_margin_above_the_noise_floor_wins() -> None:
    rng = np.random.default_rng(1)
    context = EvidenceContext(min_effect={"p50": 0.7, "p95": 0.8, "p99": 0.9})
    found = margins(BaselineEntry(samples(rng), None, {}), context)
    assert {k: m.margin for k, m in found.items()} == {
        "p50": pytest.approx(0.7),
        "p95": pytest.approx(0.8),
        "p99": pytest.approx(0.9),
    }
    assert {m.source for m in found.values()} == {"min_effect"}


def test_a_doubling_triggers_a_replay_and_an_unchanged_test_does_not() -> None:
    rng = np.random.default_rng(2)
    entry = BaselineEntry(samples(rng), None, {})
    context = EvidenceContext(replay=1, family_size=1)
    assert should_replay(samples(rng, 2e-3), entry, context, "t::a")
    assert not should_replay(samples(rng), entry, context, "t::a")
    assert not should_replay(samples(rng, 2e-3), entry, EvidenceContext(replay=0), "t::a")


def replayed_after_drift(*, seed: int, replay_level: float) -> tuple[Any, Any]:
    """A first look x4.5 over a 1 ms baseline, replayed on 47 samples drifting by 10% from
    ``replay_level``: the evidence, and the replay's own p50 comparison."""
    rng = np.random.default_rng(seed)
    base = samples(rng, 1e-3, 200)
    drifting = replay_level * (1 + 0.1 * np.linspace(0, 1, 47)) * rng.lognormal(0, 0.002, 47)
    context = EvidenceContext(replay=1, family_size=1)
    evidence = evaluate(
        result("t::a", samples(rng, 4.5e-3, 200)),
        BaselineEntry(base, None, {}),
        context,
        target=None,
        replays=[drifting],
    )
    replayed = evaluate(
        result("t::a", drifting), BaselineEntry(base, None, {}), context, target=None
    ).comparisons["p50"]
    return evidence, replayed


def test_a_replay_as_slow_but_too_autocorrelated_to_assess_still_reproduces_the_regression() -> (
    None
):
    # Stop 44's demo: a GEMM x4.5 (x4.9 on its first look) established on its first look; its
    # replay read x5.35 with the interval [5.18, 6.33] but its 47 samples drifted, p50's
    # effective sample size 4 < 5, and the test escalated as "not reproduced" instead of
    # rolling back.
    evidence, replayed = replayed_after_drift(seed=7, replay_level=4.5e-3)
    assert replayed.verdict == "insufficient" and "autocorrelated" in replayed.reason
    assert evidence.replay is not None and evidence.replay.reproduced
    assert evidence.replay.autocorrelated == ("p50",)
    decision = decide_test(evidence)
    assert decision.decision == "rollback"
    assert any(
        "p50 regressed" in r and "too autocorrelated to decide alone" in r for r in decision.reasons
    )


def test_a_replay_too_autocorrelated_to_assess_that_moved_back_does_not_reproduce() -> None:
    evidence, replayed = replayed_after_drift(seed=8, replay_level=1e-3)
    assert replayed.verdict == "insufficient" and "autocorrelated" in replayed.reason
    assert evidence.replay is not None and evidence.replay.reproduced is False
    assert evidence.replay.autocorrelated == ()
    assert decide_test(evidence).decision == "escalate"


def disturbed_host(gemm_ratio: float) -> HostRecord:
    """A host record whose kept window read the GEMM canary ``gemm_ratio`` times its level."""
    window = WindowJudgement(
        "t::a", "disturbed", {"gemm": gemm_ratio}, {"gemm": 1.0}, {"gemm": 1.5}, ("gemm",), 0.0, 1.0
    )
    return HostRecord(
        "disturbed", f"host disturbed around the test: gemm canary x{gemm_ratio}", windows=(window,)
    )


def test_a_baseline_measured_on_a_disturbed_host_earns_no_ship() -> None:
    # CI, stop 45: the demo's baseline run measured the fp32-n512 GEMM while the stream and GEMM
    # canaries read x14 (CPU share 0.27), at 19.7 ms; the candidate's x4.5 GEMM read p50 x0.875
    # [0.419, 1.278] against it, SAME, and shipped.
    rng = np.random.default_rng(46)
    base = BaselineEntry.of(measured_on(samples(rng, 19.7e-3, 40), disturbed_host(13.99)))
    evidence = evaluate(
        result("t::a", samples(rng, 18.6e-3, 40)), base, EvidenceContext(replay=0), target=None
    )
    assert evidence.comparisons["p50"].outcome == "same"
    decision = decide_test(evidence)
    assert decision.decision == "escalate"
    assert any(
        "the baseline run measured it while the host was disturbed (host disturbed around the "
        "test: gemm canary x13.99)" in r
        for r in decision.reasons
    ), decision.reasons
    # A quiet baseline, or one the host slowed by less than x3 (the project's check and a
    # fresh clone at stop 45 escalated 17 and 2 of 24 unchanged tests on canaries of x1.2-x1.7),
    # leaves the comparison to the margins.
    for host in (None, disturbed_host(1.66)):
        calm = evaluate(
            result("t::a", samples(rng, 18.6e-3, 40)),
            BaselineEntry.of(measured_on(samples(rng, 19.7e-3, 40), host)),
            EvidenceContext(replay=0),
            target=None,
        )
        assert decide_test(calm).decision == "ship"


def against_a_slowed_baseline(
    paired_ratios: dict[str, float], *, host: HostRecord | None = None, **fields: Any
) -> Any:
    """A candidate that reads x0.45 of a baseline the host slowed x14 (or measured on ``host``),
    with paired rounds against the baseline's commit that asked p50 and read ``paired_ratios``;
    ``fields`` replace the evidence's (``same_code``)."""
    rng = np.random.default_rng(47)
    base_host = disturbed_host(13.99) if host is None else host
    base = BaselineEntry.of(measured_on(samples(rng, 19.7e-3, 40), base_host))
    evidence = evaluate(
        result("t::a", samples(rng, 9.0e-3, 40)), base, EvidenceContext(replay=0), target=None
    )
    assert evidence.comparisons["p50"].improvement
    paired = {}
    for name, ratio in paired_ratios.items():
        low, high = ratio * 0.95, ratio * 1.05
        # Beyond the margin +5%, inside it, or straddling it (neither established).
        verdict = "regression" if low > 1.05 else "ok" if high < 1.05 else "suspect"
        paired[name] = comparison(verdict, ratio, low, high, quantile=QUANTILES[name])
    found = confirmation_from(["p50"], paired, command="pytest-roofline ab ...", pairs=16)
    return decide_test(replace(evidence, confirmation=found, **fields))


def test_paired_rounds_that_find_a_slowdown_against_a_slowed_baseline_roll_it_back() -> None:
    # Against a baseline measured at x14, a x4.5 slowdown can read "improved": the first look
    # says nothing, and paired rounds that find the slowdown roll it back.
    slower = against_a_slowed_baseline({"p50": 4.5})
    assert slower.decision == "rollback", slower.reasons
    assert slower.reasons[0].startswith(
        "p50 regressed: paired rounds against the baseline's commit find x4.500 [4.275, 4.725]"
    ), slower.reasons
    assert (
        "the first look (x0.468 [0.447, 0.486]) was against a baseline run measured on a "
        "disturbed host (host disturbed around the test: gemm canary x13.99)" in slower.reasons[0]
    )


def test_paired_rounds_that_rule_a_change_out_against_a_slowed_baseline_let_it_ship() -> None:
    same = against_a_slowed_baseline({"p50": 0.98})
    assert same.decision == "ship", same.reasons
    assert any(
        "the baseline run measured it while the host was disturbed" in n and "settled by" in n
        for n in same.reasons
    ), same.reasons


@pytest.mark.parametrize(
    ("paired", "fields", "found"),
    [
        # A tail the first look had too few samples to ask about reads DIFFERENT in the rounds:
        # the asked p50 is SAME ("overturned"), but the x4 is not let through.
        ({"p50": 0.98, "p99": 4.0}, {}, "paired rounds against the baseline's commit find p99"),
        # The same commit on both sides: a paired DIFFERENT is the processes', not the code's.
        ({"p50": 4.5}, {"same_code": True}, "paired rounds against the baseline's commit find p50"),
        # Rounds that neither find nor rule out a change.
        ({"p50": 1.05}, {}, "the baseline run measured it while the host was disturbed"),
    ],
)
def test_anything_else_against_a_slowed_baseline_escalates(
    paired: dict[str, float], fields: dict[str, Any], found: str
) -> None:
    decision = against_a_slowed_baseline(paired, **fields)
    assert decision.decision == "escalate", decision.reasons
    assert any(found in r for r in decision.reasons), decision.reasons
    assert any("save the baseline again on a quiet host" in r for r in decision.reasons)


def test_an_improvement_against_a_quiet_baseline_is_not_reopened_by_paired_rounds() -> None:
    # Paired rounds are not asked about an improvement against a quiet baseline; a DIFFERENT
    # they happen to report for it (asked about another quantile) does not overrule it.
    decision = against_a_slowed_baseline({"p50": 4.5}, host=disturbed_host(1.66))
    assert decision.decision == "ship", decision.reasons
    assert any(n.startswith("p50 improved") for n in decision.reasons), decision.reasons


def test_the_session_wide_bound_leaves_a_marginal_regression_unknown_in_a_large_session() -> None:
    rng = np.random.default_rng(3)
    base = 1e-3 * rng.lognormal(0.0, 0.3, 200)
    cand = 1.8e-3 * rng.lognormal(0.0, 0.3, 200)  # p95 x1.8, one-sided p far below 1e-10
    entry = BaselineEntry(base, None, {})
    small = evaluate(
        result("t::a", cand), entry, EvidenceContext(family_size=1, replay=0), target=None
    )
    huge = evaluate(
        result("t::a", cand), entry, EvidenceContext(family_size=10**40, replay=0), target=None
    )
    assert small.comparisons["p95"].verdict == "regression"
    assert small.comparisons["p95"].outcome == "different"
    assert huge.comparisons["p95"].verdict == "suspect"
    assert huge.comparisons["p95"].outcome == "unknown"
    assert "DIFFERENT at one-sided" in huge.comparisons["p95"].reason


def test_evaluation_places_both_sides_on_the_roofline() -> None:
    rng = np.random.default_rng(4)
    work = DeclaredWork(flops=1e8, bytes_moved=1e5, precision="fp32")
    evidence = evaluate(
        result("t::a", samples(rng), declared=work),
        BaselineEntry(samples(rng), work, {}),
        EvidenceContext(),
        target=TARGET,
    )
    assert evidence.point is not None and evidence.point.bound == "compute"
    assert evidence.baseline_point is not None and evidence.baseline_point.bound == "compute"
    assert evidence.bound_change is not None and not evidence.bound_change.changed
    assert evidence.efficiency_ratio == pytest.approx(1.0, rel=0.05)


def test_a_declared_work_that_changed_since_the_baseline_is_evidence_and_decides_no_rollback() -> (
    None
):
    # CI: a recalibration sized the DRAM arrays 600 MiB where the baseline's were 128 MiB; the
    # unchanged copy test moved 4.69x the bytes, ran 4.6x longer and was rolled back.
    rng = np.random.default_rng(6)
    base_work = DeclaredWork(bytes_moved=16 * 2**24, precision="fp64")
    cand_work = DeclaredWork(bytes_moved=16 * 600 * 2**17, precision="fp64")
    evidence = evaluate(
        result("t::copy", samples(rng, 4.69e-3), declared=cand_work),
        BaselineEntry(samples(rng), base_work, {}),
        EvidenceContext(replay=0, family_size=1),
        target=TARGET,
    )
    assert evidence.work_change == {"bytes_moved": (base_work.bytes_moved, cand_work.bytes_moved)}
    assert evidence.comparisons["p50"].outcome == "different"
    assert evidence.efficiency_ratio == pytest.approx(1.0, rel=0.05)
    decision = decide_test(evidence)
    assert decision.decision == "escalate"
    assert "the baseline timed another workload" in decision.reasons[0]
    same = evaluate(
        result("t::copy", samples(rng), declared=base_work),
        BaselineEntry(samples(rng), base_work, {}),
        EvidenceContext(replay=0, family_size=1),
        target=TARGET,
    )
    assert same.work_change == {}


def test_a_min_efficiency_sla_is_breached_only_when_even_fast_calls_miss_it() -> None:
    rng = np.random.default_rng(5)
    work = DeclaredWork(flops=1e8, bytes_moved=1e5, precision="fp32")  # 1 ms at the roof
    slow = evaluate(
        result("t::a", samples(rng, 4e-3), declared=work, sla=SlaSpec(min_efficiency=0.5)),
        None,
        EvidenceContext(),
        target=TARGET,
    )
    fast = evaluate(
        result("t::a", samples(rng, 1.2e-3), declared=work, sla=SlaSpec(min_efficiency=0.5)),
        None,
        EvidenceContext(),
        target=TARGET,
    )
    assert [s.status for s in slow.sla] == ["breach"]
    assert [s.status for s in fast.sla] == ["met"]


def test_layers_follow_the_configured_order() -> None:
    changed = layers_changed(
        {"python": "3.10", "dataset": "a", "x": "1"},
        {"python": "3.11", "dataset": "b", "x": "2"},
        DEFAULT_LAYERS,
    )
    assert changed == ("data", "runtime")


def test_a_replay_command_quotes_the_node_id() -> None:
    command = replay_command("t.py::test[it's]", "main", "ci")
    assert (
        command
        == "pytest --roofline --roofline-baseline=main --roofline-target=ci 't.py::test[it'\"'\"'s]'"
    )


def test_offline_comparison_of_two_stored_runs_decides_like_the_gate(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    with Store.open(tmp_path / "s.sqlite") as store:
        ids = []
        # x3: one stored run is no measured noise floor, so only a change beyond x2 rolls back.
        for label, scale_b in (("main", 1e-3), ("feature", 3e-3)):
            record = RunRecord(label, 1.0, 2.0, {"model": label}, TARGET.to_dict(), "machine")
            stored = [
                StoredResult(r.nodeid, r.to_dict(include_samples=False), r.measurement.samples_s)
                for r in (result("t::a", samples(rng)), result("t::b", samples(rng, scale_b)))
            ]
            ids.append(store.save_run(record, stored))
        document = compare_stored_runs(store, ids[0], ids[1]).to_json()
        base = store.load_run(ids[0]).record
        assert (
            hardware_difference(base.target.get("name"), base.machine, TARGET.name, "machine")
            is None
        )
    decisions = {t["nodeid"]: t["decision"] for t in document["tests"]}
    assert decisions == {"t::a": "ship", "t::b": "rollback"}
    assert document["decision"] == "rollback"
    assert document["run"]["baseline_label"] == "main"
    assert document["run"]["first_failing_layer"] == "model"


def test_a_comparison_in_which_no_test_matched_the_baseline_escalates_and_says_why(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(8)
    with Store.open(tmp_path / "s.sqlite") as store:
        ids = []
        for label, nodeid in (("main", "old.py::test_a"), ("feature", "new.py::test_a")):
            record = RunRecord(label, 1.0, 2.0, {}, TARGET.to_dict(), "machine")
            r = result(nodeid, samples(rng))
            ids.append(
                store.save_run(
                    record,
                    [
                        StoredResult(
                            nodeid, r.to_dict(include_samples=False), r.measurement.samples_s
                        )
                    ],
                )
            )
        document = compare_stored_runs(store, ids[0], ids[1])
    assert [t.decision for t in document.tests] == ["ship"]
    assert document.decision == "escalate"
    assert any("0 of 1 tests were compared" in r for r in document.reasons), document.reasons
    assert not any("every SLA holds" in r for r in document.reasons)
    assert document.next_steps and "pytest-roofline runs" in document.next_steps[0]
    assert document.to_json()["next_steps"] == list(document.next_steps)


@pytest.mark.parametrize("work", [DeclaredWork(0.0, 1e6, "fp32"), DeclaredWork(1e6, 0.0, "fp32")])
def test_a_pure_copy_or_pure_compute_declaration_compares_without_a_bound_change(
    work: DeclaredWork,
) -> None:
    rng = np.random.default_rng(7)
    evidence = evaluate(
        result("t::a", samples(rng), declared=work),
        BaselineEntry(samples(rng), work, {}),
        EvidenceContext(),
        target=TARGET,
    )
    assert evidence.point is not None
    assert evidence.bound_change is None


def test_the_first_failing_slice_of_a_group_is_its_smallest_failing_one() -> None:
    from pytest_roofline.config.workload import WorkloadSlice
    from pytest_roofline.gate.run import first_failing_slices

    rng = np.random.default_rng(8)

    def sliced(name: str, n: int) -> TestResult:
        base = result(
            f"t::k[{name}]", samples(rng), declared=DeclaredWork(2.0 * n**3, 12.0 * n * n, "fp32")
        )
        return TestResult(
            base.nodeid,
            WorkloadSlice(name, {"n": n}, group="gemm"),
            base.owners,
            base.rollback,
            base.sla,
            None,
            base.measurement,
        )

    results = {
        r.nodeid: r for r in (sliced("small", 64), sliced("medium", 256), sliced("large", 1024))
    }
    decisions = {
        "t::k[small]": "ship",
        "t::k[medium]": "rollback",
        "t::k[large]": "escalate",
    }
    assert first_failing_slices(results, decisions) == {"gemm": "t::k[medium]"}


def _shipped(confirmation: ConfirmationRecord | None) -> dict[str, TestRecord]:
    # Run 15b, trial 7: an unchanged test's first-look p95 x1.302 (BH p 2.5e-14) that paired
    # rounds found SAME (x1.035 [0.893, 1.102]) while its p50 stayed UNKNOWN there: the test
    # shipped, and the run escalated on the first look's p-value.
    first_look = QuantileChange(quantile=0.95, ratio=1.302, p_value=1e-15, delta=0.3)
    others = {
        f"t::other{i}": TestRecord(
            nodeid=f"t::other{i}",
            decision="ship",
            change={"p95": QuantileChange(quantile=0.95, ratio=1.0, p_value=0.5, delta=0.3)},
        )
        for i in range(5)
    }
    return {
        "t::reduction": TestRecord(
            nodeid="t::reduction",
            decision="ship",
            change={"p95": first_look},
            confirmation=confirmation,
        ),
        **others,
    }


@pytest.mark.parametrize(
    ("paired", "state", "concern"),
    [
        (None, None, True),  # nothing measured after the first look: the run says so
        ("same", "inconclusive", False),  # this quantile's paired rounds rule the change out
        ("same", "overturned", False),
        ("unknown", "inconclusive", True),  # the paired rounds did not settle this quantile
    ],
)
def test_a_run_level_bh_flag_yields_to_paired_rounds_that_found_the_quantile_same(
    paired: Any, state: str | None, concern: bool
) -> None:
    confirmation = (
        ConfirmationRecord(
            state=state,
            change={"p95": QuantileChange(quantile=0.95, ratio=1.035, outcome=paired)},
        )
        if paired is not None
        else None
    )
    _, concerns = _with_bh(_shipped(confirmation), alpha=0.05)
    flagged = [c.reason for c in concerns if c.reason.startswith("t::reduction: p95 x1.302")]
    assert bool(flagged) == concern, concerns


def test_a_quantile_the_test_could_not_assess_does_not_count_across_the_run() -> None:
    # A README run: test_parse_and_sort[lines-1000] has 18 baseline samples; its p99 (299
    # needed) was "not assessed" and the test shipped, yet its p-value entered the run's
    # Benjamini-Hochberg family and escalated the run ("p99 x4.261 is significant across the
    # run (BH p = 0.0273)"). A quantile without the samples to be compared is no evidence here.
    unassessed = QuantileChange(
        quantile=0.99, ratio=4.261, p_value=1e-6, delta=0.6, verdict="insufficient"
    )
    records = _shipped(None)
    records["t::parse"] = TestRecord(nodeid="t::parse", decision="ship", change={"p99": unassessed})
    out, concerns = _with_bh(records, alpha=0.05)
    assert not [c for c in concerns if c.reason.startswith("t::parse")], concerns
    assert out["t::parse"].change["p99"].p_bh is None  # not in the family, so no adjusted p
    # The assessed quantiles are still adjusted and flagged as before.
    assert out["t::reduction"].change["p95"].p_bh is not None
    assert [c for c in concerns if c.reason.startswith("t::reduction: p95 x1.302")]


def _waited(
    nodeid: str, data: np.ndarray, *, cpu_share: float, switches: int | None, wall_s: float
) -> TestResult:
    """A result measured with ``cpu_share`` of a CPU and ``switches`` preemptions in its window."""
    counters = CounterReading({}, {}, 1.0, cpu_share, float(data.sum()), 1)
    host = HostEvidence(
        wall_s=wall_s, cpu_s=cpu_share * wall_s, cpu_share=cpu_share,
        involuntary_switches=switches, steal_share=0.0, other_cpu_share=0.5, stat_ticks=100,
        load_1m=3.5, runnable_tasks=4, status=dict.fromkeys(HOST_FIELDS, "ok"),
    )  # fmt: skip
    watched = HostRecord("quiet", "host canary quiet", host=host)
    sample_set = SampleSet(data, 1, 1, 0.0, "budget", float(data.sum()), False)
    measurement = Measurement(sample_set, None, (), counters, host=watched)
    return TestResult(nodeid, None, ("team",), "revert", SlaSpec(), None, measurement)


def test_a_p50_shift_of_a_test_that_waited_for_a_cpu_every_call_escalates_by_the_stored_shares() -> (
    None
):
    # The demo under the suite's load: an unchanged 9 ms prefill read p50 x2.24 at a CPU share
    # of 0.50 against 0.93 in the baseline run, 111 preemptions. The baseline's share comes back
    # from the stored result; the window's wall time and preemptions from the host watch.
    rng = np.random.default_rng(11)
    stored = _waited("t::prefill", samples(rng, 9e-3, 60), cpu_share=0.93, switches=19, wall_s=0.6)
    entry = BaselineEntry.of(
        TestResult.from_dict(stored.to_dict(), samples_s=stored.measurement.samples_s)
    )
    assert entry.cpu_share == pytest.approx(0.93)
    context = EvidenceContext(replay=0, family_size=1)
    waited = _waited("t::prefill", samples(rng, 20e-3, 30), cpu_share=0.5, switches=111, wall_s=0.7)
    evidence = evaluate(waited, entry, context, target=None)
    assert (evidence.host_wall_s, evidence.baseline_cpu_share) == (0.7, pytest.approx(0.93))
    decision = decide_test(evidence)
    assert decision.decision == "escalate"
    assert (
        "CPU share 0.50 against 0.93 in the baseline run, 111 involuntary context switches"
        in (decision.reasons[0])
    )
    # The same slowdown measured with the CPU to itself still rolls back (x2 for a young label).
    alone = _waited("t::prefill", samples(rng, 20e-3, 30), cpu_share=0.99, switches=1, wall_s=0.7)
    assert decide_test(evaluate(alone, entry, context, target=None)).decision == "rollback"
    # The window's wall time reaches the run document, so a reviewer can recompute the rate.
    record = record_of_test(
        waited, evidence, decision, replay_command="", baseline_samples=None, presets={}
    )
    assert record.host is not None and record.host.wall_s == 0.7


def first_process_slow(*, fresh_level: float | None, seed: int = 7) -> Any:
    """A first look x4 over a 1 ms baseline, reproduced on a same-process replay, with a fresh
    process's replay at ``fresh_level`` (``None``: not made yet); decided by the policy."""
    rng = np.random.default_rng(seed)
    base = samples(rng, 1e-3, 300)
    context = EvidenceContext(replay=1, family_size=1, fresh_replay=True)
    fresh = None if fresh_level is None else FreshReplay(samples(rng, fresh_level * 1e-3, 300))
    evidence = evaluate(
        result("t::a", samples(rng, 4e-3, 300)),
        BaselineEntry(base, None, {}),
        context,
        target=None,
        replays=[samples(rng, 4e-3, 300)],
        fresh_replay=fresh,
    )
    return evidence, decide_test(evidence)


def test_a_regression_one_process_reproduced_awaits_a_replay_in_a_fresh_process() -> None:
    evidence, decision = first_process_slow(fresh_level=None)
    assert evidence.replay.reproduced and evidence.fresh_replay_due
    assert decision.decision == "escalate"
    assert awaits_fresh_replay(decision.missing_evidence)
    assert all("it is not yet measured again in a fresh process" in r for r in decision.reasons)


def test_a_fresh_process_that_reads_the_baseline_s_speed_overturns_one_process_s_evidence() -> None:
    evidence, decision = first_process_slow(fresh_level=1.0)
    assert evidence.fresh_replay.comparisons["p50"].ratio == pytest.approx(1.0, abs=0.03)
    assert decision.decision == "escalate"
    assert not awaits_fresh_replay(decision.missing_evidence)
    assert all(
        "it did not reproduce at that size when a fresh process measured it again (p" in reason
        for reason in decision.reasons
    ), decision.reasons


def test_a_fresh_process_that_reads_the_slowdown_too_rolls_it_back() -> None:
    evidence, decision = first_process_slow(fresh_level=4.0)
    assert evidence.fresh_replay.comparisons["p50"].ratio == pytest.approx(4.0, rel=0.03)
    assert decision.decision == "rollback", decision.reasons
    assert all(
        "reproduced on replay, reproduced in a fresh process (p" in reason
        for reason in decision.reasons
    ), decision.reasons


def test_a_fresh_replay_is_due_only_in_a_live_session_with_replays_on() -> None:
    gate = GateSettings()
    kwargs: dict[str, Any] = dict(
        family_size=1, baseline=None, tags={}, layers=DEFAULT_LAYERS, target=None, machine="m"
    )
    assert evidence_context(gate, fresh_replay=True, **kwargs).fresh_replay
    assert not evidence_context(gate, **kwargs).fresh_replay  # an offline comparison
    assert not evidence_context(replace(gate, replay=0), fresh_replay=True, **kwargs).fresh_replay


def test_a_fresh_replay_too_autocorrelated_to_decide_alone_still_corroborates_the_first_look() -> (
    None
):
    rng = np.random.default_rng(11)
    base = samples(rng, 1e-3, 300)
    # 47 samples drifting by 10% (as replayed_after_drift): p50's effective size is below 5.
    steps = 5.5e-3 * (1 + 0.1 * np.linspace(0, 1, 47)) * rng.lognormal(0, 0.002, 47)
    evidence = evaluate(
        result("t::a", samples(rng, 5.5e-3, 300)),
        BaselineEntry(base, None, {}),
        EvidenceContext(replay=1, family_size=1, fresh_replay=True),
        target=None,
        replays=[samples(rng, 5.5e-3, 300)],
        fresh_replay=FreshReplay(steps),
    )
    fresh = evidence.fresh_replay
    assert fresh.comparisons["p50"].outcome == "unknown", fresh.comparisons["p50"].reason
    assert "p50" in fresh.corroborated
    assert decide_test(evidence).decision == "rollback"
