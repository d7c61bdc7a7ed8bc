"""Item 1: no output is ever written over the store, its journal files, the config in force, or
another output; the run is refused before anything is measured (plugin) or read (command)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import (
    CLI_USAGE,
    USAGE,
    digest,
    no_traceback,
    run_cli,
    run_pytest,
    seed_store,
    stored_labels,
)

STORE = "s.sqlite"

# (case, output options, what the refusal names)
PLUGIN_CASES = [
    ("json-is-the-store", ["--roofline-json=s.sqlite"], "the result store"),
    ("report-is-the-wal", ["--roofline-report=s.sqlite-wal"], "the result store's -wal file"),
    ("markdown-is-the-shm", ["--roofline-markdown=s.sqlite-shm"], "the result store's -shm file"),
    ("json-is-the-journal", ["--roofline-json=s.sqlite-journal"], "the result store's -journal"),
    ("json-via-dot-dot", ["--roofline-json=sub/../s.sqlite"], "the result store"),
    ("json-via-a-symlink", ["--roofline-json=link.sqlite"], "the result store"),
    ("markdown-is-the-config", ["--roofline-markdown=roofline.yaml"], "the roofline config"),
    ("json-is-the-ini-file", ["--roofline-json=tox.ini"], "the pytest config"),
    (
        "two-outputs-on-one-path",
        ["--roofline-json=out.txt", "--roofline-markdown=out.txt"],
        "--roofline-json",
    ),
]


@pytest.mark.parametrize(
    ("options", "names"), [c[1:] for c in PLUGIN_CASES], ids=[c[0] for c in PLUGIN_CASES]
)
def test_an_output_over_the_store_or_the_config_is_refused_before_measuring(
    project: Path, options: list[str], names: str
) -> None:
    seed_store(project / STORE, "main")
    (project / "sub").mkdir()
    os.symlink(project / STORE, project / "link.sqlite")
    protected = [project / n for n in (STORE, "roofline.yaml", "tox.ini")]
    before = [digest(p) for p in protected]

    ran = run_pytest(
        project, "--roofline", f"--roofline-store={STORE}", "--roofline-save=cand", *options
    )

    assert ran.status == USAGE, ran.explain()
    assert names in ran.err, ran.explain()
    assert "may not be written over" in ran.err, ran.explain()
    no_traceback(ran)
    assert not (project / "measured.flag").exists(), "the refused run measured a test"
    assert [digest(p) for p in protected] == before
    assert stored_labels(project / STORE) == ["main"]
    assert not (project / "out.txt").exists()


# (case, command line after the subcommand's own arguments)
CLI_CASES = [
    ("report-json-is-the-store", ["report", "main", "--store", STORE, "--json", STORE]),
    ("report-html-is-the-wal", ["report", "main", "--store", STORE, "--html", f"{STORE}-wal"]),
    (
        "report-markdown-via-symlink",
        ["report", "main", "--store", STORE, "--markdown", "link.sqlite"],
    ),
    ("compare-html-is-the-store", ["compare", "1", "1", "--store", STORE, "--html", STORE]),
    ("export-output-is-the-store", ["export", "main", "--store", STORE, "-o", STORE]),
    (
        "report-two-outputs-one-path",
        ["report", "main", "--store", STORE, "--json", "o", "--html", "o"],
    ),
    ("ab-json-is-the-store", ["ab", "--baseline=HEAD", "--store", STORE, "--json", STORE]),
]


@pytest.mark.parametrize("argv", [c[1] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_the_command_refuses_an_output_over_its_store(tmp_path: Path, argv: list[str]) -> None:
    seed_store(tmp_path / STORE, "main")
    os.symlink(tmp_path / STORE, tmp_path / "link.sqlite")
    before = digest(tmp_path / STORE)

    ran = run_cli(tmp_path, *argv)

    assert ran.status == CLI_USAGE, ran.explain()
    assert "may not be written over" in ran.err, ran.explain()
    no_traceback(ran)
    assert digest(tmp_path / STORE) == before
    assert stored_labels(tmp_path / STORE) == ["main"]
    assert not (tmp_path / "o").exists()
