"""Regenerate the golden store and the expected renderings (run by hand, never by the suite).

    python tests/golden/make_golden.py            # a new store, then the expected outputs
    python tests/golden/make_golden.py --render   # keep the store, re-render the expected outputs

The store holds two runs of ``suite/`` (``main``, then ``cand`` compared with it) made with a
fake clock. ``expected/`` holds what ``pytest-roofline report cand`` and ``compare main cand``
render from it; ``tests/golden/test_golden.py`` checks that every later version renders the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
STORE = HERE / "store.sqlite"
EXPECTED = HERE / "expected"
sys.path.insert(0, str(HERE.parent.parent))

from tests.golden.render import render_all  # noqa: E402


def _run_suite() -> None:
    STORE.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite"
        shutil.copytree(HERE / "suite", suite)
        for side, args in (
            ("baseline", ["--roofline-save=main"]),
            ("candidate", ["--roofline-save=cand", "--roofline-baseline=main"]),
        ):
            env = {**os.environ, "GOLDEN_SIDE": side}
            command = [
                sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--roofline",
                f"--roofline-store={STORE}", "--roofline-no-counters", "--roofline-gate=never",
                "-p", "no:randomly", *args,
            ]  # fmt: skip
            done = subprocess.run(command, cwd=suite, env=env, capture_output=True, text=True)
            print(done.stdout[-2000:], done.stderr[-2000:])
            if done.returncode not in (0, 1):
                raise SystemExit(f"{side} run failed ({done.returncode})")


def main() -> None:
    if "--render" not in sys.argv:
        _run_suite()
    EXPECTED.mkdir(exist_ok=True)
    for name, text in render_all(STORE).items():
        (EXPECTED / name).write_text(text, encoding="utf-8")
        print("wrote", EXPECTED / name)


if __name__ == "__main__":
    main()
