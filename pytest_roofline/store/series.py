"""A series per test: every run of a label, one row per run, indexed for history queries.

The ``history`` command and the gate's noise floor read, for every run of a label and every test,
a handful of numbers: the Harrell-Davis p50/p95/p99 with intervals, the bound class, the
efficiency, and per run the commit, the revision tags and the host canary's levels. Reading them
from the runs themselves means decoding every run's report document and every raw sample blob
(for 1000 runs × 1000 tests, gigabytes of JSON and samples), so they are kept in a table of
their own, ``series``, filled when a run is saved: one row per run (``run_id`` its primary key,
found by label through the ``runs_by_label`` index) holding

* ``git_commit`` (the run's ``git_commit`` tag), ``canary`` (``run.canary.levels_s`` of its report
  document, JSON) and ``problem`` (why a run could not be read when it was backfilled);
* ``nodeids``, a JSON list of the run's tests, and ``numbers``, a little-endian float64 matrix
  with one row per test and one column per :data:`SERIES_COLUMNS` entry (NaN where unknown).

One row per run rather than one per run and test: a label's whole history (1000 runs × 1000
tests) is then 1000 rows read by primary key and turned into arrays by numpy, instead of a
million rows each decoded in Python (measured in ``benchmarks/history_store.py``: the
row-per-test layout took 15 µs a row in SQLite and 25 µs in Python, about 40 s for the whole
label; figures in ``docs/history.md``).

Migration. The table is derived data, so the store's schema version does not change (a
pytest-roofline that does not know it reads and writes the store as before): it is created with
``CREATE TABLE IF NOT EXISTS`` on the first save or history query, and a run without a row
(saved before, or by a version without it) is **backfilled** from its stored samples and
document on the first query that needs it. A store that cannot be written (read-only file) is
still queried: the missing rows are computed in memory and not kept. A damaged row makes its run
read as having no tests, with the reason in :attr:`SeriesRun.problem`.

Intervals. Each quantile's point is the Harrell-Davis estimate (Harrell & Davis 1982) of the raw
samples; its interval is the ESS-adjusted order-statistic interval, two-sided 95% (the bounds
:func:`pytest_roofline.stats.log_quantile_estimate` derives its standard error from). Below the
sample count such an interval needs (``n_floor(q, 0.025)``: 72 for p95, 368 for p99) it is left
empty (NaN), never guessed.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from pytest_roofline.stats.quantiles import hd_quantiles, n_floor, tau_many
from pytest_roofline.store.derived import runs_without_row
from pytest_roofline.store.records import RunRecord, StoredResult
from pytest_roofline.store.sqltext import to_sql
from pytest_roofline.vocabulary import BOUND_CLASSES

__all__ = [
    "SERIES_COLUMNS",
    "SERIES_QUANTILES",
    "SERIES_SCHEMA",
    "LabelSeries",
    "SeriesRows",
    "SeriesRun",
    "TestSeries",
    "ensure_table",
    "has_table",
    "missing_runs",
    "problem_rows",
    "quantile_rows",
    "query_series",
    "run_rows",
    "write_rows",
]

SERIES_QUANTILES: Mapping[str, float] = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
"""The quantiles kept per run and test, by name."""

SERIES_COLUMNS: tuple[str, ...] = (
    "samples",
    *(f"{name}{part}" for name in SERIES_QUANTILES for part in ("_s", "_low_s", "_high_s")),
    "efficiency",
    "bound",
)
"""The columns of a run's ``numbers`` matrix; ``bound`` is the index in :data:`BOUND_CLASSES`."""

# Two-sided 95%: each bound of the order-statistic interval at 2.5%.
_INTERVAL_ALPHA = 0.025
_WIDTH = len(SERIES_COLUMNS)

