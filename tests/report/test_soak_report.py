"""A soaked test in every rendering: one line in the terminal and Markdown, a timeline in HTML."""

from __future__ import annotations

import re

import numpy as np

from pytest_roofline.gate.record import soak_record
from pytest_roofline.gate.soak import assess_soak
from pytest_roofline.measure.soak import SoakMeasurement, SoakWindow, WindowHost
from pytest_roofline.model.document import RunDocument, TestRecord
from pytest_roofline.report.html import render_html
from pytest_roofline.report.markdown import render_markdown
from pytest_roofline.report.terminal import render_terminal

NASTY = 't.py::test_x[<script>alert("x")</script>]'


def _document() -> RunDocument:
    rng = np.random.default_rng(3)
    p50 = 1e-3 * rng.lognormal(0.0, 0.01, 30)
    p50[18:] *= 1.25
    windows = tuple(
        SoakWindow(
            offset_s=float(i),
            duration_s=1.0,
            n=500,
            p50_s=float(p),
            host=WindowHost(
                cpu_share=0.98,
                steal=0.01,
                canary={"python": 1.02},
                gpu={"temperature_c": 70.0 + i, "throttle_reasons": float(0x020 if i >= 18 else 0)},
            ),
        )
        for i, p in enumerate(p50)
    )
    soak = SoakMeasurement(30.0, 1.0, 30.0, 1, windows, status={"cpu_mhz": "unsupported"})
    steady = SoakMeasurement(
        30.0,
        1.0,
        30.0,
        1,
        tuple(SoakWindow(float(i), 1.0, 500, 1e-3) for i in range(30)),
    )
    return RunDocument(
        decision="escalate",
        tests=(
            TestRecord(
                nodeid=NASTY,
                decision="escalate",
                reasons=("soak: ...",),
                soak=soak_record(assess_soak(soak, margin=0.05)),
            ),
            TestRecord(
                nodeid="t.py::test_steady",
                decision="ship",
                soak=soak_record(assess_soak(steady, margin=0.05)),
            ),
            TestRecord(nodeid="t.py::test_plain", decision="ship"),
        ),
    )


def test_the_html_report_has_a_collapsed_timeline_per_soaked_test() -> None:
    page = render_html(_document())
    assert "<script>alert" not in page
    assert page.count('<details class="soak ') == 2
    assert '<details class="soak d-escalate" data-failing="18">' in page
    assert re.search(r'<details class="soak [^"]*"[^>]* open', page) is None  # collapsed
    assert page.count("soak-faildot") == 2  # the CSS rule and the one failing window
    assert 'class="soak-dot soak-faildot" data-window="18"' in page
    assert "sw_thermal_slowdown" in page and "cpu_mhz unsupported" in page
    assert '<a href="#soak">Soak (2)</a>' in page


def test_markdown_and_terminal_give_each_soaked_test_one_line() -> None:
    document = _document()
    text = render_markdown(document)
    assert "**Soak** (2 test(s)):" in text
    assert "30 windows of 1 s: throttling onset at window 18 (+18.0 s), p50 ×1.26 \\[" in text
    assert "&lt;script&gt;" in text and "<script>" not in text
    assert "t.py::test\\_steady: soak 30 s, 30 windows of 1 s: stable" in text
    assert "test\\_plain" not in text.split("**Soak**")[1]

    lines: list[str] = []
    render_terminal(
        document, write_sep=lambda *a, **k: None, write_line=lines.append, verbosity=0, files=[]
    )
    soaked = [line for line in lines if line.strip().startswith("soak 30 s")]
    assert len(soaked) == 2
    assert "throttling onset at window 18" in soaked[0]
