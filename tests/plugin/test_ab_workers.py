"""Paired mode on persistent workers: real execnet workers on two small directories.

Each side is a git-less directory with a ``src/sidepkg`` package (its import root) and a test
file. ``sidepkg.SIDE`` differs (1 baseline, 2 candidate) and every test records it as a quality
value, so which tree a window ran is read from the window's payload, not from timings. Windows
are 20 ms; nothing here asserts on speed.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import platform
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline.ab.workers import (
    FIRST_WARMUP_S,
    PairedWorkers,
    SideSpec,
    TestWindows,
    WindowSettings,
    WorkerError,
    pair_cpu,
    pair_order,
    usable_cpus,
)

from .conftest import FAKE_CLOCK_CONFTEST

ROOFLINE_YAML = """
target: ci-runner
targets:
  ci-runner: {peak_flops_per_s: {fp64: 4.0e10}, peak_bytes_per_s: {dram: 2.0e10}}
"""
INI = "[pytest]\nroofline_warmup = 1ms\nroofline_min_samples = 5\n"
PACKAGE = "SIDE = {side}\nN = {n}\n\n\ndef work():\n    return sum(i * i for i in range(N))\n"
TESTS = """
import os

import numpy as np
import pytest

import sidepkg

SETUPS = {{"module": 0, "function": 0}}


@pytest.fixture(scope="module")
def module_resource():
    SETUPS["module"] += 1
    yield
    SETUPS["module"] -= 1


@pytest.fixture
def function_resource():
    SETUPS["function"] += 1
    return SETUPS["function"]


def test_work(roofline):
    roofline(sidepkg.work)
    roofline.record_quality("side", sidepkg.SIDE, higher_is_better=True)


def test_fixture_scopes(roofline, module_resource, function_resource):
    roofline(sidepkg.work)
    roofline.record_quality("module_setups", SETUPS["module"], higher_is_better=True)
    roofline.record_quality("function_setups", function_resource, higher_is_better=True)


def test_other(roofline):
    roofline(sidepkg.work)


def test_fails_on_candidate(roofline):
    assert sidepkg.SIDE == 1, "broken on this side"
    roofline(sidepkg.work)


def test_fresh_memory(roofline):
    fresh = np.empty(8192)  # 64 KiB: from the heap, where the window's layout shift leaves it
    roofline(sidepkg.work)
    roofline.record_quality("address", float(fresh.ctypes.data), higher_is_better=True)


