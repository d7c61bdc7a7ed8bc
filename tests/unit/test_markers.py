from __future__ import annotations

import pytest

from pytest_roofline.config.markers import bind_marker
from pytest_roofline.errors import ConfigError


def test_a_full_marker_binds_to_typed_settings() -> None:
    settings = bind_marker(
        "t.py::x",
        (),
        {
            "slices": [{"name": "small", "params": {"n": 4}}, "big"],
            "owner": {"performance engineer": "alice", "compiler owner": "bob"},
            "rollback": "revert PR 12",
            "sla": {"p99": "4ms", "p50": 0.001, "min_efficiency": 0.5, "bound": "compute"},
            "precision": "bfloat16",
            "budget": "250ms",
        },
    )
    assert isinstance(settings.slices, tuple)
    assert [s.name for s in settings.slices] == ["small", "big"]
    assert settings.slices[0].params == {"n": 4}
    assert settings.owners == ("performance engineer: alice", "compiler owner: bob")
    assert settings.sla.p99_s == pytest.approx(4e-3)
    assert settings.sla.bound == "compute"
    assert settings.precision == "bf16"
    assert settings.budget_s == pytest.approx(0.25)


def test_a_slice_group_name_is_kept_for_the_config_to_resolve() -> None:
    assert bind_marker("t.py::x", (), {"slices": "gemm"}).slices == "gemm"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (
            (),
            {"owners": "a"},
            r"unexpected keyword argument 'owners'.*keyword arguments only: slices, owner",
        ),
        (("gemm",), {}, r"takes 0 positional arguments.*keyword arguments only"),
        ((), {"sla": {"p99": "soon"}}, r"sla\.p99: expected a duration"),
        ((), {"sla": ["p99"]}, "sla must be a mapping"),
        (
            (),
            {"precision": "fp7"},
            r"precision=\.\.\.\): unknown precision 'fp7'; valid: fp64, fp32",
        ),
        ((), {"budget": "-1s"}, r"budget=\.\.\.\): expected"),
        ((), {"owner": ""}, "owner must not be empty"),
        ((), {"owner": 42}, r"owner=\.\.\.\): expected a name"),
        ((), {"rollback": ""}, r"rollback=\.\.\.\): expected a non-empty string"),
        ((), {"slices": [{"nam": "x"}]}, r"unknown slice key\(s\) \['nam'\]"),
    ],
)
def test_bad_marker_arguments_name_the_test_the_key_and_the_valid_form(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as excinfo:
        bind_marker("pkg/test_k.py::test_gemm[small]", args, kwargs)
    assert str(excinfo.value).startswith("pkg/test_k.py::test_gemm[small]: ")
