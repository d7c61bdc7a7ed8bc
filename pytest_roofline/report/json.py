"""The JSON document (``--roofline-json``): the run document's own JSON, indented."""

from __future__ import annotations

import json

from pytest_roofline.model.document import RunDocument

__all__ = ["render_json"]


def render_json(document: RunDocument) -> str:
    """``document`` as strict JSON (no NaN), one key per line."""
    return json.dumps(document.to_json(), indent=2, allow_nan=False) + "\n"
