"""Whether a baseline and a run measured the same code: the same clean git commit."""

from __future__ import annotations

import pytest

from pytest_roofline.gate.run import same_code

CLEAN = {"git_commit": "a" * 40, "git_dirty": "no"}


@pytest.mark.parametrize(
    ("baseline", "now", "same"),
    [
        (CLEAN, CLEAN, True),
        (CLEAN, {**CLEAN, "git_commit": "b" * 40}, False),
        (CLEAN, {**CLEAN, "git_dirty": "yes"}, False),
        ({**CLEAN, "git_dirty": "yes"}, CLEAN, False),
        ({"git_commit": "(no commit yet)", "git_dirty": "no"}, {"git_commit": "(no commit yet)", "git_dirty": "no"}, False),
        ({}, {}, False),
    ],
)  # fmt: skip
def test_only_the_same_clean_commit_on_both_sides_is_the_same_code(
    baseline: dict[str, str], now: dict[str, str], same: bool
) -> None:
    assert same_code(baseline, now) is same
