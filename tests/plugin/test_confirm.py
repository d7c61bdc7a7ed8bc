"""Paired confirmation of first-look regressions, in real pytest sessions on a real git repository.

A baseline is saved at commit A. The candidate session's first look finds p50 three times slower,
for one of two reasons: commit B made the kernel slower (a regression of the code), or the host
got slower between the two sessions (``HOST_SLOW=3``, inherited by every process of the session,
as a slower runner would be). Only paired rounds against a worktree of commit A can tell the two
apart, and they must: the first is rolled back as confirmed, the second is not.

Timings come from a fake clock that the conftest advances by the kernel's declared cost
(``kernel.MS`` milliseconds, times ``HOST_SLOW``, times seeded noise), in the controller and in
both paired workers alike: nothing here depends on this machine's speed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import FAKE_CLOCK_CONFTEST

CONFTEST = (
    FAKE_CLOCK_CONFTEST
    + """
import os, zlib
import numpy as np
import kernel

CALLS = {"fixtures": 0}

@pytest.fixture
def work(request):
    # A new seed for every fixture instance: each paired window gets its own noise.
    CALLS["fixtures"] += 1
    rng = np.random.default_rng([zlib.crc32(request.node.name.encode()), os.getpid(), CALLS["fixtures"]])
    slow = float(os.environ.get("HOST_SLOW", "1"))
    # HOST_DRIFT: the host's speed moves through the process's life, from 1 - d/2 to 1 + d/2
    # over its first 150 calls (the same in every process: each paired worker drifts alike).
    drift = float(os.environ.get("HOST_DRIFT", "0"))
    def call():
        CALLS["calls"] = CALLS.get("calls", 0) + 1
        ramp = 1.0 + drift * (min(CALLS["calls"] / 150, 1.0) - 0.5)
        advance(kernel.MS * 1e-3 * slow * ramp * rng.lognormal(0.0, 0.03))
    return call

# CANARY_X: the host canary reads the host that many times slower from the measured test's first
# call on, and never recovers (a baseline saved on a disturbed host); unset, the canary is off.

@pytest.hookimpl
def pytest_roofline_canary(config):
    if "CANARY_X" not in os.environ:
        return None
    from pytest_roofline.measure.canary import Canary, CanaryKernels, CanarySettings
    slow = float(os.environ["CANARY_X"])
    def kernel(ns):
        def call():
            advance(ns * 1e-9 * (slow if CALLS.get("calls") else 1.0))
        return call
    kernels = CanaryKernels(
        calls={"python": kernel(250_000), "stream": kernel(800_000)},
        spec={"python": "fake loop", "stream": "fake triad"},
    )
    settings = CanarySettings(budget_share=0.9, recovery_budget_share=0.9, recovery_max_reads=1)
    return Canary(kernels, settings=settings, clock=CLOCK, sleep=advance)
"""
)
TESTS = """
def test_kernel(roofline, work):
    roofline(work)
