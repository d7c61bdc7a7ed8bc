"""Render time and size of the HTML signoff report for a large synthetic run.

The requirement it checks (issue 5): a run of 1000 tests renders in under 1 s to a file under
5 MB. Every row carries a small latency ECDF (issue 11); memos (with their full ECDF and
timeline) are drawn only for tests that do not ship; the synthetic run has the usual mix (about 90% ship, 7% escalate, 3% rollback, plus a fixed set
covering every decision, verdict and bound class). Timing covers ``render_html`` on the JSON
document read back from disk, as ``pytest-roofline report`` does: view model, charts,
platform matrix (every test on every preset) and Jinja.

Run::

    python benchmarks/report_render.py                 # 1000 tests, 5 repetitions
    python benchmarks/report_render.py --tests 5000 --reps 3 --out /tmp/report.html

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

# The synthetic document generator lives with the report tests; make the repository importable
# when this file is run as a script from anywhere.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_roofline.model.document import RunDocument
from pytest_roofline.report.html import render_html
from pytest_roofline.report.markdown import render_markdown
from tests.report.documents import make_document

TARGET_SECONDS = 1.0
TARGET_BYTES = 5_000_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tests", type=int, default=1000, help="tests in the synthetic run (default 1000)"
    )
    parser.add_argument("--reps", type=int, default=5, help="renders to time (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args(argv)

    # Through JSON text and back, as a stored or --roofline-json document arrives.
    raw = json.loads(json.dumps(make_document(args.tests, seed=args.seed)))
    decisions = Counter(t["decision"] for t in raw["tests"])
    document = RunDocument.read(raw)
    render_html(document)  # warm: template compilation and preset loading happen once per process

    times = []
    html = ""
    for _ in range(args.reps):
        start = time.perf_counter()
        html = render_html(document)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    markdown = render_markdown(document)
    markdown_s = time.perf_counter() - start
    size = len(html.encode("utf-8"))
    if args.out:
        args.out.write_text(html, encoding="utf-8")

    median = statistics.median(times)
    print(
        f"synthetic run: {args.tests} tests ({', '.join(f'{n} {d}' for d, n in sorted(decisions.items()))})"
    )
    print(f"memos (non-ship tests): {decisions['rollback'] + decisions['escalate']}")
    print(
        f"render_html: median {median:.3f} s, min {min(times):.3f} s, max {max(times):.3f} s "
        f"over {args.reps} renders (target < {TARGET_SECONDS:.0f} s)"
    )
    print(f"HTML size: {size / 1e6:.2f} MB ({size} bytes; target < {TARGET_BYTES / 1e6:.0f} MB)")
    print(f"render_markdown: {markdown_s * 1e3:.1f} ms, {len(markdown.encode('utf-8'))} bytes")
    ok = median < TARGET_SECONDS and size < TARGET_BYTES
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
