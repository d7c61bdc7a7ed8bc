"""The worker side of paired mode on persistent workers: one pytest session that serves windows.

``pytest-roofline ab`` keeps one pytest process per revision alive for the whole run
(:mod:`pytest_roofline.ab.workers` starts it through execnet, as pytest-xdist starts its
workers). The controller sends the source of this module over an execnet gateway
(``gateway.remote_exec``); it runs there as ``__channelexec__``, so the protocol is always the
controller's, while pytest, the plugin and the code under test come from the side's own
interpreter and tree. The worker

1. receives its set-up (working directory, ``sys.path`` entries, environment, pytest
   arguments) and runs ``pytest.main`` with :class:`WindowServer` as a plugin;
2. after collection sends ``("collected", info)``: the node ids, the measured ones (those
   that use the ``roofline`` fixture), each test's configured budget, collection errors, and
   what the session imported (:func:`pytest_roofline.plugin.ab_imports.probe_record`);
3. takes over ``pytest_runtestloop`` and serves commands until ``("stop",)``:
   ``("window", nodeid, seconds, cpu)`` runs that test's protocol (set-up, call, teardown) once
   more with a sampling budget of ``seconds``, its main thread held on CPU ``cpu`` when that is
   not ``None`` (below), and answers ``("window", reply)`` with the per-call
   samples (little-endian float64 bytes), the batch size, the stop reason, the timings and the
   counters' CPU share, and the host canary's judgement of the window (below); a test that
   fails, errors or skips answers with that outcome and the message instead of samples.
   ``("stop",)`` tears the fixtures down, answers ``("stopped", info)`` and ends the session
   without the plugin's own end-of-run analysis, outputs or ``pytest_roofline_run_finished``
   (``ab`` analyses and reports the windows), after which ``("exited", status)`` follows.

The measurement is the plugin's own: the ``roofline`` fixture's probe samples under a
:class:`pytest_roofline.plugin.session.SamplingWindow` (the window's budget and warm-up, no early
stop, no replay, no per-test outcome) and the samples are read from the call-phase report's
``roofline`` attribute, exactly as the plugin's controller reads them. The first window of a
test warms up for ``first_warmup_s`` while the plugin's warm-up time is at its default (for a
warm-up you set, that time), and on while the calls keep getting faster; later windows re-warm
briefly (``rewarm_s``).

Host canary (issue 10): each window is bracketed by readings of this process's canary
(:meth:`pytest_roofline.plugin.session.RooflineSession.window_canary`, the plugin's own, its
budget a share of the time this worker spends on windows, since every worker is busy for only a
part of the job's wall time): the reading before is the last one if it is recent (usually the
previous window's "after"), the reading after is taken at once (both within that budget), and
both are judged against this worker's level. The judgement (``quiet`` / ``disturbed`` /
``unread``) goes back with the window as JSON text; the controller drops pairs disturbed on
either side (:mod:`pytest_roofline.ab.pairs`). The canary is off under ``--roofline-no-canary``
and under a fake clock without a canary hook (the judgement is then ``None``).

Where a window's memory lands (issue 10): before each window the worker allocates a block of a
random size (uniform up to ``layout_shift_bytes``, 4 MiB from ``ab``; made of pieces under
glibc's smallest mmap threshold, so they come from the heap) and holds it through the window.
Everything the test and its function-scoped fixtures allocate then lands at a new offset and on
other physical pages in every window, instead of on the same freed heap memory each time, which
each process draws once: without it, one worker ran an ``np.add`` over 200 000 float64 up to
about 20% faster or slower than the other for its whole life, and fresh worker pairs could
agree (docs/paired.md, "Where a window's memory lands"). The draw uses a generator of its own,
never the test's ``random`` state.

Which CPU a window runs on (issue 10): with ``cpu`` given, the worker holds its main thread on
that CPU (``os.sched_setaffinity`` of the calling thread) through the window and the canary
readings around it (the "before" reading is often the previous window's "after", reused, taken
on another CPU), and gives it back its previous CPUs at once. The controller gives both
windows of a pair the same CPU and moves the pairs over the CPUs in turn, so a pair's ratio
compares the two sides on one CPU: left to the scheduler, each worker's main thread stayed
largely on one vCPU for a whole run, and vCPUs of a VM can run at different speeds for minutes
(docs/paired.md, "One CPU per window pair"). A test's first window on a worker is never held
(the controller's pairs are then unheld on both sides): that is where lazy set-up happens, and
a library that sizes its thread pool from the CPUs it may use (OpenBLAS, OpenMP, a framework's
pool) must see them all. Threads a test starts inside a held window inherit the one CPU for
that window; after it, each such thread still held there gets the worker's CPUs back. Threads
started earlier (OpenBLAS's pool, at import) are never touched.

Between windows of one test only function-scoped fixtures are torn down: the test's module,
class and session fixtures stay set up as in an ordinary run, and are torn down when a window
for a test outside them arrives, or at ``stop``.

This module must stay runnable from its source alone (execnet sends the text): no dataclasses
(they look their module up in ``sys.modules``), and only pytest, the standard library and
pytest-roofline's own modules imported, inside the functions that run on the worker.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest
    from execnet import Channel

__all__ = ["PROTOCOL_VERSION", "WindowServer", "layout_shift", "on_cpu", "serve"]

PROTOCOL_VERSION = 4  # 2: canary judgement per window; tags, target, machine at collection;
# 3: a heap block of random size held through each window ("layout_shift_bytes");
# 4: ("window", nodeid, seconds, cpu): the window's main thread held on that CPU
# Longest message text sent back (a traceback); the controller shows it as is.
_MESSAGE_CHARS = 4000
REPORT_ATTRIBUTE = "roofline"  # pytest_roofline.plugin.session.REPORT_ATTRIBUTE
# Pieces of the layout shift: under glibc's initial mmap threshold (128 KiB), so malloc serves
# them from the heap and the test's allocations after them move.
_SHIFT_PIECE_BYTES = 64 * 1024


def _text(longrepr: object) -> str:
    text = str(longrepr) if longrepr is not None else ""
    return text[-_MESSAGE_CHARS:]


def _parents(item: pytest.Item) -> Any:
    """The collector whose chain teardown keeps: ``item``'s parent (function scope goes)."""
    return item.parent


