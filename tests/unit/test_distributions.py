"""The scipy.special-based distribution functions agree with scipy.stats."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_roofline.stats import distributions as d

QS = np.array([1e-12, 1e-6, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999, 1 - 1e-9])
XS = np.array([-40.0, -6.0, -1.5, 0.0, 0.3, 2.0, 7.5, 40.0])


@pytest.mark.parametrize("df", [1.0, 2.5, 3.0, 15.0, 300.0, math.inf])
def test_t_quantiles_and_tails_match_scipy_stats(df: float) -> None:
    np.testing.assert_allclose(d.t_ppf(QS, df), stats.t.ppf(QS, df), rtol=1e-9)
    np.testing.assert_allclose(d.t_isf(QS, df), stats.t.isf(QS, df), rtol=1e-9)
    np.testing.assert_allclose(d.t_sf(XS, df), stats.t.sf(XS, df), rtol=1e-9, atol=1e-300)
    assert d.t_ppf(0.95, df) == pytest.approx(float(stats.t.ppf(0.95, df)), rel=1e-12)
    assert isinstance(d.t_ppf(0.95, df), float)


def test_normal_and_beta_functions_match_scipy_stats() -> None:
    np.testing.assert_allclose(d.norm_ppf(QS), stats.norm.ppf(QS), rtol=1e-12)
    np.testing.assert_allclose(d.norm_sf(XS), stats.norm.sf(XS), rtol=1e-12, atol=1e-300)
    for a, b in [(0.5, 0.5), (3.0, 40.0), (250.0, 12.0)]:
        np.testing.assert_allclose(d.beta_ppf(QS, a, b), stats.beta.ppf(QS, a, b), rtol=1e-8)
    assert d.norm_ppf(0.0) == -math.inf and d.norm_ppf(1.0) == math.inf
    assert isinstance(d.norm_sf(1.0), float)


def test_importing_the_plugin_does_not_import_scipy_stats() -> None:
    import subprocess
    import sys

    code = "import sys, pytest_roofline.plugin; print('scipy.stats' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", "scipy.stats costs ~1.4 s CPU in every pytest session"
