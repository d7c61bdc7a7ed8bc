"""Items 2 and 3: a printed command runs exactly what it says, and nothing printed to a terminal
carries a control sequence from user input.

Item 2's check is a real shell: each printed command is run by ``sh`` with ``pytest`` (or
``pytest-roofline``) defined as a function that prints its arguments, so a quoting mistake shows
as a wrong argument list or as the side effect the hostile word asks for.
"""

from __future__ import annotations

import html
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from pytest_roofline.gate.run import replay_command

from .conftest import FAKE_CLOCK_CONFTEST, INI, no_traceback, run_cli, run_pytest

HOSTILE_WORDS = [
    "main;touch${IFS}pwned;#",
    "$(touch pwned)",
    "`touch pwned`",
    "a b' ; touch pwned ; echo '",
    'x" && touch pwned && echo "',
    "feature/x|touch pwned",
    "line\ntouch pwned",
    "--roofline-gate=never",
    "*",
    "~root",
]


def shell_argv(command: str, cwd: Path) -> list[str]:
    """The argument list ``sh`` gives the command's program (run as a function that prints them)."""
    program, _, rest = command.partition(" ")
    assert program in ("pytest", "pytest-roofline"), command
    script = f"show() {{ printf '%s\\0' \"$@\"; }}\nshow {rest}\n"
    done = subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    return os.fsdecode(done.stdout).split("\0")[:-1]


@pytest.mark.parametrize("word", HOSTILE_WORDS)
@pytest.mark.parametrize("place", ["label", "target", "nodeid"])
def test_the_replay_command_runs_exactly_its_arguments(
    tmp_path: Path, word: str, place: str
) -> None:
    nodeid = f"tests/test_x.py::test_a[{word}]" if place == "nodeid" else "tests/test_x.py::test_a"
    label = word if place == "label" else "main"
    target = word if place == "target" else "ci"

    command = replay_command(nodeid, label, target)

    assert shell_argv(command, tmp_path) == [
        "--roofline",
        f"--roofline-baseline={label}",
        f"--roofline-target={target}",
        nodeid,
    ]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("word", HOSTILE_WORDS)
def test_the_paired_replay_command_runs_exactly_its_arguments(tmp_path: Path, word: str) -> None:
    from pytest_roofline.ab.rounds import replay_prefix

    nodeid = f"tests/test_x.py::test_a[{word}]"
    command = replay_prefix(baseline_ref=word, rounds=8, import_root=word)(nodeid)
    assert shell_argv(command, tmp_path) == [
        "ab", f"--baseline={word}", "--rounds=8", f"--import-root={word}", "--", nodeid,
    ]  # fmt: skip
    assert not (tmp_path / "pwned").exists()


def test_the_printed_replay_command_is_quoted_in_every_output(pytester: pytest.Pytester) -> None:
    """End to end: a hostile baseline label reaches the JSON, Markdown and HTML quoted."""
    label = "main;touch${IFS}pwned;#"
    pytester.makefile(
        ".yaml",
        roofline="target: ci\ntargets:\n  ci: {peak_flops_per_s: {fp32: 1.0e11}, peak_bytes_per_s: {dram: 1.0e10}}\n",
    )
    pytester.makeini(INI)
    pytester.makeconftest(FAKE_CLOCK_CONFTEST)
    pytester.makepyfile(
        test_k="import pytest\n\n@pytest.mark.roofline(sla={'p99': '1us'})\ndef test_a(roofline, work):\n    roofline(work)\n"
    )
    root = Path(pytester.path)
    assert (
        run_pytest(root, "--roofline", f"--roofline-save={label}", "--roofline-gate=never").status
        == 0
    )
    ran = run_pytest(
        root, "--roofline", f"--roofline-baseline={label}", "--roofline-json=o.json",
        "--roofline-markdown=o.md", "--roofline-report=o.html",
    )  # fmt: skip
    no_traceback(ran)
    (test,) = json.loads((root / "o.json").read_text())["tests"]
    command = test["replay_command"]
    expected = [
        "--roofline",
        f"--roofline-baseline={label}",
        "--roofline-target=ci",
        "test_k.py::test_a",
    ]
    assert shell_argv(command, root) == expected
    assert shlex.join(["pytest", *expected]) == command
    assert command in html.unescape((root / "o.html").read_text())
    assert f"Replay:    {command}" in ran.out, ran.explain()
    assert not (root / "pwned").exists()


# ---------------------------------------------------------------------------------- item 3
CONTROL = [
    ("clear-screen", "\x1b[2J"),
    ("osc-title", "\x1b]0;pwned\x07"),
    ("carriage-return", "ok\rFAKE"),
    ("c1-csi", "\x9b31m"),
    ("newline", "a\nPASSED fake line"),
    ("bidi-override", "\u202eevil"),
]


def _assert_no_control(raw: bytes, what: str) -> None:
    text = raw.decode("utf-8", "replace")
    for ch in text:
        assert ch in "\n" or ch.isprintable(), f"{what}: raw control {ch!r} printed:\n{text}"


@pytest.fixture
def gated(pytester: pytest.Pytester) -> Path:
    pytester.makefile(
        ".yaml",
        roofline="target: ci\ntargets:\n  ci: {peak_flops_per_s: {fp32: 1.0e11}, peak_bytes_per_s: {dram: 1.0e10}}\n",
    )
    pytester.makeini(INI)
    pytester.makeconftest(FAKE_CLOCK_CONFTEST)
    return Path(pytester.path)


@pytest.mark.parametrize("sequence", [c[1] for c in CONTROL], ids=[c[0] for c in CONTROL])
def test_owner_and_rollback_text_reach_the_terminal_escaped(gated: Path, sequence: str) -> None:
    (gated / "test_k.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.roofline(owner={('team' + sequence)!r}, rollback={('revert' + sequence)!r},"
        " sla={'p99': '1us'})\n"
        "def test_a(roofline, work):\n    roofline(work)\n"
    )
    ran = run_pytest(gated, "--roofline", "--roofline-save=main", "--roofline-gate=escalate", "-rA")
    assert ran.status == 1, ran.explain()
    assert "Owner:" in ran.out, ran.explain()
    _assert_no_control(ran.raw_out, "the failure memo")
    visible = sequence.encode("unicode_escape").decode("ascii")
    assert visible in ran.out, ran.explain()

    report = run_cli(gated, "report", "main", "--store", ".roofline/store.sqlite")
    no_traceback(report)
    _assert_no_control(report.raw_out, "pytest-roofline report")
    assert visible in report.out, report.explain()


@pytest.mark.parametrize("sequence", [c[1] for c in CONTROL], ids=[c[0] for c in CONTROL])
def test_labels_reach_the_runs_table_escaped(tmp_path: Path, sequence: str) -> None:
    from .conftest import seed_store

    seed_store(tmp_path / "s.sqlite", "nightly" + sequence)
    ran = run_cli(tmp_path, "runs", "--store", "s.sqlite")
    assert ran.status == 0, ran.explain()
    _assert_no_control(ran.raw_out, "pytest-roofline runs")
    assert "nightly" + sequence.encode("unicode_escape").decode("ascii") in ran.out


def test_an_error_that_echoes_user_input_is_escaped(tmp_path: Path) -> None:
    from .conftest import seed_store

    seed_store(tmp_path / "s.sqlite", "main\x1b[2J")
    ran = run_cli(tmp_path, "report", "no\x1b]0;pwned\x07such", "--store", "s.sqlite")
    assert ran.status == 2, ran.explain()
    _assert_no_control(ran.raw_err, "the error message")
