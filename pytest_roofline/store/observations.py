"""What each saved run's document says about its evidence: counts kept per run for the history.

``pytest-roofline history`` shows, per ISO week of a label's runs, the escape-risk trend and how
often replays and paired confirmations succeeded (issue 14). Those facts live in each run's
report document (``summary.document`` of the ``runs`` row: ``tests[].mde``, ``tests[].change``,
``tests[].replay``, ``tests[].confirmation``, ``run.gate.min_effect``); decoding every document
of a long history (megabytes each for 1000 tests) for a handful of integers would make the
command slow, so a run's counts are kept in a table of their own, ``run_observations``: one row
per run (``run_id`` its primary key), ``counts`` a JSON object of integers
(:data:`COUNT_KEYS`, with ``confirmations`` and ``replays`` objects).

What is counted, per run (``docs/history.md``):

* ``tests``: the document's test records; ``compared``: those with a comparison (a baseline);
* ``escape_risk``: compared tests whose p95 minimum detectable effect is unknown or above the
  run's ``gate.min_effect.p95`` (the document's own ``observability.escape_risk`` rule, which
  counts every test of a run without a baseline; here only compared tests count, so the trend
  is not moved by runs that compared nothing);
* ``tails_not_assessed``: compared tests whose p95 or p99 comparison was not assessed (verdict
  ``insufficient``);
* ``confirmations``: tests per paired-confirmation state (``confirmed``, ``overturned``,
  ``inconclusive``, ``unavailable``);
* ``replays``: tests whose first-look regression was measured again (``attempted``), and of
  those the ones that ``reproduced`` or did ``not_reproduce``.

Migration: as the ``series`` table (:mod:`~pytest_roofline.store.series`), this is derived
data; the store's schema version does not change, the table is created on the first save or
query, a run without a row (saved before, or by a version without the table) is backfilled from
its document by the first query that needs it, and a read-only store is computed in memory. A
run whose document cannot be read counts as a run without tests, with the reason kept.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_roofline.store.derived import runs_without_row
from pytest_roofline.store.sqltext import to_sql

__all__ = [
    "CONFIRMATION_STATES",
    "COUNT_KEYS",
    "OBSERVATIONS_SCHEMA",
    "REPLAY_KEYS",
    "RunObservation",
    "has_observations_table",
    "missing_observations",
    "observation_counts",
    "query_observations",
    "write_observation",
]

COUNT_KEYS = ("tests", "compared", "escape_risk", "tails_not_assessed")
CONFIRMATION_STATES = ("confirmed", "overturned", "inconclusive", "unavailable")
REPLAY_KEYS = ("attempted", "reproduced", "not_reproduced")

OBSERVATIONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_observations (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    counts TEXT NOT NULL
);
"""
_TABLE_COLUMNS = ("run_id", "counts")
# The document's default p95 min_effect (config.defaults), for a document that records none.
_DEFAULT_P95_EFFECT = 0.05


