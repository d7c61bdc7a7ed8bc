"""Observability per ISO week of a label's runs: escape risk, replays, confirmations (issue 14)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline.cli import EXIT_OK, main
from pytest_roofline.gate.weeks import iso_week, weekly
from pytest_roofline.store import RunRecord, Store, StoredResult
from pytest_roofline.store.observations import observation_counts

# Monday 2026-11-23 00:00 UTC (ISO week 48) and the Monday after (week 49).
WEEK_48 = 1795392000.0
WEEK_49 = WEEK_48 + 7 * 86400


def _test(
    *,
    compared: bool = True,
    mde_p95: float | None = 0.02,
    p99: str = "ok",
    confirmation: str | None = None,
    replay: bool | None = None,
) -> dict[str, Any]:
    test: dict[str, Any] = {"nodeid": "t.py::k", "mde": {} if mde_p95 is None else {"p95": mde_p95}}
    if compared:
        test["change"] = {"p95": {"verdict": "ok"}, "p99": {"verdict": p99}}
    if confirmation is not None:
        test["confirmation"] = {"state": confirmation}
    if replay is not None:
        test["replay"] = {"attempted": True, "count": 1, "reproduced": replay}
    return test


def _summary(*tests: dict[str, Any], min_effect_p95: float = 0.05) -> dict[str, Any]:
    return {
        "document": {"run": {"gate": {"min_effect": {"p95": min_effect_p95}}}, "tests": list(tests)}
    }


def test_a_runs_counts_come_from_its_document() -> None:
    counts = observation_counts(
        _summary(
            _test(),  # compared, sees 2%: no risk
            _test(mde_p95=0.08),  # cannot see 5%: escape risk
            _test(mde_p95=None, p99="insufficient"),  # unknown MDE, tail not assessed
            _test(compared=False, mde_p95=None),  # no baseline: not counted as compared
            _test(confirmation="confirmed", replay=True),
            _test(confirmation="overturned", replay=False),
            _test(confirmation="unavailable"),
        )
    )
    assert counts == {
        "tests": 7,
        "compared": 6,
        "escape_risk": 2,
        "tails_not_assessed": 1,
        "confirmations": {"confirmed": 1, "overturned": 1, "inconclusive": 0, "unavailable": 1},
        "replays": {"attempted": 2, "reproduced": 1, "not_reproduced": 1},
    }
    # The run's own margin decides: at 10% the 8% test is no longer at risk.
    assert (
        observation_counts(_summary(_test(mde_p95=0.08), min_effect_p95=0.10))["escape_risk"] == 0
    )
    assert observation_counts({})["tests"] == 0


def test_iso_weeks_are_named_and_ordered() -> None:
    assert iso_week(WEEK_48) == "2026-W48"
    assert iso_week(WEEK_49 - 1) == "2026-W48"
    assert iso_week(WEEK_49) == "2026-W49"
    assert iso_week(1609459200.0) == "2020-W53"  # 2021-01-01 belongs to 2020's last week


def _save(store: Store, started: float, summary: dict[str, Any]) -> None:
    record = RunRecord(
        label="main", started=started, finished=started + 60, tags={}, target={}, machine="m",
        summary=summary,
    )  # fmt: skip
    rng = np.random.default_rng(int(started) % 1000)
    store.save_run(record, [StoredResult("t.py::k", {}, rng.lognormal(-7, 0.05, 50))])


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Week 48: two runs (4 compared results, 1 at risk; one replay reproduced, one not).
    Week 49: one run (2 compared, both at risk; a confirmation confirmed, one inconclusive)."""
    path = tmp_path / "store.sqlite"
    with Store.open(path) as store:
        _save(store, WEEK_48 + 3600, _summary(_test(), _test(mde_p95=0.09, replay=True)))
        _save(store, WEEK_48 + 86400, _summary(_test(), _test(replay=False)))
        _save(
            store,
            WEEK_49 + 3600,
            _summary(
                _test(mde_p95=None, p99="insufficient", confirmation="confirmed"),
                _test(mde_p95=0.5, confirmation="inconclusive"),
            ),
        )
    return path


def test_the_weeks_sum_their_runs_counts(store_path: Path) -> None:
    with Store.open(store_path) as store:
        weeks = weekly(store.observations("main"))
    first, second = weeks
    assert (first.week, first.runs, first.compared, first.escape_risk_tests) == (
        "2026-W48",
        2,
        4,
        1,
    )
    assert first.escape_risk == pytest.approx(0.25)
    assert first.replays == {"attempted": 2, "reproduced": 1, "not_reproduced": 1}
    assert first.reproduced_rate == pytest.approx(0.5)
    assert first.confirmed_rate is None  # none tried: not a 0% success
    assert (second.week, second.runs, second.escape_risk, second.tails_not_assessed) == (
        "2026-W49", 1, 1.0, 1,
    )  # fmt: skip
    assert second.confirmed_rate == pytest.approx(0.5)
    assert second.reproduced_rate is None


def test_runs_saved_without_counts_are_backfilled_from_their_documents(store_path: Path) -> None:
    # A store written by a version without the table (or before it existed).
    with sqlite3.connect(store_path) as db:
        db.execute("DROP TABLE run_observations")
    with Store.open(store_path) as store:
        weeks = weekly(store.observations("main"))
    assert [w.escape_risk_tests for w in weeks] == [1, 2]
    with sqlite3.connect(store_path) as db:
        assert db.execute("SELECT COUNT(*) FROM run_observations").fetchone() == (3,)


def test_a_store_that_cannot_keep_the_counts_is_read_all_the_same(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sqlite3.connect(store_path) as db:
        db.execute("DELETE FROM run_observations")

    def read_only(*args: object) -> bool:
        return False

    monkeypatch.setattr("pytest_roofline.store.sqlite.write_observation", read_only)
    with Store.open(store_path) as store:
        weeks = weekly(store.observations("main"))
    assert [w.compared for w in weeks] == [4, 2]


def test_a_run_with_an_unreadable_summary_counts_as_unreadable(store_path: Path) -> None:
    with sqlite3.connect(store_path) as db:
        db.execute("DELETE FROM run_observations WHERE run_id = 3")
        db.execute("UPDATE runs SET summary = 'not json' WHERE id = 3")
    with Store.open(store_path) as store:
        weeks = weekly(store.observations("main"))
    assert weeks[1].unreadable_runs == 1 and weeks[1].compared == 0


def test_history_shows_the_weeks_in_its_table_json_and_html(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, page = tmp_path / "h.json", tmp_path / "h.html"
    args = [
        "history",
        "--store",
        str(store_path),
        "--label=main",
        f"--json={out}",
        f"--html={page}",
    ]
    assert main(args) == EXIT_OK
    week = json.loads(out.read_text())["weeks"][0]
    assert week == {
        "week": "2026-W48",
        "runs": 2,
        "tests": 4,
        "compared": 4,
        "escape_risk": 0.25,
        "escape_risk_tests": 1,
        "tails_not_assessed": 0,
        "confirmations": {
            "confirmed": 0, "overturned": 0, "inconclusive": 0, "unavailable": 0,
            "confirmed_rate": None,
        },
        "replays": {"attempted": 2, "reproduced": 1, "not_reproduced": 1, "reproduced_rate": 0.5},
        "unreadable_runs": 0,
    }  # fmt: skip
    shown = capsys.readouterr().out
    assert "observability per ISO week" in shown
    assert "2026-W48  2     4 of 4          25% (1)" in shown
    html = page.read_text()
    assert "<h2>Observability per ISO week of the label&#x27;s runs</h2>" in html
    assert "<td>2026-W49</td>" in html
