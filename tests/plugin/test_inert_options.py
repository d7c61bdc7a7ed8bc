"""Options that only act with ``--roofline`` warn when given without it (they did nothing, silently)."""

from __future__ import annotations

import pytest

SIMPLE = "def test_a(roofline):\n    roofline(sorted, [3, 1, 2])\n"


@pytest.mark.parametrize(
    "option",
    [
        "--roofline-save=main",
        "--roofline-report=report.html",
        "--roofline-json=run.json",
        "--roofline-markdown=summary.md",
        "--roofline-baseline=main",
    ],
)
def test_an_output_or_baseline_option_without_roofline_warns_that_it_does_nothing(
    project: pytest.Pytester, option: str
) -> None:
    project.makepyfile(test_s=SIMPLE)
    result = project.runpytest(option)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [f"*RooflineWarning: {option} has no effect without --roofline*add --roofline*"]
    )
    assert not (project.path / "report.html").exists()
    assert not (project.path / ".roofline").exists()


def test_several_inert_options_are_named_in_one_warning(project: pytest.Pytester) -> None:
    project.makepyfile(test_s=SIMPLE)
    result = project.runpytest("--roofline-save=main", "--roofline-report=r.html")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*RooflineWarning: --roofline-save=main, --roofline-report=r.html have no effect*"]
    )


def test_the_same_options_with_roofline_do_not_warn(project: pytest.Pytester) -> None:
    project.makepyfile(test_s=SIMPLE)
    result = project.runpytest("--roofline", "--roofline-report=report.html")
    result.assert_outcomes(passed=1)
    assert "has no effect" not in result.stdout.str()
    assert (project.path / "report.html").exists()


def test_ini_defaults_for_output_options_do_not_warn_on_a_plain_run(
    project: pytest.Pytester,
) -> None:
    # An ini file may set where reports go for the runs that do use --roofline.
    project.makeini("[pytest]\nroofline_report = report.html\nroofline_budget = 0.02\n")
    project.makepyfile(test_s=SIMPLE)
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    assert "has no effect" not in result.stdout.str()
