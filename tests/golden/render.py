"""What the golden test renders from the golden store (shared by the test and the generator)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pytest_roofline.gate.compare import compare_stored_runs
from pytest_roofline.gate.record import with_platforms
from pytest_roofline.model.document import RunDocument
from pytest_roofline.report.html import render_html
from pytest_roofline.report.markdown import render_markdown
from pytest_roofline.store import Store

# A re-analysis reports the versions it runs with; the golden outputs use these instead.
FIXED_VERSIONS = {
    "pytest_roofline": "0.1.0",
    "python": "3.11.7",
    "pytest": "9.2.0",
    "numpy": "2.4.6",
    "scipy": "1.17.1",
}


def _outputs(prefix: str, document: RunDocument) -> dict[str, str]:
    return {
        f"{prefix}.json": json.dumps(document.to_json(), indent=2, sort_keys=True) + "\n",
        f"{prefix}.md": render_markdown(document, report_path="report.html"),
        f"{prefix}.html": render_html(document),
    }


def render_all(store_path: Path) -> dict[str, str]:
    """``report-*``: the candidate run's stored document; ``compare-*``: main against cand."""
    with Store.open(store_path, create=False) as store:
        cand_id = store.run_ids("cand")[0]
        main_id = store.run_ids("main")[0]
        stored = with_platforms(
            RunDocument.read(store.load_run(cand_id).record.summary["document"])
        )
        compared = replace(compare_stored_runs(store, main_id, cand_id), versions=FIXED_VERSIONS)
    return {**_outputs("report", stored), **_outputs("compare", compared)}
