"""The host watch around one test's measurement: canary window, host counters, one re-measure.

:class:`HostWatch` joins the two host instruments of :mod:`~.canary` and :mod:`~.host` into the
protocol a measuring process follows for every test (issue: a regression seen while the host
was slow must not be rolled back on timing alone):

1. open a canary window and snapshot the host counters;
2. measure (sampling, and any replay: whatever the caller's ``measure`` does);
3. close the window. A *disturbed* window (a canary kind slower than its session level beyond
   its floor, before or after the test) waits for the canary to recover
   (:meth:`~.canary.Canary.wait_for_recovery`, bounded in time and by a share of the run) and,
   once it has, measures the test again, at most ``retries`` times; the last attempt's samples
   are kept.

The outcome is a :class:`HostRecord`: the state of the kept window, every window's figures, the
wait, the host counters of the kept attempt (CPU share, involuntary context switches, steal),
and how this process's canary level compares with the baseline run's. It travels with the
measurement to the controller, where the gate reads it (``gate.evidence.HostCheck``). Never
imports pytest; the canary's clock and kernels are injected by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from pytest_roofline.measure.canary import (
    Canary,
    CanaryLevel,
    CanarySummary,
    Recovery,
    WindowJudgement,
)
from pytest_roofline.measure.host import HostEvidence, HostProbe

__all__ = ["HOST_STATES", "HostRecord", "HostState", "HostWatch"]

T = TypeVar("T")

HostState = Literal["quiet", "disturbed", "unread"]
HOST_STATES: tuple[HostState, ...] = ("quiet", "disturbed", "unread")


@dataclass(frozen=True, slots=True)
class HostRecord:
    """What the host did while one test was measured.

    :ivar state: the canary's state for the window the kept samples come from.
    :ivar reason: one line with the figures (the kept window's, and the wait's when there was one).
    :ivar remeasured: the first window was disturbed and the test was measured again.
    :ivar windows: every attempt's canary judgement, in order.
    :ivar recoveries: every wait for recovery, in order.
    :ivar host: the host counters of the kept attempt (``None`` where not read).
    :ivar baseline_ratios: kind -> this process's canary level ÷ the baseline run's (> 1: the
        host is slower now than when the baseline was recorded); empty when either is unknown
        or the kernels differ.
    :ivar baseline_floors: kind -> the floor beyond which such a ratio is a shift of the host.
    """

    state: HostState
    reason: str
    remeasured: bool = False
    windows: tuple[WindowJudgement, ...] = ()
    recoveries: tuple[Recovery, ...] = ()
    host: HostEvidence | None = None
    baseline_ratios: Mapping[str, float] = field(default_factory=dict)
    baseline_floors: Mapping[str, float] = field(default_factory=dict)

    @property
    def host_shift(self) -> str | None:
        """Which canary kinds run slower than at the baseline beyond their floor, with figures."""
        slower = [
            f"{kind} canary x{ratio:.2f} (floor x{self.baseline_floors[kind]:.2f})"
            for kind, ratio in self.baseline_ratios.items()
            if kind in self.baseline_floors and ratio > self.baseline_floors[kind]
        ]
        return ", ".join(slower) or None

    def to_dict(self) -> dict[str, object]:
        return {
            "state": self.state,
            "reason": self.reason,
            "remeasured": self.remeasured,
            "windows": [w.to_dict() for w in self.windows],
            "recoveries": [r.to_dict() for r in self.recoveries],
            "host": self.host.to_dict() if self.host is not None else None,
            "baseline_ratios": dict(self.baseline_ratios),
            "baseline_floors": dict(self.baseline_floors),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> HostRecord:
        """Rebuild from :meth:`to_dict`; a malformed payload raises ``ValueError`` naming the key."""
        state = data.get("state")
        if state not in HOST_STATES:
            raise ValueError(
                f"host record: state must be one of {list(HOST_STATES)}, got {state!r}"
            )
        host = data.get("host")
        return cls(
            state=state,
            reason=str(data.get("reason", "")),
            remeasured=bool(data.get("remeasured", False)),
            windows=tuple(WindowJudgement.from_dict(w) for w in _mappings(data, "windows")),
            recoveries=tuple(Recovery.from_dict(r) for r in _mappings(data, "recoveries")),
            host=HostEvidence.from_dict(host) if isinstance(host, Mapping) else None,
            baseline_ratios=_numbers(data, "baseline_ratios"),
            baseline_floors=_numbers(data, "baseline_floors"),
        )


class HostWatch:
    """One measuring process's canary and host counters (see the module docstring).

    :param canary: the process's canary; ``None`` turns the canary off (state ``unread``).
        Started lazily, before the first test it watches.
    :param probe: host counters; ``None`` leaves them unread.
    :param baseline: the baseline run's canary level, to say whether the host moved since.
    :param retries: re-measures after a disturbed window that recovered (0: never).
    """

    def __init__(
        self,
        canary: Canary | None,
        probe: HostProbe | None = None,
        *,
        baseline: CanaryLevel | None = None,
        retries: int = 1,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries!r}")
        self._canary = canary
        self._probe = probe
        self._baseline = baseline
        self._retries = retries
        self._started = False

    @property
    def canary(self) -> Canary | None:
        return self._canary

    def start(self) -> None:
        """Take the canary's start readings (once; :meth:`measure` calls it when needed)."""
        if self._canary is not None and not self._started:
            self._canary.start()
        self._started = True

    def measure(self, test_id: str, measure: Callable[[], T]) -> tuple[T, HostRecord]:
        """Run ``measure`` inside a watched window; again after a disturbed one that recovered.

        :returns: the kept attempt's result and the :class:`HostRecord`.
        """
        self.start()
        canary = self._canary
        windows: list[WindowJudgement] = []
        recoveries: list[Recovery] = []
        attempt = 0
        while True:
            window = canary.open_window(test_id, attempt=attempt) if canary is not None else None
            before = self._probe.snapshot() if self._probe is not None else None
            outcome = measure()
            host = (
                self._probe.evidence(before, self._probe.snapshot())
                if self._probe is not None and before is not None
                else None
            )
            if canary is None or window is None:
                return outcome, HostRecord(state="unread", reason="host canary off", host=host)
            judgement = canary.close_window(window)
            windows.append(judgement)
            if not judgement.disturbed or attempt >= self._retries:
                break
            recovery = canary.wait_for_recovery(test_id=test_id)
            recoveries.append(recovery)
            if not recovery.recovered:
                break
            attempt += 1
        reason = judgement.reason()
        if judgement.disturbed and recoveries:
            reason += f"; {recoveries[-1].reason()}"
        elif attempt:
            reason += f" (measured again: the first window was disturbed; {windows[0].reason()})"
        ratios, floors = self._baseline_comparison()
        return outcome, HostRecord(
            state=judgement.state,
            reason=reason,
            remeasured=attempt > 0,
            windows=tuple(windows),
            recoveries=tuple(recoveries),
            host=host,
            baseline_ratios=ratios,
            baseline_floors=floors,
        )

    def _baseline_comparison(self) -> tuple[dict[str, float], dict[str, float]]:
        if self._canary is None or self._baseline is None:
            return {}, {}
        level = self._canary.level
        ratios = level.ratio_to(self._baseline)
        # A shift must exceed the wider of the two runs' own floors: each level is a median
        # over its session, and each run's readings strayed by up to its floor on their own.
        floors = {
            k: max(level.floors.get(k, 1.0), self._baseline.floors.get(k, 1.0)) for k in ratios
        }
        return ratios, floors

    def finish(self) -> CanarySummary | None:
        """The end-of-session readings and the summary for the run document (``None``: no canary)."""
        if self._canary is None or not self._started:
            return None
        return self._canary.finish()


def _mappings(data: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise ValueError(f"host record: {key} must be a list of mappings")
    return value


def _numbers(data: Mapping[str, object], key: str) -> dict[str, float]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise ValueError(f"host record: {key} must be a mapping")
    out: dict[str, float] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"host record: {key}.{k} must be a number, got {v!r}")
        out[str(k)] = float(v)
    return out
