"""pytest-roofline ab without subprocesses: the paired run's analysis, the side check, the config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_roofline.ab import analyse_rounds as analyse_rounds_typed
from pytest_roofline.ab import check_side, load_paired
from pytest_roofline.ab.command import ab_windows
from pytest_roofline.config.settings import AbSettings, GateSettings, build_config, parse_ab
from pytest_roofline.config.sla import SlaSpec
from pytest_roofline.errors import ConfigError, StoreError
from pytest_roofline.hardware.target import target_from_mapping
from pytest_roofline.measure.measurement import Measurement
from pytest_roofline.measure.sampling import SampleSet
from pytest_roofline.model.document import RunDocument
from pytest_roofline.model.results import TestResult
from pytest_roofline.report.html import render_html
from pytest_roofline.report.markdown import render_markdown
from pytest_roofline.roofline import DeclaredWork
from pytest_roofline.store import RunRecord, Store, StoredResult, StoredRun

TAGS_BASE = {"python": "3.11", "git_commit": "aaa", "git_dirty": "no"}
TAGS_CAND = {"python": "3.11", "git_commit": "bbb", "git_dirty": "no"}


TARGET = target_from_mapping(
    "ci", {"peak_flops_per_s": {"fp32": 1e11}, "peak_bytes_per_s": {"dram": 1e10}}, where="test"
)
# 2 MFLOP over 1 kB: compute-bound on TARGET, 20 µs a call at the roof.
GEMM = DeclaredWork(flops=2e6, bytes_moved=1e3, precision="fp32")


def stored(nodeid: str, samples: np.ndarray, declared: DeclaredWork | None = None) -> StoredResult:
    sample_set = SampleSet(samples, 1, 1, 0.0, "budget", float(samples.sum()), False)
    result = TestResult(
        nodeid, None, ("team",), "revert PR 7", SlaSpec(), None,
        Measurement(sample_set, declared, (), None),
    )  # fmt: skip
    return StoredResult(nodeid, result.to_dict(include_samples=False), samples)


def analyse_rounds(*args: Any, **kwargs: Any) -> tuple[RunDocument, Any, list[StoredResult]]:
    """The paired analysis with its document as JSON, as the reports' readers see it."""
    document, results = analyse_rounds_typed(*args, **kwargs)
    return document, document.to_json(), results


def paired_runs(
    effects: dict[str, float], *, k: int = 8, seed: int = 0, round_noise: float = 0.15
) -> tuple[list[StoredRun], list[StoredRun]]:
    """K rounds of both sides; every round has a machine speed that both of its sides share."""
    rng = np.random.default_rng(seed)
    base_runs, cand_runs = [], []
    for i in range(k):
        speed = rng.lognormal(0, round_noise)
        sides = []
        for tags, scale in ((TAGS_BASE, None), (TAGS_CAND, effects)):
            results = {}
            for nodeid, effect in effects.items():
                factor = 1.0 if scale is None else effect
                samples = speed * factor * 1e-3 * rng.lognormal(0, 0.15, 300)
                results[nodeid] = stored(nodeid, samples * rng.lognormal(0, 0.01))
            record = RunRecord("ab-x", 100.0 + i, 101.0 + i, tags, {}, "machine-1")
            sides.append(StoredRun(2 * i + len(sides) + 1, record, results))
        base_runs.append(sides[0])
        cand_runs.append(sides[1])
    return base_runs, cand_runs


def analyse(
    effects: dict[str, float], **kwargs: object
) -> tuple[dict[str, object], list[StoredResult]]:
    base, cand = paired_runs(effects, **kwargs)  # type: ignore[arg-type]
    _, document, results = analyse_rounds(
        base, cand, gate=GateSettings(), baseline_label="main", label="ab"
    )
    return document, results


