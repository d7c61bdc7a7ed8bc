"""Evidence from a soak: latency drift or throttling onset, with the host's evidence beside it.

Pure (no pytest). Given a test's :class:`~pytest_roofline.measure.soak.SoakMeasurement`, it
finds the first failing window of the latency timeline (:mod:`pytest_roofline.stats.soak`) and
the window where the host's evidence says the machine started to throttle, and joins them into
one :class:`SoakAssessment`. It decides nothing; the policy escalates a test whose assessment
has a :attr:`~SoakAssessment.finding`.

Latency drift: the scan's first failing block (:func:`~pytest_roofline.stats.soak.scan_windows`),
*sustained*: every window from its onset to the end of the soak (at least a block of them),
together, is still slower than the reference beyond the margin (:func:`~pytest_roofline.stats.soak.shift_after`). A
stretch that recovers before the end is noted as a transient and not escalated: host speed
wanders for seconds at a time on a shared machine (``docs/noise.md``), and in simulation the
sustain condition cuts false alarms on slowly wandering (AR(1)) noise from 19-46% to 5-30%
while detection of steps of 10% and more is unchanged (``docs/history.md``, Soak).

Throttling onset: the first window in which a GPU clock-event reason that slows the GPU (power
cap, thermal or hardware slowdown, power brake) is on that was off in every earlier window, or
in which the mean CPU clock or the GPU's SM clock is more than :data:`CLOCK_DROP` below its
level over the reference windows. It becomes a finding only aligned with a latency rise: either
every window from the onset on is slower than the reference (one pre-specified comparison), or
the scan's sustained first failing window comes at most one window before the onset. The level
``alpha`` is split in two halves, one for the scan and one for the comparison after an onset,
so the two together keep the false-alarm rate within ``alpha`` (the sustain check only removes
findings). Throttling with no latency rise is a note, not a finding (the test ran as fast while
it lasted).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pytest_roofline.measure.counters.nvml import decode_throttle_reasons
from pytest_roofline.measure.soak import SoakMeasurement, SoakWindow
from pytest_roofline.stats.soak import SoakScan, WindowShift, scan_windows, shift_after

__all__ = [
    "CLOCK_DROP",
    "SLOWDOWN_REASONS",
    "SoakAssessment",
    "SoakFinding",
    "ThrottleOnset",
    "assess_soak",
    "host_text",
    "throttle_onset",
]

SLOWDOWN_REASONS = 0x004 | 0x008 | 0x020 | 0x040 | 0x080
"""NVML clock-event reasons that slow the GPU down: ``sw_power_cap``, ``hw_slowdown``,
``sw_thermal_slowdown``, ``hw_thermal_slowdown``, ``hw_power_brake_slowdown``. Left out: idle,
application clock settings, sync boost, display clock (none of them a slowdown under load)."""

CLOCK_DROP = 0.10
"""A clock (mean CPU, GPU SM) more than 10% below its reference level is a drop: turbo and
boost clocks move by a few percent under steady load on their own."""

Kind = Literal["drift", "throttling"]


@dataclass(frozen=True, slots=True)
class ThrottleOnset:
    """Where the host evidence says throttling began: a window index and what was seen."""

    window: int
    what: str


@dataclass(frozen=True, slots=True)
class SoakFinding:
    """The first failing window of a soak.

    :ivar kind: ``drift`` (latency rose, no throttling seen) or ``throttling`` (latency rose
        with a throttle onset aligned with it).
    :ivar window: the first failing window's index (0: the soak's first window).
    :ivar offset_s: its start, seconds into the soak.
    :ivar ratio: median latency from there ÷ the reference's, with the interval ``ci_low`` ..
        ``ci_high`` and the (adjusted) one-sided ``p_value``.
    :ivar reference: windows in the reference.
    :ivar compared: windows in the compared stretch (a block, or every window from the onset).
    :ivar host: the window's host evidence.
    :ivar throttle: what the host evidence showed at the onset, for ``throttling``.
    :ivar canary_slow: canary kinds slower than their floor in that window (the host, not the
        code, may be slow), with figures; ``None`` when none or not read.
    """

    kind: Kind
    window: int
    offset_s: float
    duration_s: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    reference: int
    compared: int
    margin: float
    host: SoakWindow
    throttle: str | None = None
    canary_slow: str | None = None

    @property
    def reason(self) -> str:
        """The escalation reason, naming the first failing window and its host evidence."""
        what = "throttling onset" if self.kind == "throttling" else "latency drift"
        text = (
            f"soak: {what} at window {self.window} (+{self.offset_s:.1f} s of "
            f"{self.duration_s:g} s): p50 x{self.ratio:.3f} [{self.ci_low:.3f}, "
            f"{self.ci_high:.3f}] against the first {self.reference} windows "
            f"(margin +{self.margin:.0%})"
        )
        if self.throttle:
            text += f"; {self.throttle}"
        text += f"; host in that window: {host_text(self.host)}"
        if self.canary_slow:
            text += (
                f"; the host canary was slow too ({self.canary_slow}): the host, not the code, "
                "may account for it"
            )
        return text


@dataclass(frozen=True, slots=True)
class SoakAssessment:
    """A soak's analysis: the scan, the throttle onset, the finding and notes."""

    soak: SoakMeasurement
    scan: SoakScan
    onset: ThrottleOnset | None
    finding: SoakFinding | None
    notes: tuple[str, ...]
    margin: float
    # A stretch slower beyond the margin that did not last (noted, not escalated).
    transient: WindowShift | None = None

    @property
    def summary(self) -> str:
        """One line: what was soaked and what it showed."""
        soak = self.soak
        head = f"soak {soak.duration_s:g} s, {len(soak.windows)} windows of {soak.window_s:g} s"
        if self.finding is not None:
            f = self.finding
            what = "throttling onset" if f.kind == "throttling" else "latency drift"
            return f"{head}: {what} at window {f.window} (+{f.offset_s:.1f} s), p50 x{f.ratio:.2f}"
        if self.scan.reason:
            return f"{head}: not analysed ({self.scan.reason})"
        if self.transient is not None:
            return (
                f"{head}: no sustained rise (a transient x{self.transient.ratio:.2f} from "
                f"window {self.transient.onset} did not last)"
            )
        return (
            f"{head}: stable (p50 within +{self.margin:.0%} of the first "
            f"{self.scan.reference} windows)"
        )


