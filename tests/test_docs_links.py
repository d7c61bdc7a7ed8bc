"""The documentation a user reads points only at files in the repository.

Relative links in README.md and docs/ must resolve to files that exist (and a ``#section`` to a
heading of that file, as GitHub names it), and neither they nor
the package's docstrings and comments may send a reader to ``research/*.md`` or "DESIGN section
N": notes kept outside the repository, which a user of the package cannot open.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# Markdown links and images: [text](target) -- the target up to a space or the closing paren.
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# A Markdown heading, outside fenced code.
_HEADING = re.compile(r"#{1,6}\s+(.*)")
# Pointers at notes that are not in the repository.
_OUTSIDE = re.compile(r"research/[\w.-]+\.md|\bDESIGN (?:section |§)?\d|\(DESIGN\b|DESIGN document")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_in_the_docs_resolves_to_a_file_in_the_repository(doc: Path) -> None:
    broken = []
    for target in _LINK.findall(doc.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT not in path.parents:
            broken.append(target)
    assert broken == []


def _github_anchors(doc: Path) -> set[str]:
    """The ``#section`` names GitHub gives ``doc``'s headings: lower case, punctuation but ``-``
    and ``_`` dropped, spaces as ``-``, and ``-1``, ``-2``... on repeated headings."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_section_link_in_the_docs_names_a_heading_of_its_file(doc: Path) -> None:
    broken = []
    for target in _LINK.findall(doc.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")) or "#" not in target:
            continue
        name, anchor = target.split("#", 1)
        path = (doc.parent / name).resolve() if name else doc
        if path.suffix == ".md" and path.exists() and anchor not in _github_anchors(path):
            broken.append(target)
    assert broken == []


def test_no_doc_or_docstring_points_at_notes_outside_the_repository() -> None:
    files = [
        *DOCS,
        *sorted((ROOT / "pytest_roofline").rglob("*.py")),
        *sorted((ROOT / "pytest_roofline").rglob("*.yaml")),
    ]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert found == []
