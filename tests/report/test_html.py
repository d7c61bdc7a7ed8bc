"""The HTML signoff report, read back with the stdlib HTML parser."""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.files import write_atomic
from pytest_roofline.model.document import RunDocument
from pytest_roofline.report.html import build_view, render_html
from tests.report.documents import OWNER_SETS, make_document, minimal_document
from tests.report.page import Element, Page, parse

HOSTILE = "<script>alert(1)</script>\"'&amp;<img src=x onerror=alert(2)>"
_URL_ATTRIBUTES = ("src", "href", "xlink:href", "action", "formaction", "poster", "data", "srcset")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return make_document(40, seed=3)


@pytest.fixture(scope="module")
def page(document: dict[str, Any]) -> Page:
    return parse(render_html(RunDocument.read(document)))


def _rows(page: Page) -> list[Element]:
    return page.by_id("test-table").find_all("tbody")[0].find_all("tr")


def test_every_test_has_exactly_one_table_row_with_its_decision(
    document: dict[str, Any], page: Page
) -> None:
    rows = {row.find_all("span", cls="id")[0].text: row for row in _rows(page)}
    assert len(rows) == len(document["tests"])
    for test in document["tests"]:
        row = rows[test["nodeid"]]
        assert row.attrs["data-decision"] == test["decision"]
        assert test["decision"] in row.find_all("span", cls="pill")[0].text


def test_rows_list_tests_that_need_review_first(page: Page) -> None:
    order = [row.attrs["data-decision"] for row in _rows(page)]
    rank = {"rollback": 0, "escalate": 1, "ship": 2}
    assert order == sorted(order, key=rank.__getitem__)


def test_every_decision_and_every_owner_is_shown(document: dict[str, Any], page: Page) -> None:
    text = page.text
    counts = Counter(t["decision"] for t in document["tests"])
    banner = page.by_id("run")
    for decision, n in counts.items():
        tile = banner.find_all("li", cls=f"d-{decision}")[0]
        assert (tile.find_all(cls="n")[0].text, tile.find_all(cls="what")[0].text) == (
            str(n),
            decision,
        )
    assert page.by_id("decision").text == document["decision"]
    for owners in OWNER_SETS:
        for owner in owners:
            assert owner in text
    assert "none defined" in text  # a test without an owner says so


def test_the_roofline_chart_draws_a_point_per_placed_test_and_the_target_roofs(
    document: dict[str, Any], page: Page
) -> None:
    svg = page.find_all("svg", cls="roofline")
    assert len(svg) == 1
    placed = [t for t in document["tests"] if (t["roofline"] or {}).get("intensity")]
    circles = svg[0].find_all("circle")
    assert len(circles) == len(placed)
    titles = {c.find_all("title")[0].text.split(" ")[0] for c in circles}
    assert titles == {t["nodeid"] for t in placed}
    roofs = svg[0].find_all("line", cls="roof")
    kinds = Counter("compute" if "compute" in r.classes else "memory" for r in roofs)
    assert kinds["memory"] == 1  # h100-sxm: one bandwidth roof (dram)
    assert kinds["compute"] >= 4  # fp64=fp32, tf32, bf16=fp16, fp8=int8 share lines
    arrows = svg[0].find_all("line", cls="arrow")
    assert arrows and all(a.attrs["marker-end"].startswith("url(#arrow-") for a in arrows)


def test_points_link_to_their_memo_or_row(page: Page) -> None:
    ids = {e.attrs["id"] for e in page.elements if "id" in e.attrs}
    links = page.find_all("svg", cls="roofline")[0].find_all("a")
    assert links
    for link in links:
        assert link.attrs["href"].startswith("#") and link.attrs["href"][1:] in ids


