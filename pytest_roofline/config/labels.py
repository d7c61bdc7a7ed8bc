"""Run labels (``--roofline-save``, ``--roofline-baseline``, the command's ``--label``): the rules.

A label is typed again later (the next run's ``--roofline-baseline``, ``pytest-roofline report
LABEL``), shown in reports and PR comments, and stored as text, so it must be:

* non-empty: ``--roofline-baseline=$BRANCH`` with ``$BRANCH`` unset must not turn the gate off
  without a word;
* valid UTF-8: a label holding bytes that are not UTF-8 (``lab<0xff>el`` from a shell) is refused
  up front, naming the bytes, instead of being stored in a form the next command line could not
  type back; nothing has been measured yet, so nothing is lost;
* not starting with ``#``: ``#N`` names run id N in the ``pytest-roofline`` command.
"""

from __future__ import annotations

from pytest_roofline.errors import ConfigError
from pytest_roofline.text import is_utf8, shown

__all__ = ["RUN_ID_PREFIX", "check_label", "check_nonempty"]

RUN_ID_PREFIX = "#"


def check_nonempty(value: str, *, where: str, what: str) -> str:
    """``value`` unless it is empty or blank (an unset CI variable), which is refused."""
    if not value.strip():
        raise ConfigError(
            f"{where}: empty {what} given; pass a {what} or leave the option out "
            "(is the CI variable that should hold it set?)"
        )
    return value


def check_label(value: object, *, where: str) -> str:
    """``value`` if it is a usable label (see the module docstring).

    :raises ConfigError: naming ``where`` and the value as given.
    """
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a label (text), got {value!r}")
    check_nonempty(value, where=where, what="label")
    if not is_utf8(value):
        raise ConfigError(
            f"{where}: the label {shown(value)} is not valid UTF-8 (undecodable bytes are "
            "shown as \\xNN); labels are stored as text and typed again to find a run: "
            "use a UTF-8 label"
        )
    if value.startswith(RUN_ID_PREFIX):
        raise ConfigError(
            f"{where}: {shown(value)}: labels may not start with '#' "
            "(#N names run id N in the pytest-roofline command)"
        )
    return value
