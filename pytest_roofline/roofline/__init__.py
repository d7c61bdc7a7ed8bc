"""Roofline math: operational intensity, attainable performance, efficiency and bound class.

Pure modules: standard library only (no pytest, no numpy), so every other layer can use them.
:mod:`~.work` validates declared work, :mod:`~.model` places it against a pair of roofs,
:mod:`~.bounds` says whether the bound class changed between two placements.

Conventions (the same everywhere in pytest-roofline):

- **FLOPs count a fused multiply-add as 2** (``2·m·n·k`` for a matmul), as torch's
  ``FlopCounterMode``, XLA's cost analysis and hardware FLOP counters do. Tools that count MACs
  (fvcore) report half of that: multiply their figures by 2 before declaring them.
- **Bytes** are the compulsory traffic of one call to the memory level the roof is for
  (``"dram"`` = main memory, HBM/GDDR on GPUs): each input read once, each output written once.
- **Operational intensity** = declared FLOPs ÷ declared bytes (FLOP/byte).
- **Attainable** FLOP/s = ``min(peak FLOP/s, intensity × peak bytes/s)`` (Williams, Waterman &
  Patterson, "Roofline", CACM 52(4), 2009); the **ridge** = peak FLOP/s ÷ peak bytes/s.
- **Efficiency** = achieved ÷ attainable, which equals the larger of the compute utilisation
  (achieved FLOP/s ÷ peak FLOP/s) and the bandwidth utilisation (achieved bytes/s ÷ peak
  bytes/s); written that way it stays defined for zero-FLOP (pure data movement) kernels.

Bound classes (exact strings, part of the JSON contract): ``compute``, ``memory``,
``overhead``, ``ambiguous``, ``unknown``. See :func:`place` for the rules.
"""

from pytest_roofline.roofline.bounds import (
    BoundChange,
    bound_change,
    bound_change_between,
    is_positive_finite,
)
from pytest_roofline.roofline.model import (
    DEFAULT_OVERHEAD_EFFICIENCY,
    DEFAULT_RIDGE_MARGIN,
    DEFAULT_ROOF_TOLERANCE,
    RooflinePoint,
    attainable,
    intensity,
    place,
    ridge,
)
from pytest_roofline.roofline.work import (
    DEFAULT_PRECISION,
    MEMORY_LEVELS,
    PRECISIONS,
    DeclaredWork,
    declared_work,
    normalize_precision,
    work_change,
)
from pytest_roofline.vocabulary import BOUND_CLASSES, BoundClass

__all__ = [
    "BOUND_CLASSES",
    "DEFAULT_OVERHEAD_EFFICIENCY",
    "DEFAULT_PRECISION",
    "DEFAULT_RIDGE_MARGIN",
    "DEFAULT_ROOF_TOLERANCE",
    "MEMORY_LEVELS",
    "PRECISIONS",
    "BoundChange",
    "BoundClass",
    "DeclaredWork",
    "RooflinePoint",
    "attainable",
    "bound_change",
    "bound_change_between",
    "declared_work",
    "intensity",
    "is_positive_finite",
    "normalize_precision",
    "place",
    "ridge",
    "work_change",
]
