"""Item 5: a requested save, JSON, HTML report or Markdown summary that cannot be written fails
the run with its own exit status (7), says why in words that fit the cause, and loses nothing
saved earlier.

The full-disk and read-only-mount cases run pytest inside a private mount namespace on a small
tmpfs (``unshare``); they are skipped where the machine does not allow that.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import (
    USAGE,
    WRITE_FAILED,
    Ran,
    digest,
    no_traceback,
    run_cli,
    run_pytest,
    seed_store,
    stored_labels,
)

# A conftest that shortens the store's wait for a write lock (60 s) so a held lock shows at once.
SHORT_WAIT = "import pytest_roofline.store.sqlite as s\ns._BUSY_TIMEOUT_MS = 200\n"

# (case, options, the message's fragment); every case also saves the run, which succeeds.
UNWRITABLE_OUTPUTS = [
    ("json", ["--roofline-json=blocker/o.json"], "could not write the JSON to"),
    ("html", ["--roofline-report=blocker/o.html"], "could not write the HTML report to"),
    ("markdown", ["--roofline-markdown=blocker/o.md"], "could not write the Markdown summary to"),
]


@pytest.mark.parametrize(
    ("options", "message"),
    [c[1:] for c in UNWRITABLE_OUTPUTS],
    ids=[c[0] for c in UNWRITABLE_OUTPUTS],
)
def test_an_output_that_cannot_be_written_fails_the_run(
    project: Path, options: list[str], message: str
) -> None:
    (project / "blocker").write_text("a file, not a directory")
    ran = run_pytest(project, "--roofline", "--roofline-save=main", *options)
    assert ran.status == WRITE_FAILED, ran.explain()
    assert message in ran.out, ran.explain()
    assert "report report" not in ran.out
    no_traceback(ran)
    assert stored_labels(project / ".roofline" / "store.sqlite") == ["main"]


def test_a_save_that_waits_past_a_held_lock_fails_the_run_and_writes_the_rest(
    project: Path,
) -> None:
    (project / "conftest.py").write_text(SHORT_WAIT)
    store = project / "s.sqlite"
    seed_store(store, "earlier")
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        ran = run_pytest(
            project, "--roofline", "--roofline-store=s.sqlite", "--roofline-save=main",
            "--roofline-json=o.json",
        )  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ran.status == WRITE_FAILED, ran.explain()
    assert "locked by another process" in ran.out, ran.explain()
    assert "restore" not in ran.out
    no_traceback(ran)
    assert json.loads((project / "o.json").read_text())["tests"]  # the other outputs are written
    assert stored_labels(store) == ["earlier"]


def test_a_save_into_a_read_only_store_fails_the_run(project: Path) -> None:
    store = project / "s.sqlite"
    seed_store(store, "earlier")
    before = digest(store)
    store.chmod(0o444)
    prefix: list[str] = []
    if os.geteuid() == 0:  # root writes anyway unless it drops the capability
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        prefix = ["setpriv", "--inh-caps=-dac_override", "--bounding-set=-dac_override"]
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--roofline",
         "--roofline-store=s.sqlite", "--roofline-save=main"],
        cwd=project, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    ran = Ran(done.returncode, done.stdout, done.stderr)
    store.chmod(0o644)
    assert ran.status == WRITE_FAILED, ran.explain()
    assert "read-only" in ran.out, ran.explain()
    assert "restore" not in ran.out
    no_traceback(ran)
    assert digest(store) == before
    assert stored_labels(store) == ["earlier"]


# ---------------------------------------------------------------- a small tmpfs in a namespace
def _unshare_prefix() -> list[str]:
    if shutil.which("unshare") is None:
        return []
    for prefix in (["unshare", "-m"], ["unshare", "-r", "-m"]):
        probe = subprocess.run(
            [*prefix, "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d"],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            return prefix
    return []


UNSHARE = _unshare_prefix()
needs_mounts = pytest.mark.skipif(not UNSHARE, reason="no private mount namespace (unshare) here")

# The measured test fills the tmpfs the store lives on, so the save at the end finds it full.
FILL_DISK = """\
import os