def test_one_memo_per_non_ship_test_with_the_four_parts(
    document: dict[str, Any], page: Page
) -> None:
    memos = page.find_all("article", cls="memo")
    non_ship = [t for t in document["tests"] if t["decision"] != "ship"]
    assert len(memos) == len(non_ship)
    by_id = {m.find_all("span", cls="id")[0].text: m for m in memos}
    for test in non_ship:
        memo = by_id[test["nodeid"]]
        headings = [h.text for h in memo.find_all("h4")]
        for part in ("Symptom", "Mechanism hypothesis", "Proposed action", "Signoff"):
            assert any(part in h for h in headings), part
        signers = [
            li.find_all("span")[0].text
            for li in memo.find_all("li")
            if li.parent and "signers" in li.parent.classes
        ]
        assert signers == test["owners"]
        assert test["replay_command"] in memo.find_all("pre", cls="cmd")[0].text
        boundary = test["rollback_boundary"] or "none defined"
        assert boundary in memo.text
        charts = memo.find_all("svg", cls="mini")
        assert len(charts) == 2  # ECDF and timeline
        assert charts[0].find_all("polyline")


def test_a_ship_only_run_has_no_memos_and_says_so() -> None:
    document = make_document(12)
    for test in document["tests"]:
        test["decision"] = "ship"
    document["decision"] = "ship"
    page = parse(render_html(RunDocument.read(document)))
    assert not page.find_all("article", cls="memo")
    assert "No test needs review" in page.by_id("memos").text


def test_the_platform_matrix_projects_declared_work_onto_the_targets_presets(
    document: dict[str, Any], page: Page
) -> None:
    from pytest_roofline.gate.record import relevant_presets
    from pytest_roofline.hardware.presets import load_presets

    table = page.find_all("table", cls="matrix")[0]
    header = [th.text for th in table.find_all("th")]
    assert set(relevant_presets(load_presets()["h100-sxm"])) == set(header[3:])
    assert [th.text for th in table.find_all("th") if "current" in th.classes] == ["h100-sxm"]
    declared = [t for t in document["tests"] if t["declared"]]
    assert len(table.find_all("tbody")[0].find_all("tr")) == len(declared)
    # fp8 has no roof on the A100 preset: its cell says n/a.
    column = header.index("a100-80gb-sxm")
    for row in table.find_all("tbody")[0].find_all("tr"):
        cells = row.find_all("td")
        if cells[1].text.endswith("fp8"):
            assert cells[column].text.startswith("n/a")


def test_there_are_no_external_references(page: Page) -> None:
    html = render_html(RunDocument.read(make_document(20)))
    assert "http://" not in html and "https://" not in html
    for element in page.elements:
        for name in _URL_ATTRIBUTES:
            value = element.attrs.get(name, "").strip().lower()
            assert not value.startswith(("http:", "https:", "//", "ftp:")), (
                element.tag,
                name,
                value,
            )
        assert element.tag not in ("iframe", "object", "embed", "img", "link") or (
            element.tag == "link" and element.attrs.get("href", "").startswith("data:")
        )
    assert all("src" not in e.attrs for e in page.find_all("script"))