SERIES_SCHEMA = """
CREATE TABLE IF NOT EXISTS series (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    git_commit TEXT,
    canary TEXT NOT NULL,
    problem TEXT,
    nodeids TEXT NOT NULL,
    numbers BLOB NOT NULL
);
"""

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SeriesRun:
    """One run of the label, as the history sees it.

    ``index`` is its position among the label's runs, oldest 0; ``problem`` says why its tests
    are missing when the run (or its series row) could not be read.
    """

    run_id: int
    index: int
    started: float
    commit: str | None
    tags: Mapping[str, str]
    canary_levels_s: Mapping[str, float]
    problem: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class TestSeries:
    """One test over the label's runs: arrays aligned with :attr:`LabelSeries.runs`.

    ``values[column]`` for each of :data:`SERIES_COLUMNS` but ``bound`` (NaN where the run has
    no result for the test, or no interval); ``bound_codes`` the bound class per run as an index
    in :data:`BOUND_CLASSES` (NaN where unknown).
    """

    __test__ = False

    nodeid: str
    values: Mapping[str, FloatArray]
    bound_codes: FloatArray

    def quantile_s(self, name: str = "p50") -> FloatArray:
        """Per-run Harrell-Davis ``name`` (``p50``, ``p95``, ``p99``) in seconds, NaN where absent."""
        if name not in SERIES_QUANTILES:
            raise ValueError(f"quantile must be one of {', '.join(SERIES_QUANTILES)}; got {name!r}")
        return self.values[f"{name}_s"]

    def interval_s(self, name: str = "p50") -> tuple[FloatArray, FloatArray]:
        """Per-run 95% interval of quantile ``name`` in seconds, NaN where there is none."""
        self.quantile_s(name)
        return self.values[f"{name}_low_s"], self.values[f"{name}_high_s"]

    @property
    def bounds(self) -> tuple[str | None, ...]:
        """The bound class per run (``None`` where unknown)."""
        return tuple(
            BOUND_CLASSES[int(c)] if math.isfinite(c) and 0 <= c < len(BOUND_CLASSES) else None
            for c in self.bound_codes
        )


@dataclass(frozen=True, slots=True, eq=False)
class LabelSeries:
    """Every run of a label (oldest first) and the series of each test asked for."""

    label: str
    runs: tuple[SeriesRun, ...]
    tests: Mapping[str, TestSeries]


@dataclass(frozen=True, slots=True, eq=False)
class SeriesRows:
    """What one run adds to the ``series`` table: run-level facts and one row per test."""

    commit: str | None
    canary_json: str
    problem: str | None
    nodeids: tuple[str, ...] = ()
    numbers: FloatArray = field(default_factory=lambda: np.empty((0, _WIDTH)))


# ---------------------------------------------------------------------------------------------
# Rows of one run


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _document_facts(
    summary: Mapping[str, Any],
) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Canary levels and per-test ``(efficiency, bound code)`` from a run's report document."""
    document = _mapping(summary.get("document"))
    canary = _mapping(_mapping(_mapping(document.get("run")).get("canary")).get("levels_s"))
    levels = {str(k): v for k, v in ((k, _finite(v)) for k, v in canary.items()) if v is not None}
    tests: dict[str, tuple[float, float]] = {}
    entries = document.get("tests")
    for entry in entries if isinstance(entries, list) else ():
        test = _mapping(entry)
        nodeid = test.get("nodeid")
        if not isinstance(nodeid, str):
            continue
        roofline = _mapping(test.get("roofline"))
        bound = roofline.get("bound")
        code = float(BOUND_CLASSES.index(bound)) if bound in BOUND_CLASSES else math.nan
        efficiency = _finite(roofline.get("efficiency"))
        tests[nodeid] = (math.nan if efficiency is None else efficiency, code)
    return levels, tests


def quantile_rows(samples: Sequence[FloatArray]) -> list[list[float | None]]:
    """Point, low, high of each of :data:`SERIES_QUANTILES` for each sample set.

    The point is the Harrell-Davis estimate. The interval is the pair of order statistics that
    the order-statistic bootstrap gives as its 2.5% and 97.5% percentile bounds,
    ``x_(ceil(n u))`` with ``u`` the quantiles of ``Beta(q (m + 1), (1 - q)(m + 1))`` and ``m``
    the effective sample size of the quantile's indicator (as in
    :func:`pytest_roofline.stats.log_quantile_estimate`); ``None`` below ``n_floor(q, 0.025)``.
    One batched FFT (:func:`~pytest_roofline.stats.quantiles.tau_many`) serves every test of
    the run, which is what keeps a save of 1000 tests cheap.
    """
    probs = np.asarray(list(SERIES_QUANTILES.values()))
    floors = [n_floor(float(q), _INTERVAL_ALPHA) for q in probs]
    ordered = [np.sort(x) for x in samples]
    cells: list[tuple[int, int]] = []  # (sample set, quantile) with an interval
    indicators: list[npt.NDArray[np.bool_]] = []
    has_indicator: list[bool] = []
    for i, (x, xs) in enumerate(zip(samples, ordered, strict=True)):
        n = x.size
        for j, q in enumerate(probs):
            if n < floors[j]:
                continue
            ind = x <= xs[min(n - 1, math.ceil(n * q) - 1)]
            cells.append((i, j))
            usable = bool(ind.any() and not ind.all())
            has_indicator.append(usable)
            if usable:
                indicators.append(ind)
    taus = iter(tau_many(indicators)) if indicators else iter(())
    n_cells = np.array([samples[i].size for i, _ in cells], dtype=np.float64)
    m = np.array(
        [n / next(taus) if usable else n for n, usable in zip(n_cells, has_indicator, strict=True)]
    )
    q_cells = probs[[j for _, j in cells]] if cells else np.empty(0)
    u = special.betaincinv(
        (q_cells * (m + 1.0))[:, None],
        ((1.0 - q_cells) * (m + 1.0))[:, None],
        np.array([[_INTERVAL_ALPHA, 1.0 - _INTERVAL_ALPHA]]),
    )
    bounds: dict[tuple[int, int], tuple[float, float]] = {}
    for k, (i, j) in enumerate(cells):
        xs = ordered[i]
        n = xs.size
        lo, hi = (int(np.clip(math.ceil(n * v) - 1, 0, n - 1)) for v in u[k])
        bounds[i, j] = (float(xs[lo]), float(xs[hi]))
    out: list[list[float | None]] = []
    for i, x in enumerate(samples):
        if x.size == 0:
            out.append([None] * (3 * len(probs)))
            continue
        row: list[float | None] = []
        for j, point in enumerate(hd_quantiles(x, probs)):
            low, high = bounds.get((i, j), (None, None))
            row += [_finite(float(point)), low, high]
        out.append(row)
    return out