class WindowServer:
    """The worker's pytest plugin: report collection, then serve windows until told to stop.

    :param channel: the execnet channel to the controller.
    :param rewarm_s: warm-up of every window after a test's first.
    :param rewarm_settles: that warm-up goes on until the calls stop getting faster (``False``:
        exactly ``rewarm_s``).
    :param first_warmup_s: the minimum warm-up of a test's first window while the plugin's
        ``roofline_warmup`` is at its default (``None``: the plugin's, 0.05 s); a
        ``roofline_warmup`` set to another value is used as given.
    :param layout_shift_bytes: the largest heap block held through a window (0: none).
    """

    def __init__(
        self,
        channel: Channel,
        *,
        rewarm_s: float,
        first_warmup_s: float | None,
        layout_shift_bytes: int = 0,
        rewarm_settles: bool = False,
    ) -> None:
        self.channel = channel
        self.rewarm_s = rewarm_s
        self.rewarm_settles = rewarm_settles
        self.first_warmup_s = first_warmup_s
        self.layout_shift_bytes = layout_shift_bytes
        self._layout_rng = random.Random()  # its own state: the test's random module is not touched
        self.session: pytest.Session | None = None
        self._collect_errors: list[str] = []
        self._reports: list[pytest.TestReport] = []
        self._windows: dict[str, int] = {}
        self._canary_made = False
        self._canary_obj: Any = None
        # Seconds this worker has spent on windows (the test's protocol and the canary readings
        # around it), on the canary's clock: the base of its canary's time budget.
        self._busy_s = 0.0

    # -- configuration and collection -----------------------------------------------------
    def pytest_configure(self, config: pytest.Config) -> None:
        # The worker is one pytest session; pytest-xdist must not start workers of its own
        # (the same reset as xdist's own workers make).
        option = config.option
        if getattr(option, "numprocesses", None):
            option.numprocesses = None
            option.dist = "no"

    def pytest_roofline_hardware_target(self, config: pytest.Config, name: str) -> Any:
        """The host's roofs as the controller left them in this worker's store, unprobed.

        The controller (``ab``, or the session confirming its first looks) checked the host's
        cached roofs with its drift probe and seeded each worker's store with them, as xdist
        workers are handed the controller's target. A probe per worker reads DRAM arrays
        twice the LLC: 2-6 s a worker on this VM, for roofs nobody compares. A user's hook
        (conftest) still wins; with no seeded calibration the host is calibrated as usual.
        """
        if name != "host":
            return None
        from pytest_roofline.hardware.calibration import host_target
        from pytest_roofline.plugin.session import SESSION_KEY

        session = config.stash.get(SESSION_KEY, None)
        if session is None or session.store is None:
            return None
        return host_target(session.store, probe=lambda calibration: {})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._collect_errors.append(f"{report.nodeid or '(session)'}: {_text(report.longrepr)}")

    def _probe(self, session: pytest.Session) -> dict[str, Any]:
        from pathlib import Path

        from pytest_roofline.plugin.ab_imports import probe_record

        files = [str(Path(str(item.path)).resolve()) for item in session.items]
        return probe_record(Path(session.config.rootpath), files)

    def _collected(self, session: pytest.Session) -> dict[str, Any]:
        from pytest_roofline.plugin.session import SETTINGS_KEY

        measured, budgets = [], {}
        for item in session.items:
            if "roofline" in getattr(item, "fixturenames", ()):
                measured.append(item.nodeid)
                settings = item.stash.get(SETTINGS_KEY, None)
                if settings is not None:
                    budgets[item.nodeid] = float(settings.budget_s)
        from pytest_roofline.plugin import SESSION_KEY

        roofline = session.config.stash[SESSION_KEY]
        target = roofline.target
        return {
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "tags": dict(roofline.tags),
            "target": json.dumps(target.to_dict() if target is not None else {}),
            "machine": str(roofline.machine),
            "python": sys.executable,
            "cwd": os.getcwd(),
            "rootdir": str(session.config.rootpath),
            "ids": [item.nodeid for item in session.items],
            "measured": measured,
            "budgets": budgets,
            "errors": list(self._collect_errors),
            "probe": json.dumps(self._probe(session)),
        }

    # -- the loop ---------------------------------------------------------------------------
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from pytest_roofline.plugin import SESSION_KEY

        self.session = session
        session.config.stash[SESSION_KEY].serves_windows = True  # ab analyses the windows
        items = {item.nodeid: item for item in session.items}
        self.channel.send(("collected", self._collected(session)))
        for command in self._commands():
            if command[0] == "window":
                _, nodeid, seconds, *rest = command
                cpu = rest[0] if rest else None
                item = items.get(nodeid)
                if item is None:
                    self.channel.send(
                        (
                            "window",
                            {
                                "nodeid": nodeid,
                                "record": "missing",
                                "message": f"{nodeid} was not collected here",
                            },
                        )
                    )
                    continue
                if nodeid not in self._windows:
                    cpu = None  # a test's first window here: its lazy set-up sees every CPU
                try:
                    with on_cpu(cpu) as held:
                        reply = self._window(item, float(seconds))
                    reply["cpu"] = cpu if held else None
                except Exception:  # a fixture teardown or hook error: this test's, not the worker's
                    reply = {
                        "nodeid": nodeid,
                        "record": "error",
                        "message": _text(traceback.format_exc()),
                    }
                self.channel.send(("window", reply))
            else:
                raise ValueError(f"ab_worker: unknown command {command!r}")
        self._teardown_all(session)
        self.channel.send(("stopped", {"probe": json.dumps(self._probe(session))}))
        return True

    def _commands(self) -> Iterator[tuple[Any, ...]]:
        while True:
            command = self.channel.receive()
            if not isinstance(command, tuple) or not command or command[0] == "stop":
                return
            yield command

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._reports.append(report)

    @staticmethod
    def _teardown_all(session: pytest.Session) -> None:
        # What pytest's own loop does with the last item (nextitem=None): tear everything down.
        session._setupstate.teardown_exact(None)

    def _first_warmup(self, item: pytest.Item) -> float:
        """The minimum warm-up of a test's first window (the settling warm-up then goes on while
        the calls keep getting faster): ``first_warmup_s`` while the plugin's
        ``roofline_warmup`` is at its default, since six first windows a test would each spend
        the default's 50 ms; a ``roofline_warmup`` set to another value (a JIT's plateau, a
        cold start measured on purpose) is used as given."""
        from pytest_roofline.config.defaults import DEFAULTS
        from pytest_roofline.plugin import SESSION_KEY

        configured = float(item.config.stash[SESSION_KEY].settings.warmup_s)
        if self.first_warmup_s is None or configured != DEFAULTS.warmup_s:
            return configured
        return min(configured, self.first_warmup_s)

    def _window(self, item: pytest.Item, seconds: float) -> dict[str, Any]:
        from pytest_roofline.plugin.session import WINDOW_KEY, SamplingWindow

        session = item.session
        first = item.nodeid not in self._windows
        self._windows[item.nodeid] = self._windows.get(item.nodeid, 0) + 1
        warmup = self._first_warmup(item) if first else self.rewarm_s
        # Fixtures of the previous test that this one does not share go now, outside the window.
        session._setupstate.teardown_exact(item)
        item.stash[WINDOW_KEY] = SamplingWindow(
            budget_s=seconds,
            warmup_s=warmup,
            warmup_max_s=None if first or self.rewarm_settles else warmup,
        )
        canary = self._canary(item)
        shift = layout_shift(self._layout_rng, self.layout_shift_bytes)
        canary_began = time.monotonic_ns()
        busy_from = canary.now_s() if canary is not None else 0.0
        opened = canary.open_window(item.nodeid) if canary is not None else None
        canary_ns = time.monotonic_ns() - canary_began
        self._reports = []
        started = time.monotonic_ns()
        try:
            # nextitem = the parent: teardown keeps the module, class and session fixtures.
            item.ihook.pytest_runtest_protocol(item=item, nextitem=_parents(item))
        finally:
            finished = time.monotonic_ns()
            del item.stash[WINDOW_KEY]
            shift_bytes = sum(len(piece) for piece in shift)
            del shift
        judgement = None
        if canary is not None and opened is not None:
            closing_from = canary.now_s()
            self._busy_s += closing_from - busy_from  # this window, before its closing reading
            judgement = canary.close_window(opened)
            self._busy_s += canary.now_s() - closing_from
            canary_ns += time.monotonic_ns() - finished
        reports, self._reports = self._reports, []
        reply: dict[str, Any] = {
            "nodeid": item.nodeid,
            "window": self._windows[item.nodeid],
            "started_ns": started,
            "finished_ns": finished,
            "warmup_requested_s": warmup,
            "canary": json.dumps(judgement.to_dict()) if judgement is not None else None,
            "canary_s": canary_ns / 1e9,
            "layout_shift_bytes": shift_bytes,
        }
        for report in reports:
            if report.failed:
                reply.update(outcome="failed", message=f"{report.when}: {_text(report.longrepr)}")
                break
            if report.skipped:
                reply.update(outcome="skipped", message=_text(report.longrepr))
                break
        else:
            call = next((r for r in reports if r.when == "call"), None)
            data = getattr(call, REPORT_ATTRIBUTE, None) if call is not None else None
            if not isinstance(data, dict):
                reply.update(
                    outcome="unmeasured",
                    message="the test passed but measured nothing (it did not call roofline(fn))",
                )
            else:
                reply.update(self._measured(data))
            if call is not None and hasattr(call, REPORT_ATTRIBUTE):
                # The terminal reporter keeps every report: drop the samples it would hold.
                delattr(call, REPORT_ATTRIBUTE)
        return reply

    def _canary(self, item: pytest.Item) -> Any:
        """This worker's started canary (``None``: off), made on the first window."""
        if self._canary_made:
            return self._canary_obj
        self._canary_made = True
        from pytest_roofline.plugin import SESSION_KEY

        canary = item.config.stash[SESSION_KEY].window_canary()
        if canary is not None:
            # Every worker is busy for a part of the run only (the other workers' windows take
            # the rest), and the controller never overlaps two windows: a share of each one's
            # busy time keeps all the workers' readings together within the share of the run.
            canary.bound_by_busy_time(lambda: round(self._busy_s * 1e9))
        self._canary_obj = canary
        return canary

    @staticmethod
    def _measured(data: dict[str, Any]) -> dict[str, Any]:
        result = dict(data["result"])
        measurement = dict(result["measurement"])
        samples = base64.b64decode(measurement.pop("samples_f64_b64"))
        result["measurement"] = measurement
        counters = measurement.get("counters") or {}
        return {
            "outcome": "passed",
            "samples_f64": samples,
            "batch_size": int(measurement["batch_size"]),
            "stop_reason": str(measurement["stop_reason"]),
            "sampling_s": float(measurement["elapsed_s"]),
            "warmup_s": float(measurement["warmup_s"]),
            "warmup_calls": int(measurement["warmup_calls"]),
            "cpu_share": counters.get("cpu_share"),
            # The payload without samples (declared work, quality, counters) as JSON text, so
            # any value the plugin put there crosses the channel.
            "result": json.dumps(result, default=float),
        }