def test_not_measured():
    pass
{extra}
"""
# No replacement pairs: under load the real canary may drop a pair, and these tests count windows.
FAST = WindowSettings(
    window_s=0.02,
    min_pairs=2,
    max_pairs=4,
    first_warmup_s=0.005,
    rewarm_s=0.001,
    max_replacements=0,
)
# hypothesis's plugin (when installed) only slows each worker's start.
ARGS = ("-p", "no:hypothesispytest", "tests")


def make_side(root: Path, side: int, *, n: int, extra: str = "") -> Path:
    (root / "src" / "sidepkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "sidepkg" / "__init__.py").write_text(PACKAGE.format(side=side, n=n))
    (root / "tests" / "test_perf.py").write_text(TESTS.format(extra=extra))
    (root / "roofline.yaml").write_text(ROOFLINE_YAML)
    (root / "pytest.ini").write_text(INI)
    return root


def spec(side: str, root: Path, python: str = sys.executable) -> SideSpec:
    return SideSpec(
        side=side,  # type: ignore[arg-type]
        python=python,
        workdir=root,
        sys_path=(root / "src",),
        env={"PYTHONPATH": str(root / "src")},
        pytest_args=ARGS,
    )


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = make_side(tmp_path_factory.mktemp("baseline"), 1, n=200)
    cand = make_side(
        tmp_path_factory.mktemp("candidate"),
        2,
        n=2000,
        extra="\n\ndef test_new_in_candidate(roofline):\n    roofline(sidepkg.work)\n",
    )
    return base, cand


@pytest.fixture(scope="module")
def workers(sides: tuple[Path, Path]) -> Iterator[PairedWorkers]:
    base, cand = sides
    with PairedWorkers(spec("baseline", base), spec("candidate", cand), FAST) as running:
        yield running


def test_both_workers_collect_their_own_tree_once(
    workers: PairedWorkers, sides: tuple[Path, Path]
) -> None:
    base, cand = workers.collected["baseline"], workers.collected["candidate"]
    assert base.pid != cand.pid and os.getpid() not in (base.pid, cand.pid)
    assert Path(base.rootdir) == sides[0] and Path(cand.rootdir) == sides[1]
    assert "tests/test_perf.py::test_work" in base.ids
    assert "tests/test_perf.py::test_not_measured" not in base.measured
    # The probe record says where each side imported its package from.
    assert base.probe["modules"]["sidepkg"].startswith(str(sides[0] / "src"))
    assert cand.probe["modules"]["sidepkg"].startswith(str(sides[1] / "src"))


def test_the_difference_between_the_collections_is_reported(workers: PairedWorkers) -> None:
    both, only_base, only_cand, unmeasured = workers.common_tests()
    assert only_base == ()
    assert only_cand == ("tests/test_perf.py::test_new_in_candidate",)
    assert "tests/test_perf.py::test_new_in_candidate" not in both
    assert unmeasured == ("tests/test_perf.py::test_not_measured",)


def test_windows_alternate_in_abba_order_and_do_not_overlap(workers: PairedWorkers) -> None:
    test = workers.measure_test("tests/test_perf.py::test_other")
    assert test.stop == "max_pairs" and test.pairs == 4 and test.error is None
    by_time = sorted(test.windows, key=lambda w: w.started_ns)
    assert [w.side[0] for w in by_time] == list("bccbbccb")
    assert [w.side for w in by_time] == [s for p in range(4) for s in pair_order(p)]
    for earlier, later in itertools.pairwise(by_time):
        assert earlier.finished_ns <= later.started_ns
    assert [w.pair for w in by_time] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_each_window_brings_back_its_sides_samples(workers: PairedWorkers) -> None:
    test = workers.measure_test("tests/test_perf.py::test_work")
    assert len(test.base_windows) == len(test.cand_windows) == 4
    for window in test.windows:
        assert window.samples_s.dtype == np.float64 and window.samples_s.size >= 5
        assert np.all(window.samples_s > 0)
        assert window.batch_size >= 1 and window.stop_reason in ("budget", "max_samples")
        side = window.result["measurement"]["quality"]["side"]["value"]
        assert side == (1.0 if window.side == "baseline" else 2.0)
        # Each window samples for its budget (the sampler stops only once it is spent).
        assert window.sampling_s >= FAST.window_s
        # The first window of a test on each side warms up for the plugin's warm-up (1 ms in
        # INI: set, so used as given), later ones for rewarm_s (the warm-up loop runs until
        # its time is spent).
        assert window.warmup_s >= (0.001 if window.index == 0 else FAST.rewarm_s)


def addresses(test: TestWindows, side: str) -> list[float]:
    return [
        w.result["measurement"]["quality"]["address"]["value"]
        for w in test.windows
        if w.side == side
    ]


# Where malloc puts a freed-and-reallocated block is glibc's behaviour; another allocator may
# differ, and the shift's pieces are sized for glibc's mmap threshold.
GLIBC = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc placement")


@GLIBC
def test_each_window_allocates_after_a_heap_block_of_its_own_random_size(
    workers: PairedWorkers,
) -> None:
    test = workers.measure_test("tests/test_perf.py::test_fresh_memory")
    drawn = {}
    for side in ("baseline", "candidate"):
        shifts = [w.layout_shift_bytes for w in test.windows if w.side == side]
        assert all(0 <= s <= FAST.layout_shift_bytes for s in shifts)
        assert len(set(shifts)) == len(shifts) == 4
        drawn[side] = shifts
        # So the test's fresh array moves between windows (it may still land in a free hole of
        # the heap that some shifts leave alone, so not necessarily in all four; without the
        # shift, the test below, later windows mostly get the same address).
        assert len(set(addresses(test, side)[1:])) >= 2
    assert drawn["baseline"] != drawn["candidate"]  # each worker draws its own sizes


@GLIBC
def test_without_the_shift_a_worker_serves_each_window_the_same_memory(
    sides: tuple[Path, Path],
) -> None:
    fixed = dataclasses.replace(FAST, layout_shift_bytes=0)
    with PairedWorkers(spec("baseline", sides[0]), spec("candidate", sides[1]), fixed) as running:
        test = running.measure_test("tests/test_perf.py::test_fresh_memory")
    assert {w.layout_shift_bytes for w in test.windows} == {0}
    for side in ("baseline", "candidate"):
        # The freed block is handed back: most later windows get the same address (a small
        # object the worker keeps between windows can move one of them).
        later = addresses(test, side)[1:]
        assert max(later.count(address) for address in later) >= 2


def test_module_fixtures_persist_across_windows_and_function_fixtures_are_fresh(
    workers: PairedWorkers,
) -> None:
    test = workers.measure_test("tests/test_perf.py::test_fixture_scopes")
    base = [w.result["measurement"]["quality"] for w in test.windows if w.side == "baseline"]
    assert {q["module_setups"]["value"] for q in base} == {1.0}
    counts = [q["function_setups"]["value"] for q in base]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)


def test_interleaved_tests_of_one_module_keep_its_fixtures_set_up(
    workers: PairedWorkers,
) -> None:
    nodeids = [f"tests/test_perf.py::{name}" for name in ("test_fixture_scopes", "test_other")]
    tests = workers.measure_tests(nodeids)
    assert all(t.pairs == FAST.max_pairs for t in tests.values())
    scopes = tests[nodeids[0]]
    # Windows of test_other came between (one monotonic clock for every worker) ...
    first, last = scopes.windows[0].started_ns, scopes.windows[-1].started_ns
    assert any(first < w.started_ns < last for w in tests[nodeids[1]].windows)
    # ... and the module fixture was set up once all along.
    qualities = [w.result["measurement"]["quality"] for w in scopes.windows]
    assert {q["module_setups"]["value"] for q in qualities} == {1.0}


def test_the_stopping_rule_is_asked_after_whole_abba_blocks_and_can_stop_a_test(
    workers: PairedWorkers,
) -> None:
    looks: list[tuple[int, int]] = []

    def should_continue(
        nodeid: str,
        base: Sequence[np.ndarray],
        cand: Sequence[np.ndarray],
        worker_pairs: Sequence[int],
        dropped: int,
    ) -> bool:
        assert nodeid == "tests/test_perf.py::test_other"
        assert list(worker_pairs) == [0, 0]  # one pair of workers measured both pairs
        looks.append((len(base), len(cand)))
        return False

    test = workers.measure_test("tests/test_perf.py::test_other", should_continue)
    assert looks == [(2, 2)]
    assert test.stop == "decided" and test.pairs == 2


def test_a_test_that_fails_on_one_side_is_an_error_for_that_test_only(
    workers: PairedWorkers,
) -> None:
    run = workers.run(
        nodeids=["tests/test_perf.py::test_fails_on_candidate", "tests/test_perf.py::test_other"]
    )
    failed = run.tests["tests/test_perf.py::test_fails_on_candidate"]
    assert failed.stop == "error"
    assert failed.error is not None
    assert "candidate side" in failed.error and "broken on this side" in failed.error
    assert failed.error_outcome == "failed"
    # The baseline's first window ran; the workers stay usable for the next test.
    assert len(failed.base_windows) == 1 and failed.cand_windows == []
    assert run.tests["tests/test_perf.py::test_other"].stop == "max_pairs"


def test_asking_for_a_test_one_side_does_not_measure_names_that_side(
    workers: PairedWorkers,
) -> None:
    with pytest.raises(WorkerError, match="not a measured test on the baseline side") as info:
        workers.run(nodeids=["tests/test_perf.py::test_new_in_candidate"])
    assert info.value.side == "baseline"


def test_a_worker_that_dies_is_reported_and_no_process_is_left(tmp_path: Path) -> None:
    dies = "\n\ndef test_dies(roofline):\n    if sidepkg.SIDE == 2:\n        os._exit(3)\n    roofline(sidepkg.work)\n"
    base = make_side(tmp_path / "a", 1, n=200, extra=dies)
    cand = make_side(tmp_path / "b", 2, n=200, extra=dies)
    workers = PairedWorkers(spec("baseline", base), spec("candidate", cand), FAST)
    with pytest.raises(WorkerError, match="candidate worker died") as info, workers:
        pids = [collected.pid for collected in workers.collected.values()]
        workers.measure_test("tests/test_perf.py::test_dies")
    assert info.value.side == "candidate"
    assert info.value.nodeid == "tests/test_perf.py::test_dies"
    assert all(gone(pid) for pid in pids)


def test_a_hung_test_times_out_naming_the_side_and_the_worker_is_killed(tmp_path: Path) -> None:
    hangs = "\n\ndef test_hangs(roofline):\n    import time\n    if sidepkg.SIDE == 1:\n        time.sleep(600)\n    roofline(sidepkg.work)\n"
    base = make_side(tmp_path / "a", 1, n=200, extra=hangs)
    cand = make_side(tmp_path / "b", 2, n=200, extra=hangs)
    settings = WindowSettings(
        window_s=0.02, min_pairs=2, max_pairs=2, rewarm_s=0.001, window_timeout_s=1.0
    )
    workers = PairedWorkers(spec("baseline", base), spec("candidate", cand), settings)
    with (
        pytest.raises(WorkerError, match="baseline worker did not answer within 1 s") as info,
        workers,
    ):
        pids = [collected.pid for collected in workers.collected.values()]
        workers.measure_test("tests/test_perf.py::test_hangs")
    assert info.value.nodeid == "tests/test_perf.py::test_hangs"
    assert all(gone(pid) for pid in pids)


def test_a_collection_error_on_one_side_names_that_side(tmp_path: Path) -> None:
    base = make_side(tmp_path / "a", 1, n=200)
    cand = make_side(tmp_path / "b", 2, n=200)
    (cand / "tests" / "test_broken.py").write_text("import no_such_module_here\n")
    with (
        pytest.raises(WorkerError, match="candidate side has collection errors") as info,
        PairedWorkers(spec("baseline", base), spec("candidate", cand), FAST),
    ):
        pass
    assert "no_such_module_here" in str(info.value)
    assert info.value.side == "candidate"


def test_a_missing_interpreter_names_the_side(tmp_path: Path) -> None:
    base = make_side(tmp_path / "a", 1, n=200)
    missing = str(tmp_path / "no-python")
    with (
        pytest.raises(WorkerError, match="baseline worker could not start") as info,
        PairedWorkers(spec("baseline", base, missing), spec("candidate", base), FAST),
    ):
        pass
    assert info.value.side == "baseline"


def test_stopping_ends_both_processes(sides: tuple[Path, Path]) -> None:
    base, cand = sides
    with PairedWorkers(spec("baseline", base), spec("candidate", cand), FAST) as workers:
        pids = [collected.pid for collected in workers.collected.values()]
        workers.measure_test("tests/test_perf.py::test_other")
    assert all(gone(pid) for pid in pids)
    # The final probe record (after the windows ran) came back from both sides.
    assert set(workers.final_probes) == {"baseline", "candidate"}


RUN_FINISHED_CONFTEST = """
from pathlib import Path


