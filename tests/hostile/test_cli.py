"""Items 10 and 11 (run ids): a RUN argument the command cannot use is a usage error (exit 2),
never a traceback; ``#N`` names run id N, and a label that looks like a number wins over the
run id, with a note saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import (
    CLI_USAGE,
    INTERNAL,
    OK,
    ROLLBACK,
    USAGE,
    WRITE_FAILED,
    no_traceback,
    run_cli,
    seed_store,
)

BAD_RUNS = [
    ("superscript-two", "²"),
    ("arabic-indic-digit", "٣"),
    ("huge-id", "99999999999999999999999"),
    ("huge-hash-id", "#99999999999999999999999"),
    ("zero", "0"),
    ("hash-zero", "#0"),
    ("hash-alone", "#"),
    ("hash-word", "#main"),
    ("hash-negative", "#-1"),
    ("unknown-id", "#42"),
    ("spaces", " 1 "),
]


@pytest.mark.parametrize("run", [c[1] for c in BAD_RUNS], ids=[c[0] for c in BAD_RUNS])
@pytest.mark.parametrize("command", ["report", "export", "compare"])
def test_a_run_argument_that_names_no_run_is_a_usage_error(
    tmp_path: Path, command: str, run: str
) -> None:
    seed_store(tmp_path / "s.sqlite", "main")
    argv = [command, run, "--store", "s.sqlite"]
    if command == "compare":
        argv = [command, "main", run, "--store", "s.sqlite"]
    ran = run_cli(tmp_path, *argv)
    assert ran.status == CLI_USAGE, ran.explain()
    assert "error:" in ran.err, ran.explain()
    no_traceback(ran)


# (labels saved in order, RUN argument, the run id meant, a note on stderr)
NUMERIC = [
    (["main", "main"], "1", 1, None),
    (["main", "main"], "#2", 2, None),
    (["main", "1", "1"], "1", 3, "both a label and a run id"),
    (["main", "1", "1"], "#1", 1, None),
    (["7"], "7", 1, None),
]


@pytest.mark.parametrize(("labels", "run", "meant", "note"), NUMERIC)
def test_a_numeric_label_and_a_run_id_are_told_apart(
    tmp_path: Path, labels: list[str], run: str, meant: int, note: str | None
) -> None:
    seed_store(tmp_path / "s.sqlite", *labels)
    ran = run_cli(tmp_path, "export", run, "--store", "s.sqlite", "-o", "x.json")
    assert ran.status == OK, ran.explain()
    import json

    exported = json.loads((tmp_path / "x.json").read_text())
    assert exported["run"]["label"] == labels[meant - 1]
    with_id = run_cli(tmp_path, "export", f"#{meant}", "--store", "s.sqlite")
    assert json.loads(with_id.out) == exported
    if note is not None:
        assert note in ran.err and f"#{run}" in ran.err, ran.explain()
    else:
        assert "both a label" not in ran.err


def test_the_exit_statuses_are_one_table() -> None:
    from pytest_roofline import exits
    from pytest_roofline.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, EXIT_WRITE_FAILED

    assert (exits.OK, exits.ROLLBACK, exits.CLI_USAGE, exits.INTERNAL, exits.USAGE) == (
        OK, ROLLBACK, CLI_USAGE, INTERNAL, USAGE,
    )  # fmt: skip
    assert exits.WRITE_FAILED == WRITE_FAILED
    assert (EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_WRITE_FAILED) == (0, 1, 2, WRITE_FAILED)
    assert WRITE_FAILED not in {int(code) for code in pytest.ExitCode}
