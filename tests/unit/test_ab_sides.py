"""A paired worker's environment (``ab.sides.side_env``): import root, user settings, defaults."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_roofline.ab.sides import WORKER_ENV_DEFAULTS, side_env, worker_env_defaults


def test_the_side_import_root_goes_first_and_the_idle_thread_default_is_added() -> None:
    env = side_env(Path("/trees/base/src"), {"PYTHONPATH": "/user/lib", "HOME": "/h"})
    assert env["PYTHONPATH"] == os.pathsep.join(["/trees/base/src", "/user/lib"])
    assert env["HOME"] == "/h"
    assert env["OPENBLAS_THREAD_TIMEOUT"] == WORKER_ENV_DEFAULTS["OPENBLAS_THREAD_TIMEOUT"]


def test_a_value_the_user_set_is_kept_and_not_reported_as_ours() -> None:
    base = {"OPENBLAS_THREAD_TIMEOUT": "28"}
    assert side_env(Path("/t"), base)["OPENBLAS_THREAD_TIMEOUT"] == "28"
    assert worker_env_defaults(base) == {}
    assert worker_env_defaults({}) == dict(WORKER_ENV_DEFAULTS)
    assert "PYTHONPATH" not in base  # the caller's mapping is not changed