# ------------------------------------------------------------------------------------ analysis
def test_a_paired_run_rolls_back_the_slower_test_and_ships_the_rest() -> None:
    document, _ = analyse({"t.py::slow": 1.4, "t.py::same": 1.0})
    tests = {t["nodeid"]: t for t in document["tests"]}  # type: ignore[attr-defined]
    assert document["decision"] == "rollback"
    assert tests["t.py::slow"]["decision"] == "rollback"
    assert tests["t.py::slow"]["change"]["p95"]["verdict"] == "regression"
    assert tests["t.py::slow"]["change"]["p95"]["ratio"] == pytest.approx(1.4, rel=0.05)
    assert tests["t.py::same"]["decision"] == "ship"
    assert "replay" not in tests["t.py::slow"]["reasons"][0]


def test_the_document_says_paired_and_carries_each_tests_per_round_ratios() -> None:
    document, _ = analyse({"t.py::slow": 1.4}, k=6)
    run = document["run"]
    assert run["design"] == "paired"  # type: ignore[index]
    assert run["rounds"] == 6  # type: ignore[index]
    assert run["baseline_label"] == "main"  # type: ignore[index]
    assert run["tag_diff"]["git_commit"] == {  # type: ignore[index]
        "baseline": "aaa",
        "candidate": "bbb",
        "layer": "model",
    }
    test = document["tests"][0]  # type: ignore[index]
    assert test["paired"]["rounds"] == 6
    assert len(test["paired"]["ratios"]["p95"]) == 6
    assert test["paired"]["samples"]["baseline"] == [300] * 6
    assert test["baseline"]["samples"] == 1800
    assert test["samples"] == 1800
    assert test["drift"] is None  # the pairing cancels drift across rounds
    json.dumps(document, allow_nan=False)  # valid JSON: NaN became null


def test_a_shift_every_test_shares_rolls_back_without_a_machine_speed_escalation() -> None:
    # In a paired run the machine is the same for both sides: a shift shared by every test is
    # the code (or a shared layer), so it is decided per test, not blamed on the machine.
    document, _ = analyse({f"t.py::t{i}": 1.5 for i in range(6)})
    assert document["decision"] == "rollback"
    assert not any("moved together" in r for r in document["reasons"])  # type: ignore[attr-defined]
    assert document["run"]["common_mode"]["factor"] == pytest.approx(1.5, rel=0.1)  # type: ignore[index]
    assert document["run"]["common_mode"]["applied"] is False  # type: ignore[index]


def test_an_improvement_every_test_shares_ships() -> None:
    document, _ = analyse({f"t.py::t{i}": 0.6 for i in range(6)})
    assert document["decision"] == "ship"
    assert all(t["change"]["p95"]["improvement"] for t in document["tests"])  # type: ignore[attr-defined]


def test_failing_tests_in_a_round_escalate_the_run() -> None:
    base, cand = paired_runs({"t.py::same": 1.0})
    _, document, _ = analyse_rounds(
        base,
        cand,
        gate=GateSettings(),
        run_reasons=["tests failed on the candidate side in round 3"],
    )
    assert document["decision"] == "escalate"
    assert "tests failed on the candidate side in round 3" in document["reasons"]


def test_a_test_only_in_the_candidate_is_new_and_not_compared() -> None:
    base, cand = paired_runs({"t.py::same": 1.0})
    for run in cand:
        run.results["t.py::new"] = stored("t.py::new", np.full(300, 1e-3) * np.linspace(1, 2, 300))  # type: ignore[index]
    _, document, results = analyse_rounds(base, cand, gate=GateSettings())
    tests = {t["nodeid"]: t for t in document["tests"]}
    assert tests["t.py::new"]["change"] is None
    assert document["run"]["missing_from_baseline"] == ["t.py::new"]
    assert {r.nodeid for r in results} == {"t.py::same", "t.py::new"}