def pytest_collection_finish(session):
    Path(__file__).with_name("collected.txt").write_text("this conftest is loaded")


def pytest_roofline_run_finished(config, document):
    Path(__file__).with_name("run_finished.txt").write_text(str(len(document.tests)))
"""


def test_workers_leave_the_run_to_the_controller(tmp_path: Path) -> None:
    # A worker's own end-of-run analysis would be thrown away, and a user's run-finished hook
    # (a dashboard upload) would fire once per worker with an empty run.
    base = make_side(tmp_path / "a", 1, n=200)
    cand = make_side(tmp_path / "b", 2, n=200)
    for root in (base, cand):
        (root / "tests" / "conftest.py").write_text(RUN_FINISHED_CONFTEST)
        (root / "pytest.ini").write_text(INI + "roofline_json = worker-run.json\n")
    with PairedWorkers(spec("baseline", base), spec("candidate", cand), FAST) as workers:
        test = workers.measure_test("tests/test_perf.py::test_other")
    assert test.error is None and test.pairs >= FAST.min_pairs
    assert set(workers.final_probes) == {"baseline", "candidate"}
    for root in (base, cand):
        assert (root / "tests" / "collected.txt").exists()  # the hook's conftest was loaded
        assert not (root / "tests" / "run_finished.txt").exists()
        assert not list(root.rglob("worker-run.json"))  # the ini's output: the workers' run


def test_pairs_of_workers_take_the_window_pairs_in_turn(sides: tuple[Path, Path]) -> None:
    base, cand = sides
    groups: list[list[int]] = []

    def should_continue(
        name: str,
        base_windows: Sequence[np.ndarray],
        cand_windows: Sequence[np.ndarray],
        worker_pairs: Sequence[int],
        dropped: int,
    ) -> bool:
        groups.append(list(worker_pairs))
        return True

    settings = dataclasses.replace(FAST, worker_pairs=2)
    with PairedWorkers(spec("baseline", base), spec("candidate", cand), settings) as workers:
        pids = {info.pid for pair in workers.collected_pairs for info in pair.values()}
        assert len(workers.collected_pairs) == 2 and len(pids) == 4  # four processes
        test = workers.measure_test("tests/test_perf.py::test_other", should_continue)
    assert all(gone(pid) for pid in pids)
    # Pair p ran on worker pair p % 2 (a pair the canary dropped is replaced by the next).
    turns = [p % 2 for p in range(test.pairs)]
    for side in ("baseline", "candidate"):
        assert [w.worker_pair for w in test.windows if w.side == side] == turns
    kept = tuple(k for p, k in enumerate(turns) if p not in test.dropped)
    assert test.kept_worker_pairs == kept
    # The stop rule was told which worker pair measured each kept pair.
    assert groups and all(set(g) <= {0, 1} for g in groups)
    # Every worker's final probe came back, pair by pair.
    assert [set(probes) for probes in workers.final_probe_pairs] == [{"baseline", "candidate"}] * 2


def test_a_missing_working_directory_names_the_side(tmp_path: Path) -> None:
    base = make_side(tmp_path / "a", 1, n=200)
    with (
        pytest.raises(WorkerError, match="baseline side's working directory") as info,
        PairedWorkers(spec("baseline", tmp_path / "gone"), spec("candidate", base), FAST),
    ):
        pass
    assert info.value.side == "baseline"


# A scripted host: both sides time samples and canary on the fake clock (tests/plugin/conftest);
# the candidate's canary runs 4x slower in the reading after its third window, which is also the
# "before" of its fourth (a recent reading is reused), so its windows 3 and 4 read disturbed.
CANARY_CONFTEST = (
    FAKE_CLOCK_CONFTEST
    + """