def host_text(window: SoakWindow) -> str:
    """A window's host evidence in words; missing figures say so."""
    host = window.host
    parts = [
        f"CPU share {host.cpu_share:.2f}" if host.cpu_share is not None else "CPU share n/a",
        f"steal {host.steal:.1%}" if host.steal is not None else "steal n/a",
        f"CPU clock {host.cpu_mhz:.0f} MHz" if host.cpu_mhz is not None else "CPU clock unreadable",
    ]
    if host.canary:
        worst = max(host.canary, key=lambda k: host.canary[k])
        parts.append(f"canary {worst} x{host.canary[worst]:.2f}")
    gpu = host.gpu
    if gpu:
        if "sm_clock_mhz" in gpu:
            parts.append(f"GPU SM {gpu['sm_clock_mhz']:.0f} MHz")
        if "temperature_c" in gpu:
            parts.append(f"GPU {gpu['temperature_c']:.0f} °C")
        if "power_w" in gpu:
            parts.append(f"GPU {gpu['power_w']:.0f} W")
        reasons = int(gpu.get("throttle_reasons", 0))
        if reasons:
            parts.append(f"GPU reasons {', '.join(decode_throttle_reasons(reasons))}")
    return ", ".join(parts)


def _level(values: Sequence[float | None]) -> float | None:
    seen = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return float(np.median(seen)) if seen else None