def test_the_stored_paired_run_gives_back_both_sides_round_by_round(tmp_path: Path) -> None:
    base, cand = paired_runs({"t.py::slow": 1.4}, k=4)
    typed, document, results = analyse_rounds(base, cand, gate=GateSettings())
    record = RunRecord(
        "ab",
        1.0,
        2.0,
        typed.run.tags,
        {},
        typed.run.machine or "",
        design="paired",
        summary={"document": document},
    )
    with Store.open(tmp_path / "s.sqlite") as store:
        run_id = store.save_run(record, results)
        back = load_paired(store, run_id)["t.py::slow"]
        assert [a.size for a in back.baseline] == [300] * 4
        assert [a.size for a in back.candidate] == [300] * 4
        assert np.array_equal(back.baseline[2], base[2].results["t.py::slow"].samples_s)
        assert np.array_equal(back.candidate[3], cand[3].results["t.py::slow"].samples_s)
        two_run = store.save_run(RunRecord("main", 1.0, 2.0, {}, {}, "m"), results)
        with pytest.raises(StoreError, match="not a paired run"):
            load_paired(store, two_run)


def test_the_reports_show_the_design_and_a_strip_of_round_ratios() -> None:
    document, _ = analyse({"t.py::slow": 1.4, "t.py::same": 1.0}, k=4)
    document["run"]["paired"] = {
        "baseline_ref": "main",
        "baseline_commit": "aaa",
        "order": ["AB", "BA"] * 2,
    }  # type: ignore[index]
    html = render_html(RunDocument.read(document))
    assert "paired, 4 rounds (ABBA) against main" in html
    assert html.count('<svg class="strip"') >= 3  # two table rows and the rollback's memo
    assert "Paired design" in html
    assert "p95 round 1: ×" in html
    markdown = render_markdown(RunDocument.read(document))
    assert "ROLLBACK" in markdown


def roofline_rounds(
    base_speeds: list[float], cand_speeds: list[float], n: int = 30
) -> tuple[list[StoredRun], list[StoredRun]]:
    """Rounds of one declared compute-bound test (30 µs a call at speed 1) on TARGET."""
    rng = np.random.default_rng(3)
    runs: tuple[list[StoredRun], list[StoredRun]] = ([], [])
    for i, speeds in enumerate(zip(base_speeds, cand_speeds, strict=True)):
        for side, (tags, speed) in enumerate(zip((TAGS_BASE, TAGS_CAND), speeds, strict=True)):
            samples = speed * 3e-5 * rng.lognormal(0, 0.02, n)
            record = RunRecord("ab-x", 1.0 + i, 2.0 + i, tags, TARGET.to_dict(), "m")
            runs[side].append(
                StoredRun(
                    2 * i + side + 1, record, {"t.py::gemm": stored("t.py::gemm", samples, GEMM)}
                )
            )
    return runs


def test_a_pooled_p50_that_no_round_supports_is_not_an_efficiency_collapse() -> None:
    # A BLAS kernel on a busy machine: some rounds 100 times slower, on either side. The pooled
    # candidate p50 lands in the slow mode and the pooled baseline p50 in the fast one, but the
    # rounds agree in 6 of 8: no established slowdown, so no bound-class rollback either.
    base = [1, 1, 1, 1, 1, 100, 100, 100]
    cand = [1, 1, 1, 100, 100, 100, 100, 100]
    _, document, _ = analyse_rounds(*roofline_rounds(base, cand), gate=GateSettings())
    (test,) = document["tests"]
    assert test["p50_s"] > 50 * test["baseline"]["p50_s"]  # the pooled view alone says x100
    assert test["decision"] != "rollback"
    assert not (test["roofline"]["bound_changed"] or False)


def test_a_slowdown_every_round_shows_moves_the_roofline_point_and_rolls_back() -> None:
    _, document, _ = analyse_rounds(*roofline_rounds([1.0] * 8, [4.0] * 8), gate=GateSettings())
    (test,) = document["tests"]
    assert test["decision"] == "rollback"
    point = test["roofline"]
    assert (point["baseline_bound"], point["bound"]) == ("compute", "overhead")
    assert point["efficiency_ratio"] == pytest.approx(0.25, rel=0.05)
    assert any("efficiency collapse" in r for r in test["reasons"])


