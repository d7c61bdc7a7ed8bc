"""Revision-tag layers: which layers (data, model, runtime, hardware) changed since the baseline.

Pure. A regression with exactly one changed layer is attributable; several changed
layers make the root cause ambiguous. The first changed layer, in the configured order, is the
run's first failing layer.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence

__all__ = ["hardware_difference", "layer_of", "layers_changed", "tag_diff"]


def tag_diff(
    baseline: Mapping[str, str], candidate: Mapping[str, str]
) -> dict[str, tuple[str | None, str | None]]:
    """Tags whose value differs, as ``{tag: (baseline value, candidate value)}``."""
    keys = sorted(set(baseline) | set(candidate))
    return {
        k: (baseline.get(k), candidate.get(k)) for k in keys if baseline.get(k) != candidate.get(k)
    }


def layer_of(tag: str, layers: Mapping[str, Sequence[str]]) -> str | None:
    """The first layer whose tag patterns match ``tag`` (layers keep their configured order)."""
    for layer, patterns in layers.items():
        if any(fnmatch.fnmatchcase(tag, pattern) for pattern in patterns):
            return layer
    return None


def layers_changed(
    baseline_tags: Mapping[str, str], tags: Mapping[str, str], layers: Mapping[str, Sequence[str]]
) -> tuple[str, ...]:
    """Layers (in configured order) with at least one changed tag."""
    changed = {layer_of(tag, layers) for tag in tag_diff(baseline_tags, tags)}
    return tuple(layer for layer in layers if layer in changed)


def hardware_difference(
    baseline_target: str | None, baseline_machine: str, target: str | None, machine: str
) -> str | None:
    """Why the baseline's hardware differs from this run's, or ``None``."""
    if target is not None and baseline_target is not None and baseline_target != target:
        return f"target {baseline_target!r} in the baseline, {target!r} now"
    if baseline_machine and machine and baseline_machine != machine:
        return f"machine {baseline_machine!r} in the baseline, {machine!r} now"
    return None
