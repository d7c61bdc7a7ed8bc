"""Stopping ``ab``'s workers (``PairedWorkers.close``) with scripted workers: every worker is
asked before any is waited for, so their teardowns overlap, and one that fails to stop costs
only its own probe record."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_roofline.ab.workers import PairedWorkers, SideSpec, WindowSettings, WorkerError


class StoppingWorker:
    """Records its ``ask_stop``/``stopped`` calls in a log shared by every worker."""

    def __init__(
        self, name: str, log: list[tuple[str, str, float | None]], *, running: bool, fails: bool
    ) -> None:
        self.name = name
        self.side = name.split("-")[0]
        self.log = log
        self.running = running
        self.fails = fails

    def ask_stop(self) -> bool:
        self.log.append(("ask", self.name, None))
        return self.running

    def stopped(self, timeout: float) -> Mapping[str, Any]:
        self.log.append(("wait", self.name, timeout))
        if self.fails:
            raise WorkerError("the worker answered 'window' to stop", side="candidate")  # type: ignore[arg-type]
        return {"probe_of": self.name}


def workers_with(
    tmp_path: Path, *, dead: str = "", failing: str = ""
) -> tuple[PairedWorkers, list[tuple[str, str, float | None]], list[str]]:
    specs = [SideSpec(side=s, python="python", workdir=tmp_path) for s in ("baseline", "candidate")]  # type: ignore[arg-type]
    lines: list[str] = []
    workers = PairedWorkers(*specs, WindowSettings(worker_pairs=3), log=lines.append)
    log: list[tuple[str, str, float | None]] = []
    workers._pairs = [
        {
            side: StoppingWorker(  # type: ignore[misc]
                f"{side}-{n}", log, running=f"{side}-{n}" != dead, fails=f"{side}-{n}" == failing
            )
            for side in ("baseline", "candidate")
        }
        for n in range(3)
    ]
    return workers, log, lines


def test_every_worker_is_asked_before_any_is_waited_for(tmp_path: Path) -> None:
    workers, log, _ = workers_with(tmp_path)
    workers.close()
    kinds = [kind for kind, _, _ in log]
    assert kinds == ["ask"] * 6 + ["wait"] * 6
    # One deadline for all: no wait is given more than the kill time-out.
    assert all(0 < t <= PairedWorkers.KILL_AFTER_S for kind, _, t in log if t is not None)
    assert workers.final_probe_pairs == [
        {side: {"probe_of": f"{side}-{n}"} for side in ("baseline", "candidate")} for n in range(3)
    ]


def test_a_worker_already_gone_or_failing_to_stop_loses_only_its_own_record(
    tmp_path: Path,
) -> None:
    workers, log, lines = workers_with(tmp_path, dead="baseline-1", failing="candidate-2")
    workers.close()
    assert ("wait", "baseline-1") not in {(k, n) for k, n, _ in log}  # not waited for
    assert [set(p) for p in workers.final_probe_pairs] == [
        {"baseline", "candidate"},
        {"candidate"},
        {"baseline"},
    ]
    assert any("did not stop cleanly" in line for line in lines)


def test_killing_asks_nothing(tmp_path: Path) -> None:
    workers, log, _ = workers_with(tmp_path)
    workers.close(kill=True)
    assert log == [] and workers.final_probe_pairs == []
