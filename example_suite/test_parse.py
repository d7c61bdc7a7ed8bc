"""A pure-Python workload: parse access-log records and sort them by latency.

Interpreter-bound: it moves a few hundred kilobytes and does no floating-point work, so it sits
far below both roofs, in the ``overhead`` class. Its work is declared as the bytes of text it
must read (``flops=0``), which is what places it on the memory side of the roofline.
"""

from __future__ import annotations

import random
import re
from operator import itemgetter

import pytest
from demo_changes import injected

FIELD = re.compile(r"([a-z_]+)=([^;]*)")
FIELDS = ("id", "user", "route", "latency_ms", "status")


def make_log(lines: int) -> str:
    rng = random.Random(lines)
    return "\n".join(
        f"id={i};user=u{rng.randrange(1000)};route=/api/v{rng.randrange(3)}/items;"
        f"latency_ms={rng.random() * 100:.3f};status={rng.choice((200, 200, 200, 404, 500))}"
        for i in range(lines)
    )


def parse_and_sort(text: str) -> list[dict[str, object]]:
    """The baseline: a separate regular-expression search for each field of each line."""
    records: list[dict[str, object]] = []
    for line in text.splitlines():
        record: dict[str, object] = {}
        for name in FIELDS:
            match = re.search(rf"(?:^|;){name}=([^;]*)", line)
            record[name] = match.group(1) if match else ""
        record["latency_ms"] = float(record["latency_ms"])  # type: ignore[arg-type]
        records.append(record)
    return sorted(records, key=lambda record: record["latency_ms"])  # type: ignore[arg-type, return-value]


def parse_and_sort_fast(text: str) -> list[dict[str, object]]:
    """The injected improvement: each line scanned once (one findall), and a C-level sort key."""
    records: list[dict[str, object]] = [dict(FIELD.findall(line)) for line in text.splitlines()]
    for record in records:
        record["latency_ms"] = float(record["latency_ms"])  # type: ignore[arg-type]
    return sorted(records, key=itemgetter("latency_ms"))


@pytest.mark.roofline(slices="records")
def test_parse_and_sort(roofline, workload, hardware):
    text = make_log(workload.params["lines"])
    roofline.declare(flops=0, bytes_moved=len(text.encode()), precision="fp64")
    assert hardware.peak_bytes_per_s["dram"] > 0
    parse = parse_and_sort_fast if injected("parse-fast") else parse_and_sort
    records = roofline(parse, text)
    latencies = [record["latency_ms"] for record in records]
    assert len(records) == workload.params["lines"] and latencies == sorted(latencies)
    assert set(records[0]) == set(FIELDS)