import pathlib, zlib
import numpy as np
import sidepkg
from pytest_roofline.measure.canary import Canary, CanaryKernels

HERE = pathlib.Path(__file__).parent
WINDOWS = {"n": 0}

def kernel(ns):
    def call():
        slow = sidepkg.SIDE == 2 and WINDOWS["n"] == 3
        advance(ns * 1e-9 * (4.0 if slow else 1.0))
    return call

@pytest.hookimpl
def pytest_roofline_canary(config):
    if not (HERE / "CANARY").exists():
        return None  # the fake clock without a canary: the canary is off
    kernels = CanaryKernels(
        calls={"python": kernel(10_000), "stream": kernel(20_000)},
        spec={"python": "fake loop", "stream": "fake triad"},
    )
    return Canary(kernels, clock=CLOCK)

@pytest.fixture
def work():
    WINDOWS["n"] += 1
    rng = np.random.default_rng([sidepkg.SIDE, WINDOWS["n"]])
    def call():
        advance(1e-3 * rng.lognormal(0.0, 0.03))
    return call
"""
)
SCRIPTED = WindowSettings(
    window_s=0.02, min_pairs=4, max_pairs=8, first_warmup_s=0.005, rewarm_s=0.001
)


def scripted_side(root: Path, side: int, *, canary: bool) -> Path:
    make_side(root, side, n=10)
    (root / "tests" / "conftest.py").write_text(CANARY_CONFTEST)
    (root / "tests" / "test_perf.py").write_text(
        "def test_kernel(roofline, work):\n    roofline(work)\n"
    )
    if canary:
        (root / "tests" / "CANARY").write_text("")
    return root


def test_pairs_with_a_disturbed_window_are_dropped_and_the_canary_is_off_without_a_hook(
    tmp_path: Path,
) -> None:
    nodeid = "tests/test_perf.py::test_kernel"
    seen: list[int] = []

    def should_continue(
        name: str,
        base: Sequence[np.ndarray],
        cand: Sequence[np.ndarray],
        worker_pairs: Sequence[int],
        dropped: int,
    ) -> bool:
        seen.append(len(base))
        return True

    base = scripted_side(tmp_path / "a", 1, canary=True)
    cand = scripted_side(tmp_path / "b", 2, canary=True)
    with PairedWorkers(spec("baseline", base), spec("candidate", cand), SCRIPTED) as workers:
        test = workers.measure_test(nodeid, should_continue)
    # The two dropped pairs are replaced: 10 pairs run, 8 kept (max_pairs).
    assert test.pairs == 10 and test.stop == "max_pairs"
    states = [(w.side, w.index, w.canary.state if w.canary else None) for w in test.windows]
    disturbed = [(side, index) for side, index, state in states if state == "disturbed"]
    assert disturbed == [("candidate", 2), ("candidate", 3)], states
    assert all(state in ("quiet", "disturbed") for _, _, state in states)
    assert [p.state for p in test.paired_canary] == [
        "quiet", "quiet", "disturbed_b", "disturbed_b", *["quiet"] * 6,
    ]  # fmt: skip
    assert test.dropped == (2, 3)
    kept_base, kept_cand = test.kept
    assert len(kept_base) == len(kept_cand) == 8
    # The stop rule sees the kept pairs only, at kept counts 4 and 6: at 4 pairs none can go
    # yet (min_pairs remain); the disturbed two go once 6 pairs have run, and the look at 6
    # kept pairs comes after pair 8.
    assert seen == [4, 6]
    assert test.canary_s > 0

    # The same fake clock without a canary hook: no judgement, nothing dropped.
    (base / "tests" / "CANARY").unlink()
    (cand / "tests" / "CANARY").unlink()
    with PairedWorkers(spec("baseline", base), spec("candidate", cand), SCRIPTED) as workers:
        test = workers.measure_test(nodeid)
    assert all(w.canary is None for w in test.windows)
    assert test.dropped == () and len(test.kept[0]) == 8


def test_a_worker_takes_the_host_roofs_seeded_in_its_store_without_probing_the_host(
    tmp_path: Path,
) -> None:
    # Roofs far below any real machine's, marked busy: a drift probe would read this host
    # faster and calibrate it again, and any new calibration (busy or not) would replace them.
    # A worker takes the roofs its controller seeded, as they are.
    from dataclasses import replace

    from pytest_roofline.hardware.calibration import HostCalibration, calibration_key
    from pytest_roofline.store import Store

    low = HostCalibration(
        peak_flops_per_s={"fp64": 1e3, "fp32": 2e3},
        peak_bytes_per_s={"dram": 1e3, "llc": 4e3},
        dispatch_floor_s=3e-7,
        seconds_taken=1.5,
        threads=2,
        key=calibration_key(),
        busy=True,
        busy_reason="seeded by the test",
        created=1_795_000_000.0,
        spread={},
        rates={"dram.add": 1e3, "gemm.fp64": 1e3},
        sizes={"gemm_n.fp64": 64},
        reps=7,
    )
    specs = []
    for number, side in enumerate(("baseline", "candidate"), start=1):
        root = make_side(tmp_path / side, number, n=200)
        (root / "roofline.yaml").write_text("target: host\n")
        store = tmp_path / f"{side}.sqlite"
        with Store.open(store, create=True) as seeded:
            seeded.put_calibration(low.key, low.to_dict())
        specs.append(replace(spec(side, root), store_path=store))
    with PairedWorkers(specs[0], specs[1], FAST) as running:
        for side in ("baseline", "candidate"):
            target = running.collected[side].target  # type: ignore[index]
            assert target["peak_flops_per_s"]["fp64"] == 1e3, target
            assert target["peak_bytes_per_s"]["dram"] == 1e3, target


# Every window's calls start slow and speed up for about 25 ms (caches after the other side's
# window), then hold at 0.3 ms: a settling re-warm-up waits that out, a fixed one does not.
COLD_START_CONFTEST = (
    FAKE_CLOCK_CONFTEST
    + """