def test_a(roofline):
    roofline(sorted, [3, 1, 2])
    # Unbuffered: nothing is left to flush (and fail) when the file is closed.
    with open(os.path.join(os.environ["DISK"], "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError:
            pass
"""
SCRIPT = """\
set -u
mount -t tmpfs -o size=512k tmpfs "$DISK"
"$PY" -c "import sys; from tests.hostile.conftest import seed_store; seed_store(__import__('pathlib').Path(sys.argv[1]), 'earlier')" "$DISK/s.sqlite"
{prepare}
"$PY" -m pytest -p no:cacheprovider --roofline --roofline-store="$DISK/s.sqlite" \\
    --roofline-save=main --roofline-json="$DISK/o.json" > "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/status"
{restore}
"$PY" -m pytest_roofline.cli runs --store "$DISK/s.sqlite" --json > "$OUT/runs.json" 2>> "$OUT/stderr"
"""


def _in_namespace(project: Path, prepare: str, restore: str) -> tuple[Ran, list[str]]:
    disk, out = project / "disk", project / "out"
    disk.mkdir()
    out.mkdir()
    repo = Path(__file__).resolve().parents[2]
    env = {
        **os.environ, "DISK": str(disk), "OUT": str(out), "PY": sys.executable,
        "PYTHONPATH": str(repo),
    }  # fmt: skip
    env.pop("PYTEST_ADDOPTS", None)
    script = SCRIPT.format(prepare=prepare, restore=restore)
    subprocess.run([*UNSHARE, "sh", "-c", script], cwd=project, env=env, check=False, timeout=180)
    ran = Ran(
        int((out / "status").read_text()),
        (out / "stdout").read_bytes(),
        (out / "stderr").read_bytes(),
    )
    runs = json.loads((out / "runs.json").read_text() or "[]")
    return ran, [r["label"] for r in runs]


@needs_mounts
def test_a_save_onto_a_full_disk_fails_the_run_and_says_the_disk_is_full(project: Path) -> None:
    (project / "test_s.py").write_text(FILL_DISK)
    ran, labels = _in_namespace(project, prepare="", restore='rm -f "$DISK/filler"')
    assert ran.status == WRITE_FAILED, ran.explain()
    assert "disk is full" in ran.out, ran.explain()
    assert "restore" not in ran.out
    no_traceback(ran)
    assert labels == ["earlier"]


@needs_mounts
def test_a_store_on_a_read_only_mount_is_refused_before_measuring_and_says_so(
    project: Path,
) -> None:
    ran, labels = _in_namespace(
        project, prepare='mount -o remount,ro "$DISK"', restore='mount -o remount,rw "$DISK"'
    )
    assert ran.status == USAGE, ran.explain()
    assert "read-only file system" in ran.err, ran.explain()
    assert "restore" not in ran.err
    no_traceback(ran)
    assert not (project / "measured.flag").exists()
    assert labels == ["earlier"]


# ---------------------------------------------------------------------------- the command
def test_the_command_exits_7_when_an_output_cannot_be_written(tmp_path: Path) -> None:
    seed_store(tmp_path / "s.sqlite", "main")
    (tmp_path / "blocker").write_text("a file")
    for argv in (
        ["compare", "main", "main", "--store", "s.sqlite", "--html", "blocker/o.html"],
        ["export", "main", "--store", "s.sqlite", "-o", "blocker/o.json"],
    ):
        ran = run_cli(tmp_path, *argv)
        assert ran.status == WRITE_FAILED, ran.explain()
        assert "cannot write" in ran.err, ran.explain()
        no_traceback(ran)
    assert stored_labels(tmp_path / "s.sqlite") == ["main"]


def test_an_import_into_a_locked_store_exits_7(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    seed_store(store, "main")
    exported = run_cli(tmp_path, "export", "main", "--store", "s.sqlite", "-o", "x.json")
    assert exported.status == 0, exported.explain()
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        done = subprocess.run(
            [sys.executable, "-c", SHORT_WAIT + "from pytest_roofline.cli import main\n"
             "raise SystemExit(main(['import', 'x.json', '--store', 's.sqlite']))"],
            cwd=tmp_path, capture_output=True, check=False, timeout=120,
        )  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    ran = Ran(done.returncode, done.stdout, done.stderr)
    assert ran.status == WRITE_FAILED, ran.explain()
    assert "locked by another process" in ran.err, ran.explain()
    no_traceback(ran)
    assert stored_labels(store) == ["main"]