def run_rows(record: RunRecord, results: Iterable[StoredResult]) -> SeriesRows:
    """The series row of one run, computed from its samples and its report document."""
    levels, facts = _document_facts(record.summary)
    results = list(results)
    samples = [np.asarray(result.samples_s, dtype=np.float64) for result in results]
    numbers = np.full((len(results), _WIDTH), np.nan)
    for k, (result, x, row) in enumerate(
        zip(results, samples, quantile_rows(samples), strict=True)
    ):
        efficiency, code = facts.get(result.nodeid, (math.nan, math.nan))
        numbers[k] = [x.size, *(math.nan if v is None else v for v in row), efficiency, code]
    commit = record.tags.get("git_commit")
    return SeriesRows(
        commit=commit if isinstance(commit, str) else None,
        canary_json=json.dumps(levels, sort_keys=True),
        problem=None,
        nodeids=tuple(result.nodeid for result in results),
        numbers=numbers,
    )


def problem_rows(problem: str) -> SeriesRows:
    """The row of a run that cannot be read: no tests, and why."""
    return SeriesRows(commit=None, canary_json="{}", problem=problem)


def ensure_table(db: sqlite3.Connection) -> None:
    """Create the ``series`` table where it is missing (inside the caller's transaction)."""
    db.execute(SERIES_SCHEMA)


def write_rows(db: sqlite3.Connection, run_id: int, rows: SeriesRows) -> bool:
    """Insert one run's series row (inside the caller's write transaction); whether it was.

    Derived data must never cost a save: the row is written under a savepoint, and where it
    cannot be (a ``series`` table of another layout) that part alone is undone and ``False``
    returned; the run is then computed again when a query needs it.
    """
    ensure_table(db)
    if not has_table(db):
        return False
    db.execute("SAVEPOINT series_row")
    try:
        _insert(db, run_id, rows)
    except sqlite3.Error:
        db.execute("ROLLBACK TO series_row")
        db.execute("RELEASE series_row")
        return False
    db.execute("RELEASE series_row")
    return True


def _insert(db: sqlite3.Connection, run_id: int, rows: SeriesRows) -> None:
    db.execute(
        "INSERT OR REPLACE INTO series (run_id, git_commit, canary, problem, nodeids, numbers)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            run_id,
            to_sql(rows.commit),
            rows.canary_json,
            rows.problem,
            # ASCII JSON: a node id with a lone surrogate is kept as \udcff and read back exactly.
            json.dumps(list(rows.nodeids)),
            np.ascontiguousarray(rows.numbers, dtype="<f8").tobytes(),
        ),
    )


_TABLE_COLUMNS = ("run_id", "git_commit", "canary", "problem", "nodeids", "numbers")


def has_table(db: sqlite3.Connection) -> bool:
    """Whether this store has a ``series`` table of this layout.

    A table of another layout (made by another version) counts as absent: queries then compute
    the rows in memory, and saves leave it alone.
    """
    columns = tuple(str(row[1]) for row in db.execute("PRAGMA table_info(series)").fetchall())
    return columns == _TABLE_COLUMNS


def missing_runs(db: sqlite3.Connection, label: str) -> list[int]:
    """Runs of ``label`` without a series row (to backfill), oldest first."""
    return runs_without_row(db, label, "series", table_present=has_table(db))


# ---------------------------------------------------------------------------------------------
# Query


def _json(text: object) -> object:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogatepass")
    try:
        return json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return None


