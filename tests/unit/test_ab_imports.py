"""The paired worker's import record (``plugin.ab_imports.probe_record``) on a real file tree.

``ab`` refuses a side whose worker imported the other side's tree from this record, so a module
reached through a symbolic link must be recorded where it really lives.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from pytest_roofline.plugin import ab_imports
from pytest_roofline.plugin.ab_imports import probe_record


def _module(monkeypatch: pytest.MonkeyPatch, name: str, file: Path) -> None:
    module = types.ModuleType(name)
    module.__file__ = str(file)
    monkeypatch.setitem(sys.modules, name, module)


@pytest.fixture
def trees(tmp_path: Path) -> dict[str, Path]:
    real = tmp_path / "candidate-tree" / "pkg"
    real.mkdir(parents=True)
    (real / "kernels.py").write_text("")
    (real / "linked_target.py").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # a directory reached through a link, and a file that is itself a link
    (elsewhere / "pkg-link").symlink_to(real, target_is_directory=True)
    (elsewhere / "single.py").symlink_to(real / "linked_target.py")
    env = tmp_path / "env" / "site-packages"
    (env / "installed").mkdir(parents=True)
    (env / "installed" / "__init__.py").write_text("")
    (env / "installed" / "sub.py").write_text("")
    return {"real": real, "elsewhere": elsewhere, "env": env, "root": tmp_path / "project"}


def test_modules_reached_through_links_are_recorded_where_they_live(
    trees: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ab_imports, "environment_dirs", lambda rootdir: [])
    _module(monkeypatch, "roofline_probe_dirlink", trees["elsewhere"] / "pkg-link" / "kernels.py")
    _module(monkeypatch, "roofline_probe_filelink", trees["elsewhere"] / "single.py")
    record = probe_record(trees["root"], ["test_x.py"])
    real = trees["real"].resolve()
    assert record["modules"]["roofline_probe_dirlink"] == str(real / "kernels.py")
    assert record["modules"]["roofline_probe_filelink"] == str(real / "linked_target.py")
    assert record["test_files"] == ["test_x.py"]


def test_environment_modules_keep_only_top_level_names(
    trees: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = trees["env"].resolve()
    monkeypatch.setattr(ab_imports, "environment_dirs", lambda rootdir: [env])
    _module(monkeypatch, "roofline_probe_installed", env / "installed" / "__init__.py")
    _module(monkeypatch, "roofline_probe_installed.sub", env / "installed" / "sub.py")
    _module(monkeypatch, "roofline_probe_tree", trees["real"] / "kernels.py")
    record = probe_record(trees["root"], [])
    assert record["environment_modules"]["roofline_probe_installed"] == str(
        env / "installed" / "__init__.py"
    )
    assert "roofline_probe_installed.sub" not in record["environment_modules"]
    assert "roofline_probe_installed" not in record["modules"]
    assert record["modules"]["roofline_probe_tree"] == str(trees["real"].resolve() / "kernels.py")


def test_a_directory_sharing_a_prefix_with_the_environment_is_not_inside_it(
    trees: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``/x/site-packages-old/m.py`` is not within ``/x/site-packages``
    env = trees["env"].resolve()
    beside = env.parent / (env.name + "-old")
    beside.mkdir()
    (beside / "m.py").write_text("")
    monkeypatch.setattr(ab_imports, "environment_dirs", lambda rootdir: [env])
    _module(monkeypatch, "roofline_probe_beside", beside / "m.py")
    record = probe_record(trees["root"], [])
    assert record["modules"]["roofline_probe_beside"] == str(beside / "m.py")


def test_a_virtual_environment_inside_the_project_does_not_swallow_the_tree() -> None:
    # A project whose .venv is the running environment: the prefix holds the rootdir, so it is
    # left out (else every module of the tree would count as installed), and the stdlib stays.
    project = Path(sys.prefix).resolve() / "project-inside-the-prefix"
    dirs = ab_imports.environment_dirs(project)
    assert Path(sys.prefix).resolve() not in dirs
    assert any(Path(os.__file__).resolve().is_relative_to(d) for d in dirs)


SHAPES = [
    "real/kernels.py",
    "link/kernels.py",
    "link/../m.py",  # realpath follows the link before applying "..": deep/m.py
    "./real/../m.py",
    "real//kernels.py",
    "single.py",  # a file that is itself a link, with a relative target
    "dangling.py",
    "missing-dir/x.py",
    "real/",
    "/",
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_each_path_resolves_as_path_resolve_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, relative: bool
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "kernels.py").write_text("")
    (tmp_path / "deep" / "inner").mkdir(parents=True)
    (tmp_path / "deep" / "m.py").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "deep" / "inner", target_is_directory=True)
    (tmp_path / "single.py").symlink_to(Path("real") / "kernels.py")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    monkeypatch.chdir(tmp_path)
    file = shape if relative or shape.startswith("/") else str(tmp_path / shape)
    assert ab_imports._resolver()(file) == str(Path(file).resolve())
