"""Item 4: text that is not valid UTF-8 (undecodable bytes from argv, file names, the
environment, or lone surrogates in Python strings) never crashes a run and is never lost.

The policy (docs/hostile-input.md): labels are refused up front with a usage error that names
the value; test file names, owners and tags are accepted and stored faithfully (JSON escapes
``\\udcff``, the store keeps such a node id as its exact bytes), and shown escaped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_roofline.store import Store

from .conftest import (
    CLI_USAGE,
    OK,
    USAGE,
    no_traceback,
    run_cli,
    run_cli_many,
    run_pytest,
    seed_store,
)

XFF = os.fsdecode(b"\xff")  # '\udcff': how Python decodes the byte 0xff from argv or a file name


@pytest.mark.parametrize(
    "option",
    [b"--roofline-save=lab\xffel", b"--roofline-baseline=lab\xffel"],
    ids=["save", "baseline"],
)
def test_a_label_that_is_not_utf8_is_a_usage_error_naming_it(project: Path, option: bytes) -> None:
    ran = run_pytest(project, "--roofline", option)
    assert ran.status == USAGE, ran.explain()
    assert "lab\\xffel" in ran.err and "not valid UTF-8" in ran.err, ran.explain()
    no_traceback(ran)
    assert not (project / "measured.flag").exists()


TEST_BODY = "def test_a(roofline):\n    roofline(sorted, [3, 1, 2])\n"
# (case, file name, test source, extra arguments): each is accepted and kept exactly.
ACCEPTED = [
    ("file-name", b"test_\xff.py", TEST_BODY, []),
    (
        "owner",
        b"test_owner.py",
        "import os, pytest\n\n@pytest.mark.roofline(owner=os.fsdecode(b'\\xff-team'), rollback='\\ud800')\n"
        + TEST_BODY,
        [],
    ),
    ("tag-value", b"test_tag.py", TEST_BODY, [b"--roofline-tag=dataset=v\xff1"]),
    ("tag-key", b"test_tag.py", TEST_BODY, [b"--roofline-tag=d\xffta=v1"]),
]


@pytest.mark.parametrize(
    ("filename", "source", "extra"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED]
)
def test_text_that_is_not_utf8_is_stored_faithfully_and_shown_escaped(
    project: Path, filename: bytes, source: str, extra: list[bytes]
) -> None:
    (project / "test_s.py").unlink()
    (project / os.fsdecode(filename)).write_text(source)
    outputs = ["--roofline-json=o.json", "--roofline-markdown=o.md", "--roofline-report=o.html"]

    ran = run_pytest(project, "--roofline", "--roofline-save=main", *outputs, *extra)

    assert ran.status == OK, ran.explain()
    no_traceback(ran)
    assert "saved run 1" in ran.out, ran.explain()
    document = json.loads((project / "o.json").read_text(encoding="utf-8"))
    (test,) = document["tests"]
    nodeid = os.fsdecode(filename) + "::test_a"
    assert test["nodeid"] == nodeid
    with Store.open(project / ".roofline" / "store.sqlite", create=False) as store:
        run = store.load_run(1)
    assert list(run.results) == [nodeid]
    payload = run.results[nodeid].payload
    if b"owner" in filename:
        assert payload["owners"] == [os.fsdecode(b"\xff-team")]
        assert payload["rollback"] == "\ud800"
    if extra:
        key, _, value = os.fsdecode(extra[0]).partition("=")[2].partition("=")
        assert run.record.tags[key] == value
        assert document["run"]["tags"][key] == value
    for name in ("o.md", "o.html"):
        (project / name).read_bytes().decode("utf-8")  # valid UTF-8, escapes shown as text

    again = run_pytest(
        project, "--roofline", "--roofline-baseline=main", "--roofline-json=o.json", *extra
    )
    no_traceback(again)
    assert again.status in (0, 1), again.explain()
    (test,) = json.loads((project / "o.json").read_text(encoding="utf-8"))["tests"]
    assert test["nodeid"] == nodeid
    assert test["baseline"] is not None  # found under the same, exact node id

    # One interpreter for the three commands (each its own main(argv)): the start is most of
    # their time.
    exported, imported, compared = run_cli_many(
        project,
        ["export", "main", "--store", ".roofline/store.sqlite", "-o", "x.json"],
        ["import", "x.json", "--store", "other.sqlite"],
        ["compare", "main", "main", "--store", ".roofline/store.sqlite"],
    )
    assert exported.status == OK, exported.explain()
    assert imported.status == OK, imported.explain()
    with Store.open(project / "other.sqlite", create=False) as store:
        assert list(store.load_run(1).results) == [nodeid]
    no_traceback(compared)
    assert compared.status == OK, compared.explain()


@pytest.mark.parametrize(
    "argv",
    [
        [b"report", b"lab\xffel", b"--store", b"s.sqlite"],
        [b"import", b"x.json", b"--store", b"s.sqlite", b"--label=lab\xffel"],
        [b"ab", b"--baseline=HEAD", b"--store", b"s.sqlite", b"--label=lab\xffel"],
    ],
    ids=["report", "import", "ab"],
)
def test_the_command_refuses_a_label_that_is_not_utf8(tmp_path: Path, argv: list[bytes]) -> None:
    seed_store(tmp_path / "s.sqlite", "main")
    (tmp_path / "x.json").write_text("{}")
    ran = run_cli(tmp_path, *argv)
    assert ran.status == CLI_USAGE, ran.explain()
    assert "lab\\xffel" in ran.err, ran.explain()
    no_traceback(ran)
