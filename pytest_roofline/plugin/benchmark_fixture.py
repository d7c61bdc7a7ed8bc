"""pytest-benchmark's ``benchmark`` fixture, measured by pytest-roofline's probe and gated.

An unchanged pytest-benchmark test keeps working: ``benchmark(fn, *args, **kwargs)`` returns
``fn``'s result, ``benchmark.pedantic(...)`` runs exactly the rounds it asks for with a fresh
``setup`` per round, ``benchmark.extra_info``, ``group``, ``name``, ``fullname``, ``param`` and
``params`` are there, and ``@pytest.mark.benchmark(...)`` maps onto pytest-roofline's sampling
settings (:mod:`pytest_roofline.config.benchmark_marker`; what cannot keep its meaning is refused
at collection, exit status 4, with the test, the key and the reason).

Under ``--roofline`` the measurement goes through the same probe as the ``roofline`` fixture
(warm-up, batching, p50/p95/p99, replay, counters, the gate, SLAs, the report); declared work
is optional (``benchmark.probe.declare(...)``) and without it a test simply has no roofline
point. Without ``--roofline`` (or with ``--roofline-disable``) each call runs its function once,
as pytest-benchmark's ``--benchmark-disable`` does.

Which plugin provides ``benchmark`` is decided in :mod:`pytest_roofline.plugin.benchmark_options`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from pytest_roofline.config.benchmark_marker import BenchmarkSettings
from pytest_roofline.measure.benchmark_samplers import (
    BenchmarkStats,
    CompatSampler,
    PedanticSampler,
    sampling_policy_for,
)
from pytest_roofline.measure.sampling import Clock, Sampler, SamplingPolicy, StopRule
from pytest_roofline.plugin.probe import RooflineProbe

__all__ = [
    "FIXTURE_KEY",
    "BenchmarkFixture",
    "FixtureAlreadyUsed",
    "MakeProbe",
    "SamplerFactory",
    "benchmark",
]

# Builds the sampler of one measurement from the test's policy, clock and stop rule
# (``RooflineSession.make_probe(item, sampler_for=...)``).
SamplerFactory = Callable[[SamplingPolicy, Clock, StopRule | None], Sampler]
MakeProbe = Callable[[SamplerFactory], RooflineProbe]

FIXTURE_KEY = pytest.StashKey["BenchmarkFixture"]()


class FixtureAlreadyUsed(Exception):
    """``benchmark`` was used twice in one test (pytest-benchmark raises the same)."""


# --------------------------------------------------------------------------- fixture object
def _own_sync(
    fn: Callable[..., Any], kwargs: dict[str, Any]
) -> tuple[Callable[..., Any], dict[str, Any]]:
    """Bind a ``sync=`` keyword meant for the measured function, which the probe would take."""
    if "sync" not in kwargs:
        return fn, kwargs
    rest = dict(kwargs)
    return functools.partial(fn, sync=rest.pop("sync")), rest


class BenchmarkFixture:
    """The object a test receives as ``benchmark``.

    :param make_probe: creates the test's probe with a given sampler factory; ``None`` when this
        run does not measure (then each use calls the function once).
    """

    def __init__(
        self,
        node: pytest.Item,
        settings: BenchmarkSettings,
        make_probe: MakeProbe | None,
    ) -> None:
        self.name: str = node.name
        self.fullname: str = node.nodeid
        callspec = getattr(node, "callspec", None)
        self.param: str | None = callspec.id if callspec is not None else None
        self.params: dict[str, Any] | None = dict(callspec.params) if callspec is not None else None
        self.group: str | None = settings.group
        self.extra_info: dict[str, Any] = {}
        self.has_error = False
        self.skipped = False
        self.disabled = make_probe is None
        self._settings = settings
        self._make_probe = make_probe
        self._mode: str | None = None
        self._probe: RooflineProbe | None = None

    @property
    def enabled(self) -> bool:
        return not self.disabled

    @property
    def stats(self) -> BenchmarkStats | None:
        """pytest-benchmark-style statistics of the measured rounds (``None`` before or when off)."""
        measurement = self._probe.measurement if self._probe is not None else None
        if measurement is None or measurement.samples_s.size == 0:
            return None
        return BenchmarkStats(measurement.samples_s, measurement.batch_size)

    @property
    def probe(self) -> RooflineProbe | None:
        """The probe behind the measurement (``declare()``, ``record_quality()``, ``measurement``)."""
        return self._probe

    def _claim(self, mode: str) -> None:
        if self._mode:
            self.has_error = True
            raise FixtureAlreadyUsed(
                f"Fixture can only be used once. Previously it was used in {self._mode} mode."
            )
        self._mode = mode

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Measure ``function_to_benchmark(*args, **kwargs)`` and return its result."""
        self._claim("benchmark(...)")
        try:
            if self._make_probe is None:
                return function_to_benchmark(*args, **kwargs)
            settings = self._settings

            def sampler_for(
                policy: SamplingPolicy, clock: Clock, stop_rule: StopRule | None
            ) -> Sampler:
                adapted = sampling_policy_for(policy, settings)
                return CompatSampler(
                    adapted,
                    clock=clock,
                    stop_rule=stop_rule,
                    disable_gc=settings.disable_gc,
                    warmup_iterations=settings.warmup_iterations if settings.warmup else 0,
                    warmup_limit_s=adapted.budget_s,
                )

            self._probe = self._make_probe(sampler_for)
            function_to_benchmark, kwargs = _own_sync(function_to_benchmark, kwargs)
            return self._probe(function_to_benchmark, *args, **kwargs)
        except Exception:
            self.has_error = True
            raise

    def pedantic(
        self,
        target: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        """Measure exactly ``rounds`` rounds of ``iterations`` calls (pytest-benchmark's pedantic)."""
        self._claim("benchmark.pedantic(...)")
        try:
            return self._pedantic(
                target, tuple(args), dict(kwargs or {}), setup, teardown, rounds, warmup_rounds,
                iterations,
            )  # fmt: skip
        except Exception:
            self.has_error = True
            raise

    def _pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        setup: Callable[[], Any] | None,
        teardown: Callable[..., Any] | None,
        rounds: int,
        warmup_rounds: int,
        iterations: int,
    ) -> Any:
        # pytest-benchmark's checks, messages and exception types, in its order.
        if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
            raise ValueError("Must have positive int for `iterations`.")
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise ValueError("Must have positive int for `rounds`.")
        if (
            not isinstance(warmup_rounds, int)
            or isinstance(warmup_rounds, bool)
            or warmup_rounds < 0
        ):
            raise ValueError("Must have positive int for `warmup_rounds`.")
        if iterations > 1 and setup:
            raise ValueError("Can't use more than 1 `iterations` with a `setup` function.")
        has_args = bool(args or kwargs)
        sampler = PedanticSampler(
            rounds=rounds,
            iterations=iterations,
            warmup_rounds=warmup_rounds,
            setup=setup,
            teardown=teardown,
            has_args=has_args,
            disable_gc=self._settings.disable_gc,
        )
        if self._make_probe is None:
            # As pytest-benchmark's disabled mode: one setup, one call, no teardown.
            call_args, call_kwargs = sampler.arguments(args, kwargs)
            return target(*call_args, **call_kwargs)
        disable_gc = self._settings.disable_gc

        def sampler_for(
            policy: SamplingPolicy, clock: Clock, stop_rule: StopRule | None
        ) -> Sampler:
            return PedanticSampler(
                rounds=rounds,
                iterations=iterations,
                warmup_rounds=warmup_rounds,
                setup=setup,
                teardown=teardown,
                has_args=has_args,
                clock=clock,
                disable_gc=disable_gc,
            )

        self._probe = self._make_probe(sampler_for)
        target, kwargs = _own_sync(target, kwargs)
        return self._probe(target, *args, **kwargs)

    def weave(self, target: object, **kwargs: Any) -> None:
        """Not available: pytest-roofline measures one callable per test, given to ``benchmark``."""
        raise pytest.UsageError(
            f"{self.fullname}: benchmark.weave/patch (aspectlib) is not supported by pytest-roofline; "
            "call benchmark(fn, ...) on the function instead, or run this test under pytest-benchmark "
            "(--roofline-benchmark=pytest-benchmark)"
        )

    patch = weave

    def info(self) -> dict[str, Any]:
        """What the run's JSON keeps of this fixture (``extra_info`` made JSON-safe)."""
        return {
            "group": self.group,
            "name": self.name,
            "fullname": self.fullname,
            "param": self.param,
            "extra_info": json.loads(json.dumps(self.extra_info, default=str)),
        }


# --------------------------------------------------------------------------- the fixture
@pytest.fixture
def benchmark(request: pytest.FixtureRequest) -> Iterator[BenchmarkFixture]:
    """pytest-benchmark's ``benchmark`` fixture, measured and gated by pytest-roofline."""
    from pytest_roofline.plugin.benchmark_options import fixture_for

    fixture = fixture_for(request)
    request.node.stash[FIXTURE_KEY] = fixture
    yield fixture