@pytest.fixture
def work():
    calls = {"n": 0}
    def call():
        calls["n"] += 1
        advance(1e-3 * max(0.3, 0.97 ** calls["n"]))
    return call
"""
)


@pytest.mark.parametrize("settles", [True, False])
def test_later_windows_rewarm_until_settled_or_for_exactly_rewarm_s(
    tmp_path: Path, settles: bool
) -> None:
    sides = []
    for side in (1, 2):
        root = tmp_path / str(side)
        make_side(root, side, n=10)
        (root / "tests" / "conftest.py").write_text(COLD_START_CONFTEST)
        (root / "tests" / "test_perf.py").write_text(
            "def test_kernel(roofline, work):\n    roofline(work)\n"
        )
        sides.append(root)
    settings = dataclasses.replace(FAST, rewarm_s=0.002, rewarm_settles=settles)
    with PairedWorkers(spec("baseline", sides[0]), spec("candidate", sides[1]), settings) as w:
        test = w.measure_test("tests/test_perf.py::test_kernel")
    later = [window.warmup_s for window in test.windows if window.index > 0]
    assert len(later) == 6
    if settles:
        assert min(later) > 0.02  # the ~25 ms of speed-up, and the window that shows it ended
    else:
        assert max(later) < 0.004  # 2 ms, and the call (under 1 ms) that crosses it


# A test's first window on a worker warms up for FIRST_WARMUP_S while the plugin's warm-up is at
# its default (50 ms), for the plugin's warm-up when set to anything else, and then on while the
# calls keep getting faster.
FIRST_WINDOW_CONFTEST = (
    COLD_START_CONFTEST
    + """
