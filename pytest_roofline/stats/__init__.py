"""Statistics for the regression gate: pure numpy/scipy, no pytest, no configuration, no decisions.

Every function takes plain numbers and returns a frozen result object; the gate
(:mod:`pytest_roofline.gate`) turns results into evidence and the policy decides.
``docs/statistics.md`` describes the methods, their defaults and why they were chosen.
Conventions (scipy.stats style): arguments are validated first and an error names the parameter
and the valid form; randomness comes in as ``rng``; degenerate data gives NaN and a
:class:`~pytest_roofline.errors.RooflineWarning`, never an exception. Durations are seconds.

Modules: :mod:`~.quantiles` (one sample's quantiles and floors), :mod:`~.compare` (two runs),
:mod:`~.paired` (alternating rounds), :mod:`~.threeway` (DIFFERENT / SAME / UNKNOWN and the
margin), :mod:`~.sequential` (repeated looks), :mod:`~.margins` (noise floors), :mod:`~.run`
(across a run), :mod:`~.within` (drift, SLAs, when to stop sampling), :mod:`~.changepoint`
(steps in a label's history).
"""

from pytest_roofline.stats.compare import (
    ABS_FLOOR_S,
    DEFAULT_N_BOOT,
    compare_quantile,
    minimum_detectable_effect,
    only_autocorrelated,
)
from pytest_roofline.stats.margins import (
    DEFAULT_NOISE_FLOOR,
    default_noise_floor,
    effective_delta,
    noise_floor,
)
from pytest_roofline.stats.quantiles import DEFAULT_ALPHA, N_FLOOR, hd_quantiles, n_floor
from pytest_roofline.stats.results import (
    CommonMode,
    ConfidenceInterval,
    Drift,
    QuantileComparison,
    SamplingState,
    SlaCheck,
)
from pytest_roofline.stats.run import apply_bh, bh_adjust, common_mode
from pytest_roofline.stats.threeway import GateMargin, classify_three_way, gate_margin
from pytest_roofline.stats.within import (
    DEFAULT_REL_HALFWIDTH,
    drift,
    log_quantile_estimate,
    sampling_decisive,
    sla_check,
)
from pytest_roofline.vocabulary import SlaStatus, Verdict

__all__ = [
    "ABS_FLOOR_S",
    "DEFAULT_ALPHA",
    "DEFAULT_NOISE_FLOOR",
    "DEFAULT_N_BOOT",
    "DEFAULT_REL_HALFWIDTH",
    "N_FLOOR",
    "CommonMode",
    "ConfidenceInterval",
    "Drift",
    "GateMargin",
    "QuantileComparison",
    "SamplingState",
    "SlaCheck",
    "SlaStatus",
    "Verdict",
    "apply_bh",
    "bh_adjust",
    "classify_three_way",
    "common_mode",
    "compare_quantile",
    "default_noise_floor",
    "drift",
    "effective_delta",
    "gate_margin",
    "hd_quantiles",
    "log_quantile_estimate",
    "minimum_detectable_effect",
    "n_floor",
    "noise_floor",
    "only_autocorrelated",
    "sampling_decisive",
    "sla_check",
]
