"""The terminal's one line when paired rounds could settle no first look, or a busy host left
them open (plugin.confirm, gate.confirm)."""

from __future__ import annotations

import pytest

from pytest_roofline.gate.confirm import busy_host, disturbed_note, mostly_disturbed
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


def test_escalations_left_open_on_a_busy_host_get_one_line_naming_the_machine() -> None:
    # The example beside the test suite's load (2026-12-03): 14 of 24 unchanged tests escalated,
    # each "paired rounds ... neither confirm nor rule it out (20 of 24 pairs dropped: host
    # disturbed)"; the summary says once that the machine left them open.
    note = disturbed_note(14)
    assert note is not None
    assert note.startswith("14 escalated test(s) were left open by paired rounds on a busy host")
    assert "run the comparison again when the machine is quiet" in note
    assert "the host canary dropped a third or more of their window pairs" in note
    assert disturbed_note(0) is None


@pytest.mark.parametrize(
    ("pairs", "dropped", "disturbed"),
    [
        (24, 20, True),
        (24, 12, True),
        (24, 11, False),
        (24, 0, False),
        (None, 5, False),
        (10, None, False),
    ],
)
def test_mostly_disturbed_means_half_or_more_of_the_window_pairs_dropped(
    pairs: int | None, dropped: int | None, disturbed: bool
) -> None:
    assert mostly_disturbed(pairs, dropped) is disturbed


@pytest.mark.parametrize(
    ("pairs", "dropped", "busy"),
    [
        (48, 24, True),
        (41, 17, True),  # stop 39's second false rollback under the neighbour
        (48, 16, True),
        (48, 15, False),
        (24, 0, False),
        (None, 5, False),
        (10, None, False),
    ],
)
def test_a_busy_host_means_a_third_or_more_of_the_window_pairs_dropped(
    pairs: int | None, dropped: int | None, busy: bool
) -> None:
    assert busy_host(pairs, dropped) is busy
    # Every mostly disturbed host is a busy one.
    assert not mostly_disturbed(pairs, dropped) or busy
