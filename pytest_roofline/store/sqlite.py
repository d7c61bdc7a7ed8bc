"""The result store: one SQLite file holding runs, per-test results with raw samples, calibrations.

Design points:

* The file is identified by ``PRAGMA application_id`` and versioned by ``PRAGMA user_version``;
  a file that is not ours, is corrupt, or comes from a newer pytest-roofline is refused with a
  clear message and never modified.
* WAL journal and one ``BEGIN IMMEDIATE`` transaction per write: a run killed mid-save leaves the
  store as it was, and two runs saving at once both land (the second waits on the lock).
* Samples are stored as little-endian float64 blobs; everything else as JSON text (ASCII, so a
  lone surrogate from a non-UTF-8 name is kept as ``\udcff``). A node id, label or machine name
  that is not valid UTF-8 is stored as a blob of its exact bytes (UTF-8 with surrogates passed
  through) and read back unchanged; every other text is stored as text, as before.
* A row that cannot be read makes its run unusable with a message naming the run and the row;
  the other runs stay usable, and ``list_runs`` lists them all.

Why one long module: one class owns every SQL statement of the store (schema check, WAL set-up,
writes under one retrying transaction helper, reads, import and export), so that no other module
opens the database and the transaction and locking rules live in one place.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from pytest_roofline.errors import StoreError, StoreWriteError
from pytest_roofline.store.checks import (
    check_tags,
    check_timestamp,
    decode_json_mapping,
    parse_export,
    samples_from_blob,
)
from pytest_roofline.store.observations import (
    RunObservation,
    missing_observations,
    observation_counts,
    query_observations,
    write_observation,
)
from pytest_roofline.store.records import Baseline, RunRecord, StoredResult, StoredRun
from pytest_roofline.store.series import (
    SERIES_SCHEMA,
    LabelSeries,
    SeriesRows,
    missing_runs,
    problem_rows,
    query_series,
    run_rows,
    write_rows,
)
from pytest_roofline.store.sqltext import from_sql as _from_sql
from pytest_roofline.store.sqltext import to_sql as _to_sql
from pytest_roofline.store.summary_only import is_summary_only
from pytest_roofline.text import shown

__all__ = ["STORE_SCHEMA_VERSION", "Store"]

STORE_SCHEMA_VERSION = 1
_APPLICATION_ID = 0x52464C31  # "RFL1": tells our stores apart from any other SQLite file
_BUSY_TIMEOUT_MS = 60_000

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT,
    started REAL NOT NULL,
    finished REAL NOT NULL,
    tags TEXT NOT NULL,
    target TEXT NOT NULL,
    machine TEXT NOT NULL,
    design TEXT NOT NULL,
    summary TEXT NOT NULL,
    schema_version INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_label ON runs(label, id);
CREATE TABLE IF NOT EXISTS results (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    nodeid TEXT NOT NULL,
    payload TEXT NOT NULL,
    samples BLOB NOT NULL,
    PRIMARY KEY (run_id, nodeid)
);
CREATE TABLE IF NOT EXISTS calibrations (
    key TEXT PRIMARY KEY,
    created REAL NOT NULL,
    payload TEXT NOT NULL
);
"""
    + SERIES_SCHEMA
)


