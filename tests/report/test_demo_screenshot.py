"""The screenshot in docs/demo.md: the demo's candidate report, rendered and photographed.

``docs/demo/candidate.json`` is the document of a real demo run (``example_suite/demo.py``).
This test renders it with today's renderer in headless Chromium, checks that the page shows
the decisions docs/demo.md talks about, and takes the screenshot. With
``ROOFLINE_UPDATE_DOCS=1`` it writes the picture to ``docs/demo-report.png`` (run it so after a
change to the report or a new demo document; the PNG is reviewed like any other change).
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pytest_roofline.files import write_atomic
from pytest_roofline.model.document import RunDocument
from pytest_roofline.report.html import render_html
from tests.report.browser import Browser, find_chromium

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "demo" / "candidate.json"
SCREENSHOT = ROOT / "docs" / "demo-report.png"
CHROMIUM = find_chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium)")
def test_the_demo_report_renders_and_is_photographed_for_the_docs(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    data = json.loads(DOCUMENT.read_text())
    page = tmp_path / "candidate.html"
    write_atomic(page, render_html(RunDocument.read(data)))
    with Browser(CHROMIUM, width=1400, height=1000) as browser:
        browser.open(page.as_uri())
        assert browser.errors == []
        rows = browser.evaluate(
            "[...document.querySelectorAll('#test-table tbody tr')].map(r => r.textContent)"
        )
        assert len(rows) == len(data["tests"])
        shown = Counter(
            decision
            for row in rows
            for decision in ("rollback", "escalate", "ship")
            if decision in row.lower()
        )
        expected = Counter(t["decision"] for t in data["tests"])
        for decision in ("rollback", "escalate", "ship"):
            assert shown[decision] >= expected[decision] > 0
        shot = browser.screenshot(tmp_path / "demo-report.png", max_height=2600)
        assert browser.errors == []
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    if os.environ.get("ROOFLINE_UPDATE_DOCS") == "1":
        shutil.copyfile(shot, SCREENSHOT)
    assert SCREENSHOT.is_file(), "run with ROOFLINE_UPDATE_DOCS=1 to write docs/demo-report.png"
