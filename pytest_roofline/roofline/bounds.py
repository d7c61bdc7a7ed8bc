"""Whether the bound class changed between a baseline and a candidate placement.

Pure (standard library only). A change is reported only when both classes are clear of the
ridge band (docs/roofline.md): near the ridge, analytic byte counts and roofs are too uncertain to call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_roofline.roofline.model import DEFAULT_RIDGE_MARGIN, RooflinePoint, positive
from pytest_roofline.vocabulary import BOUND_CLASSES, BoundClass

__all__ = ["BoundChange", "bound_change", "bound_change_between", "is_positive_finite"]


@dataclass(frozen=True, slots=True)
class BoundChange:
    """Bound-class change between baseline and candidate."""

    changed: bool
    ambiguous: bool
    base: BoundClass
    cand: BoundClass
    reason: str

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready ``dict``."""
        return {
            "changed": self.changed,
            "ambiguous": self.ambiguous,
            "base": self.base,
            "cand": self.cand,
            "reason": self.reason,
        }


def _intensity_iv(value: float | None, name: str, cls: str) -> float:
    if value is None:
        v = math.nan
    else:
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"`{name}` must be a positive number (FLOP per byte) or None; got {value!r}."
            ) from None
    if math.isnan(v):
        if cls != "unknown":
            raise ValueError(
                f"`{name}` is required (a positive FLOP per byte) unless the class is 'unknown'."
            )
        return v
    if not (math.isfinite(v) and v > 0):
        raise ValueError(
            f"`{name}` must be a positive finite number (FLOP per byte); got {value!r}."
        )
    return v


def bound_change(
    base_intensity: float | None,
    cand_intensity: float | None,
    ridge: float,
    *,
    margin: float = DEFAULT_RIDGE_MARGIN,
    base_class: BoundClass,
    cand_class: BoundClass,
    cand_ridge: float | None = None,
) -> BoundChange:
    """Decide whether the roofline bound class changed between baseline and candidate.

    A side's class is *clear* when it is ``overhead`` (far below either roof, whatever the
    intensity), ``memory`` with intensity below ``ridge / (1 + margin)``, or ``compute`` with
    intensity above ``ridge * (1 + margin)``. A change is reported only when both sides are
    clear and differ; different classes with a side inside the band (or classed ``ambiguous``)
    give ``ambiguous``. ``unknown`` (no declared work) on either side means no change can be
    assessed.

    Parameters
    ----------
    base_intensity, cand_intensity : float or None
        Operational intensity in FLOP per byte (None or NaN only with class ``unknown``).
    ridge : float
        Ridge intensity ``peak FLOP/s / peak bytes/s`` of the baseline's target.
    margin : float, optional
        Relative half-width of the ridge band (0.15 = 15%).
    base_class, cand_class : BoundClass
        Classes from ``roofline``.
    cand_ridge : float, optional
        The candidate target's ridge when it differs.

    Returns
    -------
    BoundChange

    References
    ----------
    .. [1] Williams, S., Waterman, A. and Patterson, D. (2009), "Roofline: an insightful
       visual performance model for multicore architectures", *CACM* 52(4), 65-76.

    Examples
    --------
    >>> bound_change(0.5, 40.0, 10.0, base_class="memory", cand_class="compute").changed
    True
    >>> bound_change(0.5, 10.5, 10.0, base_class="memory", cand_class="compute").ambiguous
    True
    """
    for name, cls in (("base_class", base_class), ("cand_class", cand_class)):
        if cls not in BOUND_CLASSES:
            raise ValueError(f"`{name}` must be one of {', '.join(BOUND_CLASSES)}; got {cls!r}.")
    ib = _intensity_iv(base_intensity, "base_intensity", base_class)
    ic = _intensity_iv(cand_intensity, "cand_intensity", cand_class)
    ridge_b = positive(ridge, "ridge")
    ridge_c = ridge_b if cand_ridge is None else positive(cand_ridge, "cand_ridge")
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"`margin` must be a non-negative finite number; got {margin!r}.")

    def clear(cls: str, intensity: float, r: float) -> bool:
        if cls == "overhead":
            return True
        if cls == "memory":
            return intensity < r / (1.0 + margin)
        if cls == "compute":
            return intensity > r * (1.0 + margin)
        return False

    def band(r: float) -> str:
        return f"[{r / (1.0 + margin):.3g}, {r * (1.0 + margin):.3g}]"

    if base_class == cand_class:
        return BoundChange(
            False, False, base_class, cand_class, f"bound class unchanged ({base_class})"
        )
    if "unknown" in (base_class, cand_class):
        side = "baseline" if base_class == "unknown" else "candidate"
        return BoundChange(
            False, False, base_class, cand_class, f"no declared work on the {side}: not assessable"
        )
    cb, cc = clear(base_class, ib, ridge_b), clear(cand_class, ic, ridge_c)
    if cb and cc:
        return BoundChange(
            True,
            False,
            base_class,
            cand_class,
            f"{base_class} -> {cand_class}, both outside the ridge band",
        )
    where = []
    if not cb:
        where.append(f"baseline intensity {ib:.3g} FLOP/B vs band {band(ridge_b)} ({base_class})")
    if not cc:
        where.append(f"candidate intensity {ic:.3g} FLOP/B vs band {band(ridge_c)} ({cand_class})")
    return BoundChange(
        False,
        True,
        base_class,
        cand_class,
        f"{base_class} -> {cand_class} is ambiguous: " + "; ".join(where),
    )


def is_positive_finite(value: float | None) -> bool:
    """Whether ``value`` is a number, finite and above zero."""
    return value is not None and math.isfinite(value) and value > 0


def bound_change_between(base: RooflinePoint, cand: RooflinePoint) -> BoundChange | None:
    """The bound-class change from ``base`` to ``cand``, or ``None`` where none is defined.

    A class change is only defined between two points with a finite, positive intensity (a pure
    copy declares ``flops=0``, a pure compute kernel ``bytes_moved=0``) and a finite ridge.
    """
    ridge = cand.ridge if cand.ridge is not None else math.nan
    if not (
        math.isfinite(ridge)
        and is_positive_finite(base.intensity)
        and is_positive_finite(cand.intensity)
    ):
        return None
    return bound_change(
        base.intensity,
        cand.intensity,
        base.ridge or ridge,
        base_class=base.bound,
        cand_class=cand.bound,
        cand_ridge=ridge,
    )