@pytest.fixture
def steady():
    return lambda: advance(3e-4)
"""
)


@pytest.mark.parametrize(
    ("plugin_warmup_ms", "minimum_s", "cold_s"),
    [
        (50, FIRST_WARMUP_S, (0.02, 0.05)),  # the default: capped
        (2, 0.002, (0.02, 0.05)),  # set shorter: used as given
        (80, 0.08, (0.08, 0.13)),  # set longer (a JIT's plateau): used as given
    ],
)
def test_a_first_window_warms_up_for_first_warmup_s_at_the_default_unless_still_speeding_up(
    tmp_path: Path, plugin_warmup_ms: int, minimum_s: float, cold_s: tuple[float, float]
) -> None:
    sides = []
    for side in (1, 2):
        root = make_side(tmp_path / str(side), side, n=10)
        ini = INI.replace("roofline_warmup = 1ms", f"roofline_warmup = {plugin_warmup_ms}ms")
        (root / "pytest.ini").write_text(ini)
        (root / "tests" / "conftest.py").write_text(FIRST_WINDOW_CONFTEST)
        (root / "tests" / "test_perf.py").write_text(
            "def test_cold(roofline, work):\n    roofline(work)\n\n\n"
            "def test_steady(roofline, steady):\n    roofline(steady)\n"
        )
        sides.append(root)
    assert WindowSettings().first_warmup_s == FIRST_WARMUP_S == 0.01
    settings = dataclasses.replace(FAST, first_warmup_s=WindowSettings().first_warmup_s)
    with PairedWorkers(spec("baseline", sides[0]), spec("candidate", sides[1]), settings) as w:
        cold = w.measure_test("tests/test_perf.py::test_cold")
        steady = w.measure_test("tests/test_perf.py::test_steady")
    first_cold = [window.warmup_s for window in cold.windows if window.index == 0]
    first_steady = [window.warmup_s for window in steady.windows if window.index == 0]
    assert len(first_cold) == len(first_steady) == 2
    # Steady calls: the minimum and at most the settling step (half of it) that shows no new low.
    assert all(minimum_s <= s <= 1.6 * minimum_s for s in first_steady), first_steady
    # Calls that speed up for ~23 ms (0.97 ms falling 3% a call to 0.3 ms): on through the
    # speed-up whatever the minimum, short of the default's 50 ms when capped.
    low, high = cold_s
    assert all(low <= s < high for s in first_cold), first_cold


# Each window records the CPUs its main thread may use, and those of the thread the previous
# window started and left running (started inside that window, so it inherited them).
AFFINITY_TEST = """
import os
import threading

