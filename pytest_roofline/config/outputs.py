"""Output paths that would overwrite something: the store, its journal files, the config in force,
or another output. Checked at configure time, before anything is measured or read.

Writing the JSON document over the store destroys every saved run; writing the Markdown summary
over ``roofline.yaml`` silently replaces the configuration. Paths are compared as the files they
name: ``os.path.samefile`` where both exist (symlinks, hard links, ``..``), normalised absolute
real paths where one does not yet exist.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_roofline.errors import ConfigError
from pytest_roofline.text import shown

__all__ = ["Protected", "check_outputs", "protected_paths", "same_file"]

# SQLite's files beside a database: the write-ahead log, its shared-memory index, and the
# rollback journal (before WAL is set, or after a crash).
_STORE_COMPANIONS = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class Protected:
    """A file no output may be written over, and how a message names it."""

    path: Path
    what: str


def protected_paths(
    store: Path | None, *, config: Path | None = None, ini: Path | None = None
) -> list[Protected]:
    """The store with its ``-wal``/``-shm``/``-journal`` files, the roofline config, the ini file."""
    items: list[Protected] = []
    if store is not None:
        items.append(Protected(store, "the result store"))
        # SQLite names its companions after the database as opened and, through a symlink, as
        # resolved: protect both.
        bases = dict.fromkeys([str(store), os.path.realpath(store)])
        for suffix in _STORE_COMPANIONS:
            for base in bases:
                items.append(Protected(Path(base + suffix), f"the result store's {suffix} file"))
    if config is not None:
        items.append(Protected(config, "the roofline config"))
    if ini is not None:
        items.append(Protected(ini, "the pytest config"))
    return items


def _normal(path: Path) -> str:
    return os.path.normcase(os.path.realpath(path))


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (existing or not)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return _normal(a) == _normal(b)


def check_outputs(outputs: Sequence[tuple[str, Path]], protected: Sequence[Protected]) -> None:
    """Refuse an output path that names a protected file or the path of an earlier output.

    :param outputs: ``(option, path)`` of each output asked for, in order.
    :raises ConfigError: naming the option, the path and what it would overwrite.
    """
    seen: list[tuple[str, Path]] = []
    for option, path in outputs:
        for item in protected:
            if same_file(path, item.path):
                raise ConfigError(
                    f"{option}={shown(str(path))}: may not be written over {item.what} "
                    f"({shown(str(item.path))}); choose another path"
                )
        for other_option, other in seen:
            if same_file(path, other):
                raise ConfigError(
                    f"{option}={shown(str(path))}: may not be written over the output of "
                    f"{other_option} ({shown(str(other))}); give each output its own path"
                )
        seen.append((option, path))
