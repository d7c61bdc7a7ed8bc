"""Item 9: a corrupt row in a valid store makes that run unusable with a message naming the run
and the row; every other run stays usable, and ``runs`` still lists them all."""

from __future__ import annotations

import shutil
import sqlite3
import struct
from pathlib import Path

import pytest

from .conftest import (
    CLI_USAGE,
    INI,
    OK,
    ROOFLINE_YAML,
    USAGE,
    no_traceback,
    run_cli_many,
    run_pytest,
)

NODEID = "test_s.py::test_a"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose store holds run 1 ('main') and run 2 ('other') of the same two tests."""
    root = tmp_path_factory.mktemp("corruption")
    (root / "roofline.yaml").write_text(ROOFLINE_YAML)
    (root / "pytest.ini").write_text(INI)
    (root / "test_s.py").write_text(
        "def test_a(roofline):\n    roofline(sorted, [3, 1, 2])\n\n"
        "def test_b(roofline):\n    roofline(len, 'ab')\n"
    )
    for label in ("main", "other"):
        ran = run_pytest(
            root, "--roofline", "--roofline-store=s.sqlite", f"--roofline-save={label}"
        )
        assert ran.status == OK, ran.explain()
    return root


ROW = f"WHERE run_id = 1 AND nodeid = '{NODEID}'"
# (case, SQL that corrupts run 1, what the message names besides the run)
CORRUPTIONS = [
    ("payload-not-json", f"UPDATE results SET payload = '{{not json' {ROW}", NODEID),
    ("payload-a-list", f"UPDATE results SET payload = '[]' {ROW}", NODEID),
    (
        "payload-without-measurement",
        f'UPDATE results SET payload = \'{{"nodeid": "x"}}\' {ROW}',
        NODEID,
    ),
    ("samples-five-bytes", f"UPDATE results SET samples = x'0102030405' {ROW}", NODEID),
    (
        "samples-nan",
        f"UPDATE results SET samples = x'{struct.pack('<d', float('nan')).hex()}' {ROW}",
        NODEID,
    ),
    (
        "samples-negative",
        f"UPDATE results SET samples = x'{struct.pack('<d', -1.0).hex()}' {ROW}",
        NODEID,
    ),
    ("tags-garbage", "UPDATE runs SET tags = 'garbage' WHERE id = 1", "tags"),
    ("tags-a-list", "UPDATE runs SET tags = '[1, 2]' WHERE id = 1", "tags"),
    ("summary-garbage", "UPDATE runs SET summary = '{' WHERE id = 1", "summary"),
    (
        "target-garbage",
        'UPDATE runs SET target = \'{"name": 5, "peak_flops_per_s": 1}\' WHERE id = 1',
        "target",
    ),
    ("started-out-of-range", "UPDATE runs SET started = 1e300 WHERE id = 1", "started"),
]


RUN_LEVEL = ("tags", "summary", "started")


@pytest.mark.parametrize(
    ("sql", "names"), [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS]
)
def test_a_corrupt_row_makes_only_its_run_unusable_and_says_which(
    made: Path, tmp_path: Path, sql: str, names: str
) -> None:
    for name in ("roofline.yaml", "pytest.ini", "test_s.py", "s.sqlite"):
        shutil.copyfile(made / name, tmp_path / name)
    db = sqlite3.connect(tmp_path / "s.sqlite", isolation_level=None)
    db.execute(sql)
    db.close()

    used = run_pytest(
        tmp_path, "--roofline", "--roofline-store=s.sqlite", "--roofline-baseline=main"
    )
    assert used.status == USAGE, used.explain()
    assert "run 1" in used.err and names in used.err, used.explain()
    no_traceback(used)

    if names == "tags":  # a session with another baseline still works (once: a session is slow)
        fine = run_pytest(
            tmp_path, "--roofline", "--roofline-store=s.sqlite", "--roofline-baseline=other",
            "--roofline-gate=never",
        )  # fmt: skip
        assert fine.status == OK, fine.explain()

    refusing = (["compare", "main", "other"], ["report", "main"], ["export", "main"])
    working = (["compare", "other", "other"], ["runs"], ["runs", "--json"])
    # One interpreter for the commands (each its own main(argv)): the start is most of their time.
    *results, listed = run_cli_many(
        tmp_path, *([*argv, "--store", "s.sqlite"] for argv in (*refusing, *working, ["runs"]))
    )
    for refused in results[: len(refusing)]:
        assert refused.status == CLI_USAGE, refused.explain()
        assert "run 1" in refused.err and names in refused.err, refused.explain()
        no_traceback(refused)
    for ran in results[len(refusing) :]:
        assert ran.status == OK, ran.explain()
        no_traceback(ran)
    assert "other" in listed.out, listed.explain()
    if names in RUN_LEVEL:  # a run whose own row is corrupt is listed as such
        assert "unreadable" in listed.out, listed.explain()