@dataclass(frozen=True, slots=True)
class RunObservation:
    """One run's counts (see the module docstring), with its start time for grouping."""

    run_id: int
    started: float
    counts: Mapping[str, int] = field(default_factory=dict)
    confirmations: Mapping[str, int] = field(default_factory=dict)
    replays: Mapping[str, int] = field(default_factory=dict)
    problem: str | None = None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def observation_counts(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The counts of one run from its ``runs.summary`` (its report document under ``document``)."""
    document = _mapping(summary.get("document"))
    gate = _mapping(_mapping(document.get("run")).get("gate"))
    effect = _number(_mapping(gate.get("min_effect")).get("p95"))
    margin = effect if effect is not None else _DEFAULT_P95_EFFECT
    counts = dict.fromkeys(COUNT_KEYS, 0)
    confirmations = dict.fromkeys(CONFIRMATION_STATES, 0)
    replays = dict.fromkeys(REPLAY_KEYS, 0)
    entries = document.get("tests")
    for entry in entries if isinstance(entries, list) else ():
        test = _mapping(entry)
        counts["tests"] += 1
        change = _mapping(test.get("change"))
        if change:
            counts["compared"] += 1
            mde = _number(_mapping(test.get("mde")).get("p95"))
            counts["escape_risk"] += mde is None or mde > margin
            counts["tails_not_assessed"] += any(
                _mapping(change.get(q)).get("verdict") == "insufficient" for q in ("p95", "p99")
            )
        state = _mapping(test.get("confirmation")).get("state")
        if state in confirmations:
            confirmations[state] += 1
        replay = _mapping(test.get("replay"))
        if replay.get("attempted") is True:
            replays["attempted"] += 1
            if replay.get("reproduced") is True:
                replays["reproduced"] += 1
            elif replay.get("reproduced") is False:
                replays["not_reproduced"] += 1
    return {**counts, "confirmations": confirmations, "replays": replays}


def has_observations_table(db: sqlite3.Connection) -> bool:
    """Whether the store has a ``run_observations`` table of this layout."""
    rows = db.execute("PRAGMA table_info(run_observations)").fetchall()
    return tuple(str(row[1]) for row in rows) == _TABLE_COLUMNS


def write_observation(db: sqlite3.Connection, run_id: int, counts: Mapping[str, Any]) -> bool:
    """Insert one run's counts (inside the caller's write transaction); whether it was.

    Under a savepoint, as the series rows: derived data never costs a save.
    """
    db.execute(OBSERVATIONS_SCHEMA)
    if not has_observations_table(db):
        return False
    db.execute("SAVEPOINT observation_row")
    try:
        db.execute(
            "INSERT OR REPLACE INTO run_observations (run_id, counts) VALUES (?, ?)",
            (run_id, json.dumps(dict(counts), sort_keys=True)),
        )
    except sqlite3.Error:
        db.execute("ROLLBACK TO observation_row")
        db.execute("RELEASE observation_row")
        return False
    db.execute("RELEASE observation_row")
    return True


def missing_observations(db: sqlite3.Connection, label: str) -> list[int]:
    """Runs of ``label`` without a ``run_observations`` row (to backfill), oldest first."""
    return runs_without_row(db, label, "run_observations", table_present=has_observations_table(db))


def _ints(value: object, keys: tuple[str, ...]) -> dict[str, int]:
    data = _mapping(value)
    return {
        k: int(v) if isinstance(v := data.get(k), int) and not isinstance(v, bool) else 0
        for k in keys
    }


def _observation(run_id: int, started: object, text: object) -> RunObservation:
    begun = _number(started) or 0.0
    try:
        data = json.loads(text) if isinstance(text, (str, bytes)) else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, Mapping):
        return RunObservation(run_id, begun, problem=f"run {run_id}: its counts cannot be read")
    problem = data.get("problem")
    return RunObservation(
        run_id=run_id,
        started=begun,
        counts=_ints(data, COUNT_KEYS),
        confirmations=_ints(data.get("confirmations"), CONFIRMATION_STATES),
        replays=_ints(data.get("replays"), REPLAY_KEYS),
        problem=problem if isinstance(problem, str) else None,
    )


def query_observations(
    db: sqlite3.Connection, label: str, *, extra: Mapping[int, Mapping[str, Any]] = {}
) -> tuple[RunObservation, ...]:
    """The counts of every run of ``label``, oldest first; ``extra`` holds counts computed in
    memory for runs whose rows could not be kept (a read-only store)."""
    sql = (
        "SELECT r.id, r.started, o.counts FROM runs r"
        " LEFT JOIN run_observations o ON o.run_id = r.id WHERE r.label = ? ORDER BY r.id"
        if has_observations_table(db)
        else "SELECT r.id, r.started, NULL FROM runs r WHERE r.label = ? ORDER BY r.id"
    )
    out = []
    for run_id, started, text in db.execute(sql, (to_sql(label),)).fetchall():
        run_id = int(run_id)
        if run_id in extra:
            text = json.dumps(dict(extra[run_id]))
        out.append(_observation(run_id, started, text))
    return tuple(out)