"""
ROOFLINE_YAML = (
    "target: ci\n"
    "targets:\n  ci: {peak_flops_per_s: {fp32: 1.0e11}, peak_bytes_per_s: {dram: 1.0e10}}\n"
)
INI = "[pytest]\nroofline_budget = 0.3\nroofline_warmup = 1ms\n"
NODEID = "test_k.py::test_kernel"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(pytester: pytest.Pytester) -> Path:
    return make_repo(pytester, CONFTEST)


def make_repo(pytester: pytest.Pytester, conftest: str) -> Path:
    """A git repository at commit A (kernel.MS = 2) with a baseline ``main`` saved from it."""
    root = pytester.path
    pytester.makefile(".yaml", roofline=ROOFLINE_YAML)
    pytester.makeini(INI)
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_k=TESTS, kernel="MS = 2\n")
    (root / ".gitignore").write_text("*.sqlite*\n*.json\n__pycache__/\n.pytest_cache/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "A")
    saved = run(root, "--roofline-save=main")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    return root


def run(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--roofline",
            "--roofline-store=store.sqlite",
            *args,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def pairs_asked(stdout: str) -> list[tuple[set[str], set[str]]]:
    """Each pair of worker processes' rounds for the test, in order, as the session logs them:
    the quantiles asked, and those found DIFFERENT."""
    found = re.findall(
        re.escape(NODEID) + r": \d+ window pairs \([^)]*\), \d+ dropped; asked ([^;]+); "
        r"DIFFERENT: (.+)",
        stdout,
    )
    return [
        (set(asked.split(", ")), set() if different == "none" else set(different.split(", ")))
        for asked, different in found
    ]


def record_of(root: Path) -> dict[str, Any]:
    document = json.loads((root / "out.json").read_text())
    (test,) = [t for t in document["tests"] if t["nodeid"] == NODEID]
    return test


def test_a_slower_commit_is_rolled_back_as_confirmed_by_paired_rounds(repo: Path) -> None:
    (repo / "kernel.py").write_text("MS = 6\n")
    git(repo, "commit", "-q", "-am", "B: three times the work")
    done = run(repo, "--roofline-baseline=main", "--roofline-json=out.json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "confirming 1 first-look regression(s) with paired rounds" in done.stdout
    test = record_of(repo)
    assert test["decision"] == "rollback"
    confirmation = test["confirmation"]
    assert confirmation["state"] == "confirmed"
    # Either three pairs of worker processes found it (gate.confirm.replicated), or the first
    # pair's interval already cleared what one pair puts unchanged code off by
    # (gate.confirm.clears_process_floor). Which depends on the look the first pair stopped
    # at: it stops once DIFFERENT, when its interval is often still wide ([1.059, 3.197] at
    # 4 window pairs here). The x1.12 case below always takes three pairs.
    reason = confirmation["reason"]
    if "no further pair of worker processes is needed" in reason:
        assert "again on worker pair" not in done.stdout + done.stderr
    else:
        assert "reproduced by a third pair of worker processes" in reason, reason
        assert confirmation["pairs"] >= 12
    # The rounds stop at the first look where any asked quantile is DIFFERENT, so which one
    # crossed its boundary first (p50 or a tail, all x3 here) is up to the seeded noise.
    paired = confirmation["change"]
    assert "p50" in paired
    assert any(c["outcome"] == "different" for c in paired.values()), paired
    assert all(2.5 < c["ratio"] < 3.5 for c in paired.values()), paired
    assert "confirmed by paired rounds" in " ".join(test["reasons"])
    # Paired rounds decide it, so the first look was not replayed in the same process.
    assert test["replay"]["attempted"] is False


def test_a_regression_the_rounds_do_not_reach_within_the_confirm_time_stays_unconfirmed(
    repo: Path,
) -> None:
    # gate.confirm_time bounds the paired rounds, regressions included: 1 ms is spent before the
    # workers have started, so the first look is decided on the two-run evidence alone.
    (repo / "roofline.yaml").write_text(ROOFLINE_YAML + "gate: {confirm_time: 1ms}\n")
    (repo / "kernel.py").write_text("MS = 6\n")
    git(repo, "commit", "-q", "-am", "B: three times the work, and a short confirm_time")
    done = run(repo, "--roofline-baseline=main", "--roofline-json=out.json")
    assert "confirming 1 first-look regression(s) with paired rounds" in done.stdout
    assert "for up to 0 s" in done.stdout, done.stdout
    test = record_of(repo)
    confirmation = test["confirmation"]
    assert confirmation["state"] == "unavailable"
    assert "for confirming first-look regressions (gate.confirm_time)" in confirmation["reason"]
    # The baseline's commit was reachable, so a rollback needs the rounds: even x3 escalates,
    # with the command that settles it.
    assert test["decision"] == "escalate", test["reasons"]
    assert any(
        "but not confirmed: the paired rounds had spent" in r and "pytest-roofline ab" in r
        for r in test["reasons"]
    ), test["reasons"]


def test_a_host_that_got_slower_is_not_rolled_back_when_paired_rounds_overturn_it(
    repo: Path,
) -> None:
    done = run(repo, "--roofline-baseline=main", "--roofline-json=out.json", env={"HOST_SLOW": "3"})
    test = record_of(repo)
    assert test["change"]["p50"]["outcome"] == "different", "the first look must see x3"
    assert test["confirmation"]["state"] == "overturned", test["confirmation"]["reason"]
    assert test["decision"] == "ship"
    document = json.loads((repo / "out.json").read_text())
    assert document["decision"] == "ship", document["reasons"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(repo, "worktree", "list").count("\n") == 0, "the baseline worktree is removed"


def test_without_confirmation_the_first_look_is_decided_at_once_with_the_command_to_settle_it(
    repo: Path,
) -> None:
    done = run(
        repo,
        "--roofline-baseline=main",
        "--roofline-json=out.json",
        "--roofline-confirm=never",
        env={"HOST_SLOW": "3"},
    )
    assert "confirming" not in done.stdout
    test = record_of(repo)
    assert test["confirmation"]["state"] == "unavailable"
    assert "--roofline-confirm=never" in test["confirmation"]["reason"]
    assert test["confirmation"]["command"].startswith("pytest-roofline ab --baseline=")


def test_the_summary_says_once_why_escalations_were_not_settled_by_paired_rounds(
    repo: Path,
) -> None:
    # A newcomer comparing a copy git cannot check out sees several unchanged tests escalated
    # "not settled by paired rounds"; the summary names the one reason for all of them. Here
    # a data-layer tag changed too, so the x3 escalates and no worktree can stand in.
    (repo / "roofline.yaml").write_text(ROOFLINE_YAML + "tags:\n  dataset: v2\n")
    git(repo, "commit", "-q", "-am", "a tag of the data layer changes")
    done = run(repo, "--roofline-baseline=main", "--roofline-json=out.json", env={"HOST_SLOW": "3"})
    test = record_of(repo)
    assert test["decision"] == "escalate", test["reasons"]
    assert test["confirmation"]["state"] == "unavailable"
    assert (
        "roofline: note: 1 escalated test(s) were not settled by paired rounds, which need a "
        "worktree of the baseline's commit: besides the code, dataset"
    ) in done.stdout, done.stdout


def test_a_session_whose_rounds_ran_prints_no_unsettled_note(repo: Path) -> None:
    done = run(repo, "--roofline-baseline=main", "--roofline-json=out.json", env={"HOST_SLOW": "3"})
    assert record_of(repo)["confirmation"]["state"] == "overturned"
    assert "were not settled by paired rounds" not in done.stdout, done.stdout


def test_a_baseline_with_another_data_layer_tag_is_not_confirmed_by_a_worktree(
    repo: Path,
) -> None:
    (repo / "roofline.yaml").write_text(ROOFLINE_YAML + "tags:\n  dataset: v2\n")
    git(repo, "commit", "-q", "-am", "a tag of the data layer changes")
    run(repo, "--roofline-baseline=main", "--roofline-json=out.json", env={"HOST_SLOW": "3"})
    test = record_of(repo)
    assert test["confirmation"]["state"] == "unavailable"
    assert "dataset" in test["confirmation"]["reason"]


def test_an_unknown_first_look_on_a_label_too_noisy_to_gate_is_settled_by_paired_rounds(
    repo: Path,
) -> None:
    # Two more runs of the label, one on a host four times slower: the history's run-to-run
    # noise floor is then far above x2, so the two-run first look is UNKNOWN (too noisy).
    for slow in ("4", "1"):
        saved = run(repo, "--roofline-save=main", env={"HOST_SLOW": slow})
        assert saved.returncode == 0, saved.stdout + saved.stderr
    done = run(repo, "--roofline-baseline=main", "--roofline-json=out.json")
    test = record_of(repo)
    first_look = test["change"]["p50"]
    assert first_look["outcome"] == "unknown" and "too noisy" in first_look["reason"], first_look
    assert "settling 1 undecided first look(s)" in done.stdout, done.stdout
    # Alternating windows of the same code on both sides rule out +5% where the history could not.
    assert test["confirmation"]["state"] == "overturned", test["confirmation"]["reason"]
    assert test["confirmation"]["change"]["p50"]["outcome"] == "same"
    assert test["decision"] == "ship", test["reasons"]
    assert any("(UNKNOWN) is settled" in r for r in test["reasons"]), test["reasons"]
    assert done.returncode == 0, done.stdout + done.stderr


def commit_on_a_wide_label(repo: Path, kernel_ms: str) -> None:
    """Two more runs of the label, one on a host 1.4 times slower, then a candidate commit B
    with ``kernel.MS = kernel_ms``: the history's noise floor is wide (below the x2 cap)."""
    for slow in ("1.4", "1"):
        saved = run(repo, "--roofline-save=main", env={"HOST_SLOW": slow})
        assert saved.returncode == 0, saved.stdout + saved.stderr
    (repo / "kernel.py").write_text(f"MS = {kernel_ms}\n# the candidate commit\n")
    git(repo, "commit", "-q", "-am", "B")