def throttle_onset(windows: Sequence[SoakWindow], reference: int) -> ThrottleOnset | None:
    """The first window where a slowdown reason turns on or a clock drops (module docstring)."""
    found: list[ThrottleOnset] = []
    seen_bits = 0
    for index, window in enumerate(windows):
        bits = int(window.host.gpu.get("throttle_reasons", 0)) & SLOWDOWN_REASONS
        new = bits & ~seen_bits
        if index > 0 and new:
            names = ", ".join(decode_throttle_reasons(new))
            found.append(ThrottleOnset(index, f"GPU clock-event reasons turned on: {names}"))
            break
        seen_bits |= bits
    clocks = (
        ("mean CPU clock", [w.host.cpu_mhz for w in windows]),
        ("GPU SM clock", [w.host.gpu.get("sm_clock_mhz") for w in windows]),
    )
    for label, values in clocks:
        for index in range(1, len(windows)):
            level = _level(values[: min(reference, index)])
            value = values[index]
            if level is None or value is None:
                continue
            if value < level * (1 - CLOCK_DROP):
                found.append(
                    ThrottleOnset(
                        index,
                        f"{label} dropped to {value:.0f} MHz from {level:.0f} MHz "
                        f"(-{1 - value / level:.0%})",
                    )
                )
                break
    return min(found, key=lambda o: o.window) if found else None


def _canary_slow(window: SoakWindow, floors: dict[str, float]) -> str | None:
    slow = [
        f"{kind} x{ratio:.2f} (floor x{floors[kind]:.2f})"
        for kind, ratio in window.host.canary.items()
        if kind in floors and ratio > floors[kind]
    ]
    return ", ".join(slow) or None


def assess_soak(soak: SoakMeasurement, *, margin: float, alpha: float = 0.05) -> SoakAssessment:
    """Analyse a soak: the first failing window, throttling onset, and notes (module docstring).

    :param margin: the smallest latency rise that counts (the gate's ``min_effect`` for p50).
    :param alpha: false-alarm level of the whole soak analysis.
    """
    p50 = soak.p50_s
    scan = scan_windows(p50, margin=margin, alpha=alpha / 2)
    onset = throttle_onset(soak.windows, scan.reference)
    notes: list[str] = []
    shift: WindowShift | None = None
    transient: WindowShift | None = None
    kind: Kind = "drift"
    if onset is not None:
        shift = shift_after(p50, onset.window, margin=margin, alpha=alpha / 2)
        kind = "throttling"
    if shift is None and scan.shift is not None:
        found = scan.shift
        # Sustained: everything from the onset on, at least a block of windows, is still
        # slower. A stretch that recovers before the end is a transient (host speed wanders for
        # seconds here), noted only; so is one that begins in the last block (too short to say).
        lasting = len(soak.windows) - found.onset >= scan.block
        if not lasting or shift_after(p50, found.onset, margin=margin, alpha=alpha / 2) is None:
            transient = found
            notes.append(
                f"soak: windows from {found.onset} (+{soak.windows[found.onset].offset_s:.1f} s) "
                f"ran x{found.ratio:.2f} the first windows' median, "
                + (
                    "then recovered before the end"
                    if lasting
                    else f"but fewer than {scan.block} windows remained to show it lasts"
                )
                + ": a transient, not escalated"
            )
        else:
            shift = found
            aligned = onset is not None and onset.window <= found.onset + 1
            kind = "throttling" if aligned else "drift"
    if shift is None and onset is not None:
        notes.append(
            f"soak: {onset.what} at window {onset.window} "
            f"(+{soak.windows[onset.window].offset_s:.1f} s), with no sustained latency rise "
            f"beyond +{margin:.0%}"
        )
    finding = None
    if shift is not None:
        window = soak.windows[shift.onset]
        reference = scan.reference
        if shift.method == "after" and onset is not None:
            reference = min(scan.reference, onset.window)
        finding = SoakFinding(
            kind=kind,
            window=shift.onset,
            offset_s=window.offset_s,
            duration_s=soak.duration_s,
            ratio=shift.ratio,
            ci_low=shift.ci.low,
            ci_high=shift.ci.high,
            p_value=shift.p_value,
            reference=reference,
            compared=shift.windows,
            margin=margin,
            host=window,
            throttle=(
                f"{onset.what} at window {onset.window}"
                if kind == "throttling" and onset is not None
                else None
            ),
            canary_slow=_canary_slow(window, dict(soak.canary_floors)),
        )
    return SoakAssessment(
        soak=soak,
        scan=scan,
        onset=onset,
        finding=finding,
        notes=tuple(notes),
        margin=margin,
        transient=transient,
    )
