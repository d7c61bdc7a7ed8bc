"""Error and warning types shared by every layer.

Pure modules (``roofline``, ``stats``, ``policy``, ``hardware``, ``store``) raise these and never
import pytest; the plugin turns a :class:`RooflineError` raised by user input into
``pytest.UsageError`` at configure or collection time.
"""

from __future__ import annotations

__all__ = [
    "AbError",
    "CliError",
    "ConfigError",
    "OutputError",
    "RooflineError",
    "RooflineWarning",
    "StoreError",
    "StoreWriteError",
]


class RooflineError(Exception):
    """A problem with user input or stored data; the message names the source and the valid form."""


class ConfigError(RooflineError, ValueError):
    """Invalid configuration: an option, ini key, ``roofline.yaml`` key, marker argument or declaration."""


class AbError(RooflineError):
    """``pytest-roofline ab`` cannot run or must refuse: the message says why and what to do."""


class CliError(RooflineError):
    """Bad input to the ``pytest-roofline`` command: printed as is, exit status 2."""


class StoreError(RooflineError):
    """The result store cannot be opened, read or written safely (nothing stored is changed)."""


class OutputError(RooflineError):
    """A requested output (a save, a JSON document, a report) could not be written (exit status 7)."""


class StoreWriteError(StoreError, OutputError):
    """A write to the store failed (locked, read-only, disk full); the store is as it was."""


class RooflineWarning(UserWarning):
    """A recoverable problem (missing counters, degenerate samples, a busy host); filter it like any warning."""
