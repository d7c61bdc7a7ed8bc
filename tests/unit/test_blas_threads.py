"""BLAS oversubscription from a fake threadpoolctl info list; the thread limit on the real BLAS."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_roofline.config.settings import parse_blas_threads
from pytest_roofline.errors import ConfigError
from pytest_roofline.measure.blas import (
    BLAS_THREADS_TAG,
    apply_blas_threads,
    blas_oversubscription,
    blas_pools,
    blas_threads,
    check_blas_oversubscription,
)


def info(threads: int, library: str = "openblas", user_api: str = "blas") -> dict[str, Any]:
    return {
        "user_api": user_api,
        "internal_api": library,
        "num_threads": threads,
        "prefix": "libscipy_openblas",
        "filepath": "/venv/numpy.libs/libscipy_openblas64_.so",
        "version": "0.3.31",
        "threading_layer": "pthreads",
        "architecture": "Haswell",
    }


def test_two_openblas_threads_on_two_busy_cpus_are_called_out_with_the_figures() -> None:
    message = check_blas_oversubscription(info=[info(2)], cpus=2, load_average=lambda: 2.8)
    assert message is not None
    assert message.startswith(
        "OpenBLAS uses 2 threads on 2 usable CPUs with load 1.8 from other processes: "
    )
    assert "--roofline-blas-threads=1" in message


def test_one_blas_thread_is_never_oversubscribed() -> None:
    assert check_blas_oversubscription(info=[info(1)], cpus=2, load_average=lambda: 5.0) is None


def test_an_idle_host_is_not_oversubscribed() -> None:
    # Load 1.3 is this process (1.0) plus noise: 0.3 from others is under the threshold.
    assert check_blas_oversubscription(info=[info(2)], cpus=2, load_average=lambda: 1.3) is None


def test_threads_fitting_beside_the_other_load_are_fine() -> None:
    assert check_blas_oversubscription(info=[info(4)], cpus=8, load_average=lambda: 3.0) is None


def test_more_threads_than_usable_cpus_is_called_out_without_any_load() -> None:
    message = check_blas_oversubscription(info=[info(8, "mkl")], cpus=2, load_average=lambda: None)
    assert message is not None
    assert message.startswith("MKL uses 8 threads on 2 usable CPUs (more threads than CPUs)")


def test_openmp_pools_and_malformed_rows_are_not_blas_pools() -> None:
    rows = [info(2, "openmp", user_api="openmp"), {"user_api": "blas", "num_threads": "2"}, info(2)]
    pools = blas_pools(rows)
    assert [(p.name, p.threads, p.threading_layer) for p in pools] == [("OpenBLAS", 2, "pthreads")]
    assert pools[0].to_dict()["version"] == "0.3.31"


def test_two_threads_on_one_usable_cpu_say_cpu_in_the_singular() -> None:
    message = check_blas_oversubscription(info=[info(2)], cpus=1, load_average=lambda: 1.0)
    assert message is not None
    assert message.startswith("OpenBLAS uses 2 threads on 1 usable CPU (more threads than CPUs)")


def test_a_cpu_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="usable_cpus"):
        blas_oversubscription(blas_pools([info(2)]), usable_cpus=0, load_1m=1.0)


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "", True, 2.0, "²"])
def test_a_bad_blas_threads_value_names_the_option(value: object) -> None:
    with pytest.raises(ConfigError, match="--roofline-blas-threads"):
        parse_blas_threads(value, where="--roofline-blas-threads")


def test_a_good_blas_threads_value_is_parsed() -> None:
    assert parse_blas_threads(" 2 ", where="x") == 2
    assert parse_blas_threads(3, where="x") == 3


def test_the_limit_applies_to_the_loaded_blas_and_is_restored() -> None:
    np.ones((2, 2)) @ np.ones((2, 2))  # numpy's BLAS is loaded
    original = blas_pools()
    if not original:
        pytest.skip("no BLAS library visible to threadpoolctl")
    with blas_threads(1) as applied:
        assert [p.threads for p in blas_pools()] == [1] * len(original)
        assert applied.before == original
        assert applied.tag == (BLAS_THREADS_TAG, "1")
    assert blas_pools() == original


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="--roofline-blas-threads"):
        apply_blas_threads(0)
