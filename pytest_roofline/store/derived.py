"""Tables derived from the stored runs (the series, the observations): which runs lack a row.

Each derived table has one row per run, written when the run is saved and backfilled for runs
saved before the table existed (or by an older version); this finds the runs to backfill.
"""

from __future__ import annotations

import sqlite3

from pytest_roofline.store.sqltext import to_sql

__all__ = ["runs_without_row"]


def runs_without_row(
    db: sqlite3.Connection, label: str, table: str, *, table_present: bool
) -> list[int]:
    """Runs of ``label`` with no row in the derived ``table`` (keyed by ``run_id``), oldest
    first; every run of the label when the table is not there (``table_present`` false).

    :param table: a derived table's name, one of the store's own (never user text).
    """
    if not table_present:
        sql = "SELECT id FROM runs WHERE label = ? ORDER BY id"
    else:
        sql = (
            f"SELECT r.id FROM runs r LEFT JOIN {table} d ON d.run_id = r.id"
            " WHERE r.label = ? AND d.run_id IS NULL ORDER BY r.id"
        )
    return [int(r[0]) for r in db.execute(sql, (to_sql(label),)).fetchall()]
