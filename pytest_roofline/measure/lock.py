"""A cross-process measurement lock: two pytest-xdist workers never time at once.

Other tests keep running in parallel; only the sampling phases of measured tests are serialised,
so a measurement does not share the machine's cores with another measurement.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

try:  # POSIX; elsewhere the lock is a no-op and the docs say measurements may overlap
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["MeasurementLock"]


class MeasurementLock:
    """An exclusive ``flock`` on a file, held around a measurement (re-entrant per instance)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._depth = 0

    def __enter__(self) -> MeasurementLock:
        if self._depth == 0 and fcntl is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
        self._depth += 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            try:
                if fcntl is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