def test_the_content_security_policy_allows_exactly_the_inline_script(page: Page) -> None:
    meta = [
        m for m in page.find_all("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    policy = meta[0].attrs["content"]
    assert "default-src 'none'" in policy
    scripts = page.find_all("script")
    assert len(scripts) == 1
    source = "".join(scripts[0].text_parts)
    digest = base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy


def test_untrusted_text_is_escaped_and_inert() -> None:
    document = make_document(14, inject=HOSTILE)
    html = render_html(RunDocument.read(document))
    page = parse(html)
    # Only our own script element exists, and no element carries an event handler.
    assert len(page.find_all("script")) == 1
    assert not page.find_all("img")
    for element in page.elements:
        assert not any(name.startswith("on") for name in element.attrs), element
    # The hostile text round-trips through the parser as text, wherever it is shown.
    nodeid = document["tests"][0]["nodeid"]
    assert nodeid in [s.text for s in page.find_all("span", cls="id")]
    assert HOSTILE in page.by_id("run").text  # label, tag diff
    memo = next(
        m
        for m in page.find_all("article", cls="memo")
        if m.find_all("span", cls="id")[0].text == nodeid
    )
    assert HOSTILE in [s.text for s in memo.find_all("span", cls="boundary")]
    assert HOSTILE in [
        li.find_all("span")[0].text
        for li in memo.find_all("li")
        if "signers" in (li.parent.classes if li.parent else set())
    ]
    # In attributes too (hover titles of chart points): decoded by the parser, never markup.
    titles = [t.text for t in page.find_all("title")]
    assert any(t.startswith(nodeid) for t in titles)
    assert html.count("<script") == 1  # the hostile one is there only as escaped text


def test_a_minimal_document_renders_its_gaps_as_gaps() -> None:
    page = parse(render_html(RunDocument.read(minimal_document())))
    assert page.by_id("decision").text == "no decision"
    row = _rows(page)[0]
    assert "no baseline" in row.text
    assert "n/a" in row.text
    assert "no baseline" in page.by_id("run").text
    assert "Nothing to draw" in page.by_id("roofline").text


@pytest.mark.parametrize(
    "document",
    [
        {},
        {"tests": []},
        {"tests": "not a list", "run": [], "observability": None},
        {
            "tests": [
                {
                    "nodeid": 3,
                    "decision": "maybe",
                    "p95_s": "fast",
                    "change": {"p95": []},
                    "roofline": {"bound": 7},
                }
            ]
        },
        {
            "tests": [
                {
                    "nodeid": "t",
                    "series": {"candidate": ["x", None, 1e-3], "baseline": "no"},
                    "decision": "rollback",
                }
            ]
        },
        {
            "run": {
                "tag_diff": {"k": ["a", "b"], "j": 3},
                "target": {"peak_flops_per_s": {"fp32": -1}, "peak_bytes_per_s": "x"},
            }
        },
    ],
    ids=["empty", "no-tests", "wrong-containers", "wrong-values", "bad-series", "bad-run"],
)
def test_malformed_documents_render_without_raising(document: dict[str, Any]) -> None:
    page = parse(render_html(RunDocument.read(document)))
    assert page.by_id("test-table")


def test_write_html_writes_the_rendered_page_atomically(
    tmp_path: Path, document: dict[str, Any]
) -> None:
    target = tmp_path / "out" / "report.html"
    write_atomic(target, render_html(RunDocument.read(document)))
    assert target.read_text(encoding="utf-8") == render_html(RunDocument.read(document))
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]


def test_the_document_survives_a_json_round_trip(document: dict[str, Any]) -> None:
    """The renderer reads JSON read back from disk exactly like the in-memory document."""
    assert render_html(RunDocument.read(json.loads(json.dumps(document)))) == render_html(
        RunDocument.read(document)
    )


def test_the_view_is_built_without_deciding(document: dict[str, Any]) -> None:
    view = build_view(RunDocument.read(document))
    assert view.banner.decision == document["decision"]
    assert [r.decision for r in view.rows].count("rollback") == sum(
        t["decision"] == "rollback" for t in document["tests"]
    )


def test_a_median_regression_shows_in_the_verdict_cell() -> None:
    document = make_document(3, seed=5)
    test = document["tests"][0]
    test["change"] = {
        "p95": {
            "ratio": 0.9,
            "ci_low": 0.85,
            "ci_high": 0.95,
            "verdict": "ok",
            "improvement": True,
        },
        "p99": {"ratio": 1.0, "ci_low": 0.9, "ci_high": 1.1, "verdict": "not detected"},
        "p50": {"ratio": 3.5, "ci_low": 3.2, "ci_high": 3.9, "verdict": "regression"},
    }
    page = parse(render_html(RunDocument.read(document)))
    row = next(r for r in _rows(page) if r.find_all("span", cls="id")[0].text == test["nodeid"])
    assert "p50 regression" in row.text
