"""The self-contained HTML signoff report (docs/report.md), rendered from the run document.

This package reads the run document (:mod:`pytest_roofline.model.document`), formats numbers and
lays out charts, and never decides anything; a gap in the document (an older run, a run without
a baseline) is shown as a gap ("no baseline", "n/a"), never guessed.

The page is one file: CSS, SVG and a small sorting/filtering script inline, no external URL, so
it opens offline from a CI artifact. Its Content-Security-Policy allows no network at all and
only the one inline script (by hash), so even a markup bug could not run injected script.
Test ids, owners, tags and reasons are untrusted text: Jinja's autoescape renders them inert.

Modules: :mod:`~.view` (what the template draws), :mod:`~.banner`, :mod:`~.table`,
:mod:`~.memo` and :mod:`~.page` (building it from the document).
"""

from __future__ import annotations

import base64
import functools
import hashlib

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from pytest_roofline.model.document import RunDocument
from pytest_roofline.report.html.page import build_view

__all__ = ["build_view", "render_html"]

_TEMPLATE = "report.html.j2"
_SCRIPT = "report.js"


@functools.lru_cache(maxsize=1)
def _environment() -> Environment:
    # Every template is HTML, so autoescape is on for all of them (names end in .j2).
    return Environment(
        loader=PackageLoader("pytest_roofline", "report/templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@functools.lru_cache(maxsize=1)
def _script() -> tuple[Markup, str]:
    """The inline script (trusted, ours) and its CSP hash, so the page allows that script only."""
    loader = _environment().loader
    assert loader is not None
    source = loader.get_source(_environment(), _SCRIPT)[0]
    digest = base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")
    return Markup(source), f"'sha256-{digest}'"


def render_html(document: RunDocument) -> str:
    """Render the signoff report for ``document`` as one self-contained HTML page."""
    script, script_hash = _script()
    template = _environment().get_template(_TEMPLATE)
    return template.render(view=build_view(document), script=script, script_hash=script_hash)
