"""The terminal's one line when paired rounds could settle no first look (plugin.confirm)."""

from __future__ import annotations

import pytest

from pytest_roofline.plugin.confirm import ConfirmPlan


def test_an_unavailable_plan_names_its_reason_and_the_count() -> None:
    note = ConfirmPlan(None, "the baseline run recorded no git commit").unsettled_note(5)
    assert note is not None
    assert note.startswith("5 escalated test(s) were not settled by paired rounds")
    assert "the baseline run recorded no git commit" in note


@pytest.mark.parametrize(
    ("plan", "count"),
    [
        (ConfirmPlan("0123abcd", None), 5),  # the rounds could run
        (ConfirmPlan(None, None), 5),  # no baseline: nothing to settle
        (ConfirmPlan(None, "the baseline run recorded no git commit"), 0),  # nothing escalated
    ],
)
def test_no_note_when_rounds_ran_or_nothing_rests_on_their_absence(
    plan: ConfirmPlan, count: int
) -> None:
    assert plan.unsettled_note(count) is None