_TASKS = "/proc/self/task"


def _thread_ids() -> set[int]:
    try:
        return {int(name) for name in os.listdir(_TASKS)}
    except OSError:
        return set()


@contextlib.contextmanager
def on_cpu(cpu: int | None) -> Iterator[bool]:
    """Hold the calling thread on CPU ``cpu`` (nothing when ``None``), then give it back the
    CPUs it had, and give them to every thread started meanwhile that is still held on
    ``cpu`` (it inherited the one CPU; a thread that set its own CPUs keeps them). The kernel
    moves a thread off a CPU it may no longer use before ``sched_setaffinity`` returns.

    Yields whether the thread is held: not where the platform has no ``sched_setaffinity``
    or refuses the CPU (e.g. one outside this process's cpuset); the window then runs free.
    """
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        yield False
        return
    before = os.sched_getaffinity(0)
    held = {int(cpu)}
    threads = _thread_ids()
    try:
        os.sched_setaffinity(0, held)
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        os.sched_setaffinity(0, before)
        for tid in _thread_ids() - threads:
            try:
                if os.sched_getaffinity(tid) == held:
                    os.sched_setaffinity(tid, before)
            except OSError:  # the thread has ended meanwhile
                pass


def layout_shift(rng: random.Random, max_bytes: int) -> list[bytearray]:
    """A heap block of a size drawn uniformly from 0 to ``max_bytes``, in pieces that malloc
    serves from the heap: what a window allocates while it is held lands after it."""
    if max_bytes <= 0:
        return []
    total = rng.randrange(max_bytes + 1)
    return [
        bytearray(min(_SHIFT_PIECE_BYTES, total - start))
        for start in range(0, total, _SHIFT_PIECE_BYTES)
    ]


