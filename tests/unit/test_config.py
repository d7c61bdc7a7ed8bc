from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.config.markers import bind_marker
from pytest_roofline.config.settings import DEFAULTS, build_config, resolve_test
from pytest_roofline.errors import ConfigError


def make(
    tmp_path: Path,
    yaml_text: str | None = None,
    *,
    cli: dict | None = None,
    ini: dict | None = None,
):
    if yaml_text is not None:
        (tmp_path / "roofline.yaml").write_text(yaml_text)
    return build_config(rootdir=tmp_path, cli=cli or {}, ini=ini or {})


def test_defaults_apply_without_any_configuration(tmp_path: Path) -> None:
    config = make(tmp_path)
    assert not config.enabled
    assert config.config_path is None
    assert config.target == "auto"
    assert config.budget_s == DEFAULTS.budget_s
    assert config.store_path == tmp_path / ".roofline" / "store.sqlite"
    assert config.gate_on == "rollback"
    assert config.gate.min_effect == {"p50": 0.05, "p95": 0.05, "p99": 0.10}


def test_command_line_beats_ini_beats_yaml_beats_default(tmp_path: Path) -> None:
    yaml_text = "budget: 3s\ntarget: host\n"
    assert make(tmp_path, yaml_text).budget_s == 3.0
    assert make(tmp_path, yaml_text, ini={"budget": "2s"}).budget_s == 2.0
    assert make(tmp_path, yaml_text, ini={"budget": "2s"}, cli={"budget": "1"}).budget_s == 1.0
    assert make(tmp_path, yaml_text, ini={"target": "ci"}).target == "ci"
    assert make(tmp_path, yaml_text, cli={"target": "h200"}, ini={"target": "ci"}).target == "h200"


def test_a_marker_beats_every_session_setting_key_by_key(tmp_path: Path) -> None:
    config = make(
        tmp_path,
        "sla: {p99: 10ms, min_efficiency: 0.1}\n"
        "owners:\n  't.py::*': {owner: team-a, rollback: revert A}\n",
        cli={"budget": "1s"},
    )
    marker = bind_marker("t.py::x", (), {"sla": {"p99": "4ms"}, "budget": "2s", "owner": "team-b"})
    test = resolve_test(config, marker, "t.py::x")
    assert test.sla.p99_s == pytest.approx(4e-3)
    assert test.sla.min_efficiency == 0.1  # kept from the config default
    assert test.budget_s == 2.0
    assert test.owners == ("team-b",)
    assert test.rollback == "revert A"  # the marker set no boundary, the glob did


def test_owner_globs_apply_in_file_order(tmp_path: Path) -> None:
    config = make(
        tmp_path,
        "owners:\n  't.py::test_a*': {owner: first}\n  't.py::*': {owner: [x, y], rollback: r}\n",
    )
    assert resolve_test(config, None, "t.py::test_abc").owners == ("first",)
    assert resolve_test(config, None, "t.py::other").owners == ("x", "y")
    assert resolve_test(config, None, "u.py::other").owners == ()


def test_tags_merge_yaml_then_ini_then_command_line(tmp_path: Path) -> None:
    config = make(
        tmp_path,
        "tags: {dataset: a, model: m}\n",
        ini={"tags": ["dataset=b", "runtime=r"]},
        cli={"tags": ["dataset=c"]},
    )
    assert config.tags == {"dataset": "c", "model": "m", "runtime": "r"}


