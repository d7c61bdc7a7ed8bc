"""Time the per-test series of the store: query over 1000 runs x 1000 tests, and the save cost.

Issue 14 asks that a label's per-test series be cheap to query at 1000 runs x 1000 tests. This
builds such a store and times :meth:`Store.series`:

* **query**: a store with ``--runs`` runs of ``--tests`` tests under one label. The ``runs``
  rows are real (tags, a small summary); the ``series`` rows are written directly with synthetic
  numbers, because 1000 x 1000 raw sample blobs (gigabytes) are not what the query reads and
  computing their quantiles would take this shared machine many minutes. ``results`` is left
  empty, so every run already has its series row and nothing is backfilled. Timed: the whole
  label (every test), one test, and ten tests; each the median of ``--repeat`` cold-cache-free
  repetitions (SQLite's page cache warm, as for a second command in one CI job).
* **save**: the extra cost of the series rows when a run is saved
  (:func:`~pytest_roofline.store.series.run_rows`: Harrell-Davis p50/p95/p99 and their intervals
  per test) for ``--save-tests`` tests of ``--samples`` samples, against the save itself.
* **backfill**: the first query of a label whose ``--backfill-runs`` runs were saved without
  series rows (as by an older pytest-roofline).

Usage: python benchmarks/history_store.py [--runs 1000] [--tests 1000] [--repeat 5]
       [--save-tests 1000] [--samples 300] [--backfill-runs 5] [--keep PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_roofline.store import RunRecord, Store, StoredResult
from pytest_roofline.store.series import SeriesRows, run_rows, write_rows


def _median_time(fn: object, repeat: int) -> tuple[float, object]:
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def build_query_store(path: Path, runs: int, tests: int, rng: np.random.Generator) -> None:
    """A store with ``runs`` x ``tests`` series rows written directly (see the module docstring)."""
    with Store.open(path) as store:
        db = store._db  # benchmark only: bulk rows without samples
        db.execute("BEGIN IMMEDIATE")
        for k in range(runs):
            db.execute(
                "INSERT INTO runs (label, started, finished, tags, target, machine, design,"
                " summary, schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
                ("main", 1.7e9 + 600 * k, 1.7e9 + 600 * k + 60,
                 json.dumps({"git_commit": f"{k:040x}", "dataset": "v1"}), "{}", "bench",
                 "two-run", "{}"),
            )  # fmt: skip
            run_id = k + 1
            p50 = np.exp(rng.normal(-7.0, 0.05, tests))
            numbers = np.column_stack(
                [np.full(tests, 300.0)]
                + [p50 * f for f in (1.0, 0.98, 1.02, 1.3, 1.25, 1.35, 1.6, 1.5, 1.7)]
                + [np.full(tests, 0.6), np.full(tests, 1.0)]
            )
            write_rows(
                db,
                run_id,
                SeriesRows(
                    commit=f"{k:040x}",
                    canary_json=json.dumps({"python": 2.6e-4, "stream": 1.1e-3}),
                    problem=None,
                    nodeids=tuple(f"tests/test_k.py::test_{t:04d}" for t in range(tests)),
                    numbers=numbers,
                ),
            )
        db.execute("COMMIT")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--save-tests", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--backfill-runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="build the store here and keep it")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "store.sqlite"
        t0 = time.perf_counter()
        build_query_store(path, args.runs, args.tests, rng)
        build_s = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
        print(f"built {args.runs} runs x {args.tests} tests in {build_s:.1f} s ({size_mb:.0f} MB)")
        with Store.open(path) as store:
            whole_s, whole = _median_time(lambda: store.series("main"), args.repeat)
            one_s, one = _median_time(
                lambda: store.series("main", [f"tests/test_k.py::test_{args.tests // 2:04d}"]),
                args.repeat,
            )
            ten = [
                f"tests/test_k.py::test_{t:04d}"
                for t in range(0, args.tests, max(1, args.tests // 10))
            ][:10]
            ten_s, _ = _median_time(lambda: store.series("main", ten), args.repeat)
        assert len(whole.tests) == args.tests and len(whole.runs) == args.runs  # type: ignore[attr-defined]
        assert len(one.tests) == 1  # type: ignore[attr-defined]
        print(
            f"query, whole label ({args.tests} tests x {args.runs} runs): {whole_s * 1e3:.0f} ms (median of {args.repeat})"
        )
        print(f"query, one test: {one_s * 1e3:.1f} ms")
        print(f"query, ten tests: {ten_s * 1e3:.1f} ms")

        # Save cost: the series rows of one run of --save-tests tests, against the save itself.
        results = [
            StoredResult(
                f"t.py::test_{t}",
                {"nodeid": f"t.py::test_{t}"},
                rng.lognormal(-7, 0.1, args.samples),
            )
            for t in range(args.save_tests)
        ]
        record = RunRecord(label="save", started=1.0, finished=2.0, tags={}, target={}, machine="m")
        rows_s, _ = _median_time(lambda: run_rows(record, results), 3)
        save_path = Path(tmp) / "save.sqlite"
        with Store.open(save_path) as store:
            save_s, _ = _median_time(lambda: store.save_run(record, results), 3)
        print(
            f"save of a run of {args.save_tests} tests x {args.samples} samples: {save_s * 1e3:.0f} ms, "
            f"of which the series rows {rows_s * 1e3:.0f} ms"
        )

        # Backfill: runs saved without series rows, as by a version without the tables.
        bf_path = Path(tmp) / "backfill.sqlite"
        with Store.open(bf_path) as store:
            for _ in range(args.backfill_runs):
                store.save_run(
                    RunRecord(
                        label="old", started=1.0, finished=2.0, tags={}, target={}, machine="m"
                    ),
                    results,
                )
            store._db.execute("DROP TABLE series")
            t0 = time.perf_counter()
            store.series("old")
            first_s = time.perf_counter() - t0
            again_s, _ = _median_time(lambda: store.series("old"), 3)
        print(
            f"backfill of {args.backfill_runs} runs x {args.save_tests} tests: first query "
            f"{first_s:.2f} s, then {again_s * 1e3:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