@pytest.mark.parametrize(
    ("kernel_ms", "host_slow", "decision"),
    [("2.5", "1", "rollback"), ("2.24", "1", "rollback"), ("2", "1.25", "ship")],
    ids=["the-code-got-slower", "the-code-got-12pct-slower", "the-host-got-slower"],
)
def test_a_same_first_look_shifted_inside_a_wide_history_margin_is_asked_of_paired_rounds(
    repo: Path, kernel_ms: str, host_slow: str, decision: str
) -> None:
    # Two more runs of the label, one on a host 1.4 times slower: the history's noise floor is
    # then wide (below the x2 cap), so a x1.25 first look is SAME against it although its
    # interval lies far beyond min_effect (+5%).
    commit_on_a_wide_label(repo, kernel_ms)
    done = run(
        repo, "--roofline-baseline=main", "--roofline-json=out.json", env={"HOST_SLOW": host_slow}
    )
    test = record_of(repo)
    first_look = test["change"]["p50"]
    assert first_look["outcome"] == "same" and first_look["margin_source"] == "history", first_look
    assert first_look["ci_low"] > 1.05, first_look
    assert "settling 1 undecided first look(s)" in done.stdout, done.stdout
    assert test["decision"] == decision, json.dumps(test["confirmation"])[:3000]
    if decision == "rollback":
        # The code's x1.25, found by every pair of worker processes.
        assert test["confirmation"]["state"] == "confirmed", test["confirmation"]["reason"]
        assert any(
            "was inside the label's run-to-run margin" in r and "confirmed by paired rounds" in r
            for r in test["reasons"]
        ), test["reasons"]
        assert done.returncode == 1
        if kernel_ms == "2.24":
            # x1.12 lies within what one pair of processes puts unchanged code off by (+18%):
            # three pairs must each find it (gate.confirm.replicated, ROLLBACK_WORKER_PAIRS),
            # each fresh pair with time of its own, sized to the tests it is asked about.
            reason = test["confirmation"]["reason"]
            assert "reproduced by a second pair of worker processes" in reason, reason
            assert "reproduced by a third pair of worker processes" in reason, reason
            assert test["confirmation"]["pairs"] >= 12
            assert re.search(r"again on worker pair 2 for up to \d+ s", done.stdout), done.stdout
            assert "again on worker pair 3" in done.stdout + done.stderr
            # Each fresh pair is asked only what the pairs before it found DIFFERENT, so its
            # rounds cannot stop on another quantile first (gate.confirm.replicated).
            first, second, third = pairs_asked(done.stdout)
            assert second[0] == first[1], done.stdout
            assert third[0] == first[1] & second[1], done.stdout
    else:
        # The host's x1.25 falls on both sides of the paired rounds: the first look's SAME stands.
        assert test["confirmation"]["change"]["p50"]["outcome"] == "same"
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("kernel_ms", "host_slow", "options", "decision"),
    [
        # Under xdist, where the controller decides the test again after the rounds with the
        # context its workers reported (the thresholds included: without them it would roll the
        # test back on the gate's own shifted rule, never naming the threshold). One process
        # takes the same rounds (confirm_tests) from the session itself.
        ("2.5", "1", ("-n", "2"), "rollback"),
        ("2.5", "1", ("--roofline-confirm=never",), "escalate"),
        ("2", "1.25", (), "ship"),
    ],
    ids=["the-code-got-slower-xdist", "no-paired-rounds", "the-host-got-slower"],
)  # fmt: skip
def test_an_explicit_threshold_rolls_back_only_what_paired_rounds_attribute_to_the_code(
    repo: Path, kernel_ms: str, host_slow: str, options: tuple[str, ...], decision: str
) -> None:
    # --roofline-fail=p50:10% (pytest-benchmark's --benchmark-compare-fail=median:10%) with a
    # label wide enough that a x1.25 first look is SAME for the gate. Two runs cannot tell the
    # code's x1.25 from the host's: without paired rounds it escalates (stop 47 rolled back 8 of
    # 240 unchanged test-runs this way, each reproduced in a fresh process); with them the
    # code's is rolled back and the host's ships.
    commit_on_a_wide_label(repo, kernel_ms)
    done = run(
        repo,
        "--roofline-baseline=main",
        "--roofline-json=out.json",
        "--roofline-fail=p50:10%",
        *options,
        env={"HOST_SLOW": host_slow},
    )
    test = record_of(repo)
    first_look = test["change"]["p50"]
    assert first_look["outcome"] == "same" and first_look["ratio"] > 1.2, first_look
    assert test["decision"] == decision, test["reasons"]
    reasons = " ".join(test["reasons"])
    if decision == "rollback":
        assert (
            "is above the explicit threshold +10% (--roofline-fail), confirmed by paired rounds"
            in reasons
        )
        assert done.returncode == 1, done.stdout + done.stderr
    elif decision == "escalate":
        assert (
            "is above the explicit threshold +10% (--roofline-fail), but no paired rounds "
            "compared it with the baseline's commit (paired confirmation is off" in reasons
        ), reasons
        assert "settle it with pytest-roofline ab --baseline=" in reasons, reasons
        assert "fresh_replay" not in test and not (test["replay"] or {}).get("attempted"), test

        assert done.returncode == 0, done.stdout + done.stderr
    else:
        assert test["confirmation"]["change"]["p50"]["outcome"] == "same"
        assert "past the explicit threshold +10% was not confirmed: paired rounds" in reasons
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("confirm", ["auto", "never"])
def test_a_run_whose_latency_drifted_is_settled_by_paired_rounds(repo: Path, confirm: str) -> None:
    # The host slows from x0.85 to x1.15 through the candidate session (unchanged code): the
    # first look finds no regression, but the drift (about +30% first to last window) is more
    # than the margins absorb, so on two-run evidence alone the test escalates.
    done = run(
        repo,
        "--roofline-baseline=main",
        "--roofline-json=out.json",
        f"--roofline-confirm={confirm}",
        env={"HOST_DRIFT": "0.3"},
    )
    test = record_of(repo)
    assert test["drift"]["drifting"], test["drift"]
    # The drift leaves the p50 SAME, or too autocorrelated to compare (effective sample size
    # below 5): never a regression.
    assert test["change"]["p50"]["outcome"] in ("same", "unknown"), test["change"]["p50"]
    reasons = " ".join(test["reasons"])
    if confirm == "never":
        assert test["decision"] == "escalate", test["reasons"]
        assert "latency drifts within the run" in reasons and "not stable" in reasons
        return
    # Paired rounds alternate windows, so the drift slows both sides alike: every quantile SAME.
    assert "settling 1 undecided first look(s)" in done.stdout, done.stdout
    assert test["confirmation"]["state"] == "overturned", test["confirmation"]["reason"]
    asked = test["confirmation"]["change"]
    assert {n for n, c in test["change"].items() if c["verdict"] != "insufficient"} <= set(asked)
    assert test["decision"] == "ship", test["reasons"]
    assert "where the host's drift slows both sides alike" in reasons, reasons
    if test["change"]["p50"]["verdict"] == "insufficient":
        assert "p50 could not be assessed on two-run evidence" in reasons, reasons
        assert "p50: not assessed" not in reasons, reasons
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_slower_commit_against_a_baseline_the_host_slowed_is_rolled_back_by_paired_rounds(
    repo: Path,
) -> None:
    # CI, stop 45: a x4.5 GEMM read p50 x0.875, SAME, against a baseline the host slowed x14.
    # Here a baseline is saved on a host the canary reads x4 slower (the kernel too), then
    # commit B triples the work: against the slowed baseline it reads faster.
    saved = run(repo, "--roofline-save=slowed", env={"CANARY_X": "4", "HOST_SLOW": "4"})
    assert saved.returncode == 0, saved.stdout + saved.stderr
    (repo / "kernel.py").write_text("MS = 6\n")
    git(repo, "commit", "-q", "-am", "B: three times the work")
    done = run(repo, "--roofline-baseline=slowed", "--roofline-json=out.json")
    test = record_of(repo)
    p50 = test["change"]["p50"]
    assert p50["outcome"] == "same" and p50["ratio"] < 0.9, p50
    assert "settling 1 undecided first look(s)" in done.stdout, done.stdout
    # Paired rounds against commit A measure the baseline's side anew and find the x3.
    assert test["confirmation"]["state"] == "confirmed", test["confirmation"]["reason"]
    assert test["decision"] == "rollback", test["reasons"]
    # The rounds stop at the first look where an asked quantile is DIFFERENT: p50 or a tail.
    assert any(
        "regressed: paired rounds against the baseline's commit find x" in r
        and "was against a baseline run measured on a disturbed host (host disturbed" in r
        for r in test["reasons"]
    ), test["reasons"]
    assert done.returncode == 1, done.stdout + done.stderr