def test_analyse_rounds_needs_one_run_per_side_and_round() -> None:
    base, cand = paired_runs({"t.py::same": 1.0}, k=4)
    with pytest.raises(ValueError, match="one baseline and one candidate run per round"):
        analyse_rounds(base, cand[:3], gate=GateSettings())


# ------------------------------------------------------------------------------------ side check
@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """A candidate repository with a src-layout package, and a baseline worktree elsewhere."""
    cand, base = tmp_path / "repo", tmp_path / "scratch" / "baseline"
    for root in (cand, base):
        (root / "src" / "fastpkg").mkdir(parents=True)
        (root / "src" / "fastpkg" / "__init__.py").write_text("")
        (root / "tests").mkdir()
        (root / "tests" / "test_perf.py").write_text("")
    return cand, base


def probe(root: Path, **modules: Path) -> dict[str, object]:
    return {
        "rootdir": str(root),
        "test_files": [str(root / "tests" / "test_perf.py")],
        "modules": {name: str(path) for name, path in modules.items()},
        "environment_modules": {"numpy": "/usr/lib/python3/site-packages/numpy/__init__.py"},
    }


def test_a_side_that_imports_its_own_tree_passes(trees: tuple[Path, Path]) -> None:
    cand, base = trees
    record = probe(base, fastpkg=base / "src/fastpkg/__init__.py")
    assert (
        check_side(
            "baseline",
            record,
            own_root=base,
            own_workdir=base,
            other_root=cand,
            import_dirs=[base / "src", base],
        )
        is None
    )


def test_a_baseline_that_imports_the_candidates_code_is_refused_with_the_import_root_to_use(
    trees: tuple[Path, Path],
) -> None:
    cand, base = trees
    record = probe(base, fastpkg=cand / "src/fastpkg/__init__.py")
    problem = check_side(
        "baseline", record, own_root=base, own_workdir=base, other_root=cand, import_dirs=[base]
    )
    assert problem is not None
    assert "imported fastpkg from the candidate's tree" in problem
    assert "--import-root=src" in problem


def test_a_candidate_that_imports_the_baseline_worktree_is_refused(
    trees: tuple[Path, Path],
) -> None:
    cand, base = trees
    record = probe(cand, fastpkg=base / "src/fastpkg/__init__.py")
    problem = check_side(
        "candidate",
        record,
        own_root=cand,
        own_workdir=cand,
        other_root=base,
        import_dirs=[cand / "src"],
    )
    assert problem is not None and "from the baseline's tree" in problem


def test_a_worktree_nested_inside_the_candidate_counts_as_its_own_tree(tmp_path: Path) -> None:
    cand = tmp_path / "repo"
    base = cand / ".tmp" / "baseline"
    (base / "pkg").mkdir(parents=True)
    (base / "pkg" / "__init__.py").write_text("")
    record = probe(base, pkg=base / "pkg/__init__.py")
    assert (
        check_side(
            "baseline", record, own_root=base, own_workdir=base, other_root=cand, import_dirs=[base]
        )
        is None
    )


def test_tests_collected_from_the_other_tree_are_refused(trees: tuple[Path, Path]) -> None:
    cand, base = trees
    record = probe(base)
    record["test_files"] = [str(cand / "tests" / "test_perf.py")]
    problem = check_side(
        "baseline", record, own_root=base, own_workdir=base, other_root=cand, import_dirs=[base]
    )
    assert problem is not None and "collected tests from the candidate's tree" in problem


