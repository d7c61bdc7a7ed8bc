"""``pytest-roofline compare``: two stored runs compared offline, decided as the live gate does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_roofline.config.settings import DEFAULT_LAYERS, GateSettings
from pytest_roofline.gate.run import (
    BaselineFacts,
    analyse_run,
    baseline_entries,
    evidence_context,
    judge_test,
    stored_result,
)
from pytest_roofline.hardware.target import HardwareTarget
from pytest_roofline.model.document import RunDocument
from pytest_roofline.store import Baseline, Store
from pytest_roofline.vocabulary import FailOn

__all__ = ["compare_stored_runs"]


def compare_stored_runs(
    store: Store,
    base_run_id: int,
    cand_run_id: int,
    *,
    gate: GateSettings | None = None,
    layers: Mapping[str, Sequence[str]] = DEFAULT_LAYERS,
    gate_on: FailOn = "rollback",
) -> RunDocument:
    """Compare two stored runs; return the run document (as ``--roofline-json`` writes it).

    The candidate's stored samples are its first measurement (replays are not stored), so a
    regression found here is decided as if replay were off.
    """
    gate = replace(gate or GateSettings(), replay=0)
    base_run = store.load_run(base_run_id)
    cand_run = store.load_run(cand_run_id)
    baseline = Baseline(
        label=base_run.record.label or f"run {base_run_id}", latest=base_run, history=()
    )
    facts = BaselineFacts.of(baseline)
    target = HardwareTarget.from_dict(cand_run.record.target) if cand_run.record.target else None
    record = cand_run.record
    results = {nodeid: stored_result(stored) for nodeid, stored in cand_run.results.items()}
    context = evidence_context(
        gate,
        family_size=len(results),
        baseline=facts,
        tags=record.tags,
        layers=layers,
        target=target,
        machine=record.machine,
    )
    entries = baseline_entries(baseline)
    records = {
        nodeid: judge_test(result, entries.get(nodeid), context, target=target)
        for nodeid, result in results.items()
    }
    return analyse_run(
        results,
        records,
        baseline=facts,
        gate=gate,
        gate_on=gate_on,
        label=record.label,
        tags=record.tags,
        layers=layers,
        target=target,
        machine=record.machine,
        started=record.started,
        finished=record.finished,
    )
