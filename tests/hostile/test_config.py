"""Items 8 and 11: a hostile or careless ``roofline.yaml`` (or option) is a usage error naming the
file and the key, quickly, never an INTERNALERROR, a hang or a silently different setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import OK, USAGE, no_traceback, run_pytest

TARGET = "target: ci-runner\ntargets:\n  ci-runner: {peak_flops_per_s: {fp32: 8.0e10}, peak_bytes_per_s: {dram: 2.0e10}}\n"


def _laughs(key: str) -> str:
    """A billion-laughs document: ten levels of ten aliases, 10**9 strings when expanded."""
    lines = ['a0: &a0 "lol"']
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    body = "\n".join(f"  {line}" for line in lines)
    if key == "tags":
        return f"tags:\n{body}\n"
    return f"layers:\n{body}\n  big: *a9\n"


# (case, roofline.yaml bytes, what the message says after the file name)
HOSTILE_YAML: list[tuple[str, bytes, str]] = [
    ("billion-laughs-in-tags", _laughs("tags").encode(), "alias"),
    ("billion-laughs-in-layers", _laughs("layers").encode(), "alias"),
    ("deep-nesting", b"tags: " + b"[" * 50_000 + b"]" * 50_000 + b"\n", "nested"),
    ("not-utf8", b"tags: {dataset: caf\xe9}\n", "not UTF-8"),
    (
        "circular-alias-in-slice-params",
        b"slices:\n  g:\n    - {name: s, params: &p {n: 1, me: *p}}\n",
        "refers to itself",
    ),
    ("too-large", b"tags: {dataset: " + b"x" * 2_000_000 + b"}\n", "larger than"),
]


@pytest.mark.parametrize(
    ("document", "message"), [c[1:] for c in HOSTILE_YAML], ids=[c[0] for c in HOSTILE_YAML]
)
def test_a_hostile_config_is_a_usage_error_naming_the_file(
    project: Path, document: bytes, message: str
) -> None:
    (project / "roofline.yaml").write_bytes(TARGET.encode() + document)
    (project / "test_s.py").write_text(
        "import pytest\n\n@pytest.mark.roofline(slices='g')\n"
        "def test_a(roofline, workload):\n    roofline(sorted, [3, 1, 2])\n"
        if b"slices" in document
        else "def test_a(roofline):\n    roofline(sorted, [3, 1, 2])\n"
    )
    # The timeout only stops a hang; how fast the refusal is, is not asserted here.
    ran = run_pytest(project, "--roofline", "--roofline-save=main", timeout=60)
    assert ran.status == USAGE, ran.explain()
    assert "roofline.yaml" in ran.err and message in ran.err, ran.explain()
    no_traceback(ran)


# (case, roofline.yaml, ini lines, options, the message)
LENIENT: list[tuple[str, str, str, list[str], str]] = [
    ("store-a-list", "store: [a, b]\n", "", [], "store: expected a path"),
    ("target-a-list", "target: [a]\n", "", [], "target: expected a target name"),
    ("counters-a-word", "counters: maybe\n", "", [], "counters: expected true or false"),
    (
        "budget-negative-under-a-cli-value",
        "budget: -1\n",
        "",
        ["--roofline-budget=0.02"],
        "roofline.yaml: budget",
    ),
    (
        "min-samples-zero-under-an-ini-value",
        "min_samples: 0\n",
        "roofline_min_samples = 5\n",
        [],
        "roofline.yaml: min_samples",
    ),
    ("warmup-huge-in-yaml", "warmup: 100000\n", "", [], "roofline.yaml: warmup"),
    ("warmup-huge-in-ini", "", "roofline_warmup = 100000\n", [], "roofline_warmup"),
    ("config-a-directory", "", "", ["--roofline-config=confdir"], "is a directory"),
]


@pytest.mark.parametrize(
    ("yaml_text", "ini", "options", "message"),
    [c[1:] for c in LENIENT],
    ids=[c[0] for c in LENIENT],
)
def test_every_layer_of_the_config_is_validated(
    project: Path, yaml_text: str, ini: str, options: list[str], message: str
) -> None:
    (project / "roofline.yaml").write_text(TARGET + yaml_text)
    (project / "tox.ini").write_text("[pytest]\nroofline_budget = 0.02\n" + ini)
    (project / "confdir").mkdir()
    ran = run_pytest(project, "--roofline", *options, timeout=60)
    assert ran.status == USAGE, ran.explain()
    assert message in ran.err, ran.explain()
    no_traceback(ran)
    assert not (project / "measured.flag").exists()
    assert not list(project.glob("[[]*"))  # no file named "['a', 'b']"


@pytest.mark.parametrize(
    ("value", "counters_on"),
    [("'off'", False), ("'no'", False), ("off", False), ("'on'", True), ("true", True)],
)
def test_counters_off_in_any_spelling_turns_them_off(
    project: Path, value: str, counters_on: bool
) -> None:
    (project / "roofline.yaml").write_text(TARGET + f"counters: {value}\n")
    ran = run_pytest(project, "--roofline", "--roofline-json=o.json")
    assert ran.status == OK, ran.explain()
    (test,) = json.loads((project / "o.json").read_text())["tests"]
    assert (test.get("counters") is not None) is counters_on, test.get("counters")


# ---------------------------------------------------------------- roofline(fn) of a generator
PROBES = [
    ("generator", "def fn():\n    yield 1\n", "generator"),
    ("coroutine", "async def fn():\n    return 1\n", "coroutine"),
    ("async-generator", "async def fn():\n    yield 1\n", "asynchronous generator"),
]


@pytest.mark.parametrize("enabled", [True, False], ids=["measured", "not-measured"])
@pytest.mark.parametrize(("source", "kind"), [p[1:] for p in PROBES], ids=[p[0] for p in PROBES])
def test_a_function_that_returns_a_generator_or_coroutine_is_warned_about(
    project: Path, source: str, kind: str, enabled: bool
) -> None:
    (project / "test_s.py").write_text(source + "\ndef test_a(roofline):\n    roofline(fn)\n")
    ran = run_pytest(
        project,
        *(["--roofline"] if enabled else []),
        "-W",
        "error::pytest_roofline.errors.RooflineWarning",
    )
    assert ran.status == 1, ran.explain()
    assert f"returned a {kind}" in ran.out, ran.explain()
