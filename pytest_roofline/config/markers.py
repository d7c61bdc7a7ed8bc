"""The ``roofline`` marker, bound through a typed signature function (the pytest-memray pattern).

``@pytest.mark.roofline(...)`` arguments are bound by calling :func:`roofline` with the mark's
args and kwargs, so Python itself rejects unknown keys and positional arguments, and each value is
validated here with a message naming the test, the key and the valid form.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_roofline.config.ownership import parse_owners
from pytest_roofline.config.sla import SlaSpec, parse_sla
from pytest_roofline.config.workload import WorkloadSlice, parse_slices
from pytest_roofline.errors import ConfigError
from pytest_roofline.roofline import normalize_precision
from pytest_roofline.units import parse_duration

__all__ = ["MARKER_HELP", "MarkerSettings", "bind_marker", "parse_soak", "roofline"]

_OFF = ("0", "off", "none", "no", "false")


def parse_soak(value: object, *, where: str) -> float:
    """A soak length in seconds: a duration (``"60s"``, ``"2min"``, 60), or 0 / ``"off"`` for none."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    if isinstance(value, str) and value.strip().lower() in _OFF:
        return 0.0
    return parse_duration(value, where=where)


@dataclass(frozen=True, slots=True)
class MarkerSettings:
    """Validated marker arguments; ``None`` / empty means "not set here"."""

    slices: str | tuple[WorkloadSlice, ...] | None = None
    owners: tuple[str, ...] = ()
    rollback: str | None = None
    sla: SlaSpec = field(default_factory=SlaSpec)
    precision: str | None = None
    budget_s: float | None = None
    # 0.0 turns a session-wide soak off for this test.
    soak_s: float | None = None


def roofline(
    *,
    slices: str | Sequence[str | Mapping[str, object]] | None = None,
    owner: str | Sequence[str] | Mapping[str, str] | None = None,
    rollback: str | None = None,
    sla: Mapping[str, object] | None = None,
    precision: str | None = None,
    budget: float | str | None = None,
    soak: float | str | None = None,
) -> MarkerSettings:
    """Mark a performance test.

    :param slices: a slice group in ``roofline.yaml``, or an inline list of slices
        (``{"name": ..., "params": {...}, "source": "synthetic" | "production"}`` or bare names).
    :param owner: owner name, list of names, or mapping of signing role to name.
    :param rollback: the rollback boundary (what to revert), shown with every non-ship decision.
    :param sla: ``p50``/``p95``/``p99``/``max`` durations (``"4ms"``), ``min_efficiency``
        (fraction of the attainable roof), ``bound`` (``"compute"`` or ``"memory"``).
    :param precision: default precision of declared work (e.g. ``"fp32"``, ``"bf16"``).
    :param budget: measurement time budget for this test (``"2s"`` or seconds).
    :param soak: after measuring, run the test's callable for this long more and record its
        latency timeline with the host's evidence (``"60s"``; ``0`` or ``"off"``: no soak).
    """
    where = "@pytest.mark.roofline"
    parsed_slices: str | tuple[WorkloadSlice, ...] | None
    if slices is None or isinstance(slices, str):
        parsed_slices = slices
    else:
        parsed_slices = parse_slices(slices, where=f"{where}(slices=...)")
    if rollback is not None and (not isinstance(rollback, str) or not rollback.strip()):
        raise ConfigError(f"{where}(rollback=...): expected a non-empty string, got {rollback!r}")
    if precision is not None:
        precision = normalize_precision(precision, where=f"{where}(precision=...)")
    return MarkerSettings(
        slices=parsed_slices,
        owners=parse_owners(owner, where=f"{where}(owner=...)") if owner is not None else (),
        rollback=rollback,
        sla=parse_sla(sla, where=f"{where}(sla=...)"),
        precision=precision,
        budget_s=parse_duration(budget, where=f"{where}(budget=...)")
        if budget is not None
        else None,
        soak_s=parse_soak(soak, where=f"{where}(soak=...)") if soak is not None else None,
    )


def bind_marker(
    nodeid: str, args: Sequence[object], kwargs: Mapping[str, object]
) -> MarkerSettings:
    """Bind one ``roofline`` mark of test ``nodeid``; every failure names the test."""
    try:
        return roofline(*args, **kwargs)  # type: ignore[arg-type]
    except TypeError as exc:
        valid = ", ".join(inspect.signature(roofline).parameters)
        raise ConfigError(
            f"{nodeid}: @pytest.mark.roofline: {exc.args[0] if exc.args else exc}; "
            f"it takes keyword arguments only: {valid}"
        ) from None
    except ConfigError as exc:
        raise ConfigError(f"{nodeid}: {exc}") from None


MARKER_HELP = (
    "roofline(slices=None, owner=None, rollback=None, sla=None, precision=None, budget=None, "
    "soak=None): "
    "a performance test measured and gated by pytest-roofline; see the README for every argument."
)
