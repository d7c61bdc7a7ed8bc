"""Statistics for the regression gate (pure numpy/scipy)."""

from pytest_roofline.stats.core import *  # noqa: F403
from pytest_roofline.stats.core import __all__ as __all__