def _decoded(
    run_id: int,
    nodeids_text: object,
    blob: object,
    where: str,
    names: dict[object, list[str] | None],
) -> tuple[list[str], FloatArray] | str:
    """A stored row's node ids and matrix, or why they cannot be read.

    ``names`` caches the decoded node-id lists by their text: consecutive runs of a suite
    usually hold the same tests, and decoding and checking 1000 lists of 1000 names was most
    of a whole-label query's time.
    """
    if nodeids_text not in names:
        parsed = _json(nodeids_text)
        ok = isinstance(parsed, list) and all(isinstance(n, str) for n in parsed)
        names[nodeids_text] = parsed if ok else None  # type: ignore[assignment]
    nodeids = names[nodeids_text]
    if nodeids is None:
        return f"{where}: run {run_id}: series row: nodeids is not a JSON list of strings"
    if not isinstance(blob, bytes) or len(blob) != 8 * _WIDTH * len(nodeids):
        return (
            f"{where}: run {run_id}: series row: numbers hold "
            f"{len(blob) if isinstance(blob, bytes) else type(blob).__name__} bytes, expected "
            f"{8 * _WIDTH * len(nodeids)}"
        )
    return nodeids, np.frombuffer(blob, dtype="<f8").reshape(len(nodeids), _WIDTH)


def query_series(
    db: sqlite3.Connection,
    label: str,
    nodeids: Sequence[str] | None = None,
    *,
    extra: Mapping[int, SeriesRows] = {},
    where: str = "store",
) -> LabelSeries:
    """Read the series of ``label`` (every test, or ``nodeids``), oldest run first.

    ``extra`` holds rows computed in memory for runs that could not be backfilled into the
    store (a read-only store); they take the place of the missing rows.
    """
    sql = (
        "SELECT r.id, r.started, r.tags, s.git_commit, s.canary, s.problem, s.nodeids, s.numbers"
        " FROM runs r LEFT JOIN series s ON s.run_id = r.id WHERE r.label = ? ORDER BY r.id"
        if has_table(db)
        else "SELECT r.id, r.started, r.tags, NULL, NULL, NULL, NULL, NULL FROM runs r"
        " WHERE r.label = ? ORDER BY r.id"
    )
    wanted = None if nodeids is None else set(nodeids)
    row_of: dict[str, int] = (
        {} if nodeids is None else {n: i for i, n in enumerate(sorted(wanted or ()))}
    )
    index_cache: dict[object, npt.NDArray[np.int64]] = {}
    names: dict[object, list[str] | None] = {}
    runs: list[SeriesRun] = []
    cells: list[tuple[int, npt.NDArray[np.int64], FloatArray]] = []
    for index, row in enumerate(db.execute(sql, (to_sql(label),)).fetchall()):
        run_id, started, tags_text, commit, canary, problem, nodeids_text, blob = row
        run_id = int(run_id)
        if run_id in extra:
            computed = extra[run_id]
            commit, canary, problem = computed.commit, computed.canary_json, computed.problem
            nodeids_text = json.dumps(list(computed.nodeids))
            blob = np.ascontiguousarray(computed.numbers, dtype="<f8").tobytes()
        tags = _json(tags_text)
        if problem is None and nodeids_text is not None:
            decoded = _decoded(run_id, nodeids_text, blob, where, names)
            if isinstance(decoded, str):
                problem = decoded
            else:
                key = nodeids_text
                idx = index_cache.get(key)
                if idx is None:
                    idx = np.array(
                        [
                            row_of.setdefault(n, len(row_of))
                            if wanted is None
                            else row_of.get(n, -1)
                            for n in decoded[0]
                        ],
                        dtype=np.int64,
                    )
                    index_cache[key] = idx
                cells.append((index, idx, decoded[1]))
        runs.append(
            SeriesRun(
                run_id=run_id,
                index=index,
                started=_finite(started) or 0.0,
                commit=commit.decode("utf-8", "surrogatepass")
                if isinstance(commit, bytes)
                else commit,
                tags={str(k): str(v) for k, v in _mapping(tags).items()},
                canary_levels_s={
                    str(k): v
                    for k, v in ((k, _finite(v)) for k, v in _mapping(_json(canary)).items())
                    if v is not None
                },
                problem=problem,
            )
        )
    # Filled run by run (each run's block contiguous), then laid out test by test once.
    by_run = np.full((len(runs), _WIDTH, len(row_of)), np.nan)
    for column, idx, numbers in cells:
        keep = idx >= 0
        by_run[column][:, idx[keep]] = numbers[keep].T
    table = np.ascontiguousarray(by_run.transpose(1, 2, 0))
    del by_run
    tests = {
        nodeid: TestSeries(
            nodeid=nodeid,
            values={name: table[k, r] for k, name in enumerate(SERIES_COLUMNS[:-1])},
            bound_codes=table[-1, r],
        )
        for nodeid, r in sorted(row_of.items())
        if not np.isnan(table[0, r]).all()
    }
    return LabelSeries(label=label, runs=tuple(runs), tests=tests)