def test_relative_command_line_paths_are_taken_from_the_invocation_directory(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "sub"
    config = build_config(
        rootdir=tmp_path,
        cli={"json": "out.json", "store": "s.db"},
        ini={},
        invocation_dir=elsewhere,
    )
    assert config.json_path == elsewhere / "out.json"
    assert config.store_path == elsewhere / "s.db"
    assert (
        build_config(rootdir=tmp_path, cli={}, ini={"json": "o.json"}).json_path
        == tmp_path / "o.json"
    )


def test_a_config_target_and_slice_groups_are_loaded(tmp_path: Path) -> None:
    config = make(
        tmp_path,
        "targets:\n  ci-runner: {peak_flops_per_s: {fp64: 4.0e10}, peak_bytes_per_s: {dram: 2.0e10}}\n"
        "slices:\n  gemm:\n    - {name: small, params: {n: 256}}\n    - {name: big, params: {n: 1024}, source: production}\n",
    )
    assert config.targets["ci-runner"].ridge("fp64") == pytest.approx(2.0)
    assert [s.name for s in config.slices["gemm"]] == ["small", "big"]
    assert config.slices["gemm"][1].source == "production"


def test_production_slices_come_from_a_trace_beside_synthetic_ones(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "attn.jsonl").write_text(
        '{"name": "decode-b8", "params": {"batch": 8, "seq": 256}, "tags": ["chat"]}\n'
        "\n"
        '{"name": "prefill-b1", "params": {"batch": 1, "seq": 2048}}\n'
    )
    config = make(
        tmp_path,
        "slices:\n  attention:\n    - {name: tiny, params: {batch: 1, seq: 64}}\n"
        "    - {trace: traces/attn.jsonl, tags: [trace-2026-11]}\n",
    )
    slices = config.slices["attention"]
    assert [(s.name, s.source) for s in slices] == [
        ("tiny", "synthetic"),
        ("decode-b8", "production"),
        ("prefill-b1", "production"),
    ]
    assert slices[1].params == {"batch": 8, "seq": 256}
    assert slices[1].tags == ("chat", "trace-2026-11")
    assert slices[2].group == "attention"


@pytest.mark.parametrize(
    ("trace_text", "entry", "message"),
    [
        (None, "{trace: missing.jsonl}", r"slices\.g\[0\]: cannot read the trace .*missing\.jsonl"),
        ("[1, 2]\n", "{trace: t.jsonl}", r"t\.jsonl:1: expected a JSON object"),
        ('{"name": "a"}\n{"name": \n', "{trace: t.jsonl}", r"t\.jsonl:2: not a JSON object"),
        ('{"name": "a b"}\n', "{trace: t.jsonl}", r"t\.jsonl:1: slice 'name' must be"),
        ('{"name": "a", "source": "synthetic"}\n', "{trace: t.jsonl}", r"t\.jsonl:1: a trace line takes no 'source'"),
        ("\n", "{trace: t.jsonl}", "holds no slices"),
        ('{"name": "a"}\n', "{trace: t.jsonl, every: 2}", r"unknown trace key\(s\) \['every'\]"),
        ('{"name": "a"}\n{"name": "a"}\n', "{trace: t.jsonl}", r"slice names must be unique, repeated: \['a'\]"),
    ],
)  # fmt: skip
def test_a_bad_trace_is_an_error_naming_the_file_and_line(
    tmp_path: Path, trace_text: str | None, entry: str, message: str
) -> None:
    if trace_text is not None:
        (tmp_path / "t.jsonl").write_text(trace_text)
    with pytest.raises(ConfigError, match=message):
        make(tmp_path, f"slices:\n  g:\n    - {entry}\n")


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("- a\n- b\n", "top level must be a mapping"),
        ("budgett: 1s\n", r"unknown key\(s\) \['budgett'\]; valid keys"),
        ("budget: soon\n", r"roofline\.yaml: budget: expected a duration"),
        ("gate: {alpha: 2}\n", r"gate\.alpha: expected a significance level in \(0, 0\.5\)"),
        ("gate: {min_effect: {p95: lots}}\n", r"gate\.min_effect\.p95: expected a relative margin"),
        ("gate: {min_effect: {p90: 5%}}\n", "unknown quantile 'p90'"),
        ("gate: {replay: -1}\n", r"gate\.replay: expected an integer >= 0"),
        ("gate: {confirm_time: soon}\n", r"gate\.confirm_time: expected"),
        ("gate: {confirm_time: -5s}\n", r"gate\.confirm_time: expected"),
        ("gate: {color: red}\n", r"unknown key\(s\) \['color'\]"),
        ("sla: {p99: fast}\n", r"sla\.p99: expected a duration"),
        ("sla: {p42: 1ms}\n", r"unknown sla key\(s\) \['p42'\]"),
        ("sla: {min_efficiency: 1.5}\n", r"min_efficiency must be a fraction .* in \(0, 1\]"),
        ("sla: {bound: overhead}\n", r"sla\.bound must be one of \['compute', 'memory'\]"),
        ("slices: {g: []}\n", r"slices\.g: expected a non-empty list of slices"),
        ("slices: {g: [{name: a}, {name: a}]}\n", r"repeated: \['a'\]"),
        (
            "slices: {g: [{name: a, source: prod}]}\n",
            r"'source' must be one of \['synthetic', 'production'\]",
        ),
        ("slices: {g: [{name: 'a b'}]}\n", "slice 'name' must be"),
        ("owners: {'*': {rollback: x}}\n", "'owner' is required"),
        ("owners: {'*': {owner: a, oncall: b}}\n", r"unknown key\(s\) \['oncall'\]"),
        ("tags: [a, b]\n", r"tags: expected a mapping"),
        ("layers: {data: dataset}\n", "layers: expected a mapping of layer name to a list"),
        (
            "targets: {x: {peak_flops_per_s: {fp32: -1}, peak_bytes_per_s: {dram: 1}}}\n",
            r"targets\.x",
        ),
        ("key: [unclosed\n", "not valid YAML"),
    ],
)
def test_every_yaml_error_names_the_file_the_key_and_the_valid_form(
    tmp_path: Path, yaml_text: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as excinfo:
        make(tmp_path, yaml_text)
    assert str(tmp_path / "roofline.yaml") in str(excinfo.value)


def test_a_missing_explicit_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--roofline-config: .*nope\.yaml does not exist"):
        make(tmp_path, cli={"config": "nope.yaml"})


def test_a_bad_tag_and_a_bad_gate_choice_name_their_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--roofline-tag: expected KEY=VALUE"):
        make(tmp_path, cli={"tags": ["novalue"]})
    with pytest.raises(ConfigError, match=r"--roofline-gate / roofline_gate: expected one of"):
        make(tmp_path, ini={"gate": "sometimes"})
    with pytest.raises(ConfigError, match=r"ini roofline_min_samples: expected an integer >= 1"):
        make(tmp_path, ini={"min_samples": "0"})


def test_a_marker_naming_an_unknown_slice_group_lists_the_groups(tmp_path: Path) -> None:
    config = make(tmp_path, "slices: {gemm: [{name: a}]}\n")
    marker = bind_marker("t.py::x", (), {"slices": "gemn"})
    with pytest.raises(ConfigError, match=r"t\.py::x: .*slices='gemn'.* groups: \['gemm'\]"):
        resolve_test(config, marker, "t.py::x")


def test_settling_time_is_the_configured_time_or_as_long_as_the_session_at_least_30_s(
    tmp_path: Path,
) -> None:
    default = make(tmp_path).gate
    assert default.confirm_time_s is None
    assert default.settle_time_s(12.0) == 30.0 and default.settle_time_s(95.0) == 95.0
    assert make(tmp_path, "gate: {confirm_time: 2min}\n").gate.settle_time_s(5.0) == 120.0
    assert make(tmp_path, "gate: {confirm_time: 0}\n").gate.settle_time_s(500.0) == 0.0
    # The same bound holds for confirming regressions, except that 0 (settle nothing) leaves
    # them their default time.
    two_min = make(tmp_path, "gate: {confirm_time: 2min}\n").gate
    assert two_min.confirm_time_for_regressions_s(5.0) == 120.0
    zero = make(tmp_path, "gate: {confirm_time: 0}\n").gate
    assert zero.confirm_time_for_regressions_s(500.0) == 500.0
    assert default.confirm_time_for_regressions_s(5.0) == 30.0


def test_the_default_paired_time_grows_with_the_tests_asked_up_to_a_cap(tmp_path: Path) -> None:
    # A suite-wide regression is confirmed test by test: 12 s a test, at most 300 s a pair.
    default = make(tmp_path).gate
    assert default.confirm_time_for_regressions_s(5.0, tests=2) == 30.0
    assert default.confirm_time_for_regressions_s(5.0, tests=10) == 120.0
    assert default.settle_time_s(5.0, tests=10) == 120.0
    assert default.confirm_time_for_regressions_s(5.0, tests=500) == 300.0
    assert default.confirm_time_for_regressions_s(400.0, tests=500) == 400.0
    # A configured time is the user's bound, whatever the count.
    two_min = make(tmp_path, "gate: {confirm_time: 2min}\n").gate
    assert two_min.confirm_time_for_regressions_s(5.0, tests=100) == 120.0
    assert two_min.settle_time_s(5.0, tests=100) == 120.0
    zero = make(tmp_path, "gate: {confirm_time: 0}\n").gate
    assert zero.settle_time_s(5.0, tests=100) == 0.0
    assert zero.confirm_time_for_regressions_s(5.0, tests=10) == 120.0
