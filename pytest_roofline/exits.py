"""Exit statuses of ``pytest --roofline`` and of the ``pytest-roofline`` command: one table.

======  =====================================================================================
status  meaning
======  =====================================================================================
0       no decision fails the run: every test ships, or escalates under the default gate
        (the command: success)
1       rollback (and escalate under ``--roofline-gate=escalate`` / ``--gate escalate``)
2       the command's usage or data error (bad arguments, an unusable store or file); for
        pytest itself, an interrupted run
3       pytest's internal error
4       the plugin's usage or data error: bad options, markers, config, an unknown baseline
        label, a corrupt or newer store; reported before anything is measured
7       a requested output (the save, ``--roofline-json``, ``--roofline-report``,
        ``--roofline-markdown``; the command's ``--json``/``--html``/``--markdown``/``-o`` or an
        import) could not be written; nothing stored earlier is lost
======  =====================================================================================

7 is outside pytest's own statuses (0-6; 5 is "no tests collected", 6 "too many warnings" since
pytest 9), so a CI step can tell "the baseline was not saved" from a regression and from a
broken setup. The plugin sets it only when the run would otherwise exit 0: a rollback (1) or a
usage error (4) says more, and the terminal summary still lists what was not written.
"""

from __future__ import annotations

__all__ = ["CLI_USAGE", "INTERNAL", "OK", "ROLLBACK", "USAGE", "WRITE_FAILED"]

OK = 0
ROLLBACK = 1
CLI_USAGE = 2
INTERNAL = 3
USAGE = 4
WRITE_FAILED = 7
