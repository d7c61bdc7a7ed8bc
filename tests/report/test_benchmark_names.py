"""pytest-benchmark's names and extra_info of a `benchmark` test are shown in every report."""

from __future__ import annotations

from pytest_roofline.model.document import BenchmarkInfo, RunDocument, TestRecord
from pytest_roofline.report.format import benchmark_line
from pytest_roofline.report.html import render_html
from pytest_roofline.report.markdown import render_markdown
from pytest_roofline.report.terminal import memo_text

INFO = BenchmarkInfo(
    group="sort<b>",
    name="test_sort[1000]",
    extra_info={"n": 1000, "note": "<script>x</script>"},
)
TEST = TestRecord(
    nodeid="t.py::test_sort[1000]",
    decision="escalate",
    reasons=("p50 UNKNOWN",),
    benchmark=INFO,
)
DOCUMENT = RunDocument(decision="escalate", tests=(TEST,))


def test_the_line_names_the_group_the_name_and_the_extra_info() -> None:
    assert benchmark_line(TEST) == (
        "group 'sort<b>', name 'test_sort[1000]', extra_info n=1000, note='<script>x</script>'"
    )
    assert benchmark_line(TestRecord(nodeid="t.py::test_plain")) is None


def test_terminal_html_and_markdown_show_it_escaped() -> None:
    assert "Benchmark: group 'sort<b>'" in memo_text(TEST)
    page = render_html(DOCUMENT)
    assert "<dt>pytest-benchmark</dt>" in page and "group &#39;sort&lt;b&gt;&#39;" in page
    assert "<script>x</script>" not in page
    markdown = render_markdown(DOCUMENT)
    assert "pytest-benchmark group" in markdown and "<script>" not in markdown
