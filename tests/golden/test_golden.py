"""The reports of a fixed stored run stay the same from version to version (bar declared additions).

``store.sqlite`` holds two runs of ``suite/`` made with a fake clock (``make_golden.py``);
``expected/`` holds what the reports rendered from it when it was made. A change that moves a
number, a word or a tag in these outputs is either a regression or a deliberate change of the
format, and then ``make_golden.py --render`` records it and the changelog says why.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.golden.render import render_all

HERE = Path(__file__).resolve().parent

# Keys the document gained after the golden outputs were recorded (a dotted path, ``*`` for any
# list index): their values are not compared.
DECLARED_ADDITIONS: frozenset[str] = frozenset(
    {
        "run.method",  # 0.2.0: the method settings as used
        "run.platforms",  # 0.2.0: the presets the platform matrix projects onto
        "tests.*.platforms",  # 0.2.0: the projection of each test's declared work
        # 0.2.0: each comparison's three-way outcome, its margin under the DESIGN's name, and
        # where the margin came from
        *(
            f"tests.*.change.{q}.{key}"
            for q in ("p50", "p95", "p99")
            for key in ("outcome", "margin", "margin_source")
        ),
        "next_steps",  # 0.2.0: the next step of each run-level reason
        # 0.2.0: the gate's margin cap, sampling cap and confirmation setting as used
        "run.gate.max_margin",
        "run.gate.unknown_extension",
        "run.gate.confirm",
        "run.gate.confirm_time_s",  # 0.2.0: how long paired rounds may settle UNKNOWN looks
        # 0.2.0: the baseline run's level against its label's median of recent runs
        "tests.*.baseline.level",
    }
)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    # Reading a WAL store creates -wal/-shm files beside it: read a copy, not the repository's.
    store = tmp_path_factory.mktemp("golden") / "store.sqlite"
    shutil.copyfile(HERE / "store.sqlite", store)
    return render_all(store)


def _expected(name: str) -> str:
    return (HERE / "expected" / name).read_text(encoding="utf-8")


def _same(expected: Any, actual: Any, path: str, generic: str, problems: list[str]) -> None:
    """Compare two JSON values; ``generic`` is ``path`` with every list index written ``*``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(expected.keys() | actual.keys()):
            where, general = f"{path}.{key}".lstrip("."), f"{generic}.{key}".lstrip(".")
            if general in DECLARED_ADDITIONS:
                continue
            if key not in actual or key not in expected:
                problems.append(f"{where}: {'missing' if key not in actual else 'added'}")
                continue
            _same(expected[key], actual[key], where, general, problems)
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            problems.append(f"{path}: {len(expected)} items expected, {len(actual)} found")
            return
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _same(e, a, f"{path}[{index}]", f"{generic}.*", problems)
    elif isinstance(expected, float) and isinstance(actual, (int, float)):
        if not math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-15):
            problems.append(f"{path}: {expected!r} expected, {actual!r} found")
    elif expected != actual:
        problems.append(f"{path}: {expected!r} expected, {actual!r} found")


@pytest.mark.parametrize("name", ["report.json", "compare.json"])
def test_the_json_document_is_unchanged(rendered: dict[str, str], name: str) -> None:
    problems: list[str] = []
    _same(json.loads(_expected(name)), json.loads(rendered[name]), "", "", problems)
    assert problems == []


@pytest.mark.parametrize("name", ["report.md", "compare.md", "report.html", "compare.html"])
def test_the_rendered_text_is_unchanged(rendered: dict[str, str], name: str) -> None:
    assert rendered[name] == _expected(name)
