"""The result store: one SQLite file holding runs, per-test results with raw samples, calibrations.

Design points:

* The file is identified by ``PRAGMA application_id`` and versioned by ``PRAGMA user_version``;
  a file that is not ours, is corrupt, or comes from a newer pytest-roofline is refused with a
  clear message and never modified.
* WAL journal and one ``BEGIN IMMEDIATE`` transaction per write: a run killed mid-save leaves the
  store as it was, and two runs saving at once both land (the second waits on the lock).
* Samples are stored as little-endian float64 blobs; everything else as JSON text.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from pytest_roofline.errors import StoreError
from pytest_roofline.store.records import Baseline, RunRecord, StoredResult, StoredRun

__all__ = ["STORE_SCHEMA_VERSION", "Store"]

STORE_SCHEMA_VERSION = 1
_APPLICATION_ID = 0x52464C31  # "RFL1": tells our stores apart from any other SQLite file
_BUSY_TIMEOUT_MS = 60_000

_SCHEMA = """
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
            raise StoreError(f"{self.path}: cannot write to the result store: {exc}") from exc
        try:
            yield self._db
        except BaseException:
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
        """Save a run and all its results in one transaction; return the run id."""
        try:
            with self._write() as db:
                cursor = db.execute(
                    "INSERT INTO runs (label, started, finished, tags, target, machine, design, summary,"
                    " schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.label,
                        record.started,
                        record.finished,
                        json.dumps(dict(record.tags), sort_keys=True),
                        json.dumps(dict(record.target), sort_keys=True),
                        record.machine,
                        record.design,
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
                            result.nodeid,
                            json.dumps(dict(result.payload), sort_keys=True, allow_nan=False),
                            np.ascontiguousarray(result.samples_s, dtype="<f8").tobytes(),
                        )
                        for result in results
                    ],
                )
        except sqlite3.Error as exc:
            raise StoreError(
                f"{self.path}: saving the run failed, nothing was saved: {exc}"
            ) from exc
        return run_id

    def run_ids(self, label: str | None = None) -> list[int]:
        """Run ids, newest first; only those under ``label`` when given."""
        if label is None:
            rows = self._read("SELECT id FROM runs ORDER BY id DESC")
        else:
            rows = self._read("SELECT id FROM runs WHERE label = ? ORDER BY id DESC", (label,))
        return [int(r[0]) for r in rows]

    def labels(self) -> list[str]:
        rows = self._read("SELECT DISTINCT label FROM runs WHERE label IS NOT NULL ORDER BY label")
        return [str(r[0]) for r in rows]

    def list_runs(self) -> list[tuple[int, RunRecord, int]]:
        """Every run as ``(id, record, number of results)``, newest first."""
        rows = self._read(
            "SELECT r.id, r.label, r.started, r.finished, r.tags, r.target, r.machine, r.design,"
            " r.summary, (SELECT count(*) FROM results WHERE run_id = r.id) FROM runs r ORDER BY r.id DESC"
        )
        return [(int(row[0]), self._record(row[1:9]), int(row[9])) for row in rows]

    def load_run(self, run_id: int) -> StoredRun:
        rows = self._read(
            "SELECT label, started, finished, tags, target, machine, design, summary FROM runs WHERE id = ?",
            (run_id,),
        )
        if not rows:
            raise StoreError(f"{self.path}: no run with id {run_id}")
        record = self._record(rows[0])
        results = {}
        for nodeid, payload, blob in self._read(
            "SELECT nodeid, payload, samples FROM results WHERE run_id = ? ORDER BY nodeid",
            (run_id,),
        ):
            results[str(nodeid)] = StoredResult(
                nodeid=str(nodeid),
                payload=json.loads(payload),
                samples_s=np.frombuffer(blob, dtype="<f8").astype(np.float64),
            )
        return StoredRun(run_id, record, results)

    @staticmethod
    def _record(row: Sequence[Any]) -> RunRecord:
        label, started, finished, tags, target, machine, design, summary = row
        return RunRecord(
            label=label,
            started=float(started),
            finished=float(finished),
            tags=json.loads(tags),
            target=json.loads(target),
            machine=str(machine),
            design=str(design),
            summary=json.loads(summary),
        )

    def load_baseline(self, label: str, *, history: int = 10) -> Baseline:
        """The latest run under ``label`` and up to ``history`` earlier ones.

        :raises StoreError: no run was saved under ``label`` (the message lists the labels present).
        """
        ids = self.run_ids(label)
        if not ids:
            present = self.labels()
            listed = ", ".join(repr(x) for x in present) if present else "none yet"
            raise StoreError(
                f"--roofline-baseline={label}: no run saved under label {label!r} in {self.path} "
                f"(labels present: {listed}). Save one first with --roofline-save={label}."
            )
        runs = [self.load_run(i) for i in ids[: history + 1]]
        return Baseline(label=label, latest=runs[0], history=tuple(runs[1:]))

    # -- calibrations (the CalibrationCache protocol of pytest_roofline.hardware.calibration) ---------
    def get_calibration(self, key: str) -> Mapping[str, object] | None:
        rows = self._read("SELECT payload FROM calibrations WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

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
        """Save a run exported by :meth:`export_run`; return its new id."""
        if document.get("format") != "pytest-roofline-run":
            raise StoreError(f"{source}: not a pytest-roofline run export (missing format marker)")
        version = document.get("schema_version")
        if not isinstance(version, int) or version > STORE_SCHEMA_VERSION:
            raise StoreError(
                f"{source}: export schema version {version!r} is not readable by this pytest-roofline "
                f"(reads up to {STORE_SCHEMA_VERSION})"
            )
        try:
            run = document["run"]
            record = RunRecord(
                label=run["label"],
                started=float(run["started"]),
                finished=float(run["finished"]),
                tags=dict(run["tags"]),
                target=dict(run["target"]),
                machine=str(run["machine"]),
                design=str(run.get("design", "two-run")),
                summary=dict(run.get("summary", {})),
            )
            results = [
                StoredResult(
                    nodeid=str(r["nodeid"]),
                    payload=dict(r["payload"]),
                    samples_s=np.asarray(r["samples_s"], dtype=np.float64),
                )
                for r in document["results"]
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"{source}: malformed run export ({exc!r})") from exc
        return self.save_run(record, results)
