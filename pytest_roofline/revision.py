"""Revision tags: what a result depends on, so a baseline diff can name the layer that changed."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from pytest_roofline.hardware.machine import blas_description, cpu_model

__all__ = ["TAG_ENV_VARS", "collect_tags"]

# Environment variables that change numerical kernels' speed: thread pools, BLAS kernel choice,
# allocator, device visibility. Recorded as ``env_<NAME>`` when set.
TAG_ENV_VARS = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "KMP_AFFINITY", "OMP_PROC_BIND", "MALLOC_ARENA_MAX",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_TF32_OVERRIDE", "PYTORCH_CUDA_ALLOC_CONF", "XLA_FLAGS",
)  # fmt: skip
_PACKAGES = ("pytest", "numpy", "scipy", "torch", "jax", "cupy")


def _blas() -> dict[str, str]:
    """BLAS library and version, from numpy's build info (no extra dependency)."""
    description = blas_description()
    return {"blas": description} if description != "BLAS unknown" else {}


def _git(rootdir: Path) -> dict[str, str]:
    def run(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=rootdir, capture_output=True, text=True, timeout=5, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    if commit is None:
        return {}
    dirty = run("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": "yes" if dirty else "no"}


def collect_tags(rootdir: Path, *, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """Collect automatic tags, then apply ``extra`` (config and ``--roofline-tag``) on top."""
    tags = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu": cpu_model(),
        "cpu_count": str(os.cpu_count() or 0),
        "machine": platform.machine(),
    }
    if hasattr(os, "sched_getaffinity"):
        tags["cpu_affinity"] = str(len(os.sched_getaffinity(0)))
    for package in _PACKAGES:
        try:
            tags[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    tags.update(_blas())
    for name in TAG_ENV_VARS:
        if name in os.environ:
            tags[f"env_{name}"] = os.environ[name]
    tags.update(_git(rootdir))
    tags.update(extra)
    return tags
