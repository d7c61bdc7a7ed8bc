"""pytest-xdist glue: hand the controller's resolved target to every worker, take their canaries.

Measurements come back on the call-phase test reports (see ``session.REPORT_ATTRIBUTE``), so the
only per-session fact workers need is the target; host calibration then runs once, not per worker.
Each worker's host canary summary comes back in its ``workeroutput`` when it finishes.
"""

from __future__ import annotations

from typing import Any

from pytest_roofline.plugin.session import (
    CANARY_OUTPUT_KEY,
    CONFIRM_INPUT_KEY,
    RooflineSession,
)

__all__ = ["XdistHooks"]


class XdistHooks:
    """Registered on the controller only when pytest-xdist is installed."""

    def __init__(self, session: RooflineSession) -> None:
        self._session = session

    def pytest_configure_node(self, node: Any) -> None:
        target = self._session.target if self._session.settings.enabled else None
        if target is not None:
            node.workerinput["roofline_target"] = target.to_dict()
        node.workerinput[CONFIRM_INPUT_KEY] = self._session.confirm_plan.to_dict()

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        summary = getattr(node, "workeroutput", {}).get(CANARY_OUTPUT_KEY)
        if isinstance(summary, dict):
            self._session.add_canary(summary)