def serve(channel: Channel) -> None:
    """Run one worker on ``channel`` (what the module does when execnet executes it)."""
    boot = channel.receive()
    os.chdir(boot["chdir"])
    for name, value in (boot.get("env") or {}).items():
        os.environ[name] = value
    # The side's import roots go first, as PYTHONPATH would put them in a fresh interpreter
    # (execnet starts this one with the controller's environment): after the working
    # directory, ahead of the user's PYTHONPATH and site-packages.
    cwd = os.getcwd()
    path = [cwd if entry == "" else entry for entry in sys.path]
    if not path or path[0] != cwd:
        path.insert(0, cwd)
    roots = [str(p) for p in boot.get("sys_path") or ()]
    sys.path[:] = [path[0], *roots, *(p for p in path[1:] if p not in roots)]
    if boot.get("stderr_path"):
        # Keep the worker's own stderr (warnings, a crash's traceback) for the controller's
        # error messages instead of interleaving it with the controller's terminal.
        fd = os.open(boot["stderr_path"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    import pytest

    plugin = WindowServer(
        channel,
        rewarm_s=float(boot["rewarm_s"]),
        rewarm_settles=bool(boot.get("rewarm_settles", False)),
        first_warmup_s=boot.get("first_warmup_s"),
        layout_shift_bytes=int(boot.get("layout_shift_bytes") or 0),
    )
    status = pytest.main(list(boot["args"]), plugins=[plugin])
    channel.send(("exited", int(status)))


if __name__ == "__channelexec__":
    serve(channel)  # type: ignore[name-defined]  # noqa: F821  (execnet's global)
