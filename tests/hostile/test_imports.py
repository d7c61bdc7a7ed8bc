"""Item 7: ``pytest-roofline import`` validates a whole export before writing anything, and the
message names the field; a refused import leaves the store exactly as it was."""

from __future__ import annotations

import copy
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    CLI_USAGE,
    INI,
    OK,
    ROOFLINE_YAML,
    digest,
    no_traceback,
    run_cli,
    run_cli_many,
    run_pytest,
)

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Doc]:
    """A store with one real run ('main', two tests) and its export."""
    root = tmp_path_factory.mktemp("imports")
    (root / "roofline.yaml").write_text(ROOFLINE_YAML)
    (root / "pytest.ini").write_text(INI)
    (root / "test_s.py").write_text(
        "def test_a(roofline):\n    roofline(sorted, [3, 1, 2])\n\n"
        "def test_b(roofline):\n    roofline(len, 'ab')\n"
    )
    ran = run_pytest(root, "--roofline", "--roofline-store=s.sqlite", "--roofline-save=main")
    assert ran.status == OK, ran.explain()
    exported = run_cli(root, "export", "main", "--store", "s.sqlite", "-o", "good.json")
    assert exported.status == OK, exported.explain()
    return root / "s.sqlite", json.loads((root / "good.json").read_text())


def _set(path: str, value: Any) -> Callable[[Doc], None]:
    """A mutation that sets a dotted path (list indexes as numbers) to ``value``."""

    def mutate(doc: Doc) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = doc
        for part in parents:
            node = node[part]
        node[last] = value

    return mutate


def _delete(path: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part) if part.isdigit() else part]
        del node[last]

    return mutate


def _duplicate_result(doc: Doc) -> None:
    doc["results"].append(copy.deepcopy(doc["results"][0]))


# (case, mutation, the field the message names)
POISONS: list[tuple[str, Callable[[Doc], None], str]] = [
    ("nan-sample", _set("results.0.samples_s.2", math.nan), "results[0].samples_s"),
    ("infinite-sample", _set("results.0.samples_s.0", math.inf), "results[0].samples_s"),
    ("negative-sample", _set("results.1.samples_s.0", -1e-3), "results[1].samples_s"),
    ("empty-samples", _set("results.0.samples_s", []), "results[0].samples_s"),
    ("text-sample", _set("results.0.samples_s", ["fast"]), "results[0].samples_s"),
    ("samples-not-a-list", _set("results.0.samples_s", 0.001), "results[0].samples_s"),
    ("huge-start", _set("run.started", 1e300), "run.started"),
    ("nan-start", _set("run.started", math.nan), "run.started"),
    ("text-finish", _set("run.finished", "soon"), "run.finished"),
    (
        "nan-in-payload",
        _set("results.0.payload.measurement.elapsed_s", math.nan),
        "results[0].payload",
    ),
    ("payload-without-measurement", _delete("results.0.payload.measurement"), "results[0].payload"),
    ("payload-not-a-mapping", _set("results.0.payload", [1, 2]), "results[0].payload"),
    ("empty-nodeid", _set("results.0.nodeid", ""), "results[0].nodeid"),
    ("duplicate-nodeid", _duplicate_result, "results[2].nodeid"),
    ("tags-not-a-mapping", _set("run.tags", "dataset=x"), "run.tags"),
    ("tag-value-a-list", _set("run.tags", {"dataset": [1]}), "run.tags"),
    ("label-a-number", _set("run.label", 5), "run.label"),
    ("label-empty", _set("run.label", ""), "run.label"),
    ("target-garbage", _set("run.target", {"name": 5, "peak_flops_per_s": "x"}), "run.target"),
    ("document-garbage", _set("run.summary.document", {"tests": "x"}), "run.summary.document"),
    ("results-not-a-list", _set("results", {"a": 1}), "results"),
    ("run-missing", _delete("run"), "run"),
]


@pytest.mark.parametrize(("mutate", "field"), [p[1:] for p in POISONS], ids=[p[0] for p in POISONS])
def test_a_poisoned_export_is_refused_naming_the_field_and_nothing_is_written(
    made: tuple[Path, Doc], tmp_path: Path, mutate: Callable[[Doc], None], field: str
) -> None:
    source, good = made
    store = tmp_path / "s.sqlite"
    shutil.copyfile(source, store)
    poisoned = copy.deepcopy(good)
    mutate(poisoned)
    (tmp_path / "bad.json").write_text(json.dumps(poisoned))  # NaN written as NaN, as Python does
    before = digest(store)

    # One interpreter for the three commands (each its own main(argv)): the start is most of
    # their time.
    ran, *later = run_cli_many(
        tmp_path,
        ["import", "bad.json", "--store", "s.sqlite"],
        ["runs", "--store", "s.sqlite"],
        ["compare", "main", "main", "--store", "s.sqlite"],
    )

    assert ran.status == CLI_USAGE, ran.explain()
    assert field in ran.err, ran.explain()
    no_traceback(ran)
    assert digest(store) == before
    for command in later:
        assert command.status == OK, command.explain()


def test_the_unpoisoned_export_imports_and_compares(made: tuple[Path, Doc], tmp_path: Path) -> None:
    _, good = made
    (tmp_path / "good.json").write_text(json.dumps(good))
    ran = run_cli(tmp_path, "import", "good.json", "--store", "s.sqlite", "--label", "copy")
    assert ran.status == OK, ran.explain()
    compared = run_cli(tmp_path, "compare", "copy", "copy", "--store", "s.sqlite")
    assert compared.status == OK, compared.explain()
