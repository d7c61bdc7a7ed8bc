"""Tally stored ``ab`` runs by how much of each test's window pairs the host canary dropped.

For every test of every run document a block kept (``paired_process_bias.py`` leaves
``ab-1.json``, ``ab-2.json``, ... in its scratch directory), reads the pairs run and dropped
(``tests[].paired``), the canary's pair states and each gated quantile's paired interval, and
prints: how many test-runs were on a *busy host* (a third or more of their pairs dropped:
:func:`pytest_roofline.gate.confirm.busy_host`; and how many half or more), their decisions, the
highest lower bound any quantile reached among them, and every rollback with whether the
busy-host rule (:func:`pytest_roofline.gate.confirm.host_disturbed_dispute`: such a test rolls
back only past :data:`~pytest_roofline.gate.confirm.PAIRED_PROCESS_FLOOR`) leaves it standing.
The run's own decisions are those of the code that ran it. Last, per test, the mean and sd over
the runs of its paired p50 log ratio (on A/A blocks: how far a test's run-level reading moves).

Usage: python benchmarks/disturbed_host_replay.py SCRATCH_DIR [SCRATCH_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from pytest_roofline.gate.confirm import PAIRED_PROCESS_FLOOR, busy_host


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scratch", type=Path, nargs="+")
    options = parser.parse_args()
    for scratch in options.scratch:
        tally: Counter[str] = Counter()
        highest: dict[str, float] = {}
        shares: list[tuple[float, int, int]] = []
        p50_logs: defaultdict[str, list[float]] = defaultdict(list)
        documents = sorted(scratch.glob("ab-*.json"), key=lambda p: int(p.stem.split("-")[1]))
        for number, path in enumerate(documents, start=1):
            for test in json.loads(path.read_text())["tests"]:
                paired = test["paired"]
                pairs, dropped = int(paired["pairs"]), int(paired["pairs_dropped"])
                p50 = test["change"].get("p50") or {}
                if (p50.get("ratio") or 0) > 0:
                    p50_logs[test["nodeid"]].append(math.log(p50["ratio"]))
                shares.append((dropped / pairs if pairs else 0.0, dropped, pairs))
                mostly = busy_host(pairs, dropped)
                where = "busy host" if mostly else "not busy"
                tally[f"{where}: {test['decision']}"] += 1
                if mostly:
                    for name, c in test["change"].items():
                        if c.get("ci_low") is not None:
                            highest[name] = max(highest.get(name, 0.0), float(c["ci_low"]))
                if test["decision"] != "rollback":
                    continue
                regressed = {n: c for n, c in test["change"].items() if c["outcome"] == "different"}
                beyond = [
                    n for n, c in regressed.items() if c["ci_low"] > 1 + PAIRED_PROCESS_FLOOR[n]
                ]
                verdict = "stands" if not mostly or beyond else "escalates under the busy-host rule"
                shown = ", ".join(
                    f"{n} x{c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"
                    for n, c in regressed.items()
                )
                print(
                    f"{scratch.name} run {number} {test['nodeid']}: rollback on {shown}; "
                    f"{dropped} of {pairs} pairs dropped, canary {paired.get('canary')}: {verdict}"
                )
        total = len(shares)
        busy = sum(1 for _, dropped, pairs in shares if busy_host(pairs, dropped))
        half = sum(1 for share, _, _ in shares if share >= 0.5)
        worst = max(shares, default=(0.0, 0, 0))
        print(
            f"{scratch.name}: {len(documents)} runs, {total} test-runs, {busy} on a busy host, {half} half or more "
            f"(the most: {worst[1]} of {worst[2]} pairs dropped; {sum(1 for s, _, _ in shares if s >= 0.3)} "
            f"at 30% or more); "
            + ", ".join(f"{key} {value}" for key, value in sorted(tally.items()))
        )
        for nodeid, logs in sorted(p50_logs.items()):
            if len(logs) > 1:
                print(
                    f"{scratch.name}: {nodeid} p50 log ratio over {len(logs)} runs: mean "
                    f"{statistics.mean(logs):+.4f} (se {statistics.stdev(logs) / math.sqrt(len(logs)):.4f}), "
                    f"sd {statistics.stdev(logs):.4f}"
                )
        if highest:
            print(
                f"{scratch.name}: highest lower bound on a busy host: "
                + ", ".join(f"{n} x{v:.3f}" for n, v in sorted(highest.items()))
            )


if __name__ == "__main__":
    main()