def test_an_installed_copy_that_shadows_the_tree_is_refused(trees: tuple[Path, Path]) -> None:
    cand, base = trees
    record = probe(cand)
    record["environment_modules"] = {"fastpkg": "/venv/lib/site-packages/fastpkg/__init__.py"}
    problem = check_side(
        "candidate",
        record,
        own_root=cand,
        own_workdir=cand,
        other_root=base,
        import_dirs=[cand / "src"],
    )
    assert problem is not None
    assert "an installed fastpkg shadows the tree" in problem


def test_a_tree_module_named_like_the_standard_library_is_not_mistaken_for_a_shadow(
    tmp_path: Path,
) -> None:
    (tmp_path / "types.py").write_text("")
    record = probe(tmp_path)
    record["environment_modules"] = {"types": "/usr/lib/python3.11/types.py"}
    assert (
        check_side(
            "candidate",
            record,
            own_root=tmp_path,
            own_workdir=tmp_path,
            other_root=tmp_path / "x",
            import_dirs=[tmp_path],
        )
        is None
    )


# ------------------------------------------------------------------------------------ config
def test_the_ab_section_sets_the_commands_defaults() -> None:
    assert parse_ab(None, where="x") == AbSettings()
    settings = parse_ab(
        {
            "rounds": 12,
            "budget": "2s",
            "setup": "make",
            "import_root": "src",
            "worker_pairs": 2,
            "pin_cpus": not AbSettings().pin_cpus,
        },
        where="x",
    )
    assert settings == AbSettings(
        rounds=12,
        budget_s=2.0,
        setup="make",
        import_root="src",
        worker_pairs=2,
        pin_cpus=not AbSettings().pin_cpus,
    )
    windows = ab_windows(12, 2.0, 2, pin_cpus=settings.pin_cpus)
    assert windows.pin_cpus == settings.pin_cpus


def test_ab_keeps_up_to_forty_window_pairs_of_62_5_ms_by_default() -> None:
    # Stop 42: 32 / 2 s, 40 / 2.5 s and 48 / 3 s alternated run by run escalated 22, 11 and 8
    # of 100 unchanged test-runs at 49.3, 49.8 and 57.1 s a run (docs/paired.md, "Stop 42");
    # the documented tail thresholds follow from the window length, which stays 62.5 ms.
    defaults = AbSettings()
    windows = ab_windows(defaults.rounds, defaults.budget_s, defaults.worker_pairs)
    assert (windows.min_pairs, windows.max_pairs, windows.window_s) == (4, 40, 0.0625)
    # Three pairs of worker processes take the pairs in turn (docs/paired.md, "Three pairs of
    # worker processes, in turn"), as many as once measured a regression one after the other.
    assert windows.worker_pairs == 3


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"round": 4}, r"unknown key\(s\) \['round'\]"),
        ({"rounds": 2}, r"x.rounds: expected an integer >= 3"),
        ({"budget": "soon"}, r"x.budget: expected a duration"),
        ({"setup": ""}, r"x.setup: expected a non-empty string \(a shell command\)"),
        ({"import_root": 3}, r"x.import_root: expected a non-empty string"),
        ({"worker_pairs": 0}, r"x.worker_pairs: expected an integer >= 1, got 0"),
        ({"worker_pairs": 9}, r"x.worker_pairs: expected an integer from 1 to 8 .*, got 9"),
        ({"worker_pairs": "3"}, r"x.worker_pairs: expected an integer >= 1, got '3'"),
        ({"pin_cpus": "yes"}, r"x.pin_cpus: expected true or false, got 'yes'"),
        ({"pin_cpus": 1}, r"x.pin_cpus: expected true or false, got 1"),
        ([4], r"x: expected a mapping"),
    ],
)
def test_a_bad_ab_section_names_the_key_and_the_valid_form(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_ab(value, where="x")


def test_roofline_yaml_accepts_an_ab_section(tmp_path: Path) -> None:
    (tmp_path / "roofline.yaml").write_text("ab: {rounds: 4}\n")
    build_config(rootdir=tmp_path, cli={}, ini={})  # no "unknown key" error
