"""Per-test host evidence from fixture /proc files, a fake clock and fake CPU time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_roofline.measure.host import (
    HOST_FIELDS,
    HostProbe,
    read_loadavg,
    read_proc_stat,
    read_status_switches,
)

# proc(5): cpu user nice system idle iowait irq softirq steal guest guest_nice
STAT_BEFORE = """cpu  40132 4 7210 76267 1055 0 249 570 0 0
cpu0 12659 2 2663 46761 255 0 71 281 0 0
cpu1 27472 2 4546 29505 800 0 178 289 0 0
intr 1 2 3
ctxt 123456
"""
# 100 ticks later (0.5 s on 2 CPUs at 100 Hz): 60 user, 10 system, 10 idle, 20 steal.
STAT_AFTER = """cpu  40192 4 7220 76277 1055 0 249 590 0 0
cpu0 12689 2 2668 46766 255 0 71 291 0 0
cpu1 27502 2 4551 29510 800 0 178 299 0 0
"""

STATUS = """Name:\tpython
State:\tR (running)
voluntary_ctxt_switches:\t{vol}
nonvoluntary_ctxt_switches:\t{nonvol}
"""


class Fake:
    def __init__(self) -> None:
        self.now_ns = 0
        self.cpu_s = 10.0
        self.switches: int | None = 100

    def clock(self) -> int:
        return self.now_ns

    def cpu_time(self) -> float:
        return self.cpu_s

    def rusage_switches(self) -> int | None:
        return self.switches


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    (tmp_path / "self").mkdir()
    (tmp_path / "stat").write_text(STAT_BEFORE)
    (tmp_path / "self" / "status").write_text(STATUS.format(vol=5, nonvol=40))
    (tmp_path / "loadavg").write_text("1.44 0.97 0.48 3/86 9595\n")
    return tmp_path


def probe_for(proc: Path, fake: Fake) -> HostProbe:
    return HostProbe(
        stat_path=str(proc / "stat"),
        status_path=str(proc / "self" / "status"),
        loadavg_path=str(proc / "loadavg"),
        clock=fake.clock,
        cpu_time=fake.cpu_time,
        involuntary_switches=fake.rusage_switches,
        clock_ticks_per_s=100,
    )


def test_a_window_with_steal_and_a_busy_neighbour_reads_as_such(proc: Path) -> None:
    fake = Fake()
    probe = probe_for(proc, fake)
    before = probe.snapshot()
    fake.now_ns += 500_000_000
    fake.cpu_s += 0.25  # half a CPU for 0.5 s: 25 of the 100 ticks
    fake.switches = 130
    (proc / "stat").write_text(STAT_AFTER)
    (proc / "loadavg").write_text("2.10 1.00 0.50 4/90 9600\n")

    evidence = probe.evidence(before, probe.snapshot())

    assert evidence.status == dict.fromkeys(HOST_FIELDS, "ok")
    assert evidence.wall_s == pytest.approx(0.5)
    assert evidence.cpu_share == pytest.approx(0.5)
    assert evidence.involuntary_switches == 30
    assert evidence.stat_ticks == 100
    assert evidence.steal_share == pytest.approx(0.20)
    # 100 ticks - 10 idle - 20 steal = 70 busy, 25 of them ours: others used 45%.
    assert evidence.other_cpu_share == pytest.approx(0.45)
    assert (evidence.load_1m, evidence.runnable_tasks) == (2.10, 4)
    assert evidence.notes == ()
    assert json.loads(json.dumps(evidence.to_dict()))["steal_share"] == pytest.approx(0.2)


def test_switches_come_from_proc_status_when_getrusage_is_missing(proc: Path) -> None:
    fake = Fake()
    fake.switches = None
    probe = probe_for(proc, fake)
    before = probe.snapshot()
    (proc / "self" / "status").write_text(STATUS.format(vol=9, nonvol=47))
    fake.now_ns += 10_000_000
    evidence = probe.evidence(before, probe.snapshot())
    assert evidence.status["involuntary_switches"] == "ok"
    assert evidence.involuntary_switches == 7
    assert "main thread only" in " ".join(evidence.notes)


def test_unreadable_proc_files_give_unsupported_statuses_not_errors(tmp_path: Path) -> None:
    fake = Fake()
    fake.switches = None
    missing = tmp_path / "nowhere"
    probe = HostProbe(
        stat_path=str(missing / "stat"),
        status_path=str(missing / "status"),
        loadavg_path=str(missing / "loadavg"),
        clock=fake.clock,
        cpu_time=fake.cpu_time,
        involuntary_switches=fake.rusage_switches,
        clock_ticks_per_s=100,
    )
    before = probe.snapshot()
    fake.now_ns += 100_000_000
    fake.cpu_s += 0.1
    evidence = probe.evidence(before, probe.snapshot())
    assert evidence.status == {
        "cpu_share": "ok",
        "involuntary_switches": "unsupported",
        "steal_share": "unsupported",
        "other_cpu_share": "unsupported",
        "load": "unsupported",
    }
    assert evidence.cpu_share == pytest.approx(1.0)
    assert evidence.steal_share is None and evidence.load_1m is None
    assert len(evidence.notes) == 3


def test_a_kernel_without_a_steal_column_has_steal_unsupported(proc: Path) -> None:
    fake = Fake()
    (proc / "stat").write_text("cpu  100 0 50 1000 5 0 1\n")
    probe = probe_for(proc, fake)
    before = probe.snapshot()
    (proc / "stat").write_text("cpu  150 0 60 1040 5 0 1\n")
    fake.now_ns += 500_000_000
    fake.cpu_s += 0.3
    evidence = probe.evidence(before, probe.snapshot())
    assert evidence.status["steal_share"] == "unsupported"
    assert evidence.status["other_cpu_share"] == "ok"
    # 100 ticks, 60 busy, 30 ours.
    assert evidence.other_cpu_share == pytest.approx(0.30)


def test_a_window_shorter_than_a_clock_tick_has_invalid_shares(proc: Path) -> None:
    fake = Fake()
    probe = probe_for(proc, fake)
    before = probe.snapshot()
    fake.now_ns += 1_000_000  # 1 ms: /proc/stat did not move
    evidence = probe.evidence(before, probe.snapshot())
    assert evidence.status["steal_share"] == "invalid"
    assert evidence.status["other_cpu_share"] == "invalid"
    assert evidence.stat_ticks == 0
    assert evidence.status["cpu_share"] == "ok"


def test_around_fills_in_the_evidence_when_the_block_ends(proc: Path) -> None:
    fake = Fake()
    probe = probe_for(proc, fake)
    with probe.around() as window:
        assert window.evidence is None
        fake.now_ns += 200_000_000
        fake.cpu_s += 0.2
    assert window.evidence is not None
    assert window.evidence.cpu_share == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.44 0.97 0.48 3/86 9595\n", (1.44, 3)),
        ("0.10 0.20 0.30\n", (0.10, None)),
        ("garbage\n", None),
    ],
)
def test_loadavg_is_parsed_with_its_runnable_count(
    tmp_path: Path, text: str, expected: tuple[float, int | None] | None
) -> None:
    path = tmp_path / "loadavg"
    path.write_text(text)
    assert read_loadavg(str(path)) == expected


def test_malformed_proc_files_read_as_none(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu0 1 2 3 4\nintr 5\n")  # no aggregate line
    assert read_proc_stat(str(stat)) is None
    stat.write_text("cpu  1 two 3 4\n")
    assert read_proc_stat(str(stat)) is None
    status = tmp_path / "status"
    status.write_text("Name:\tx\n")
    assert read_status_switches(str(status)) is None


def test_the_real_host_gives_ok_cpu_share_and_load_on_linux() -> None:
    probe = HostProbe()
    before = probe.snapshot()
    sum(i * i for i in range(20000))
    evidence = probe.evidence(before, probe.snapshot())
    assert evidence.status["cpu_share"] == "ok"
    assert set(evidence.status) == set(HOST_FIELDS)
    if Path("/proc/loadavg").exists():
        assert evidence.status["load"] == "ok"
        assert evidence.status["involuntary_switches"] == "ok"
