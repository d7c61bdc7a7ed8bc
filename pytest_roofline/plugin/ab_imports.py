"""Where a side's code came from: the record each paired worker sends when it stops.

A paired worker (:mod:`pytest_roofline.plugin.ab_worker`) calls :func:`probe_record` at the end
of its session: a small JSON-able record of the files the session imported: the pytest rootdir,
the collected test files, every module loaded from outside the Python environment (the trees'
own code, editable installs, ``PYTHONPATH`` entries) and the top-level modules loaded from the
environment (installed copies). The ``ab`` command, not this module, judges the record: a
baseline worker that imported the candidate's tree, or the reverse, would compare a tree with
itself, and is refused (:func:`pytest_roofline.ab.sides.check_side`).

It only records; it changes nothing about the run.
"""

from __future__ import annotations

import contextlib
import os
import site
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["environment_dirs", "probe_record"]

PROBE_FORMAT = "pytest-roofline-ab-probe"


def environment_dirs(rootdir: Path) -> list[Path]:
    """The Python environment's directories (prefixes, stdlib, site-packages).

    A directory that contains ``rootdir`` is left out: with a virtual environment inside the
    project (``.venv``) only its own directory counts, and a prefix such as ``/`` would
    otherwise swallow the trees themselves.
    """
    candidates: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    paths = sysconfig.get_paths()
    candidates += [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    # Some embedded interpreters have no site.getsitepackages.
    with contextlib.suppress(AttributeError):
        candidates += site.getsitepackages()
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if isinstance(user_site, str):
        candidates.append(user_site)
    root = rootdir.resolve()
    out: list[Path] = []
    for text in dict.fromkeys(candidates):
        path = Path(text).resolve()
        if path == root or path in root.parents:
            continue
        out.append(path)
    return out


def _within(path: str, dirs: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip(os.sep) + os.sep) for d in dirs)


def _resolver() -> Callable[[str], str]:
    """``os.path.realpath`` of module files, each directory resolved once.

    A worker holds about a thousand modules in a few dozen directories; resolving every file's
    whole path took 0.10 s per record here against 0.011 s, spent twice per worker
    (docs/validation/ab_fixed_costs_stop37.txt; docs/paired.md, "Where an ab run's time
    goes"). The directory part is resolved as given (``realpath`` follows a link before
    applying a ``..`` after it, as ``Path.resolve`` does), and a file that is itself a
    symbolic link is still followed.
    """
    directories: dict[str, str] = {}

    def resolve(file: str) -> str:
        head, tail = os.path.split(file)
        if tail in ("", os.curdir, os.pardir):
            return os.path.realpath(file)
        real_head = directories.get(head)
        if real_head is None:
            real_head = directories[head] = os.path.realpath(head)
        path = os.path.join(real_head, tail)
        return os.path.realpath(path) if os.path.islink(path) else path

    return resolve


def probe_record(rootdir: Path, test_files: list[str]) -> dict[str, Any]:
    """The JSON record of what this process imported (see the module docstring)."""
    env = [str(d) for d in environment_dirs(rootdir)]
    resolve = _resolver()
    modules: dict[str, str] = {}
    env_top: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not file:
            continue
        try:
            path = resolve(file)
        except (OSError, ValueError):  # a NUL byte in the name; a link loop on some platforms
            continue
        if _within(path, env):
            if "." not in name:
                env_top[name] = path
        else:
            modules[name] = path
    return {
        "format": PROBE_FORMAT,
        "rootdir": str(rootdir.resolve()),
        "executable": sys.executable,
        "cwd": os.getcwd(),
        "test_files": sorted(set(test_files)),
        "modules": modules,
        "environment_modules": env_top,
    }