def _filesystem_problem(path: Path) -> str | None:
    """Why ``path`` (or the directory it would be in) cannot be written, if the file system says."""
    where = path if path.exists() else path.parent
    try:
        info = os.statvfs(where)
    except (OSError, AttributeError):  # AttributeError: no statvfs on this platform
        return None
    if info.f_flag & os.ST_RDONLY:
        return "is on a read-only file system"
    if info.f_bavail == 0:
        return "is on a disk that is full"
    directory = path.parent
    if not os.access(directory, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "is read-only (no permission to write it or its directory)"
    return None


def _write_failure(path: Path, exc: sqlite3.Error) -> StoreWriteError:
    """A write that failed, explained by its cause; nothing was written and nothing was lost."""
    text = str(exc).lower()
    code = getattr(exc, "sqlite_errorname", "") or ""
    if "locked" in text or "busy" in code.lower():
        why = (
            f"the store is locked by another process writing to it (waited "
            f"{_BUSY_TIMEOUT_MS // 1000} s); run again once it has finished"
        )
    elif "readonly" in text or "read-only" in text or "READONLY" in code:
        why = (
            f"the store {_filesystem_problem(path) or 'is read-only'}; give a writable "
            "--roofline-store"
        )
    elif "full" in text or "FULL" in code:
        why = "the disk is full; free some space and run again"
    else:
        problem = _filesystem_problem(path)
        why = f"the store {problem}" if problem else str(exc)
    return StoreWriteError(
        f"{path}: nothing was saved ({why}); the runs saved before are unchanged [{exc}]"
    )


class Store:
    """A pytest-roofline result store in one SQLite file."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str, *, create: bool = True) -> Store:
        """Open (or, with ``create``, create) the store at ``path``.

        :raises StoreError: the file is missing (``create=False``), not a pytest-roofline store,
            corrupt, or written by a newer version. The file is not modified in any of these cases.
        """
        path = Path(path)
        exists = path.exists()
        if not exists and not create:
            raise StoreError(
                f"{path}: no result store here; run pytest --roofline --roofline-save=LABEL first"
            )
        if exists and path.is_dir():
            raise StoreError(f"{path}: is a directory; --roofline-store must name a file")
        if not exists:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{path}: cannot create the store's directory: {exc}") from exc
        try:
            db = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open the result store: {exc}") from exc
        try:
            cls._check_or_initialise(path, db, fresh=not exists or path.stat().st_size == 0)
        except BaseException:
            db.close()
            raise
        return cls(path, db)

    @staticmethod
    def _check_or_initialise(path: Path, db: sqlite3.Connection, *, fresh: bool) -> None:
        try:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            problem = _filesystem_problem(path)
            if problem is not None or "unable to open" in str(exc):
                # Not damage: SQLite needs to write its -wal/-shm files beside the store.
                raise StoreError(
                    f"{path}: cannot open the result store: it {problem or 'cannot be opened'} "
                    f"({exc}); SQLite writes its -wal and -shm files beside the store, so it "
                    "needs a writable directory. The file was left untouched; point "
                    "--roofline-store at a writable path."
                ) from exc
            raise StoreError(
                f"{path}: not a readable pytest-roofline store ({exc}); the file was left untouched. "
                "Point --roofline-store at another path or restore the file from a backup."
            ) from exc
        if app_id == 0 and tables == 0 and (fresh or version == 0):
            try:
                db.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
                db.execute("PRAGMA journal_mode=WAL")
                # One script, one transaction: a second process initialising the same new file
                # waits on the lock and then finds the tables already there.
                db.executescript(
                    f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA application_id={_APPLICATION_ID};"
                    f"PRAGMA user_version={STORE_SCHEMA_VERSION};COMMIT;"
                )
                db.execute("PRAGMA foreign_keys=ON")
            except sqlite3.Error as exc:
                raise StoreError(f"{path}: cannot initialise the result store: {exc}") from exc
            return
        if app_id != _APPLICATION_ID:
            raise StoreError(
                f"{path}: is an SQLite database but not a pytest-roofline store (application_id "
                f"{app_id:#x}); it was left untouched. Point --roofline-store at another path."
            )
        if version > STORE_SCHEMA_VERSION:
            raise StoreError(
                f"{path}: store schema version {version} is newer than this pytest-roofline "
                f"understands ({STORE_SCHEMA_VERSION}); upgrade pytest-roofline. The store was left untouched."
            )
        db.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA foreign_keys=ON")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One immediate transaction: all of a write lands, or none of it."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _write_failure(self.path, exc) from exc
        try:
            yield self._db
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot read the result store: {exc}") from exc

    # -- runs ------------------------------------------------------------------------------
    def save_run(self, record: RunRecord, results: Sequence[StoredResult]) -> int:
        """Save a run and all its results in one transaction; return the run id.

        The run's rows of the per-test series (:mod:`~pytest_roofline.store.series`) are saved
        in the same transaction; they are computed before it, so the lock is held no longer.
        """
        try:
            series_rows = run_rows(record, results)
        except (ValueError, ArithmeticError) as exc:  # derived data never costs a save
            series_rows = problem_rows(
                f"{self.path}: the run's series could not be computed: {exc}"
            )
        counts = observation_counts(record.summary)
        try:
            with self._write() as db:
                cursor = db.execute(
                    "INSERT INTO runs (label, started, finished, tags, target, machine, design, summary,"
                    " schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        _to_sql(record.label),
                        record.started,
                        record.finished,
                        json.dumps(dict(record.tags), sort_keys=True),
                        json.dumps(dict(record.target), sort_keys=True),
                        _to_sql(record.machine),
                        _to_sql(record.design),
                        json.dumps(dict(record.summary), sort_keys=True, allow_nan=False),
                        STORE_SCHEMA_VERSION,
                    ),
                )
                run_id = int(cursor.lastrowid or 0)
                db.executemany(
                    "INSERT INTO results (run_id, nodeid, payload, samples) VALUES (?, ?, ?, ?)",
                    [
                        (
                            run_id,
                            _to_sql(result.nodeid),
                            json.dumps(dict(result.payload), sort_keys=True, allow_nan=False),
                            np.ascontiguousarray(result.samples_s, dtype="<f8").tobytes(),
                        )
                        for result in results
                    ],
                )
                write_rows(db, run_id, series_rows)  # creates the table in an older store
                write_observation(db, run_id, counts)  # likewise (store.observations)
        except sqlite3.Error as exc:
            raise _write_failure(self.path, exc) from exc
        except ValueError as exc:  # NaN or infinity in a payload (allow_nan=False)
            raise StoreError(f"{self.path}: nothing was saved: {exc}") from exc
        return run_id

    def run_ids(self, label: str | None = None) -> list[int]:
        """Run ids, newest first; only those under ``label`` when given."""
        if label is None:
            rows = self._read("SELECT id FROM runs ORDER BY id DESC")
        else:
            rows = self._read(
                "SELECT id FROM runs WHERE label = ? ORDER BY id DESC", (_to_sql(label),)
            )
        return [int(r[0]) for r in rows]

    def labels(self) -> list[str]:
        rows = self._read("SELECT DISTINCT label FROM runs WHERE label IS NOT NULL ORDER BY label")
        return [_from_sql(r[0]) for r in rows]

    def list_runs(self) -> list[tuple[int, RunRecord, int]]:
        """Every run as ``(id, record, number of results)``, newest first.

        A run whose own row cannot be read is listed too, with what is known and
        ``record.problem`` saying what is wrong; nothing here reads the results' rows.
        """
        rows = self._read(
            "SELECT r.id, r.label, r.started, r.finished, r.tags, r.target, r.machine, r.design,"
            " r.summary, (SELECT count(*) FROM results WHERE run_id = r.id) FROM runs r ORDER BY r.id DESC"
        )
        listed = []
        for row in rows:
            run_id = int(row[0])
            try:
                record = self._record(row[1:9], run_id)
            except StoreError as exc:
                label = row[1]
                record = RunRecord(
                    label=_from_sql(label) if label is not None else None,
                    started=0.0,
                    finished=0.0,
                    tags={},
                    target={},
                    machine="",
                    problem=str(exc),
                )
            listed.append((run_id, record, int(row[9])))
        return listed

    def load_run(self, run_id: int) -> StoredRun:
        """Run ``run_id`` with every result.

        :raises StoreError: no such run, or a row of it cannot be read (the message names the
            run and the row; the other runs are not affected).
        """
        rows = self._read(
            "SELECT label, started, finished, tags, target, machine, design, summary FROM runs WHERE id = ?",
            (run_id,),
        )
        if not rows:
            raise StoreError(f"{self.path}: no run with id {run_id}")
        record = self._record(rows[0], run_id)
        results = {}
        for raw_nodeid, payload, blob in self._read(
            "SELECT nodeid, payload, samples FROM results WHERE run_id = ? ORDER BY nodeid",
            (run_id,),
        ):
            nodeid = _from_sql(raw_nodeid)
            where = f"{self.path}: run {run_id}, test {shown(nodeid)!r}"
            decoded = decode_json_mapping(payload, where=f"{where}: payload")
            results[nodeid] = StoredResult(
                nodeid=nodeid,
                payload=decoded,
                samples_s=samples_from_blob(
                    blob, where=f"{where}: samples", summary_only=is_summary_only(decoded)
                ),
            )
        return StoredRun(run_id, record, results)

    def _record(self, row: Sequence[Any], run_id: int) -> RunRecord:
        label, started, finished, tags, target, machine, design, summary = row
        where = f"{self.path}: run {run_id}"
        return RunRecord(
            label=_from_sql(label) if label is not None else None,
            started=check_timestamp(started, where=f"{where}: started"),
            finished=check_timestamp(finished, where=f"{where}: finished"),
            tags=check_tags(
                decode_json_mapping(tags, where=f"{where}: tags"), where=f"{where}: tags"
            ),
            target=decode_json_mapping(target, where=f"{where}: target"),
            machine=_from_sql(machine),
            design=_from_sql(design),
            summary=decode_json_mapping(summary, where=f"{where}: summary"),
        )

    def series(self, label: str, nodeids: Sequence[str] | None = None) -> LabelSeries:
        """The per-test series of every run under ``label``, oldest first (``nodeids`` only, if given).

        Runs saved without series rows (before the series tables existed, or by a version
        without them) are backfilled first, in one transaction; a run that cannot be read gets
        a row saying why and no tests. A store that cannot be written is read all the same: the
        missing rows are computed in memory and not kept.

        :raises StoreError: no run was saved under ``label`` (the message lists the labels present).
        """
        if not self.run_ids(label):
            present = ", ".join(repr(x) for x in self.labels()) or "none yet"
            raise StoreError(
                f"no run saved under label {label!r} in {self.path} (labels present: {present})"
            )
        try:
            missing = missing_runs(self._db, label)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot read the result store: {exc}") from exc
        computed: dict[int, SeriesRows] = {}
        for run_id in missing:
            try:
                run = self.load_run(run_id)
            except StoreError as exc:
                computed[run_id] = problem_rows(str(exc))
                continue
            computed[run_id] = run_rows(run.record, run.results.values())
        extra: dict[int, SeriesRows] = {}
        if computed:
            try:
                with self._write() as db:
                    kept = all([write_rows(db, run_id, rows) for run_id, rows in computed.items()])
            except (StoreWriteError, sqlite3.Error):
                kept = False
            if not kept:  # a read-only store, or a table of another layout: used, not kept
                extra = computed
        try:
            return query_series(self._db, label, nodeids, extra=extra, where=str(self.path))
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot read the result store: {exc}") from exc

    def observations(self, label: str) -> tuple[RunObservation, ...]:
        """What each run of ``label`` recorded about its evidence, oldest first
        (:mod:`~pytest_roofline.store.observations`: escape risk, replays, confirmations).

        Runs saved without a row are backfilled from their documents first, in one
        transaction; a store that cannot be written is read all the same (computed, not kept).

        :raises StoreError: the store cannot be read.
        """
        try:
            missing = missing_observations(self._db, label)
            computed: dict[int, dict[str, Any]] = {}
            for run_id in missing:
                rows = self._read("SELECT summary FROM runs WHERE id = ?", (run_id,))
                try:
                    summary = decode_json_mapping(
                        rows[0][0] if rows else None, where=f"{self.path}: run {run_id}: summary"
                    )
                except StoreError as exc:
                    computed[run_id] = {"problem": str(exc)}
                    continue
                computed[run_id] = observation_counts(summary)
            extra: dict[int, dict[str, Any]] = {}
            if computed:
                try:
                    with self._write() as db:
                        kept = all(
                            [write_observation(db, i, counts) for i, counts in computed.items()]
                        )
                except (StoreWriteError, sqlite3.Error):
                    kept = False
                if not kept:  # a read-only store, or a table of another layout
                    extra = computed
            return query_observations(self._db, label, extra=extra)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot read the result store: {exc}") from exc

    def samples_of(self, nodeid: str, run_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The raw samples of test ``nodeid`` in each of ``run_ids`` that has a readable row.

        A run without the test, or whose row cannot be read, is left out (no error): the caller
        compares what there is and says so.
        """
        found: dict[int, np.ndarray] = {}
        for run_id in dict.fromkeys(run_ids):
            rows = self._read(
                "SELECT samples FROM results WHERE run_id = ? AND nodeid = ?",
                (run_id, _to_sql(nodeid)),
            )
            if not rows:
                continue
            try:
                found[run_id] = samples_from_blob(rows[0][0], where=f"run {run_id}")
            except StoreError:
                continue
        return found

    def load_baseline(self, label: str, *, history: int = 10) -> Baseline:
        """The latest run under ``label`` and up to ``history`` earlier ones.

        :raises StoreError: no run was saved under ``label`` (the message lists the labels present).
        """
        ids = self.run_ids(label)
        if not ids:
            present = self.labels()
            listed = ", ".join(repr(x) for x in present) if present else "none yet"
            raise StoreError(
                f"--roofline-baseline: no run saved under label {label!r} in {self.path} "
                f"(labels present: {listed}). Save one first with "
                f"{shlex.quote(f'--roofline-save={label}')}."
            )
        latest = self.load_run(ids[0])
        # An earlier run that cannot be read is left out of the history (and named), so one
        # damaged run does not make the label unusable; a damaged latest run does.
        earlier: list[StoredRun] = []
        skipped: list[str] = []
        for run_id in ids[1 : history + 1]:
            try:
                earlier.append(self.load_run(run_id))
            except StoreError as exc:
                skipped.append(str(exc))
        return Baseline(label=label, latest=latest, history=tuple(earlier), skipped=tuple(skipped))

    # -- calibrations (the CalibrationCache protocol of pytest_roofline.hardware.calibration) ---------
    def get_calibration(self, key: str) -> Mapping[str, object] | None:
        rows = self._read("SELECT payload FROM calibrations WHERE key = ?", (key,))
        if not rows:
            return None
        try:  # a damaged calibration is measured again, not a reason to stop
            return decode_json_mapping(rows[0][0], where=f"{self.path}: calibration {key!r}")
        except StoreError:
            return None

    def put_calibration(self, key: str, payload: Mapping[str, object]) -> None:
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO calibrations (key, created, payload) VALUES (?, ?, ?)",
                (key, time.time(), json.dumps(dict(payload), sort_keys=True)),
            )

    # -- export / import ---------------------------------------------------------------------
    def export_run(self, run_id: int) -> dict[str, Any]:
        """A run as a JSON-ready document that :meth:`import_run` reads back exactly."""
        run = self.load_run(run_id)
        record = run.record
        return {
            "format": "pytest-roofline-run",
            "schema_version": STORE_SCHEMA_VERSION,
            "run": {
                "label": record.label,
                "started": record.started,
                "finished": record.finished,
                "tags": dict(record.tags),
                "target": dict(record.target),
                "machine": record.machine,
                "design": record.design,
                "summary": dict(record.summary),
            },
            "results": [
                {"nodeid": r.nodeid, "payload": dict(r.payload), "samples_s": r.samples_s.tolist()}
                for r in run.results.values()
            ],
        }

    def import_run(self, document: Mapping[str, Any], *, source: str = "import") -> int:
        """Save a run exported by :meth:`export_run`; return its new id.

        Every field is checked before anything is written (:func:`~.checks.parse_export`).

        :raises StoreError: the export breaks a rule; the message names the field.
        """
        if document.get("format") != "pytest-roofline-run":
            raise StoreError(f"{source}: not a pytest-roofline run export (missing format marker)")
        version = document.get("schema_version")
        if not isinstance(version, int) or version > STORE_SCHEMA_VERSION:
            raise StoreError(
                f"{source}: export schema version {version!r} is not readable by this pytest-roofline "
                f"(reads up to {STORE_SCHEMA_VERSION})"
            )
        record, results = parse_export(document, source=source)
        return self.save_run(record, results)
