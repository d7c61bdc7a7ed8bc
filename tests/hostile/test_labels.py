"""Item 6: an empty value (an unset CI variable) is a usage error, never a silent default."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import CLI_USAGE, USAGE, no_traceback, run_cli, run_pytest, seed_store

# (option as written, what the message says)
EMPTY_OPTIONS = [
    ("--roofline-baseline=", "--roofline-baseline: empty"),
    ("--roofline-save=", "--roofline-save: empty"),
    ("--roofline-save=   ", "--roofline-save: empty"),
    ("--roofline-store=", "--roofline-store: empty"),
    ("--roofline-json=", "--roofline-json: empty"),
    ("--roofline-report=", "--roofline-report: empty"),
    ("--roofline-markdown=", "--roofline-markdown: empty"),
    ("--roofline-target=", "--roofline-target: empty"),
    ("--roofline-config=", "--roofline-config: empty"),
    ("--roofline-budget=", "--roofline-budget: empty"),
    ("--roofline-save=#7", "labels may not start with '#'"),
]


@pytest.mark.parametrize(("option", "message"), EMPTY_OPTIONS, ids=[o for o, _ in EMPTY_OPTIONS])
def test_an_empty_option_is_a_usage_error(project: Path, option: str, message: str) -> None:
    ran = run_pytest(project, "--roofline", option)
    assert ran.status == USAGE, ran.explain()
    assert message in ran.err, ran.explain()
    no_traceback(ran)
    assert not (project / "measured.flag").exists()


def test_an_empty_baseline_does_not_turn_the_gate_off_even_without_roofline(project: Path) -> None:
    ran = run_pytest(project, "--roofline-baseline=")
    assert ran.status == USAGE, ran.explain()


EMPTY_CLI = [
    ["import", "x.json", "--store", "s.sqlite", "--label="],
    ["import", "x.json", "--store", "s.sqlite", "--label=  "],
    ["ab", "--baseline=HEAD", "--store", "s.sqlite", "--label="],
    ["ab", "--baseline=", "--store", "s.sqlite"],
    ["report", "", "--store", "s.sqlite"],
    ["runs", "--store="],
    ["import", "x.json", "--store", "s.sqlite", "--label=#3"],
]


@pytest.mark.parametrize("argv", EMPTY_CLI, ids=[" ".join(a) for a in EMPTY_CLI])
def test_the_command_refuses_an_empty_label_or_path(tmp_path: Path, argv: list[str]) -> None:
    seed_store(tmp_path / "s.sqlite", "main")
    (tmp_path / "x.json").write_text("{}")
    ran = run_cli(tmp_path, *argv)
    assert ran.status == CLI_USAGE, ran.explain()
    assert "empty" in ran.err or "'#'" in ran.err, ran.explain()
    no_traceback(ran)