import sidepkg

STARTED = []


def mask(tid):
    return float(sum(1 << cpu for cpu in os.sched_getaffinity(tid)))


def test_where(roofline):
    earlier = mask(STARTED[-1].native_id) if STARTED else -1.0
    thread = threading.Thread(target=threading.Event().wait, daemon=True)
    thread.start()
    STARTED.append(thread)
    roofline(sidepkg.work)
    roofline.record_quality("mask", mask(0), higher_is_better=True)
    roofline.record_quality("earlier_thread_mask", earlier, higher_is_better=True)
"""


@pytest.mark.skipif(len(usable_cpus()) < 2, reason="holding a window on a CPU needs two CPUs")
@pytest.mark.parametrize("pin", [True, False])
def test_with_pin_cpus_both_windows_of_a_pair_are_held_on_one_cpu_in_turn(
    tmp_path: Path, pin: bool
) -> None:
    sides = []
    for side in (1, 2):
        root = make_side(tmp_path / str(side), side, n=10)
        (root / "tests" / "test_perf.py").write_text(AFFINITY_TEST)
        sides.append(root)
    settings = dataclasses.replace(FAST, min_pairs=6, max_pairs=6, pin_cpus=pin)
    with PairedWorkers(spec("baseline", sides[0]), spec("candidate", sides[1]), settings) as w:
        test = w.measure_test("tests/test_perf.py::test_where")
    cpus = usable_cpus()
    everything = float(sum(1 << cpu for cpu in cpus))
    for side in ("baseline", "candidate"):
        windows = [window for window in test.windows if window.side == side]
        quality = [window.result["measurement"]["quality"] for window in windows]
        masks = [q["mask"]["value"] for q in quality]
        if pin:
            # The first window is free (lazy set-up sees every CPU); then one ABBA block of
            # two pairs per CPU, the same CPU on both sides of a pair.
            held = [None, *(pair_cpu(p, cpus) for p in range(1, 6))]
            assert [window.cpu for window in windows] == held
            assert masks == [everything, *(float(1 << cpu) for cpu in held[1:])]  # type: ignore[operator]
            assert len(set(held[1:])) == min(3, len(cpus))  # pairs 1-5: two per CPU in turn
        else:
            assert [window.cpu for window in windows] == [None] * 6
            assert masks == [everything] * 6
        # A thread started in a held window got every CPU back when the window ended.
        assert [q["earlier_thread_mask"]["value"] for q in quality[1:]] == [everything] * 5
