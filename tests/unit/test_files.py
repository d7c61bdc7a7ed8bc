from __future__ import annotations

import os
from pathlib import Path

from pytest_roofline.files import write_atomic


def test_reports_are_written_atomically_and_readable_by_others(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "report.html"
    write_atomic(target, "<p>hi</p>")
    assert target.read_text() == "<p>hi</p>"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]  # no temporary left behind
